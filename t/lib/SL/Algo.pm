# SPDX-License-Identifier: Apache-2.0
package SL::Algo;

# Reading the script's stored state in tests (lua/sl_check.lua defines it).

use strict;
use warnings;

use Exporter qw(import);
our @EXPORT = qw(counter_decode store_now counter_admitted_ok script_text);

use File::Basename qw(dirname);
use Cwd qw(abs_path);

# script_text('sl_check') -> the text of lua/sl_check.lua as the module
# runs it (and names it by its SHA-1): tools/embed-lua.sh puts the
# arguments' layout and lua/sl_prelude.lua before the file.
sub script_text {
    my ($name) = @_;
    my $root = abs_path(dirname(__FILE__) . '/../../..');
    (my $var = $name) =~ s/^sl_/sl_script_/;
    my $text = `cd '$root' && sh tools/embed-lua.sh --text lua/$name.lua $var`;
    die "tools/embed-lua.sh $name: $?" if $? || !length $text;
    return $text;
}

# counter_decode($value, $now_us, $win_us) -> (idx, cur, prev) as the script
# sees the key at store time $now_us: the value is "T PPPPPPPPP CCCCCCCCC",
# T = 1 + window index mod 8.
sub counter_decode {
    my ($v, $now, $win) = @_;
    my $idx = int($now / $win);
    return ($idx, 0, 0) unless defined $v && $v =~ /^([1-8])(\d{9})(\d{9})$/;
    my ($tag, $prev, $cur) = ($1, $2 + 0, $3 + 0);
    return ($idx, $cur, $prev) if $tag == $idx % 8 + 1;
    return ($idx, 0, $cur) if $tag == ($idx - 1) % 8 + 1;
    return ($idx, 0, 0);
}

# counter_admitted_ok($admitted, $N, $t0, $t1, $win_us, $name): a burst
# of far more than N requests from a fresh identity against a counter limit
# of N per window, between store times $t0 and $t1. Within one window the
# estimate is the plain count: exactly N. Across a boundary, k admitted
# before it weigh k * (1 - f) at fraction f of the next window, so the
# total is at most N - 1 + floor(k * f) for k < N (N for k = N): N - 1 or
# N while the burst lasts less than a window over N.
sub counter_admitted_ok {
    my ($ok, $N, $t0, $t1, $win, $name) = @_;
    require Test::More;
    if (int($t0 / $win) == int($t1 / $win)) {
        return Test::More::ok($ok == $N, "$name: exactly $N admitted ($ok), the burst in one window");
    }
    Test::More::ok($t1 - $t0 < $win / $N && ($ok == $N || $ok == $N - 1),
        "$name: $ok admitted across a window boundary, $N or " . ($N - 1));
}

# Redis TIME in microseconds.
sub store_now {
    require SL::Test;
    my $t = SL::Test::redis('TIME');
    return $t->[0] * 1e6 + $t->[1];
}

1;
