# Retry-After is the exact earliest time a refused request would be
# admitted, computed here from the state in Redis: refused just before it,
# admitted just after it. For the counter that is when the weighted
# estimate drops below the limit (not the end of a window), for GCRA when
# the TAT is within the burst tolerance again, for the log when the entry
# that makes room expires.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use POSIX qw(ceil);
use SL::Test;
use SL::Algo;
use Time::HiRes qw(sleep);

plan tests => 3 * 5;


sub sleep_until {
    my ($us) = @_;
    my $d = ($us - store_now()) / 1e6;
    sleep $d if $d > 0;
}

# The earliest admission time (store microseconds) from the stored state.
my %earliest = (
    'retry-c' => sub {
        my ($key, $N, $W) = @_;
        my ($idx, $cur, $prev) = counter_decode(redis('GET', $key), store_now(), $W);
        my $start = $idx * $W;
        my $x = $N - 1;    # admitted once prev * (1 - f) + cur <= N - 1
        return $cur <= $x ? $start + $W - $W * ($x - $cur) / $prev
                          : $start + 2 * $W - $W * $x / $cur;
    },
    'retry-g' => sub {
        my ($key, $N, $W, $burst) = @_;
        my $T = $W / $N;
        return redis('GET', $key) + $T - $burst * $T;    # tat + T - tau
    },
    'retry-l' => sub {
        my ($key, $N, $W) = @_;
        my $n = redis('ZCARD', $key);
        my $e = redis('ZRANGE', $key, $n - $N, $n - $N, 'WITHSCORES');
        return $e->[1] + $W;
    },
);

for my $case ([ 'retry-c', 'c', 5, 4e6 ], [ 'retry-g', 'g', 4, 4e6, 2 ], [ 'retry-l', 'l', 3, 3e6 ]) {
    my ($pol, $alg, $N, $W, $burst) = @$case;
    my $ip  = fresh_ip();
    my $key = sl_key(ip => $ip, policy => $pol, alg => $alg);
    my $path = "/alg/$pol/";

    # For the counter, start late in a window, so that the wait runs into
    # the next one and depends on the weighted previous count.
    if ($alg eq 'c') {
        my $now = store_now();
        my $k = int($now / $W) + ($now - int($now / $W) * $W < 0.6 * $W ? 0 : 1);
        sleep_until(($k + 0.7) * $W);
    }
    my ($res, $admitted, $t0);
    for (1 .. 10) {
        $t0 = store_now();
        $res = http_get($path, 'X-Forwarded-For' => $ip);
        last if $res->{status} == 429;
        $admitted++;
    }
    my $t1 = store_now();
    my $ra = $res->{headers}{'retry-after'} // -1;
    my $E = $earliest{$pol}->($key, $N, $W, $burst);
    my ($lo, $hi) = (ceil(($E - $t1) / 1e6), ceil(($E - $t0) / 1e6));
    t_debug(sprintf "$pol: %d admitted, earliest admission in %.3f..%.3f s, Retry-After %s", $admitted, ($E - $t1) / 1e6, ($E - $t0) / 1e6, $ra);
    ok t_cmp($res->{status}, 429, "$pol: refused once spent");
    ok($ra >= $lo && $ra <= $hi, "$pol: Retry-After $ra is the exact wait rounded up ($lo..$hi)");
    ok t_cmp($res->{headers}{ratelimit}, qr/;r=0;t=$ra$/, "$pol: RateLimit t equals Retry-After");

    sleep_until($E - 0.4e6);
    ok t_cmp(http_get($path, 'X-Forwarded-For' => $ip)->{status}, 429, "$pol: still refused 0.4 s before");
    sleep_until($E + 0.03e6);
    ok t_cmp(http_get($path, 'X-Forwarded-For' => $ip)->{status}, 200, "$pol: admitted right after the earliest time");
}
