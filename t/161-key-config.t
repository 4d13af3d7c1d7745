# SPDX-License-Identifier: Apache-2.0
# key=SOURCE at start-up: every source SlidingLimitKey takes passes, and
# none; an unknown source, an empty one, key= twice, and a name whose uses
# differ in key= are refused with a message naming the directive and the
# token. In an .htaccess file (SlidingLimitOverride all) key= is refused:
# the request gets a 500 and the error log says why; a tenant's line keyed
# by none never reaches the server's budget of the same shape. With a
# Redis Cluster store httpd refuses key= at start.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use File::Path qw(make_path);
use SL::Test;
use SL::Keys qw(httpd_check tag);
use SL::Httpd;

plan tests => 11;

my ($rc, $out) = httpd_check(<<'EOT');
<Location /login>
    SlidingLimit 5 15m count=200 key=ip
    SlidingLimit 10 1h count=200 key=form:log
    SlidingLimit 200 15m count=200 key=NONE
    SlidingLimit 3 10m distinct=form:log key=ip
    SlidingLimit 9 1m key=user:nocase,any-address
    SlidingLimit 8 1m key=header:X-Account
    SlidingLimit 7 1m "key=expr:%{HTTP_HOST}"
</Location>
EOT
is($rc, 0, 'every source, and none, passes') or diag($out);

for my $case (['key=bogus', qr/SlidingLimit: 'bogus' is not a key source .*\(in key=, which also takes none/],
    ['key=', qr/SlidingLimit: 'key=': needs a key source/],
    ['key=ip key=form:log', qr/SlidingLimit: 'key=form:log': key= is given twice/],
    ['key=form:', qr/SlidingLimit: 'form:': no field name after the colon/],
    ['key=header:a:b', qr/SlidingLimit: 'header:a:b' is not a header name/]) {
    my ($opt, $re) = @$case;
    ($rc, $out) = httpd_check("<Location /login>\nSlidingLimit 5 15m $opt\n</Location>");
    ok($rc != 0 && $out =~ $re, "$opt refused, named") or diag($out);
}
($rc, $out) = httpd_check("<Location /a>\nSlidingLimit 5 15m name=n key=ip\n</Location>\n"
      . "<Location /b>\nSlidingLimit 5 15m name=n key=form:log\n</Location>");
ok($rc != 0 && $out =~ /name 'n' is already a different limit .*key=ip.*key=form:log/s,
    'a name used with two keys refused') or diag($out);

# .htaccess, even under SlidingLimitOverride all.
my $t = SL::Httpd::_tdir();
my $dir = "$t/tmp/k161-" . tag();
make_path($dir);
open my $fh, '>', "$dir/.htaccess" or die;
print $fh "SlidingLimit 1 1m name=tenant key=none\n";
close $fh;
open $fh, '>', "$dir/index.html" or die;
print $fh "hi\n";
close $fh;
my $h = SL::Httpd->start(name => 'k161-' . ($ENV{SL_TEST_MPM} || 'event'), extra => <<"EOT");
SlidingLimitOverride all
Alias /k161 "$dir"
<Directory "$dir">
    AllowOverride Limit
    Require all granted
</Directory>
EOT
my $res = http_get($h->url . '/k161/index.html', 'X-Forwarded-For' => fresh_ip());
is($res->{status}, 500, '.htaccess with key=: 500');
open my $log, '<', "$h->{dir}/logs/error_log" or die;
my @l = grep { /key=none' belongs in the server configuration, not in \.htaccess/ } <$log>;
ok(scalar @l >= 1, '... the error log says why');
$h->stop;

# A Redis Cluster store runs a script over one hash slot only: key= there
# is refused at start, with the reason, whatever section holds it.
my $started = eval {
    SL::Httpd->start(name => 'k161-cluster-' . ($ENV{SL_TEST_MPM} || 'event'),
        store => 'cluster://127.0.0.1:1', extra => <<'EOT');
<Location /login>
    SlidingLimit 5 15m key=form:log
</Location>
EOT
};
my $why = $@;
$started->stop if $started;
ok(!$started, 'key= with a cluster:// store: httpd does not start');
like($why, qr/SlidingLimit key= needs one Redis server .*Redis Cluster store cannot/,
    '... and its error log says why');
