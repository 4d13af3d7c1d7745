# SlidingLimitConcurrent's bad values are refused at start-up ("httpd -t"),
# each naming the directive and the token; good lines pass, in every place
# SlidingLimit is allowed, and in .htaccess the limit applies.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Keys;

my @bad = (
    [ 'SlidingLimitConcurrent',                        undef ],
    [ 'SlidingLimitConcurrent 0',                      "'0'" ],
    [ 'SlidingLimitConcurrent -3',                     "'-3'" ],
    [ 'SlidingLimitConcurrent two',                    "'two'" ],
    [ 'SlidingLimitConcurrent 100000001',              "'100000001'" ],
    [ 'SlidingLimitConcurrent 2 lease=500ms',          'lease=500ms' ],
    [ 'SlidingLimitConcurrent 2 lease=2h',             'lease=2h' ],
    [ 'SlidingLimitConcurrent 2 lease=soon',           "'soon'" ],
    [ 'SlidingLimitConcurrent 2 colour=red',           'colour=red' ],
    [ 'SlidingLimitConcurrent 2 cost=2',               'cost=2' ],
    [ 'SlidingLimitConcurrent 2 name=a{b}',            'name=a{b}' ],
    [ "SlidingLimit off\nSlidingLimitConcurrent 2",    "'2'" ],
    [ "SlidingLimitConcurrent 2 name=c\nSlidingLimitConcurrent 3 name=c", "'c'" ],
    # One name, one budget: N in flight is not a rate.
    [ "<Location /a>\nSlidingLimit 2 60s name=k\n</Location>\n"
        . "<Location /b>\nSlidingLimitConcurrent 2 name=k lease=60s\n</Location>", "'k'" ],
);
my $good = "SlidingLimitConcurrent 4\n"
  . "<Location /api>\nSlidingLimit 100 1m name=api\nSlidingLimitConcurrent 2 name=api-inflight lease=10s\n"
  . "<If \"%{HTTP:X-Tier} == 'gold'\">\nSlidingLimitConcurrent 8 name=api-gold lease=1h\n</If>\n</Location>\n"
  . "<Directory /tmp>\nSlidingLimitConcurrent 1 lease=1s\n</Directory>\n"
  . "<VirtualHost 127.0.0.1:1>\nSlidingLimitConcurrent 3 name=vh\n</VirtualHost>";

plan tests => @bad + 4;

for my $case (@bad) {
    my ($conf, $token) = @$case;
    my ($rc, $out) = httpd_check($conf);
    (my $one = $conf) =~ s/\n/ | /g;
    ok($rc != 0 && $out =~ /SlidingLimitConcurrent|SlidingLimit:/
          && (!defined $token || index($out, $token) >= 0) && $out !~ /Syntax OK/,
        "refused, naming " . ($token // 'the directive') . ": $one") or diag("rc=$rc\n$out");
}
my ($rc, $out) = httpd_check($good);
is($rc, 0, 'good lines in every place pass httpd -t') or diag($out);
like($out, qr/Syntax OK/, '... Syntax OK');

# In .htaccess (AllowOverride Limit), as SlidingLimit: the limit applies.
my $r = http_get('/htaccess/conc/index.html', 'X-Forwarded-For' => fresh_ip());
ok t_cmp($r->{status}, 200, '.htaccess: a request under its SlidingLimitConcurrent');
ok t_cmp($r->{headers}{'ratelimit-policy'}, '"hta-conc";q=1;qu="concurrent-requests"', '.htaccess: ... its policy');
