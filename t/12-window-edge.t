# SPDX-License-Identifier: Apache-2.0
# A burst on each side of a fixed-window boundary (windows are aligned to
# multiples of WINDOW in store time): a fixed-window counter would admit
# 2N within a fraction of a second. The log never admits more than N in any
# rolling window; the counter admits at most N + N*f in the rolling window
# that ends at fraction f of the new window (proof in docs/ALGORITHMS.md).
# Asserts wall-clock bounds: each burst lands on its side of a boundary.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use HTTP::Tiny;
use Time::HiRes qw(sleep);
use SL::Test;
use SL::Algo;

plan tests => 2 * 7;

my $N = 10;
my $W = 4e6;      # microseconds
my $S = 1.5e6;    # the first burst starts this long before the boundary
my $F = 0.3;      # the third at this fraction of the new window

sub sleep_until {
    my ($us) = @_;
    my $d = ($us - store_now()) / 1e6;
    sleep $d if $d > 0;
}

# $n requests one after another on one keep-alive connection, from store
# time $at on: how many were admitted, and the store time after the last.
# One connection and no forking: a burst of ten takes a few round trips.
sub burst_at {
    my ($ua, $url, $ip, $n, $at) = @_;
    sleep_until($at);
    my $ok = grep { $_ == 200 }
      map { $ua->get($url, { headers => { 'X-Forwarded-For' => $ip } })->{status} } 1 .. $n;
    return ($ok, store_now());
}

for my $alg (qw(log counter)) {
    my ($ip, $key, $B, $p1, $p2, $p3, $t1, $t2, $t3s, $t3, $planned);
    # The store tells where the first burst fell: every one of its
    # admissions before the boundary (the log's scores, the counter's count
    # of the old window); and the third must be answered while the first
    # one's admissions are in the rolling window (before B - S + W). Should
    # the host stall a burst past that, the case runs again with a fresh
    # client at a later boundary (at most three times).
    for my $attempt (1 .. 3) {
        $ip  = fresh_ip();
        $key = sl_key(ip => $ip, policy => "edge-$alg", alg => substr($alg, 0, 1));
        my $url = server_url() . "/alg/edge-$alg/";
        my $ua  = HTTP::Tiny->new(timeout => 10, keep_alive => 1);

        my $now = store_now();
        $B = (int($now / $W) + 1) * $W;
        $B += $W if $B - $now < $S + 0.3e6;

        ($p1, $t1) = burst_at($ua, $url, $ip, $N, $B - $S);
        my $before = $alg eq 'log'
          ? scalar grep({ $_ < $B } score_list($key))
          : (counter_decode(redis('GET', $key), $B - 1, $W))[1];
        ($p2, $t2) = burst_at($ua, $url, $ip, $N, $B + 0.02e6);
        # No request of the third burst before then.
        $t3s = $B + $F * $W;
        ($p3, $t3) = burst_at($ua, $url, $ip, $N, $t3s);
        $planned = $before == $p1 && $t3 < $B - $S + $W;
        t_debug(sprintf "$alg (attempt $attempt): %d before the boundary (%d counted there, "
              . 'the last answered at %+.3f s), %d just after (by %+.3f s), %d at %+.3f..%+.3f s',
            $p1, $before, ($t1 - $B) / 1e6, $p2, ($t2 - $B) / 1e6, $p3,
            ($t3s - $B) / 1e6, ($t3 - $B) / 1e6);
        last if $planned;
    }

    ok($planned, "$alg: the bursts fall as planned (one rolling window around the boundary)");
    ok t_cmp($p1, $N, "$alg: all N admitted before the boundary");
    if ($alg eq 'log') {
        ok t_cmp($p2, 0, 'log: none admitted right after the boundary');
        ok t_cmp($p3, 0, "log: none admitted at $F of the new window");
        my @sc = score_list($key);
        my $max = 0;
        for my $i (0 .. $#sc) {
            my $n = grep { $_ > $sc[$i] - $W && $_ <= $sc[$i] } @sc;
            $max = $n if $n > $max;
        }
        ok t_cmp($max, $N, 'log: at most N entries in any rolling window');
        ok t_cmp(scalar(@sc), $p1 + $p2 + $p3, 'log: one entry per admitted request');
        ok t_cmp($p1 + $p2 + $p3, $N, 'log: N in the rolling window around the boundary');
    }
    else {
        # Each admission at fraction f needs N(1-f) + cur + 1 <= N, so the
        # new window's count is at most N*f at its last admission; the
        # burst at F sends more than enough to reach it.
        my $f2 = ($t2 - $B) / $W;
        my $f3s = ($t3s - $B) / $W;
        my $f3 = ($t3 - $B) / $W;
        ok($p2 <= int($N * $f2), "counter: $p2 admitted right after the boundary, at most N*f = " . $N * $f2);
        my $cur = $p2 + $p3;
        ok($cur >= int($N * $f3s) && $cur <= int($N * $f3),
            "counter: $cur in the new window by f=$f3, between N*f at the start and end of the burst");
        my $v = redis('GET', $key);
        my ($idx, $c, $pv) = counter_decode($v, $B, $W);
        ok($idx == $B / $W && $c == $cur && $pv == $p1, "counter: state $v is the two windows' counts ($pv, $c)");
        my $total = $p1 + $cur;
        ok($total <= $N + int($N * $f3) && $total < 2 * $N,
            "counter: $total in the rolling window around the boundary, at most N + N*f, not 2N");
        ok($total > $N, 'counter: more than N in that window (it approximates; the log is exact)');
    }
}

# The scores (store microseconds) of a sliding log's entries.
sub score_list {
    my $s = redis('ZRANGE', $_[0], 0, -1, 'WITHSCORES');
    return @$s[ grep { $_ % 2 } 0 .. $#$s ];
}
