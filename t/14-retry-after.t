# SPDX-License-Identifier: Apache-2.0
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
    # The request meant for 0.4 s before the earliest time must be decided
    # before it: should the host stall it past that, the case runs again
    # with a fresh client (at most three times).
    my $r;
    for my $attempt (1 .. 3) {
        $r = spend_and_wait($pol, $alg, $N, $W, $burst);
        t_debug(sprintf "$pol (attempt $attempt): %d admitted, earliest admission in %.3f..%.3f s, "
              . 'Retry-After %s, the request before it decided %.3f s before',
            $r->{admitted}, ($r->{E} - $r->{t1}) / 1e6, ($r->{E} - $r->{t0}) / 1e6,
            $r->{ra}, ($r->{E} - $r->{b1}) / 1e6);
        last if $r->{b1} < $r->{E};
    }
    my ($lo, $hi) = (ceil(($r->{E} - $r->{t1}) / 1e6), ceil(($r->{E} - $r->{t0}) / 1e6));
    my $ra = $r->{ra};
    ok t_cmp($r->{res}{status}, 429, "$pol: refused once spent");
    ok($ra >= $lo && $ra <= $hi, "$pol: Retry-After $ra is the exact wait rounded up ($lo..$hi)");
    ok t_cmp($r->{res}{headers}{ratelimit}, qr/;r=0;t=$ra$/, "$pol: RateLimit t equals Retry-After");
    ok($r->{before} == 429 && $r->{b1} < $r->{E},
        "$pol: still refused 0.4 s before ($r->{before}, decided "
          . sprintf('%.3f', ($r->{E} - $r->{b1}) / 1e6) . ' s before)');
    ok t_cmp($r->{after}, 200, "$pol: admitted right after the earliest time");
}

# A fresh client spends the limit; then one request 0.4 s before the
# earliest admission time E and one right after it. Store times: t0..t1
# around the refusal, b1 after the request before E.
sub spend_and_wait {
    my ($pol, $alg, $N, $W, $burst) = @_;
    my $ip  = fresh_ip();
    my $key = sl_key(ip => $ip, policy => $pol, alg => $alg);
    my $path = "/alg/$pol/";
    my %r = (admitted => 0);

    # For the counter, start late in a window, so that the wait runs into
    # the next one and depends on the weighted previous count.
    if ($alg eq 'c') {
        my $now = store_now();
        my $k = int($now / $W) + ($now - int($now / $W) * $W < 0.6 * $W ? 0 : 1);
        sleep_until(($k + 0.7) * $W);
    }
    for (1 .. 10) {
        $r{t0} = store_now();
        $r{res} = http_get($path, 'X-Forwarded-For' => $ip);
        last if $r{res}{status} == 429;
        $r{admitted}++;
    }
    $r{t1} = store_now();
    $r{ra} = $r{res}{headers}{'retry-after'} // -1;
    $r{E} = $earliest{$pol}->($key, $N, $W, $burst);

    sleep_until($r{E} - 0.4e6);
    $r{before} = http_get($path, 'X-Forwarded-For' => $ip)->{status};
    $r{b1} = store_now();
    sleep_until($r{E} + 0.03e6);
    $r{after} = http_get($path, 'X-Forwarded-For' => $ip)->{status};
    return \%r;
}
