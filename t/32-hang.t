# The store hangs (SIGSTOP: connections are accepted by the kernel, nothing
# answers): the command timeout bounds every request, the breaker spares
# most requests even that, and SIGCONT brings Redis decisions back.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Time::HiRes qw(time sleep);
use SL::Test;
use SL::Fault;

plan tests => 10;

my $store = quotemeta store_display();
my $down0 = () = error_log_lines(qr/store $store failed \(/);

my $res = vhost_get('sl_fault', '/f/wide/h', 'X-Forwarded-For' => fresh_ip());
ok t_cmp($res->{headers}{'x-sl-result'}, 'allowed', 'store up: allowed');

fault_hang();
my $ok = eval {
    my (@t, @open, @closed);
    for (1 .. 20) {
        my ($r, $t) = timed_get('sl_fault', '/f/wide/h', 'X-Forwarded-For' => fresh_ip());
        push @t, $t;
        push @open, "$r->{status}:" . ($r->{headers}{'x-sl-result'} // '');
    }
    for (1 .. 5) {
        my ($r, $t) = timed_get('sl_fault', '/f/wideclosed/h', 'X-Forwarded-For' => fresh_ip());
        push @t, $t;
        push @closed, $r->{status};
    }
    my @sorted = sort { $a <=> $b } @t;
    my $max    = $sorted[-1];
    my $median = $sorted[ int(@sorted / 2) ];
    t_debug(sprintf 'latencies during the hang: median %.1f ms, max %.1f ms',
        1000 * $median, 1000 * $max);
    ok t_cmp("@open", join(' ', ('200:failed-open') x 20), 'fail-open passes while Redis hangs');
    ok t_cmp("@closed", '503 503 503 503 503', 'fail-closed answers 503 while Redis hangs');
    ok($max < 1, sprintf 'every request under 1 s (max %.3f s)', $max);
    # Timeouts are 100ms/50ms: a request that waits on Redis takes at least
    # 50 ms. With the breaker open only the probes wait.
    my $slow = grep { $_ >= 0.05 } @t;
    ok($slow <= 8, "only the probes pay the timeout ($slow of 25 requests took >= 50 ms)");
    ok($median < 0.05, sprintf 'median %.1f ms: most requests do not wait for Redis', 1000 * $median);
    1;
};
my $err = $@;
fault_resume();
die $err unless $ok;

my $t0 = time;
my $back = wait_until(sub {
    my $x = vhost_get('sl_fault', '/f/wide/h', 'X-Forwarded-For' => fresh_ip());
    ($x->{headers}{'x-sl-result'} // '') eq 'allowed';
}, 5);
ok($back, sprintf 'Redis decides again %.2f s after SIGCONT', time - $t0);
my $ip = fresh_ip();
my @st = map { vhost_get('sl_fault', '/f/closed/h', 'X-Forwarded-For' => $ip)->{status} } 1 .. 4;
ok t_cmp("@st", '200 200 200 429', 'the limit holds from Redis after the hang');
my $key = sl_key(ip => $ip, policy => 'fclosed', prefix => 'slfault');
ok t_cmp(fault_redis('ZCARD', $key), 3, 'the admissions are in Redis');
my $down1 = () = error_log_lines(qr/store $store failed \(/);
ok t_cmp($down1 - $down0, 1, 'one error log line for the hang');
