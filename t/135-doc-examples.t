# SPDX-License-Identifier: Apache-2.0
# Every ```apache block of README.md and docs/*.md passes httpd -t inside a
# minimal server that loads the module (a block marked "# fragment: ..."
# is wrapped where it says it goes), and a broken copy of each is refused,
# so the check is real. A "# template:" block (docs/BENCHMARKS.md's rows,
# with the harness's variables) is no configuration to paste. The recipes' behaviour is t/134-recipes.t's.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use SL::Keys;
use SL::Docs;

my @all = SL::Docs::blocks(top_dir());
my @blocks = grep { !$_->{template} } @all;
my @templates = grep { $_->{template} } @all;
plan tests => 2 + 2 * @blocks;

ok(@blocks >= 6, scalar(@blocks) . ' apache blocks to paste in README.md and docs/*.md');
# Templates (a program's, with its variables) only where a program writes them.
ok(!grep({ $_->{file} ne 'docs/BENCHMARKS.md' } @templates),
    scalar(@templates) . ' templates, all in docs/BENCHMARKS.md (bench/report.sh)');
# What the operator's files hold: a password file a password, TLS files
# the suite's test CA and client certificate (t/run makes them).
my $certs = tls_certs();
sub content {
    my ($name) = @_;
    my $tls = $name =~ /ca\.pem$/ ? 'ca.pem' : $name =~ /\.pem$/ ? 'client.pem'
            : $name =~ /\.key$/ ? 'client.key' : undef;
    return "s3cret\n" unless $tls;
    return slurp("$certs/$tls");
}
# Debian's envvars (apache2ctl) define it; httpd -t run directly does not.
local $ENV{APACHE_LOG_DIR} = tempdir(CLEANUP => 1, TMPDIR => 1);

for my $b (@blocks) {
    my $dir = tempdir(CLEANUP => 1, TMPDIR => 1);
    my %files = map { $_ => content($_) } $b->{text} =~ m{/etc/apache2/([\w.-]+)}g;
    my $conf = SL::Docs::paste($b, $dir, %files);
    my ($rc, $out) = httpd_check($conf);
    is($rc, 0, "$b->{file}:$b->{line} ($b->{title}) passes httpd -t") or diag("$conf\n$out");
    # A limit's window broken: the same block must now be refused (a
    # block without a limit line, such as a log format, has none to break).
    if ($conf !~ /^\s*SlidingLimit(?:Concurrent)?\s+(?!off\b)\S+/m) {
        pass('... no limit line to break');
        next;
    }
    (my $broken = $conf) =~ s/^(\s*SlidingLimit(?:Concurrent)?\s+\S+)(\s+\S+)?/$1 . ($2 && $1 !~ m{Concurrent} ? ' 1x' : ' bad=1')/me;
    ($rc, $out) = httpd_check($broken);
    isnt($rc, 0, "... and a broken copy is refused") or diag($broken);
}
