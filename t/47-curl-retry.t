# SPDX-License-Identifier: Apache-2.0
# A real client honours the headers: curl --retry waits out a 429 for the
# Retry-After it was given (longer than curl's own first back-off of one
# second), and its retry is admitted. The location allows 1 request per 3s.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use File::Temp qw(tempdir);
use Time::HiRes qw(time);
use SL::Test;
use SL::Wire;

plan tests => 7;

my $ip = fresh_ip();
my $key = sl_key(ip => $ip, policy => 'wire-curl');
my $url = server_url() . '/wire/curl.html';
my $dir = tempdir(CLEANUP => 1);

ok t_cmp(http_get('/wire/curl.html', 'X-Forwarded-For' => $ip)->{status}, 200,
    'the one request of the window is used up');
my $start = time;
my $rc = system('curl', '--silent', '--show-error', '--retry', '3',
    '--retry-max-time', '30', '--max-time', '30',
    '-H', "X-Forwarded-For: $ip", '-D', "$dir/headers", '-o', "$dir/body",
    '-w', '# curl: %{http_code}\n', $url) >> 8;
my $elapsed = time - $start;
ok t_cmp($rc, 0, 'curl exits 0');

open(my $fh, '<', "$dir/headers") or die "headers: $!";
my @responses = split /\r?\n\r?\n/, do { local $/; <$fh> };
my @codes = map { /^HTTP\/\S+ (\d+)/ ? $1 : () } @responses;
my ($retry_after) = map { /^Retry-After: (\d+)/mi ? $1 : () } @responses;
ok t_cmp($codes[0], 429, 'the first answer is 429');
ok t_cmp($codes[-1], 200, 'the retry is admitted');
ok($retry_after && $retry_after >= 2,
    "Retry-After ($retry_after) is longer than curl's own first back-off (1s)");
ok($elapsed >= $retry_after - 0.05,
    sprintf('curl waited %.2fs, at least Retry-After', $elapsed));
ok t_cmp("@codes", '429 200', 'one refusal, then one admission');
