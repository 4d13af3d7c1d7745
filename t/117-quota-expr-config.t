# SPDX-License-Identifier: Apache-2.0
# SlidingLimit expr:: every bad line is refused at start-up ("httpd -t" on
# a minimal generated configuration, SL::Keys' httpd_check), naming the
# directive and the token; good lines, a name used twice with the same
# expression, and an expression quota in .htaccess-free sections pass.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use SL::Keys;

my @bad = (
    [ 'SlidingLimit expr:%{HTTP:X-Q} 1m',                     "quota-default=N" ],
    [ 'SlidingLimit expr: 1m quota-default=5',                "'expr:'" ],
    [ 'SlidingLimit "expr:%{HTTP:X-Q" 1m quota-default=5',    "'expr:%{HTTP:X-Q'" ],
    [ 'SlidingLimit "expr:%{nosuchfunc:x}" 1m quota-default=5', "'expr:%{nosuchfunc:x}'" ],
    [ 'SlidingLimit 10 1m quota-default=5',                   'quota-default=5' ],
    [ 'SlidingLimit expr:%{HTTP:X-Q} 1m quota-default=0',     "'0'" ],
    [ 'SlidingLimit expr:%{HTTP:X-Q} 1m quota-default=ten',   "'ten'" ],
    [ 'SlidingLimit expr:%{HTTP:X-Q} 1m quota-default=100000001', "'100000001'" ],
    [ 'SlidingLimit expr:%{HTTP:X-Q} 1m quota-default=5 quota-default=6', 'quota-default=6' ],
    [ 'SlidingLimit expr:%{HTTP:X-Q} 1m quota-default=2 cost=3', 'cost=3' ],
    [ 'SlidingLimit expr:%{HTTP:X-Q} 1w quota-default=2',     "'1w'" ],
    [ 'SlidingLimit expr:%{HTTP:X-Q} 1d quota-default=500 algorithm=gcra burst=367', 'burst=367' ],
    # One name, one limit: the same expression and quota-default= wherever.
    [ "<Location /a>\nSlidingLimit expr:%{HTTP:X-Q} 1m name=k quota-default=5\n</Location>\n"
        . "<Location /b>\nSlidingLimit expr:%{HTTP:X-R} 1m name=k quota-default=5\n</Location>", "'k'" ],
    [ "<Location /a>\nSlidingLimit expr:%{HTTP:X-Q} 1m name=k quota-default=5\n</Location>\n"
        . "<Location /b>\nSlidingLimit 5 1m name=k\n</Location>", "'k'" ],
    # Two unnamed expression lines with one window share the default name.
    [ "<Location /a>\nSlidingLimit expr:%{HTTP:X-Q} 1m quota-default=5\n"
        . "SlidingLimit expr:%{HTTP:X-R} 1m quota-default=5\n</Location>", 'expr-per-1m' ],
);

my $good = <<'CONF';
<Location /a>
    SlidingLimit "expr:%{HTTP:X-Customer-Quota}" 1m name=k quota-default=100
    SlidingLimit expr:%{reqenv:PLAN} 1h quota-default=1000 algorithm=gcra burst=50 block=10m
    SlidingLimit 20 1s
</Location>
<Location /b>
    SlidingLimit "expr:%{HTTP:X-Customer-Quota}" 1m name=k quota-default=100
    SlidingLimit expr:%{HTTP:X-Q} 1m name=c quota-default=9 cost=3 count=401
    SlidingLimit expr:%{HTTP:X-Q} 1h quota-default=9 "cost=expr:%{HTTP:X-Batch}"
</Location>
CONF

plan tests => 2 + @bad;

my ($rc, $out) = httpd_check($good);
is($rc, 0, 'expression quotas with good values pass httpd -t') or diag($out);
like($out, qr/Syntax OK/, '... Syntax OK');

for my $case (@bad) {
    my ($conf, $token) = @$case;
    my ($rc, $out) = httpd_check($conf);
    (my $one = $conf) =~ s/\n/ | /g;
    ok($rc != 0 && $out =~ /SlidingLimit/ && $out =~ /\Q$token\E/ && $out !~ /Syntax OK/,
        "refused: $one  [$token]") or diag("rc=$rc\n$out");
}
