# SPDX-License-Identifier: Apache-2.0
# SlidingLimitOverride: under the default (add) an .htaccess file may add
# limits of its own to the server configuration's, never loosen them: not
# switch them off (also inside <If>), to a dry run, to other keys, to fail
# open, nor change their status or algorithm; such a file gets a 500 and
# the error log says why. all is what <Directory> may do; none allows no
# SlidingLimit directive at all.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use IO::Socket::INET;
use SL::Test;
use SL::Keys;
use SL::Httpd;

plan tests => 21;

$ENV{SL_TEST_HTDOCS} = top_dir() . '/t/htdocs';
my $h = SL::Httpd->start(conf => ['htaccess-override.inc'], name => 'hto');

# (status, headers as one lower-case string) of GET $path on host $host.
sub get {
    my ($host, $path, $ip, %hdr) = @_;
    my ($port) = $h->url =~ /:(\d+)$/;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
        Timeout => 10) or die "connect: $!";
    print $s "GET $path HTTP/1.0\r\nHost: $host\r\nX-Forwarded-For: $ip\r\n"
      . join('', map {"$_: $hdr{$_}\r\n"} sort keys %hdr) . "\r\n";
    my $head = '';
    while (my $l = <$s>) { last if $l =~ /^\r?\n\z/; $head .= $l }
    close $s;
    my ($st) = $head =~ m{^HTTP/1\.\d (\d{3})};
    return ($st // 0, lc $head);
}

sub four {
    my ($host, $path, %hdr) = @_;
    my $ip = fresh_ip();
    my $n  = 0;
    return join ' ', map { (get($host, $path, $ip,
        map { $_ => ($hdr{$_} eq 'rotate' ? 'r' . ++$n : $hdr{$_}) } keys %hdr))[0] } 1 .. 4;
}

for my $dir (qw(if-off off dryrun rekey ipv6 failopen status algorithm)) {
    is(four('add.hto.test', "/hto/$dir/", 'X-R' => 'rotate'), '500 500 500 500',
        "add (the default): .htaccess in hto/$dir/ may not loosen the server's limit");
}
my $log = $h->error_log;
like($log, qr{hto/dryrun/\.htaccess: SlidingLimitDryRun: not allowed in \.htaccess under SlidingLimitOverride add},
    'the error log names the file, the directive and the setting');
like($log, qr{hto/if-off/\.htaccess: SlidingLimit: not allowed in \.htaccess under SlidingLimitOverride add \('off'},
    '... also for SlidingLimit off inside <If>');

is(four('add.hto.test', '/hto/add/'), '200 200 200 429',
    'add: a looser limit of the file\'s own does not replace the server\'s');
my (undef, $hd) = get('add.hto.test', '/hto/add/', fresh_ip());
like($hd, qr/^ratelimit-policy: .*"hto-admin".*"hto-own"|^ratelimit-policy: .*"hto-own".*"hto-admin"/m,
    '... both apply');
is(four('add.hto.test', '/hto/tighten/'), '200 200 200 429',
    'add: fail closed, dry run off, local fallback on, headers are allowed');
(undef, $hd) = get('add.hto.test', '/hto/tighten/', fresh_ip());
like($hd, qr/^ratelimit-limit: 3\r?$/m, '... and apply (SlidingLimitHeaders draft03)');

is(four('all.hto.test', '/hto/if-off/'), '200 200 200 200',
    'all: SlidingLimit off inside <If> in .htaccess switches the limit off');
is(four('all.hto.test', '/hto/dryrun/'), '200 200 200 200',
    'all: SlidingLimitDryRun on in .htaccess makes the limit a dry run');

is(four('none.hto.test', '/hto/add/'), '500 500 500 500', 'none: no SlidingLimit line');
is(four('none.hto.test', '/hto/tighten/'), '500 500 500 500', 'none: no other SlidingLimit directive');
like($h->error_log, qr{hto/add/\.htaccess: SlidingLimit: not allowed in \.htaccess under SlidingLimitOverride none},
    '... and the error log says so');

my ($rc, $out) = httpd_check('SlidingLimitOverride some');
ok($rc != 0 && $out =~ /SlidingLimitOverride: 'some' is none of none, add, all/,
    'SlidingLimitOverride some: refused, naming the token') or diag($out);
($rc, $out) = httpd_check("<Location /x>\nSlidingLimitOverride all\n</Location>");
ok($rc != 0 && $out =~ /SlidingLimitOverride not allowed in <Location>/,
    'SlidingLimitOverride is server configuration only') or diag($out);

$h->stop;
