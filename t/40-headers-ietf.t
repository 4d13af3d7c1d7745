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

# --- two limits: the burst limit (2/30s) has fewer remaining than the
# hourly one (4/1h), so RateLimit reports it.
my $ip = fresh_ip();
my $kb = sl_key(ip => $ip, policy => 'wire-burst');
my $kh = sl_key(ip => $ip, policy => 'wire-hourly');
for my $i (1 .. 2) {
    my $res = http_get('/wire/two.html', 'X-Forwarded-For' => $ip);
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
    my $zb = redis('ZCARD', $kb);
    my $zh = redis('ZCARD', $kh);
    ok t_cmp("$zb $zh", "$i $i", 'each log in Redis holds every admission');
    ok t_cmp($m->{params}{r}{value}, 2 - $zb, 'r is the quota minus ZCARD');
    my $wait = true_wait_log($kb, 30);
    my $t = $m->{params}{t}{value};
    ok($t >= $wait && $t < $wait + 3,
        "t=$t is the oldest entry's remaining time $wait, rounded up");
}
my $res = http_get('/wire/two.html', 'X-Forwarded-For' => $ip);
ok t_cmp($res->{status}, 429, 'two limits: the third request is refused');
my ($pol, $rl) = parse_pair($res, 'two limits, refused');
ok t_cmp($rl->[0]{value}, 'wire-burst', 'RateLimit names the refusing policy');
ok t_cmp($rl->[0]{params}{r}{value}, 0, '... with r=0');
my $retry = $res->{headers}{'retry-after'};
ok t_cmp($rl->[0]{params}{t}{value}, $retry, 'Retry-After equals t');
my $wait = true_wait_log($kb, 30);
ok($retry >= $wait && $retry < $wait + 3,
    "Retry-After $retry is the true wait $wait by Redis' clock, rounded up");
ok t_cmp(redis('ZCARD', $kb) . ' ' . redis('ZCARD', $kh), '2 2',
    'the refusal consumed nothing from either limit');

# --- a tie on remaining (3/20s and 3/40s): the longer t wins.
$ip = fresh_ip();
my $ks = sl_key(ip => $ip, policy => 'wire-tie-short');
my $kl = sl_key(ip => $ip, policy => 'wire-tie-long');
for my $i (1 .. 3) {
    my $r = http_get('/wire/tie.html', 'X-Forwarded-For' => $ip);
    ok t_cmp($r->{status}, 200, "tie: request $i admitted");
    my ($p, $l) = parse_pair($r, "tie, request $i");
    ok t_cmp($l->[0]{value}, 'wire-tie-long', 'equal r: the longer t is reported');
    ok t_cmp($l->[0]{params}{r}{value}, 3 - redis('ZCARD', $kl),
        'r matches the log in Redis');
    my $w = true_wait_log($kl, 40);
    my $t = $l->[0]{params}{t}{value};
    ok($t >= $w && $t < $w + 3, "t=$t is $w rounded up");
}
$res = http_get('/wire/tie.html', 'X-Forwarded-For' => $ip);
ok t_cmp($res->{status}, 429, 'tie: the fourth request is refused');
($pol, $rl) = parse_pair($res, 'tie, refused');
$retry = $res->{headers}{'retry-after'};
ok t_cmp($rl->[0]{value}, 'wire-tie-long',
    'refused by both: the one with the longer wait is reported');
ok($retry >= true_wait_log($kl, 40) && $retry == $rl->[0]{params}{t}{value},
    "Retry-After $retry covers the longer wait and equals t");
