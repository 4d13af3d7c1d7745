# The store stops answering (SIGSTOP) while a burst of concurrent requests
# is in flight through shared round trips: the commands inside the stuck
# batch fail after the command timeout, those queued behind it give up at
# their deadline without being sent, nobody hangs or crashes, and after
# SIGCONT the store decides again.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Time::HiRes qw(time sleep);
use SL::Test;
use SL::Fault;

plan tests => 6;

my $crash_re = qr/exit signal|Segmentation fault|AH00052|AH00060/;
my $crash0 = () = error_log_lines($crash_re);
my $base = server_url('sl_fault');

my $collect = load("$base/f/wide/p", workers => 12, seconds => 2.5);
sleep 0.6;
fault_hang();
sleep 1;
fault_resume();
my %total = %{ $collect->() };
my $max = delete $total{max} // 0;
t_debug(join ' ', map {"$_=$total{$_}"} sort keys %total);

my @statuses = sort keys %{ { map { (split /:/)[0] => 1 } keys %total } };
ok t_cmp("@statuses", '200', 'every request answered 200 (fail-open)');
ok($total{'200:allowed'} && $total{'200:failed-open'},
    "allowed ($total{'200:allowed'}) before and after, failed-open ("
      . ($total{'200:failed-open'} // 0) . ') during the hang');
# Timeouts 100ms/50ms: a command inside a stuck batch waits 50 ms, one
# queued behind it at most 150 ms (then, if handed the pipeline, its own
# trip). Far under a second even on a loaded machine with trace logging.
ok($max < 1, sprintf 'slowest request %.3f s', $max);

ok(wait_until(sub {
    my $x = vhost_get('sl_fault', '/f/wide/p', 'X-Forwarded-For' => fresh_ip());
    ($x->{headers}{'x-sl-result'} // '') eq 'allowed';
}, 5), 'Redis decides again after SIGCONT');
my $ip = fresh_ip();
my @st = map { vhost_get('sl_fault', '/f/closed/p', 'X-Forwarded-For' => $ip)->{status} } 1 .. 4;
ok t_cmp("@st", '200 200 200 429', 'the limit holds from Redis after the hang');
my $crash1 = () = error_log_lines($crash_re);
ok t_cmp($crash1 - $crash0, 0, 'no child crashed');
