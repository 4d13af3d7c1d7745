# Redis goes away and returns while several clients keep requesting (on the
# vhost with generous timeouts: the outage is a stopped server, which fails
# at once, not a slow one): every
# request is answered (fail-open), and however many children and requests
# see the failure, the error log gets one line when the store goes away and
# one when it returns.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Time::HiRes qw(time sleep);
use SL::Test;
use SL::Fault;

plan tests => 6;

my $store = quotemeta store_display();
my $down_re = qr/mod_slidinglimit: store $store failed \(/;
my $up_re   = qr/mod_slidinglimit: store $store is answering again/;
my $down0 = () = error_log_lines($down_re);
my $up0   = () = error_log_lines($up_re);

require Apache::TestRequest;
my $old  = Apache::TestRequest::module('sl_fault_patient');
my $base = 'http://' . Apache::TestRequest::hostport();
Apache::TestRequest::module($old);

my $collect = load("$base/f/wide/u", workers => 6, seconds => 4);
sleep 0.7;
fault_stop();
sleep 1;
fault_start();
my %total = %{ $collect->() };
my $max = delete $total{max} // 0;
t_debug(join ' ', map {"$_=$total{$_}"} sort keys %total);
my @statuses = sort keys %{ { map { (split /:/)[0] => 1 } keys %total } };
ok t_cmp("@statuses", '200', 'every request answered 200');
ok($total{'200:failed-open'} && $total{'200:allowed'},
    "both allowed ($total{'200:allowed'}) and failed-open (" . ($total{'200:failed-open'} // 0) . ')');
ok($max < 1, sprintf 'slowest request %.3f s', $max);

ok(wait_until(sub {
    my $x = vhost_get('sl_fault_patient', '/f/wide/u', 'X-Forwarded-For' => fresh_ip());
    ($x->{headers}{'x-sl-result'} // '') eq 'allowed';
}, 5), 'Redis decides again');
my $down1 = () = error_log_lines($down_re);
my $up1   = () = error_log_lines($up_re);
ok t_cmp($down1 - $down0, 1, 'one line when the store went away');
ok t_cmp($up1 - $up0, 1, 'one line when it returned');
