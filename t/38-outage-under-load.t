# SPDX-License-Identifier: Apache-2.0
# Redis goes away and returns while several clients keep requesting (on the
# vhost with generous timeouts: the outage is a stopped server, which fails
# at once, not a slow one): every
# request is answered (fail-open), and however many children and requests
# see the failure, the error log gets one line when the store goes away and
# one when it returns.
# Runs under each MPM: one log line however many children and threads.
# Asserts wall-clock bounds: no store call takes a second or more.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Time::HiRes qw(time sleep);
use SL::Test;
use SL::Fault;
use SL::Wire;

plan tests => 7;

my $store = quotemeta store_display();
my $down_re = qr/mod_slidinglimit: store $store failed \(/;
my $up_re   = qr/mod_slidinglimit: store $store is answering again/;
my $down0 = () = error_log_lines($down_re);
my $up0   = () = error_log_lines($up_re);

my $base = server_url('sl_fault_patient');

# Each phase lasts until the status page shows requests decided in it: by
# Redis before the outage, failed open during it, by Redis after it.
my $m0 = metrics();
my $collect = load("$base/f/wide/u", workers => 6, seconds => 120);
my $before = decided_more('fwide', 'allowed', 20);
fault_stop();
my $during = decided_more('fwide', 'failed-open', 20);
fault_start();
my $after = decided_more('fwide', 'allowed', 20);
my %total = %{ $collect->() };
my $m1 = metrics();
my $max = delete $total{max} // 0;
t_debug(join ' ', map {"$_=$total{$_}"} sort keys %total);
t_debug(sprintf 'slowest request %.3f s', $max);
ok($before && $during && $after,
    'requests decided by Redis before the outage, failed open during it, by Redis after it');
my @statuses = sort keys %{ { map { (split /:/)[0] => 1 } keys %total } };
ok t_cmp("@statuses", '200', 'every request answered 200');
ok($total{'200:failed-open'} && $total{'200:allowed'},
    "both allowed ($total{'200:allowed'}) and failed-open (" . ($total{'200:failed-open'} // 0) . ')');
# A stopped server refuses at once: no store call waits for a timeout
# (1 s connect, 2 s command).
my $slow = store_calls_slower($m0, $m1, 1);
ok t_cmp($slow, 0, 'no store call took a second or more (a timeout)');

ok(wait_until(sub {
    my $x = http_get({ vhost => 'sl_fault_patient' }, '/f/wide/u', 'X-Forwarded-For' => fresh_ip());
    ($x->{headers}{'x-sl-result'} // '') eq 'allowed';
}, 10), 'Redis decides again');
my $down1 = () = error_log_lines($down_re);
my $up1   = () = error_log_lines($up_re);
ok t_cmp($down1 - $down0, 1, 'one line when the store went away');
ok t_cmp($up1 - $up0, 1, 'one line when it returned');
