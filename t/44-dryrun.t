# SPDX-License-Identifier: Apache-2.0
# SlidingLimitDryRun on: decided, reported and logged, never blocked; an
# over-limit request passes with r=0, no Retry-After, and consumes nothing.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Wire;

plan tests => 26;

my $ip = fresh_ip();
my $key = sl_key(ip => $ip, policy => 'wire-dryrun');
my $id = test_id('dryrun');
for my $i (1 .. 5) {
    my ($res, $t0, $t1) = http_get_timed('/wire/dryrun.html', 'X-Forwarded-For' => $ip,
        'X-Test-Id' => "$id.$i");
    my ($lo, $hi) = wait_range(log_expiry($key, 60), $t0, $t1);
    my $h = $res->{headers};
    ok t_cmp($res->{status}, 200, "request $i passes");
    ok t_cmp($res->{content}, qr/wire dryrun ok/, "request $i served");
    my $rl = sf_parse('list', $h->{ratelimit} // '');
    my $r = $rl ? $rl->{members}[0]{params}{r}{value} : -1;
    if ($i <= 2) {
        ok t_cmp($r, 2 - $i, "request $i: r counts down");
    }
    else {
        ok(!defined $h->{'retry-after'} && $r == 0,
            "request $i: over the limit, r=0 and no Retry-After");
    }
    my $t = $rl ? $rl->{members}[0]{params}{t}{value} : -1;
    ok($t >= $lo && $t <= $hi, "request $i: t=$t matches Redis ($lo..$hi)");
}
ok t_cmp(redis('ZCARD', $key), 2, 'over-limit requests consumed nothing');
my @results = map { $_->{result} } @{ wire_log($id, 5) };
ok t_cmp("@results", 'allowed allowed dryrun-denied dryrun-denied dryrun-denied',
    'logged as allowed, then dryrun-denied');
my @rem = map { $_->{remaining} } @{ wire_log($id, 5) };
ok t_cmp("@rem", '1 0 0 0 0', 'SLIDINGLIMIT_REMAINING logged');
# HEAD over the limit passes too
my $res = http_get({ method => 'HEAD' }, '/wire/dryrun.html', 'X-Forwarded-For' => $ip);
ok(($res->{status} == 200 && !defined $res->{headers}{'retry-after'}
        && defined $res->{headers}{ratelimit}),
    'HEAD over the limit passes with the quota headers');
ok t_cmp(redis('ZCARD', $key), 2, '... and consumes nothing');
# Dry run counts on the status page as dryrun-denied, never as denied.
my $m = metrics();
ok t_cmp(metric($m, 'slidinglimit_decisions_total', result => 'denied',
        policy => 'wire-dryrun'), 0, 'no "denied" decision for a dry-run policy');
