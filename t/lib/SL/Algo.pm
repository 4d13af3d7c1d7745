package SL::Algo;

# Reading the script's stored state in tests (lua/sl_check.lua defines it).

use strict;
use warnings;

use Exporter qw(import);
our @EXPORT = qw(counter_decode store_now);

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

# Redis TIME in microseconds.
sub store_now {
    require SL::Test;
    my $t = SL::Test::redis('TIME');
    return $t->[0] * 1e6 + $t->[1];
}

1;
