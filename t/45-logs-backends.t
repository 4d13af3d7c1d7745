# SPDX-License-Identifier: Apache-2.0
# SLIDINGLIMIT_RESULT/POLICY/REMAINING in an access log (CustomLog with
# %{...}e, t/conf/sl.d/wire.conf) and at a back end (a CGI's environment and
# a RequestHeader set from %{ENV:...}); HEAD requests count and refuse like
# GET, with the headers and without a body.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Wire;

plan tests => 25;

# --- the access log
my $ip = fresh_ip();
my $key = sl_key(ip => $ip, policy => 'wire-logvars');
my $id = test_id('logvars');
my @status = map {
    http_get('/wire/logvars.html', 'X-Forwarded-For' => $ip, 'X-Test-Id' => "$id.$_")
      ->{status}
} 1 .. 4;
ok t_cmp("@status", '200 200 429 429', 'two admitted, two refused');
my $lines = wire_log($id, 4);
ok t_cmp(scalar(@$lines), 4, 'four log lines');
ok t_cmp(join(' ', map { $_->{result} } @$lines), 'allowed allowed denied denied',
    'SLIDINGLIMIT_RESULT logged per request');
ok t_cmp(join(' ', map { $_->{policy} } @$lines), join(' ', ('wire-logvars') x 4),
    'SLIDINGLIMIT_POLICY names the deciding policy');
ok t_cmp(join(' ', map { $_->{remaining} } @$lines), '1 0 0 0',
    'SLIDINGLIMIT_REMAINING logged');
ok t_cmp(join(' ', map { $_->{status} } @$lines), '200 200 429 429',
    'with the final status');
ok t_cmp(redis('ZCARD', $key), 2, 'and Redis agrees: two admissions');

# Requests to unlimited URLs carry no decision.
my $id0 = test_id('logvars');
http_get('/wire-pages/429.html', 'X-Test-Id' => $id0);
ok t_cmp(wire_log($id0, 1)->[0]{result}, '-', 'no limit here: nothing logged');

# --- a back end: CGI environment and a request header built from it
$ip = fresh_ip();
$key = sl_key(ip => $ip, policy => 'wire-cgi');
for my $i (1 .. 2) {
    my $res = http_get('/wire/env.cgi', 'X-Forwarded-For' => $ip);
    ok t_cmp($res->{status}, 200, "CGI request $i admitted");
    my %env = $res->{content} =~ /^(\w+)=(.*)$/mg;
    ok t_cmp($env{SLIDINGLIMIT_RESULT}, 'allowed', "CGI $i sees SLIDINGLIMIT_RESULT");
    ok t_cmp($env{SLIDINGLIMIT_POLICY}, 'wire-cgi', "CGI $i sees SLIDINGLIMIT_POLICY");
    ok t_cmp($env{SLIDINGLIMIT_REMAINING}, 2 - redis('ZCARD', $key),
        "CGI $i sees SLIDINGLIMIT_REMAINING, as in Redis");
    ok(($env{HTTP_X_SL_RESULT} // '') eq 'allowed'
          && ($env{HTTP_X_SL_REMAINING} // '') eq $env{SLIDINGLIMIT_REMAINING},
        "CGI $i: RequestHeader carries the decision to the back end");
}
my $res = http_get('/wire/env.cgi', 'X-Forwarded-For' => $ip);
ok t_cmp($res->{status}, 429, 'the refused request never reaches the back end');
ok($res->{content} !~ /SLIDINGLIMIT_RESULT=/, '... (no CGI output)');

# --- HEAD
$ip = fresh_ip();
$key = sl_key(ip => $ip, policy => 'wire-head');
$res = http_get({ method => 'HEAD' }, '/wire/head.html', 'X-Forwarded-For' => $ip);
ok t_cmp($res->{status}, 200, 'HEAD admitted');
ok t_cmp(redis('ZCARD', $key), 1, 'HEAD counts');
$res = http_get({ method => 'HEAD' }, '/wire/head.html', 'X-Forwarded-For' => $ip);
ok t_cmp($res->{status}, 429, 'HEAD refused');
ok(defined $res->{headers}{ratelimit} && $res->{headers}{'retry-after'} >= 1,
    'HEAD refusal carries RateLimit and Retry-After');
ok t_cmp(length($res->{content} // ''), 0, 'and no body');
