# SPDX-License-Identifier: Apache-2.0
# A tenant's .htaccess (SlidingLimitOverride all) that keys by a form
# field has its body read as a section of the server configuration would:
# the account is the key whatever address posts it. distinct= stays the
# server configuration's: in .htaccess it is refused, and the log says why.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use File::Path qw(make_path);
use HTTP::Tiny;
use SL::Test;
use SL::Keys qw(tag);
use SL::Httpd;

plan tests => 4;

my $t = SL::Httpd::_tdir();
my $dir = "$t/tmp/f162-" . tag();
make_path("$dir/acct", "$dir/names");
for (['acct', "SlidingLimitKey form:log\nSlidingLimit 2 1m name=f162-acct\n"],
    ['names', "SlidingLimit 2 1m name=f162-names distinct=form:log\n"]) {
    open my $fh, '>', "$dir/$_->[0]/.htaccess" or die;
    print $fh $_->[1];
    close $fh;
    open $fh, '>', "$dir/$_->[0]/index.html" or die;
    print $fh "hi\n";
    close $fh;
}
my $h = SL::Httpd->start(name => 'f162-' . ($ENV{SL_TEST_MPM} || 'event'), extra => <<"EOT");
SlidingLimitOverride all
Alias /f162 "$dir"
<Directory "$dir">
    AllowOverride Limit
    Require all granted
</Directory>
EOT

sub post {
    my ($path, $ip, $name) = @_;
    return HTTP::Tiny->new(timeout => 10)->request('POST', $h->url . "/f162/$path/index.html",
        { headers => { 'X-Forwarded-For' => $ip, 'Content-Type' => 'application/x-www-form-urlencoded' },
          content => "log=$name&pwd=x" })->{status};
}

my $acct = 'a' . tag();
my @s = map { post('acct', fresh_ip(), $acct) } 1 .. 3;
ok(!grep({ $_ == 429 || $_ >= 500 } @s[0, 1]), "form: key: two posts of one account from two addresses pass (@s[0, 1])");
is($s[2], 429, 'form: key: the third, from a third address, is refused');

my $ip = fresh_ip();
my @d = map { post('names', $ip, "n$_-" . tag()) } 1 .. 2;
is("@d", '500 500', 'distinct=form: in .htaccess: refused (500)');
my @why = do { open my $l, '<', "$h->{dir}/logs/error_log" or die; grep { /'distinct=form:log' belongs in the server configuration/ } <$l> };
ok(scalar @why >= 1, '... and the error log says why');
diag(grep { /htaccess|form/ } do { open my $l, "<", "$h->{dir}/logs/error_log" or die; <$l> }) if grep { $_ >= 500 } @s;
$h->stop;
