# SPDX-License-Identifier: Apache-2.0
# SlidingLimitKey form:FIELD at start-up: a field name is required and must
# be one a form can post (no spaces, control characters, quotes, '=', '&',
# ';', '%' or '+'); the source needs mod_request, which gives the
# application the body read (without it the body would be taken from the
# application), loaded before the line. Each error names the directive and
# the token.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use SL::Test;
use SL::Keys qw(httpd_check top_dir httpd_bin);

plan tests => 9;

my ($rc, $out) = httpd_check("<Location /login>\nSlidingLimitKey form:log\n</Location>");
is($rc, 0, 'form:log passes') or diag($out);
($rc, $out) = httpd_check("<Location /login>\nSlidingLimitKey FORM:user[login] ip\n</Location>");
is($rc, 0, 'FORM:user[login] ip passes (the prefix in any case, brackets in the name)') or diag($out);

for my $case (['form:', qr/'form:': no field name after the colon/],
    ['form:a=b',  qr/'form:a=b': 'a=b' is not a form field name/],
    ['"form:a b"', qr/'form:a b': 'a b' is not a form field name/],
    ['form:a&b',  qr/'form:a&b': 'a&b' is not a form field name/],
    ['form:a%62', qr/'form:a%62': 'a%62' is not a form field name/]) {
    my ($src, $re) = @$case;
    my ($rc, $out) = httpd_check("<Location /login>\nSlidingLimitKey $src\n</Location>");
    ok($rc != 0 && $out =~ /SlidingLimitKey: / && $out =~ $re, "SlidingLimitKey $src refused, named")
      or diag($out);
}

# Without mod_request: the suite's LoadModule lines less that one.
{
    my $top = top_dir();
    my $dir = tempdir(CLEANUP => 1, TMPDIR => 1);
    my $mpm = $ENV{SL_TEST_MPM} || 'event';
    open my $in, '<', "$top/t/setup/httpd-$mpm.conf" or die "setup: $!";
    my @load = grep { /^\s*LoadModule\s/ && !/request_module/ } <$in>;
    close $in;
    open my $fh, '>', "$dir/httpd.conf" or die "conf: $!";
    print $fh "ServerRoot $dir\nServerName localhost\nDefaultRuntimeDir $dir\n",
      "PidFile $dir/httpd.pid\nErrorLog $dir/error_log\nListen 127.0.0.1:1\n", @load,
      "LoadModule slidinglimit_module $top/.libs/mod_slidinglimit.so\n",
      "<Location /login>\nSlidingLimitKey form:log\n</Location>\n";
    close $fh;
    my $bin = httpd_bin();
    my $out = `'$bin' -t -d '$dir' -f '$dir/httpd.conf' 2>&1`;
    ok($? != 0 && $out =~ /SlidingLimitKey: 'form:log' needs mod_request/,
        'without mod_request: refused, saying why') or diag($out);
    # The same configuration without the line passes: the refusal is the
    # line's.
    (my $conf = slurp("$dir/httpd.conf")) =~ s/<Location \/login>\n.*?<\/Location>\n//s;
    open $fh, '>', "$dir/httpd.conf" or die;
    print $fh $conf;
    close $fh;
    $out = `'$bin' -t -d '$dir' -f '$dir/httpd.conf' 2>&1`;
    is($? >> 8, 0, '... and passes without the form: line') or diag($out);
}
sub slurp { open my $f, '<', $_[0] or die; local $/; return scalar <$f> }
