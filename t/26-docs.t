# SPDX-License-Identifier: Apache-2.0
# Every directive the module registers has a "### Name" section in
# docs/REFERENCE.md, a line in conf/slidinglimit.conf and an entry in the manual page
# man/mod_slidinglimit.5; the reference configuration
# is valid with every commented setting enabled.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use SL::Keys;

my $top = top_dir();

my $src = slurp("$top/src/sl_config.c");
my @directives = $src =~ /AP_INIT_\w+\(\s*"(\w+)"/g;
my $readme = slurp("$top/docs/REFERENCE.md");
my $conf = slurp("$top/conf/slidinglimit.conf");
my $man = slurp("$top/man/mod_slidinglimit.5");

# "#" directly followed by a directive, or by indentation in steps of four
# spaces, is a setting; "# " begins an explanation.
my $enabled = join '', map {
    s/^(\s*)#((?: {4})*)(?=[^\s#])/$1$2/r
} split /^/, $conf;

plan tests => 3 * @directives + 8;

ok(@directives >= 13, scalar(@directives) . ' directives registered in src/sl_config.c');
for my $d (@directives) {
    like($readme, qr/^### \Q$d\E\s*$/m, "docs/REFERENCE.md has a section for $d");
    like($conf, qr/^\s*#?(?: {4})*\Q$d\E\s/m, "conf/slidinglimit.conf shows $d");
    like($man, qr/^\.TP\n\.B[RI]? \Q$d\E(?:\s|$)/m, "man/mod_slidinglimit.5 has an entry for $d");
}

# The example client certificate is the suite's.
my $certs = tls_certs();
$enabled =~ s{/etc/apache2/redis-client\.(pem|key)}{$certs/client.$1}g;

my $settings = () = $enabled =~ /^\s*SlidingLimit\w*\s/mg;
ok($settings >= 20, "$settings SlidingLimit* settings enabled in the copy");
like($enabled, qr/^\s*<ElseIf "req\('X-Api-Key'\)/m, 'the tiers example is enabled too');

# The reference configuration's secret file exists only where it is deployed.
$enabled =~ s{^(\s*SlidingLimitKeySecret )\S+}{$1$top/t/conf/keysecret-a}m;

# ... and its store password's variable only where it runs.
local $ENV{SLIDINGLIMIT_REDIS_PASSWORD} = 'reference-password';

my ($rc, $out) = httpd_check($enabled);
is($rc, 0, 'conf/slidinglimit.conf with every setting enabled passes httpd -t')
    or diag($out);
like($out, qr/Syntax OK/, '... Syntax OK');

# The check above is real: the module is loaded, so <IfModule> is entered
# and a bad value inside it is refused.
(my $broken = $enabled) =~ s/SlidingLimit 600 1m name=user/SlidingLimit 600 1x name=user/;
($rc, $out) = httpd_check($broken);
isnt($rc, 0, 'a bad value inside the reference configuration is refused');
like($out, qr/SlidingLimit: WINDOW '1x'/, '... with the directive and the token');

# As shipped (everything commented) it is valid too.
($rc, $out) = httpd_check($conf);
is($rc, 0, 'conf/slidinglimit.conf as shipped passes httpd -t') or diag($out);
