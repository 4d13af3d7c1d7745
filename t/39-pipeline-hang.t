# SPDX-License-Identifier: Apache-2.0
# The store stops answering (SIGSTOP) while a burst of concurrent requests
# is in flight through shared round trips: the commands inside the stuck
# batch fail after the command timeout, those queued behind it give up at
# their deadline without being sent, nobody hangs or crashes, and after
# SIGCONT the store decides again.
# Runs under each MPM: a stuck batch and its queue under threads.
# Asserts wall-clock bounds: nobody waits past the command timeout.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Time::HiRes qw(time sleep);
use SL::Test;
use SL::Fault;
use SL::Wire;

plan tests => 7;

my $crash_re = qr/exit signal|Segmentation fault|AH00052|AH00060/;
my $crash0 = () = error_log_lines($crash_re);
my $base = server_url('sl_fault');

# Each phase lasts until the status page shows requests decided in it: by
# Redis before the hang, failed open during it (at least a second, so that
# batches are stuck and others queue behind them), by Redis after SIGCONT.
my $m0 = metrics();
my $collect = load("$base/f/wide/p", workers => 12, seconds => 120);
my $before = decided_more('fwide', 'allowed', 24);
fault_hang();
my $hung = time;
my $during = decided_more('fwide', 'failed-open', 24);
sleep 1 - (time - $hung) if time - $hung < 1;
fault_resume();
my $after = decided_more('fwide', 'allowed', 24);
my %total = %{ $collect->() };
my $m1 = metrics();
my $max = delete $total{max} // 0;
t_debug(join ' ', map {"$_=$total{$_}"} sort keys %total);
t_debug(sprintf 'slowest request %.3f s', $max);
ok($before && $during && $after,
    'requests decided by Redis before the hang, failed open during it, by Redis after SIGCONT');

my @statuses = sort keys %{ { map { (split /:/)[0] => 1 } keys %total } };
ok t_cmp("@statuses", '200', 'every request answered 200 (fail-open)');
ok($total{'200:allowed'} && $total{'200:failed-open'},
    "allowed ($total{'200:allowed'}) before and after, failed-open ("
      . ($total{'200:failed-open'} // 0) . ') during the hang');
# Timeouts 100ms/50ms: a command inside a stuck batch waits 50 ms, one
# queued behind it at most 150 ms (then, if handed the pipeline, its own
# trip: 350 ms in all, README). As the module times its store calls, far
# under a second on a host five times slower too.
my $slow = store_calls_slower($m0, $m1, 1);
ok t_cmp($slow, 0, 'no store call, its wait in the queue included, took a second');

# The store itself checked on the virtual host with generous timeouts (the
# same store): a slow answer on a loaded host is not a hang there.
ok(wait_until(sub {
    my $x = http_get({ vhost => 'sl_fault_patient' }, '/f/wide/p', 'X-Forwarded-For' => fresh_ip());
    ($x->{headers}{'x-sl-result'} // '') eq 'allowed';
}, 10), 'Redis decides again after SIGCONT');
my $ip = fresh_ip();
my @st = map { http_get({ vhost => 'sl_fault_patient' }, '/f/closed/p', 'X-Forwarded-For' => $ip)->{status} } 1 .. 4;
ok t_cmp("@st", '200 200 200 429', 'the limit holds from Redis after the hang');
my $crash1 = () = error_log_lines($crash_re);
ok t_cmp($crash1 - $crash0, 0, 'no child crashed');
