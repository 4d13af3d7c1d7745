# SPDX-License-Identifier: Apache-2.0
# cost=after: on the wire and at start-up: a limit of one byte per unit
# says qu="content-bytes" in RateLimit-Policy (the draft's quota unit) and
# its RateLimit r= counts bytes (1000 bytes sent: 100000 - 1000 - 1 left
# after the next admission); a cost-unit= says nothing of a unit. Every bad
# cost=after: value is refused at start-up naming the directive and token.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Keys;
use SL::After;

my @bad = (
    [ 'SlidingLimit 10 1m cost=after:', 'cost=after:' ],
    [ 'SlidingLimit 10 1m cost=after:body', 'cost=after:body' ],
    [ 'SlidingLimit 10 1m cost=after:header:', 'cost=after:header:' ],
    [ 'SlidingLimit 10 1m "cost=after:header:X Cost"', 'X Cost' ],
    [ 'SlidingLimit 10 1m cost=after:header:X-C(ost', 'X-C(ost' ],
    [ 'SlidingLimit 10 1m cost=after:bytes cost=2', 'cost=2' ],
    [ 'SlidingLimit 10 1m cost=3 cost=after:bytes', 'cost=after:bytes' ],
    [ 'SlidingLimit 10 1m cost=after:bytes cost-unit=0', 'cost-unit' ],
    [ 'SlidingLimit 10 1m cost=after:bytes count=401', 'count=' ],
);
plan tests => 4 + @bad + 1;

my $ip = fresh_ip();
my $r1 = af_get({}, '/af/bytes1/1000.txt', 'X-Forwarded-For' => $ip);
my $r2 = af_get({}, '/af/bytes1/1000.txt', 'X-Forwarded-For' => $ip);
ok t_cmp($r1->{headers}{'ratelimit-policy'}, '"af-bytes1";q=100000;w=86400;qu="content-bytes"',
    'one byte per unit: qu="content-bytes"');
ok t_cmp($r2->{headers}{ratelimit}, qr/^"af-bytes1";r=98999;t=\d+$/,
    '... and r= counts bytes: 100000 - 1000 (the first) - 1 (the next)');
my $r3 = af_get({}, '/af/bytes-log/100.txt', 'X-Forwarded-For' => $ip);
ok t_cmp($r3->{headers}{'ratelimit-policy'}, '"af-bytes-log";q=100;w=86400',
    'with cost-unit=100: no quota unit');
my $r4 = af_get({}, '/af/combo/100.txt', 'X-Forwarded-For' => $ip);
ok t_cmp($r4->{headers}{'ratelimit-policy'}, '"af-combo-plain";q=2;w=86400, "af-combo-bytes";q=100;w=86400',
    'a plain limit and a cost=after: one are both announced');

for my $case (@bad) {
    my ($conf, $token) = @$case;
    my ($rc, $out) = httpd_check($conf);
    ok($rc != 0 && $out =~ /SlidingLimit/ && $out =~ /\Q$token\E/ && $out !~ /Syntax OK/,
        "refused: $conf  [$token]") or diag("rc=$rc\n$out");
}
my ($rc, $out) = httpd_check("SlidingLimit 10 1m cost=after:bytes cost-unit=1024\n"
    . "SlidingLimit 10 1m name=tokens algorithm=gcra burst=5 cost=after:header:X-Tokens");
is($rc, 0, 'good cost=after: lines pass httpd -t') or diag($out);
