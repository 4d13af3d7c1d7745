# SPDX-License-Identifier: Apache-2.0
# delay= and SlidingLimitDelayMax: every bad value is refused at start-up
# ("httpd -t") naming the directive and the token; good values pass.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use SL::Keys;

my @bad = (
    [ 'SlidingLimit 10 1m delay=0',            'SlidingLimit', "'0'" ],
    [ 'SlidingLimit 10 1m delay=-1s',          'SlidingLimit', "'-1s'" ],
    [ 'SlidingLimit 10 1m delay=2x',           'SlidingLimit', "'2x'" ],
    [ 'SlidingLimit 10 1m delay=',             'SlidingLimit', "''" ],
    [ 'SlidingLimit 10 1m delay=1.5s',         'SlidingLimit', "'1.5s'" ],
    [ 'SlidingLimit 10 1m delay=61s',          'SlidingLimit', "'61s'" ],
    [ 'SlidingLimit 10 1m delay=2m',           'SlidingLimit', "'2m'" ],
    [ 'SlidingLimit 10 1m delay=1s block=10s', 'SlidingLimit', 'delay= and block=' ],
    [ 'SlidingLimitDelayMax -1',               'SlidingLimitDelayMax', "'-1'" ],
    [ 'SlidingLimitDelayMax many',             'SlidingLimitDelayMax', "'many'" ],
    [ 'SlidingLimitDelayMax 100001',           'SlidingLimitDelayMax', "'100001'" ],
    [ 'SlidingLimitDelayMax 4x',               'SlidingLimitDelayMax', "'4x'" ],
);
my $good = <<'CONF';
SlidingLimitDelayMax 16
<Location /a>
    SlidingLimit 10 1m delay=500ms
    SlidingLimit 100 1h name=hourly algorithm=gcra burst=20 delay=60s
    SlidingLimitDelayMax 0
</Location>
<Location /b>
    SlidingLimit 10 1m delay=2 count=401
    SlidingLimit 20 1m block=5m
</Location>
CONF

plan tests => @bad + 1;

for my $case (@bad) {
    my ($conf, $directive, $token) = @$case;
    my ($rc, $out) = httpd_check($conf);
    ok($rc != 0 && $out =~ /\Q$directive\E/ && $out =~ /\Q$token\E/ && $out !~ /Syntax OK/,
        "refused: $conf  [$token]") or diag("rc=$rc\n$out");
}
my ($rc, $out) = httpd_check($good);
ok($rc == 0 && $out =~ /Syntax OK/, 'good delay= and SlidingLimitDelayMax pass') or diag($out);
