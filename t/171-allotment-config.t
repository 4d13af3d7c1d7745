# SPDX-License-Identifier: Apache-2.0
# SlidingLimitAllotment at start-up ("httpd -t"): a bad value is refused
# naming the directive and the token, and a
# counter limit under "auto" whose window is under 2 s is named in one
# warning (it takes no allotments), a longer counter window or a log limit
# beside it in none.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use SL::Keys;

my @bad = (
    [ 'SlidingLimitAllotment on',       "'on'" ],
    [ 'SlidingLimitAllotment 1',        "'1'" ],
    [ 'SlidingLimitAllotment autoo',    "'autoo'" ],
    [ 'SlidingLimitAllotment auto off', 'SlidingLimitAllotment' ],
);
plan tests => @bad + 4;

for my $case (@bad) {
    my ($conf, $token) = @$case;
    my ($rc, $out) = httpd_check($conf);
    ok($rc != 0 && $out =~ /SlidingLimitAllotment/ && $out =~ /\Q$token\E/ && $out !~ /Syntax OK/,
        "refused: $conf  [$token]") or diag("rc=$rc\n$out");
}

my ($rc, $out) = httpd_check(<<'CONF');
SlidingLimitAllotment off
<Location /api>
    SlidingLimitAllotment auto
    SlidingLimit 6000 1500ms name=api-c algorithm=counter
    SlidingLimit 6000 1m name=api-cl algorithm=counter
    SlidingLimit 6000 1m name=api-l algorithm=log
</Location>
<Location /sec>
    SlidingLimitAlgorithm counter
    SlidingLimitAllotment auto
    <If "-n %{HTTP:X-Key}">
        SlidingLimit 600 1s name=sec-key
    </If>
</Location>
<Location /off>
    SlidingLimit 600 1m name=off-c algorithm=counter
</Location>
CONF
ok($rc == 0 && $out =~ /Syntax OK/, 'off and auto pass') or diag($out);
my @warned = $out =~ /SlidingLimit (\S+ \S+ name=\S+)[^\n]*takes no allotments/g;
ok(grep({ /name=api-c/ } @warned) && grep({ /name=sec-key/ } @warned),
    'each short counter window under auto is named: ' . join(', ', @warned)) or diag($out);
ok(!grep({ /name=(api-l|api-cl|off-c)/ } @warned),
    'a log limit, a counter window of a minute, and a counter limit without auto, are not');
ok(@warned == 2, 'one warning each (' . scalar(@warned) . ')');
