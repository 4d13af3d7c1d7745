# SPDX-License-Identifier: Apache-2.0
# ErrorDocument 429 with a local page: its body replaces the JSON, the status
# stays 429, the quota headers and Retry-After survive the internal
# redirect, and the redirected request carries the decision for the log.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Wire;

plan tests => 14;

my $ip = fresh_ip();
my $key = sl_key(ip => $ip, policy => 'wire-errdoc');
my $id1 = test_id('errdoc');
my $res = http_get('/wire/errdoc.html', 'X-Forwarded-For' => $ip,
    'X-Test-Id' => $id1);
ok t_cmp($res->{status}, 200, 'first request admitted');

my $id2 = test_id('errdoc');
my ($t0, $t1);
($res, $t0, $t1) = http_get_timed('/wire/errdoc.html', 'X-Forwarded-For' => $ip,
    'X-Test-Id' => $id2);
my $h = $res->{headers};
ok t_cmp($res->{status}, 429, 'the refusal keeps its status through the ErrorDocument');
ok t_cmp($res->{content}, qr/wire custom 429 page/, 'the ErrorDocument page is the body');
ok($res->{content} !~ /TOO_MANY_REQUESTS/, 'the JSON body is not sent');
ok t_cmp($h->{'content-type'}, qr{^text/html}, "the page's own Content-Type");
my ($lo, $hi) = wait_range(log_expiry($key, 60), $t0, $t1);
ok(($h->{'retry-after'} // -1) >= $lo && ($h->{'retry-after'} // -1) <= $hi,
    "Retry-After $h->{'retry-after'} survives and matches Redis ($lo..$hi)");
my $rl = sf_parse('list', $h->{ratelimit} // '');
ok($rl, 'RateLimit survives and parses') or diag $@;
ok($rl && $rl->{members}[0]{value} eq 'wire-errdoc'
      && $rl->{members}[0]{params}{r}{value} == 0
      && $rl->{members}[0]{params}{t}{value} == $h->{'retry-after'},
    'RateLimit: "wire-errdoc";r=0;t=Retry-After');
ok t_cmp($h->{'x-ratelimit-remaining'}, 0, 'X-RateLimit-Remaining survives');
ok t_cmp(redis('ZCARD', $key), 1, 'neither the refusal nor the redirect consumed quota');

# The access log logs the final (redirected) request: the decision must be
# there under its own name, not only as REDIRECT_SLIDINGLIMIT_RESULT.
my $lines = wire_log($id2, 1);
ok t_cmp(scalar(@$lines), 1, 'one access log line for the refused request');
my $l = $lines->[0] // {};
ok t_cmp($l->{status}, 429, 'logged with status 429');
ok t_cmp($l->{result}, 'denied', 'SLIDINGLIMIT_RESULT=denied on the redirected request');
ok(($l->{policy} // '') eq 'wire-errdoc' && ($l->{remaining} // '') eq '0',
    'SLIDINGLIMIT_POLICY and SLIDINGLIMIT_REMAINING too');
