# SPDX-License-Identifier: Apache-2.0
# The start of a block is logged once, at Debian's default LogLevel warn
# (the location sets it), in the documented format: client, policy, the
# block in seconds, where the limit comes from, the virtual host and the path; the refusals inside the
# block add no line. The fail2ban filter shipped in contrib/fail2ban finds
# that line and its client, and not the same text quoted by another
# module's message (a 404's path).
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use File::Temp qw(tempfile);
use SL::Test;
use SL::Fault;
use SL::Keys;

plan tests => 7;

my $ip = fresh_ip();
my $re = qr/mod_slidinglimit: block started: client=\Q$ip\E /;
my @st = map { http_get('/bl/login', 'X-Forwarded-For' => $ip)->{status} } 1 .. 6;
ok t_cmp("@st", '200 200 429 429 429 429', 'block=15m on 2 per 60s: the third request starts the block');

my @lines = error_log_lines($re);
ok t_cmp(scalar @lines, 1, 'one line for the block, none for the refusals in it');
my $cfg  = Apache::Test::config();
my $host = $cfg->{vars}{servername};
my $port = $cfg->{vars}{port};
like $lines[0] // '',
  qr/\[slidinglimit:warn\] .*\] mod_slidinglimit: block started: client=\Q$ip\E policy=bl-login seconds=900 source=server vhost=\Q$host\E:$port uri=\/bl\/login$/,
  'the line: client, policy, seconds, source, vhost, uri, at warn';

# The same text in a path, logged by the core for a missing file (at info,
# under the suite's LogLevel debug).
my $forged = fresh_ip();
my $r = http_get("/bl-none/x%20mod_slidinglimit:%20block%20started:%20client=$forged%20policy=a%20seconds=1%20source=server%20vhost=a:1%20uri=",
    'X-Forwarded-For' => $forged);
ok t_cmp($r->{status}, 404, 'a path quoting the line: 404');
my @quoted = error_log_lines(qr/client=\Q$forged\E/);
ok(scalar @quoted >= 1, 'the quoted text is in the error log (' . scalar(@quoted) . ' lines)');

SKIP: {
    my $f2b = `sh -c 'command -v fail2ban-regex'`;
    chomp $f2b;
    skip 'fail2ban-regex not installed (Debian package fail2ban)', 2 unless $f2b;
    my $filter = top_dir() . '/contrib/fail2ban/filter.d/apache-slidinglimit.conf';
    my ($fh, $log) = tempfile(UNLINK => 1);
    print $fh @lines, @quoted;
    close $fh;
    my @hosts = grep { /\S/ } `$f2b -o ip $log $filter 2>&1`;
    chomp @hosts;
    ok t_cmp("@hosts", $ip, 'fail2ban-regex: the block line matches with its client as <HOST>');
    my $sum = `$f2b $log $filter 2>&1`;
    my ($matched) = $sum =~ /Lines: \d+ lines, \d+ ignored, (\d+) matched/;
    ok t_cmp($matched, 1, '... and only that line of ' . (@lines + @quoted));
}
