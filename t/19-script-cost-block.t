# SPDX-License-Identifier: Apache-2.0
# lua/sl_check.lua's cost and block arguments and lua/sl_give_back.lua (the
# give-back of count=), called directly in the suite's Redis: a request of
# cost N consumes N units and waits until N fit; a refusal with a block
# keeps the limit refused in the store until the block ends, whatever the
# algorithm's own state; the give-back undoes exactly the reservation, in
# the window it went into, and under gcra no more of it than is still
# charged. On the log a request is one entry whatever its cost.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Algo;

plan tests => 3 * 4 + 4 + 5 + 4 + 3 + 4 + 8 + 10 + 5 + 2;

my $check  = script_text('sl_check');
my $give_back = script_text('sl_give_back');
my $p      = 'sltest:{cost-' . $$ . '}';

END {
    my $keys = eval { redis('KEYS', "sltest:{cost-$$}*") } || [];
    eval { redis('DEL', $_) } for @$keys;
}

sub check  { redis('EVAL', $check,  @_) }
sub give_back { redis('EVAL', $give_back, @_) }

sub err_of {
    my ($script, @a) = @_;
    my $r = eval { redis('EVAL', $script, @a); '' };
    return defined $r ? $r : $@;
}

# cost=3 on a limit of 10: 7, 4, 1 left, the fourth waits until 3 fit.
for my $alg (qw(l c g)) {
    my $key = "$p.three.$alg";
    my @left;
    for my $m (1 .. 3) {
        my $r = check(1, $key, "m$m", $alg, 10, 3600e6, 10, 3, 0);
        push @left, $r->[2] ? $r->[4] : 'refused';
    }
    ok t_cmp("@left", '7 4 1', "$alg: cost 3 on 10 leaves 7, 4, 1");
    my $r = check(1, $key, 'm4', $alg, 10, 3600e6, 10, 3, 0);
    ok($r->[2] == 0 && $r->[3] == 0 && $r->[4] == 0 && $r->[5] > 0,
        "$alg: the fourth is refused, 0 left, wait $r->[5] us");
    $r = check(1, $key, 'm5', $alg, 10, 3600e6, 10, 1, 0);
    ok($r->[2] == 1 && $r->[4] == 0, "$alg: ... while a request of cost 1 still fits");
    ok t_cmp(err_of($check, 1, $key, 'm', $alg, 10, 3600e6, 10, 11, 0),
        qr/ERR slidinglimit: bad cost 1/, "$alg: a cost above the limit is the caller's to refuse");
}
{
    my $key = "$p.members.l";
    check(1, $key, 'req', 'l', 10, 60e6, 10, 3, 0);
    my $m = redis('ZRANGE', $key, 0, -1);
    ok t_cmp(join(',', sort @$m), qr/^#\d{16},3\*req$/, 'log: one entry for the request, named with its weight, and the total');
    ok t_cmp(err_of($check, 1, "$p.g", 'm', 'g', 10, 60e6, 2, 3, 0),
        qr/bad cost 1/, 'gcra: a cost above the burst is refused');
    ok t_cmp(err_of($check, 1, "$p.g", 'm', 'g', 10, 60e6, 2, 0, 0),
        qr/bad cost 1/, 'a cost of 0 is refused');
    ok t_cmp(err_of($check, 1, "$p.g", 'm', 'g', 10, 60e6, 2, 1, '1e6'),
        qr/bad limit 1/, 'a block in another notation is refused');
}

# A million units on the log are one entry: the script's work and the
# key's memory do not grow with a cost. A refusal waits until enough
# weight has left the window.
{
    my $key = "$p.million.l";
    my @r = map { check(1, $key, "big$_", 'l', 2_500_000, 60e6, 2_500_000, 1_000_000, 0) } 1 .. 3;
    ok t_cmp(join(' ', map { $_->[2] ? $_->[4] : 'refused' } @r), '1500000 500000 refused',
        'log: cost 1000000 on 2500000 leaves 1500000, 500000, then refuses');
    my $t1 = $r[0][0] * 1e6 + $r[0][1];
    my $t3 = $r[2][0] * 1e6 + $r[2][1];
    ok t_cmp($r[2][5], $t1 + 60e6 - $t3, '... until the first million leaves the window');
    ok t_cmp(redis('ZCOUNT', $key, '(0', '+inf'), 2, '... which holds two entries');
    ok t_cmp(redis('ZSCORE', $key, '1000000*big1'), $t1, '... each named with its weight');
    my $bytes = redis('MEMORY', 'USAGE', $key);
    ok($bytes < 512, "... in $bytes bytes");
}
{
    # Units 0-2 are a's, 3 is b's, 4-7 are c's: a request of cost k waits
    # for unit 8 + k - 10 - 1 to leave.
    my $key = "$p.weights.l";
    my %t;
    for (['a', 3], ['b', 1], ['c', 4]) {
        my $x = check(1, $key, $_->[0], 'l', 10, 60e6, 10, $_->[1], 0);
        $t{ $_->[0] } = $x->[0] * 1e6 + $x->[1];
    }
    for ([5, 'a'], [6, 'b'], [7, 'c'], [10, 'c']) {
        my ($cost, $who) = @$_;
        my $x = check(1, $key, 'late', 'l', 10, 60e6, 10, $cost, 0);
        my $now = $x->[0] * 1e6 + $x->[1];
        ok($x->[2] == 0 && $x->[5] == $t{$who} + 60e6 - $now,
            "log: costs 3, 1, 4 on 10: cost $cost waits for $who to leave ($x->[5] us)");
    }
}

# A refusal's wait reads at most 1024 entries (src/sl_algo.c replays the
# same): 2000 requests of one unit on a limit of 3000, 1 ms apart. Through
# 1000 or 1024 entries the wait is exact; past them it is the newest
# entry's expiry (later, never earlier).
{
    my $key = "$p.walk.l";
    my $t0  = store_now() - 10e6;
    redis('ZADD', $key, map { ($t0 + $_ * 1000, "1*w$_") } 0 .. 1999);
    redis('PEXPIRE', $key, 60000);
    for ([2000, 999], [2024, 1023], [2025, 1999]) {
        my ($cost, $entry) = @$_;
        my $x   = check(1, $key, 'big', 'l', 3000, 3600e6, 3000, $cost, 0);
        my $now = $x->[0] * 1e6 + $x->[1];
        ok($x->[2] == 0 && $x->[5] == $t0 + $entry * 1000 + 3600e6 - $now,
            "log: cost $cost on 2000 of 3000 waits for entry $entry ($x->[5] us)");
    }
}

# A key of the previous layout, one member per unit named member,
# member/2 .. (one here looks like a weighted name), is read as it is:
# each of its members is one unit, before and after a request of more
# than one unit adds the window's total. Two windows on one key make the
# old members expire between two calls without a wait.
{
    my $key  = "$p.upgrade.l";
    my $then = store_now() - 30e6;
    redis('ZADD', $key, $then, 'old', $then, 'old/2', $then, '7*old');
    my $r = check(1, $key, 'new', 'l', 10, 60e6, 10, 2, 0);
    ok t_cmp($r->[4], 5, 'upgrade: 3 old members are 3 units; 2 more leave 5');
    my $total = redis('ZRANGE', $key, 0, 0, 'WITHSCORES');
    ok t_cmp($total->[1], -5, '... and the total made counts them so');
    $r = check(1, $key, 'one', 'l', 10, 1e6, 10, 1, 0);
    ok t_cmp($r->[4], 7, '... once they left the window, 3 units left with them');
    ok t_cmp(join(' ', @{ redis('ZRANGE', $key, 0, -1, 'WITHSCORES') }), qr/^#\d{16} -3 2\*new \d+ 1\*one \d+$/,
        '... the log holds the two new requests and their total');
}

# block: 2 per 60 s with a 2 s block. The third request starts the block;
# once the algorithm's own state is gone (the window freed) the limit still
# refuses until the block ends, which a refusal during it does not move.
{
    my $key = "$p.block.l";
    check(1, $key, "m$_", 'l', 2, 60e6, 2, 1, 2e6) for 1 .. 2;
    my $r = check(1, $key, 'm3', 'l', 2, 60e6, 2, 1, 2e6);
    ok($r->[2] == 0 && $r->[5] > 59e6, "refused by the log itself (wait $r->[5] us, longer than the block)");
    my $end = redis('GET', "$key.b");
    my $now = $r->[0] * 1e6 + $r->[1];
    ok t_cmp($end, $now + 2e6, 'the block is kept in the store: its end');
    my $pttl = redis('PTTL', "$key.b");
    ok($pttl > 1000 && $pttl <= 2001, "... for as long as it runs ($pttl ms)");
    redis('DEL', $key);    # the window freed
    $r = check(1, $key, 'm4', 'l', 2, 60e6, 2, 1, 2e6);
    my $now4 = $r->[0] * 1e6 + $r->[1];
    ok($r->[2] == 0 && $r->[4] == 0 && $r->[5] == $end - $now4,
        "with room in the window the block still refuses, until its end ($r->[5] us)");
    ok t_cmp(redis('EXISTS', $key), 0, '... without touching the limit\'s own key');
    ok t_cmp(redis('GET', "$key.b"), $end, 'a refusal during the block does not extend it');
    redis('DEL', "$key.b");    # the block ended
    $r = check(1, $key, 'm5', 'l', 2, 60e6, 2, 1, 2e6);
    ok t_cmp($r->[2], 1, 'after the block: admitted');

    # A short wait of the algorithm: the block's end is the reset.
    my $g = "$p.block.g";
    check(1, $g, 'a', 'g', 1, 1e6, 1, 1, 30e6);
    $r = check(1, $g, 'b', 'g', 1, 1e6, 1, 1, 30e6);
    ok($r->[2] == 0 && $r->[5] == 30e6, "gcra refusal of 1 s with a 30 s block: reset is the block ($r->[5] us)");
}
{
    # Foreign data in a block key: a number beyond one block ends one block
    # from now; anything else is no block.
    my $key = "$p.bforeign.c";
    redis('SET', "$key.b", 'inf');
    my $r = check(1, $key, 'm', 'c', 5, 60e6, 5, 1, 5e6);
    ok($r->[2] == 0 && $r->[5] == 5e6, "a block key holding 'inf' ends one block from now");
    redis('SET', "$key.b", 'garbage');
    $r = check(1, $key, 'm', 'c', 5, 60e6, 5, 1, 5e6);
    ok t_cmp($r->[2], 1, 'a block key holding garbage is no block');
}

# The give-back.
{
    my $key = "$p.give_back.l";
    check(1, $key, 'keep', 'l', 10, 60e6, 10, 1, 0);
    my $r = check(1, $key, 'req', 'l', 10, 60e6, 10, 3, 0);
    my $at = $r->[0] * 1e6 + $r->[1];
    my $back = give_back(1, $key, 'req', $at, 'l', 10, 60e6, 3);
    ok t_cmp("@$back", '3', 'log: 3 units back');
    ok t_cmp(join(',', @{ redis('ZRANGE', $key, 0, -1) }), '1*keep', '... the request\'s own entry, no other, and no total left');
    $back = give_back(1, $key, 'req', $at, 'l', 10, 60e6, 3);
    ok t_cmp("@$back", '0', '... and only once');
}
{
    my $key = "$p.give_back.c";
    my $win = 366 * 86400e6;    # one window for the whole test
    my $r = check(1, $key, 'm', 'c', 10, $win, 10, 2, 0);
    check(1, $key, 'm', 'c', 10, $win, 10, 2, 0);
    my $at = $r->[0] * 1e6 + $r->[1];
    my $back = give_back(1, $key, 'm', $at, 'c', 10, $win, 2);
    my $now = store_now();
    my ($idx, $cur, $prev) = counter_decode(redis('GET', $key), $now, $win);
    ok($back->[0] == 2 && $cur == 2, "counter: 2 units back from the current window (cur $cur)");
    ok(redis('PTTL', $key) > 0, '... the key keeps its TTL');

    # Window boundaries, with a short window and values written as the
    # check writes them: the reservation went into window $ri.
    my $w = 86400e6;
    $idx = int($now / $w);
    my $ri = $idx - 1;
    my $at1 = $ri * $w + 1;
    redis('SET', $key, sprintf('%d%09d%09d', $ri % 8 + 1, 0, 3), "PX", 60000);
    give_back(1, $key, 'm', $at1, 'c', 10, $w, 1);
    ok t_cmp(redis('GET', $key), sprintf('%d%09d%09d', $ri % 8 + 1, 0, 2),
        'counter: window moved on, nothing written since: its count, the current one then');
    redis('SET', $key, sprintf('%d%09d%09d', $idx % 8 + 1, 3, 1), "PX", 60000);
    give_back(1, $key, 'm', $at1, 'c', 10, $w, 1);
    ok t_cmp(redis('GET', $key), sprintf('%d%09d%09d', $idx % 8 + 1, 2, 1),
        'counter: window moved on and written since: the previous count');
    give_back(1, $key, 'm', ($idx - 2) * $w, 'c', 10, $w, 1);
    ok t_cmp(redis('GET', $key), sprintf('%d%09d%09d', $idx % 8 + 1, 2, 1),
        'counter: a reservation two windows old weighs nothing: unchanged');
}
{
    my $key = "$p.give_back.g";
    my $r = check(1, $key, 'm', 'g', 10, 10e6, 10, 2, 0);
    my $at = $r->[0] * 1e6 + $r->[1];
    ok t_cmp(redis('GET', $key), $at + 2e6, 'gcra: cost 2 moved the TAT by 2 intervals');
    my $back = give_back(1, $key, 'm', $at, 'g', 10, 10e6, 2);
    my $tat = redis('GET', $key);
    my $now = store_now();
    ok($back->[0] == 2 && $tat >= $at && $tat <= $now, "gcra: the TAT back to now, never below ($tat)");

    # 2 units at 1 per second, admitted 1.5 s ago behind another request's
    # 2: the TAT is 2.5 s ahead, and 0.5 s of the request's own charge is
    # left. Only that goes back: the other request's charge stays.
    my $now0 = store_now();
    redis('SET', $key, $now0 + 2.5e6, 'PX', 10000);
    $back = give_back(1, $key, 'm', $now0 - 1.5e6, 'g', 10, 10e6, 2);
    $tat = redis('GET', $key);
    ok($tat >= $now0 + 2e6 && $tat < $now0 + 2.5e6,
        sprintf('gcra: a charge decayed to 0.5 s gives back no more (TAT %.3f s ahead)', ($tat - $now0) / 1e6));
    ok t_cmp($back->[0], 1, '... which is one unit, rounded up');
    ok t_cmp(err_of($give_back, 1, $key, 'm', 'x', 'g', 10, 10e6, 2), qr/bad arguments/, 'give back: a bad time is refused');
    ok t_cmp(err_of($give_back, 1, $key, 'm', $at, 'g', 10, 10e6), qr/bad arguments/, 'give back: missing arguments are refused');
    ok t_cmp(err_of($give_back, 1, $key, 'm', $at, 'z', 10, 10e6, 1), qr/bad algorithm 1/, 'give back: unknown algorithm');
}
