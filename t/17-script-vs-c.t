# SPDX-License-Identifier: Apache-2.0
# The Redis script and the shm store's C (src/sl_algo.c) decide alike, to
# the microsecond: random call sequences run through lua/sl_check.lua in the
# suite's Redis (real TIME), then bench/accuracy_replay feeds the same store
# times through sl_algo.c and compares every (ok, remaining, reset),
# requests of several units (cost=) and blocks (block=) included.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Algo;
use Time::HiRes qw(sleep);

my $root = Apache::Test::vars('serverroot') . '/..';
my $bin  = "$root/bench/results/accuracy-replay";

# alg, limit, window (us), burst, cost (-k: 1 to k, drawn per call), block
# (us): windows short enough
# that many expire or roll over during the run, intervals that are not
# whole microseconds (gcra 7 per 50 ms, 3 per 10 ms), costs that leave
# room for fewer than one more request, blocks longer and shorter than the
# algorithm's own wait.
my @cases = (
    [ 'l', 5,  50_000, 5,  1, 0 ],
    [ 'l', 3,  10_000, 3,  1, 0 ],
    [ 'c', 5,  50_000, 5,  1, 0 ],
    [ 'c', 7,  20_000, 7,  1, 0 ],
    [ 'c', 1,  5_000,  1,  1, 0 ],
    [ 'g', 5,  50_000, 3,  1, 0 ],
    [ 'g', 7,  50_000, 7,  1, 0 ],
    [ 'g', 3,  10_000, 9,  1, 0 ],
    [ 'l', 10, 50_000, 10, 3, 0 ],
    [ 'c', 10, 20_000, 10, 4, 0 ],
    [ 'g', 10, 50_000, 6,  4, 0 ],
    [ 'l', 3,  10_000, 3,  1, 15_000 ],
    [ 'c', 5,  20_000, 5,  2, 30_000 ],
    [ 'g', 5,  20_000, 5,  2, 3_000 ],
    # A cost drawn per call, 1 to 4: the log's entries of several weights.
    [ 'l', 10, 50_000, 10, -4, 0 ],
    [ 'l', 7,  20_000, 7,  -4, 20_000 ],
    [ 'g', 10, 50_000, 6,  -4, 0 ],
);
my $CALLS = 150;
plan tests => 3;

# The replay tool is built with what the module needs (cc, the APR
# headers), which make test installs: failing to build it fails the test.
my $build = `make -s -C '$root' bench/results/accuracy-replay 2>&1`;
ok(!$? && -x $bin, 'bench/accuracy_replay.c builds') or diag($build);

my $script = script_text('sl_check');
# One connection for the whole sequence: a call takes a fraction of a
# millisecond, well under the shortest emission interval (5 ms), so calls
# without a pause between them overrun the limits however slow the host.
my $r = redis_connect();
my $sha = $r->('SCRIPT', 'LOAD', $script);
srand(17);
my @lines;
my ($allowed, $refused) = (0, 0);
for my $i (0 .. $#cases) {
    my ($alg, $n, $w, $b, $cost, $block) = @{ $cases[$i] };
    my $key = "sltest:{xcheck-$$-$i}.$alg";
    $r->('DEL', $key, "$key.b");
    my $draw = $cost;
    for my $j (1 .. $CALLS) {
        $cost = 1 + int(rand(-$draw)) if $draw < 0;
        my $x = $r->('EVALSHA', $sha, 1, $key, "m$j", $alg, $n, $w, $b, $cost, $block);
        my $now = $x->[0] * 1_000_000 + $x->[1];
        push @lines, join(' ', "k$i", $alg, $n, $w, $b, $cost, $block, $now, @$x[ 3 .. 5 ]);
        $x->[2] ? $allowed++ : $refused++;
        # Bursts and pauses of up to two emission intervals.
        sleep(rand(2 * $w / $n) / 1e6) if rand() < 0.5;
    }
    # Not of the module's key shape, which other tests check for.
    $r->('DEL', $key, "$key.b");
}
t_debug("$allowed admitted, $refused refused");
ok($allowed > 200 && $refused > 200, "the sequences admit ($allowed) and refuse ($refused)");

my $trace = "$root/t/xcheck-$$.txt";
open my $fh, '>', $trace or die "$trace: $!";
print $fh "$_\n" for @lines;
close $fh;
my $out = `'$bin' < '$trace' 2>&1`;
t_debug($out);
ok t_cmp($out, qr/^\d+ calls, 0 mismatches$/m, 'sl_algo.c gives the script\'s answers on every call');
unlink $trace;
