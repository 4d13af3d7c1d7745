# SPDX-License-Identifier: Apache-2.0
# lua/sl_allot.lua for the counter, called directly (EVAL in the suite's
# Redis): a grant is made only when its deadline ends inside the fixed
# window that counts it, and only in windows of at least two deadlines; it
# holds at most half the room and is counted in the current window, where
# the check sees it; its unused units go back once, into the same window
# only, and never after an operator's reset (DEL of the key and its
# epoch). Each situation is forced: the window's length is chosen so that
# the store's time falls where the case needs it, far from any edge.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Time::HiRes qw(sleep);
use SL::Test;
use SL::Algo;

plan tests => 9 + 3 + 4 + 3 + 3 + 3 + 2;

my $allot = script_text('sl_allot');
my $check = script_text('sl_check');
my $p     = 'sltest:{allot-script-' . $$ . '}';
my $D     = 1_000_000;

END {
    my $keys = eval { redis('KEYS', "sltest:{allot-script-$$}*") } || [];
    eval { redis('DEL', $_) } for @$keys;
}

# allot($key, $id, $D, $limit, $win, $want, [$gid, $gk, $unused]): one
# counter limit of cost 1.
sub allot {
    my ($key, $id, $d, $limit, $win, $want, $gid, $gk, $unused) = @_;
    return redis('EVAL', $allot, 1, $key, $id, $d, 'c', $limit, $win, $limit, 1, $want,
        $gid // '-', $gk // 0, 0, $unused // 0);
}

sub give_back {
    my ($key, $gid, $gk, $unused, $win) = @_;
    return allot($key, 'g' . $gid, $D, 1000, $win, 0, $gid, $gk, $unused);
}

# A window of at least $min microseconds whose end is between $lo and $hi
# microseconds after the store's now: found by trying lengths (the
# windows' ends move pseudo-randomly with the length), then checked again
# after the call by the caller.
sub window_ending_in {
    my ($lo, $hi, $min, $max) = @_;
    my $now = store_now();
    for (my $win = $min; !$max || $win < $max; $win += 997) {
        my $left = (int($now / $win) + 1) * $win - $now;
        return $win if $left >= $lo && $left <= $hi;
    }
    die "no window of $min to $max us ends $lo to $hi us from now";
}

# A window of 4 s or more, 2.5 to 3.5 s of it left: room for a block's
# calls, each case given its own.
sub long_window { window_ending_in(2.5e6, 3.5e6, 4e6) }

# The count of the current window and the previous one, as the check reads
# them now.
sub counts {
    my ($key, $win) = @_;
    my (undef, $cur, $prev) = counter_decode(redis('GET', $key), store_now(), $win);
    return ($cur, $prev);
}

# Far from the window's end: a grant of what was asked (at most half the
# room), counted in the current window, with its record and the epoch.
{
    my $win = long_window();
    my $key = "$p.far.c";
    my $r = allot($key, 'grant-far-01', $D, 1000, $win, 50);
    is($r->[2], 1, 'far from the window end: granted');
    is($r->[3], 50, '... the 50 units asked for');
    is($r->[4], 950, '... 950 left after them');
    is($r->[5], 0, '... no log score');
    my ($cur, $prev) = counts($key, $win);
    ok($cur == 50 && $prev == 0, "... counted in the current window ($cur, previous $prev)");
    ok(redis('EXISTS', "$key.a") == 1 && redis('EXISTS', "$key.agrant-far-01") == 1,
        '... the key has an epoch and the grant a record');
    my $pttl = redis('PTTL', "$key.agrant-far-01");
    ok($pttl > 0 && $pttl <= 3.5e3 + 2, "... which lives until the window ends ($pttl ms)");
    # Half the room at most: 950 left, then 475, of a want of 600.
    $r = allot($key, 'grant-far-02', $D, 1000, $win, 600);
    is($r->[3], 475, 'a want above half the room gets half of it (475)');
    # The check counts the grants: 1000 - 525 more admissions at most.
    my $ok = 0;
    for my $i (1 .. 480) {
        $ok += redis('EVAL', $check, 1, $key, "m$i", 'c', 1000, $win, 1000, 1, 0)->[2];
    }
    is($ok, 475, 'the check admits only what the grants left (475 of 480)');
}

# Within D of the window's end: nothing granted, nothing written.
{
    my $near = window_ending_in(0.2e6, 0.8e6, 4e6);
    my $key  = "$p.near.c";
    my $r    = allot($key, 'grant-near01', $D, 1000, $near, 50);
    my $now  = store_now();
    my $left = (int($now / $near) + 1) * $near - $now;
    ok($left > 0, "the call was inside the window ($left us to its end)");
    is($r->[2], 0, 'within D of the window end: not granted');
    is(redis('EXISTS', $key) + redis('EXISTS', "$key.a"), 0, '... and nothing written');
}

# A window under two deadlines: never a grant, wherever now is in it; a
# shorter deadline makes it long enough.
{
    my $short = window_ending_in(1.2e6, 1.8e6, 1.9e6, 2e6);
    my $key   = "$p.short.c";
    my $r     = allot($key, 'grant-short1', $D, 1000, $short, 50);
    is($r->[2], 0, 'a window under 2 D (with more than D left): not granted');
    is(redis('EXISTS', $key), 0, '... nothing written');
    $r = allot($key, 'grant-short2', $D / 2, 1000, $short, 50);
    is($r->[2], 1, '... granted with a deadline of half of it');
    my $win = long_window();
    redis('SET', "$p.full.c", sprintf('%d%09d%09d', int(store_now() / $win) % 8 + 1, 0, 1000), 'PX', 60000);
    $r = allot("$p.full.c", 'grant-full02', $D, 1000, $win, 50);
    is($r->[2], 0, 'no room: not granted');
}

# Give-back: once, into the same window, never below 0.
{
    my $win = long_window();
    my $key = "$p.back.c";
    my $r = allot($key, 'grant-back01', $D, 1000, $win, 40);
    give_back($key, 'grant-back01', 40, 30, $win);
    my ($cur) = counts($key, $win);
    is($cur, 10, 'the unused 30 of 40 go back (10 counted)');
    give_back($key, 'grant-back01', 40, 30, $win);
    ($cur) = counts($key, $win);
    is($cur, 10, 'a second give-back of the same grant does nothing');
    # More than the window holds now (another give-back took some): never
    # below 0.
    allot($key, 'grant-back02', $D, 1000, $win, 20);
    redis('SET', $key, sprintf('%d%09d%09d', int(store_now() / $win) % 8 + 1, 0, 5), 'PX', 60000);
    give_back($key, 'grant-back02', 20, 20, $win);
    ($cur) = counts($key, $win);
    is($cur, 0, 'a give-back never takes the count below 0');
}

# Another window: a record made to outlive its window (PERSIST) gives
# nothing back into the next one, where the count weighs as the previous.
{
    my $w   = window_ending_in(60e3, 90e3, 150e3);
    my $key = "$p.next.c";
    my $r   = allot($key, 'grant-next01', 1000, 1000, $w, 40);
    is($r->[2], 1, 'a grant in a window of 150 ms with 1 ms deadlines');
    redis('PERSIST', "$key.agrant-next01");
    my $t = store_now();
    sleep(((int($t / $w) + 1) * $w - $t) / 1e6 + 0.01);
    my $before = redis('GET', $key);
    allot($key, 'ggrant-next01', 1000, 1000, $w, 0, 'grant-next01', 40, 30);
    is(redis('GET', $key), $before, 'in the next window, a give-back changes nothing');
    is(redis('EXISTS', "$key.agrant-next01"), 0, '... and uses up the record');
}

# An operator's reset deletes the key and its epoch: a grant made before
# it gives nothing back into the counts made after it.
{
    my $win = long_window();
    my $key = "$p.reset.c";
    allot($key, 'grant-reset1', $D, 1000, $win, 40);
    redis('DEL', $key, "$key.a");
    give_back($key, 'grant-reset1', 40, 30, $win);
    is(redis('EXISTS', $key), 0, 'after a reset, a late give-back writes nothing');
    allot($key, 'grant-reset2', $D, 1000, $win, 40);
    allot($key, 'grant-reset3', $D, 1000, $win, 40);
    redis('DEL', $key, "$key.a");
    redis('SET', $key, sprintf('%d%09d%09d', int(store_now() / $win) % 8 + 1, 0, 100), 'PX', 60000);
    give_back($key, 'grant-reset2', 40, 30, $win);
    my ($cur) = counts($key, $win);
    is($cur, 100, 'after a reset, a grant of before gives nothing back into new counts');
    # A new epoch (a grant after the reset) does not adopt the old records.
    allot($key, 'grant-reset4', $D, 1000, $win, 40);
    give_back($key, 'grant-reset3', 40, 30, $win);
    ($cur) = counts($key, $win);
    is($cur, 140, '... nor after a new grant made a new epoch (100 + 40)');
}

# Bad arguments: an unknown algorithm is still refused.
{
    my $win = long_window();
    my $r = eval { redis('EVAL', $allot, 1, "$p.bad.c", 'grant-bad-01', $D, 'x', 1000, $win, 1000, 1, 50, '-', 0, 0, 0); 1 };
    ok(!$r && $@ =~ /bad limit/, 'an unknown algorithm is refused');
    $r = eval { redis('EVAL', $allot, 1, "$p.bad.c", 'grant-bad-02', $D, 'c', 1000, $win, 1000, 1, 1001, '-', 0, 0, 0); 1 };
    ok(!$r && $@ =~ /bad limit/, 'a want above the counter limit is refused');
}
