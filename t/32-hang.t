# SPDX-License-Identifier: Apache-2.0
# The store hangs (SIGSTOP: connections are accepted by the kernel, nothing
# answers): the command timeout bounds every request, the breaker spares
# most requests even that, and SIGCONT brings Redis decisions back.
# Runs under each MPM: the command timeout, pipelined or direct.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Time::HiRes qw(time sleep);
use SL::Test;
use SL::Fault;
use SL::Wire;

plan tests => 10;

my $store = quotemeta store_display();
my $down0 = () = error_log_lines(qr/store $store failed \(/);

# Checks of the store itself on the virtual host with generous timeouts
# (the same store and breaker): a slow answer on a loaded host is not a
# hang there.
my $res = http_get({ vhost => 'sl_fault_patient' }, '/f/wide/h', 'X-Forwarded-For' => fresh_ip());
ok t_cmp($res->{headers}{'x-sl-result'}, 'allowed', 'store up: allowed');

my $m0 = metrics();
my ($t0, $t1);
fault_hang();
my $ok = eval {
    my (@open, @closed);
    my $id = test_id('hang');
    $t0 = time;
    for my $k (1 .. 25) {
        my $r = http_get({ vhost => 'sl_fault' }, $k <= 20 ? '/f/wide/h' : '/f/wideclosed/h',
            'X-Forwarded-For' => fresh_ip(), 'X-Test-Id' => "$id.$k");
        $k <= 20
          ? push(@open, "$r->{status}:" . ($r->{headers}{'x-sl-result'} // ''))
          : push(@closed, $r->{status});
    }
    $t1 = time;
    # How long each took is httpd's measure (SL::Wire's took).
    my @t = took($id, 1 .. 25);
    my ($max) = sort { $b <=> $a } @t;
    t_debug(sprintf 'latencies during the hang: %s ms',
        join ' ', map { sprintf '%.0f', 1000 * $_ } sort { $a <=> $b } @t);
    ok t_cmp("@open", join(' ', ('200:failed-open') x 20), 'fail-open passes while Redis hangs');
    ok t_cmp("@closed", '503 503 503 503 503', 'fail-closed answers 503 while Redis hangs');
    # Timeouts 100ms/50ms: a request that waits for Redis waits 50 ms.
    ok($max < 1, sprintf 'every request under 1 s (max %.3f s)', $max);
    1;
};
my $err = $@;
fault_resume();
die $err unless $ok;

# Which requests waited for Redis, counted rather than timed: the store
# calls the status page counts. With the breaker open only its probes ask,
# one per backoff interval.
my $m1 = metrics();
my $d = sub { metric($m1, @_) - metric($m0, @_) };
my $calls = $d->('slidinglimit_store_calls_total');
my $bound = breaker_calls_max($t1 - $t0);
t_debug(sprintf '%d store calls in %.2f s of sequential requests', $calls, $t1 - $t0);
ok($calls >= 1 && $calls <= $bound,
    "only the probes asked the hung store ($calls of 25 requests; the breaker allows at most $bound)");
ok t_cmp($d->('slidinglimit_store_errors_total'), $calls, '... and each of them failed');

my $t = time;
my $back = wait_until(sub {
    my $x = http_get({ vhost => 'sl_fault_patient' }, '/f/wide/h', 'X-Forwarded-For' => fresh_ip());
    ($x->{headers}{'x-sl-result'} // '') eq 'allowed';
}, 10);
ok($back, sprintf 'Redis decides again %.2f s after SIGCONT', time - $t);
my $ip = fresh_ip();
my @st = map { http_get({ vhost => 'sl_fault_patient' }, '/f/closed/h', 'X-Forwarded-For' => $ip)->{status} } 1 .. 4;
ok t_cmp("@st", '200 200 200 429', 'the limit holds from Redis after the hang');
my $key = sl_key(ip => $ip, policy => 'fclosed', prefix => 'slfault');
ok t_cmp(fault_redis('ZCARD', $key), 3, 'the admissions are in Redis');
my $down1 = () = error_log_lines(qr/store $store failed \(/);
ok t_cmp($down1 - $down0, 1, 'one error log line for the hang');
