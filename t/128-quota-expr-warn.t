# A quota expression that reads what a client chooses (a request header,
# the request line) gets one warning at start-up, naming the expression,
# its place and what it reads, with what to do; none when the server
# configuration removes the header early ("RequestHeader unset NAME
# early" outside any <Location>), or when the quota comes from a variable.
# The same early line inside <Location> never runs before the module reads
# the quota: still a warning, and a client's header still raises the
# quota there.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Httpd;

plan tests => 12;

my $extra = 'AliasMatch ^/w "' . SL::Httpd::_tdir() . "/htdocs/fault.html\"\n" . <<'EOT';
RequestHeader unset X-Covered early
RequestHeader set X-Set-Early 7 early
<Location /w1>
    SlidingLimit "expr:%{HTTP:X-Customer-Quota}" 1m name=w1 quota-default=10
</Location>
<Location /w1b>
    SlidingLimit "expr:%{HTTP:X-Customer-Quota}" 1m name=w1 quota-default=10
</Location>
<Location /w2>
    SlidingLimit "expr:%{HTTP:X-Covered}" 1m name=w2 quota-default=10
</Location>
<Location /w3>
    SlidingLimit "expr:%{reqenv:W3_QUOTA}" 1m name=w3 quota-default=10
</Location>
<Location /w4>
    SlidingLimit "expr:%{req:X-Other}%{QUERY_STRING}" 1m name=w4 quota-default=10
</Location>
<Location /w5>
    SlidingLimit "expr:%{HTTP_USER_AGENT}" 1m name=w5 quota-default=10
</Location>
<Location /w6>
    RequestHeader unset X-Inner early
    SlidingLimit "expr:%{HTTP:X-Inner}" 1m name=w6 quota-default=10
</Location>
<Location /w7>
    SlidingLimit "expr:%{HTTP:X-Set-Early}" 1m name=w7 quota-default=10
</Location>
EOT

my $h = SL::Httpd->start(extra => $extra);
my @warn = grep {/a client can choose its own quota/} split /\n/, $h->error_log;
note join "\n", @warn;
my $count = sub { my ($re) = @_; scalar grep { $_ =~ $re } @warn };

ok t_cmp($count->(qr/expr:%\{HTTP:X-Customer-Quota\} \(\S+httpd\.conf:\d+\) reads the request header X-Customer-Quota, which a client sends as it likes/), 1,
    'a header nothing removes: one warning, with its place, for two uses of one expression');
like($warn[0] // '', qr/\[slidinglimit:warn\].*RequestHeader unset NAME early" in the server configuration or the virtual host/,
    '... at warn, saying what to do');
ok t_cmp($count->(qr/X-Covered/), 0, 'removed early in the server configuration: no warning');
ok t_cmp($count->(qr/X-Set-Early/), 0, 'set early in the server configuration: no warning');
ok t_cmp($count->(qr/W3_QUOTA/), 0, 'a variable: no warning');
ok t_cmp($count->(qr/reads the request header X-Other, QUERY_STRING,/), 1, '%{req:} and QUERY_STRING: both named');
ok t_cmp($count->(qr/reads the request header User-Agent,/), 1, '%{HTTP_USER_AGENT}: the header User-Agent');
ok t_cmp($count->(qr/reads the request header X-Inner,/), 1, 'removed early inside <Location>: still a warning');
ok t_cmp(scalar @warn, 4, 'four warnings in all');

my $q = sub {
    my ($path, %hdr) = @_;
    return http_get($h->url . $path, 'X-Forwarded-For' => fresh_ip(), %hdr)->{headers}{'ratelimit-policy'} // '-';
};
ok t_cmp($q->('/w6/', 'X-Inner' => 999), '"w6";q=999;w=60',
    '... rightly: inside <Location> the early line does not remove the client\'s header');
ok t_cmp($q->('/w2/', 'X-Covered' => 999), '"w2";q=10;w=60', 'the header removed early: quota-default=');
ok t_cmp($q->('/w7/', 'X-Set-Early' => 999), '"w7";q=7;w=60', 'the header set early: the server\'s value');
$h->stop;
