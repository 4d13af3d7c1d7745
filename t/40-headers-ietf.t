# SPDX-License-Identifier: Apache-2.0
# RateLimit-Policy and RateLimit read with a real structured-field parser
# (t/sf/parse.js: npm structured-headers) and checked against Redis: two
# limits in one section, the most restrictive one reported (fewest
# remaining, ties to the longer t), and a refusal that consumes nothing.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use POSIX qw(ceil);
use SL::Test;
use SL::Wire;

plan tests => 58;

# One RateLimit-Policy / RateLimit pair, parsed strictly: a List whose
# members are sf-strings with Integer parameters, serialized canonically
# (so "1.0", tokens or stray spaces would fail).
sub parse_pair {
    my ($res, $what) = @_;
    my $h = $res->{headers};
    my $pol = sf_parse('list', $h->{'ratelimit-policy'} // '');
    ok($pol, "$what: RateLimit-Policy parses as an sf-list") or diag $@;
    my $rl = sf_parse('list', $h->{ratelimit} // '');
    ok($rl, "$what: RateLimit parses as an sf-list") or diag $@;
    $pol //= { members => [], canonical => '' };
    $rl  //= { members => [], canonical => '' };
    my @bad = grep {
        my $m = $_;
        $m->{type} ne 'string'
          || grep { $m->{params}{$_}{type} ne 'integer' } keys %{ $m->{params} }
    } @{ $pol->{members} }, @{ $rl->{members} };
    ok(!@bad && $pol->{canonical} eq $h->{'ratelimit-policy'}
          && $rl->{canonical} eq $h->{ratelimit},
        "$what: names are sf-strings, parameters Integers, canonical form");
    return (sf_list_by_name($pol), $rl->{members});
}

# The requests of each case are made first, with the store's clock around
# each and the logs' sizes after each; the checks follow (every parse runs
# a node process, which takes a while on a loaded host). A wait is the
# exact time until a log entry expires (log_expiry) minus the decision's
# store time, rounded up: between wait_range's bounds.

# --- two limits: the burst limit (2/30s) has fewer remaining than the
# hourly one (4/1h), so RateLimit reports it.
my $ip = fresh_ip();
my $kb = sl_key(ip => $ip, policy => 'wire-burst');
my $kh = sl_key(ip => $ip, policy => 'wire-hourly');
my @two = map {
    my ($res, $t0, $t1) = http_get_timed('/wire/two.html', 'X-Forwarded-For' => $ip);
    { res => $res, t0 => $t0, t1 => $t1, zb => redis('ZCARD', $kb), zh => redis('ZCARD', $kh) };
} 1 .. 3;
my $Eb = log_expiry($kb, 30);
for my $i (1 .. 2) {
    my ($res, $x) = ($two[ $i - 1 ]{res}, $two[ $i - 1 ]);
    ok t_cmp($res->{status}, 200, "two limits: request $i admitted");
    my ($pol, $rl) = parse_pair($res, "two limits, request $i");
    is_deeply([ sort keys %$pol ], [qw(wire-burst wire-hourly)],
        'RateLimit-Policy lists both policies');
    ok($pol->{'wire-burst'}{q}{value} == 2 && $pol->{'wire-burst'}{w}{value} == 30
          && $pol->{'wire-hourly'}{q}{value} == 4
          && $pol->{'wire-hourly'}{w}{value} == 3600,
        'q and w are the configured quota and window in seconds');
    ok t_cmp(scalar(@$rl), 1, 'RateLimit reports one policy');
    my $m = $rl->[0];
    ok t_cmp($m->{value}, 'wire-burst', 'the one with the fewest remaining');
    ok t_cmp("$x->{zb} $x->{zh}", "$i $i", 'each log in Redis holds every admission');
    ok t_cmp($m->{params}{r}{value}, 2 - $x->{zb}, 'r is the quota minus ZCARD');
    my ($lo, $hi) = wait_range($Eb, $x->{t0}, $x->{t1});
    my $t = $m->{params}{t}{value};
    ok($t >= $lo && $t <= $hi, "t=$t is the oldest entry's remaining time, rounded up ($lo..$hi)");
}
my ($res, $x) = ($two[2]{res}, $two[2]);
ok t_cmp($res->{status}, 429, 'two limits: the third request is refused');
my ($pol, $rl) = parse_pair($res, 'two limits, refused');
ok t_cmp($rl->[0]{value}, 'wire-burst', 'RateLimit names the refusing policy');
ok t_cmp($rl->[0]{params}{r}{value}, 0, '... with r=0');
my $retry = $res->{headers}{'retry-after'};
ok t_cmp($rl->[0]{params}{t}{value}, $retry, 'Retry-After equals t');
my ($lo, $hi) = wait_range($Eb, $x->{t0}, $x->{t1});
ok($retry >= $lo && $retry <= $hi,
    "Retry-After $retry is the true wait by Redis' clock, rounded up ($lo..$hi)");
ok t_cmp("$x->{zb} $x->{zh}", '2 2', 'the refusal consumed nothing from either limit');

# --- a tie on remaining (3/20s and 3/40s): the longer t wins.
$ip = fresh_ip();
my $kl = sl_key(ip => $ip, policy => 'wire-tie-long');
my @tie = map {
    my ($r, $t0, $t1) = http_get_timed('/wire/tie.html', 'X-Forwarded-For' => $ip);
    { res => $r, t0 => $t0, t1 => $t1, zl => redis('ZCARD', $kl) };
} 1 .. 4;
my $El = log_expiry($kl, 40);
for my $i (1 .. 3) {
    my $x = $tie[ $i - 1 ];
    ok t_cmp($x->{res}{status}, 200, "tie: request $i admitted");
    my ($p, $l) = parse_pair($x->{res}, "tie, request $i");
    ok t_cmp($l->[0]{value}, 'wire-tie-long', 'equal r: the longer t is reported');
    ok t_cmp($l->[0]{params}{r}{value}, 3 - $x->{zl}, 'r matches the log in Redis');
    my ($lo, $hi) = wait_range($El, $x->{t0}, $x->{t1});
    my $t = $l->[0]{params}{t}{value};
    ok($t >= $lo && $t <= $hi, "t=$t is the long log's wait rounded up ($lo..$hi)");
}
$x = $tie[3];
ok t_cmp($x->{res}{status}, 429, 'tie: the fourth request is refused');
($pol, $rl) = parse_pair($x->{res}, 'tie, refused');
$retry = $x->{res}{headers}{'retry-after'};
ok t_cmp($rl->[0]{value}, 'wire-tie-long',
    'refused by both: the one with the longer wait is reported');
($lo, $hi) = wait_range($El, $x->{t0}, $x->{t1});
ok($retry >= $lo && $retry <= $hi && $retry == $rl->[0]{params}{t}{value},
    "Retry-After $retry is the longer wait ($lo..$hi) and equals t");
