# SPDX-License-Identifier: Apache-2.0
# SlidingLimitConcurrent on the wire and with other limits: its
# RateLimit-Policy item (qu="concurrent-requests", no w), remaining room in
# flight in RateLimit and X-RateLimit-*, a refusal's 429 with Retry-After: 1
# and the JSON body, the decision in the environment and the metrics; one
# atomic call with a rate limit (a request the concurrency limit refuses
# consumes no rate quota, one the rate limit refuses takes no lease);
# <If> tiers replace the inherited line.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Httpd;
use SL::Hold;

plan tests => 16;

# Its own server: seven requests are held at once, more than the suite's
# main server has workers under prefork.
my $srv  = SL::Httpd->start(conf => ['concurrent.conf'], name => 'conc-headers');
my $base = $srv->url;
my $ip   = fresh_ip();
my $key  = sl_key(ip => $ip, policy => 'conc', alg => 'n');

my $q = hold("$base/conc/hold.cgi", $ip, quick => 1);
ok t_cmp(hold_status($q), 200, 'a request alone is admitted');
ok t_cmp($q->{headers}{'ratelimit-policy'}, '"conc";q=2;qu="concurrent-requests"', 'RateLimit-Policy: its quota unit, no window');
ok t_cmp($q->{headers}{ratelimit}, '"conc";r=1;t=1', 'RateLimit: one more may be in flight');
ok t_cmp($q->{headers}{'x-ratelimit-remaining'} . '/' . $q->{headers}{'x-ratelimit-limit'}, '1/2', 'X-RateLimit-Remaining/Limit');

my @h = map { hold("$base/conc/hold.cgi", $ip) } 1 .. 2;
wait_until(sub { !grep { !hold_peek($_) } @h }, 20);
my $r = hold("$base/conc/hold.cgi", $ip, quick => 1);
ok t_cmp(hold_status($r), 429, 'two in flight: the third is refused');
ok t_cmp($r->{headers}{'retry-after'}, 1, '... with Retry-After: 1');
ok t_cmp($r->{headers}{ratelimit}, '"conc";r=0;t=1', '... and RateLimit r=0;t=1');
like($r->{body}, qr/"code":"TOO_MANY_REQUESTS".*"retry_after_seconds":1/, '... and the JSON body');
open_gate($_), hold_status($_) for @h;
my $metrics = http_get("$base/conc-status")->{content} // '';
like($metrics, qr/slidinglimit_decisions_total\{result="denied",policy="conc"\} [1-9]/, 'the refusal is counted on the status page');

# A rate limit (3 per minute) and a concurrency limit (2) in one call.
my $bip  = fresh_ip();
my $rate = sl_key(ip => $bip, policy => 'conc-rate', alg => 'l');
my $conc = sl_key(ip => $bip, policy => 'conc-both', alg => 'n');
my @b = map { hold("$base/conc/both.cgi", $bip) } 1 .. 2;
wait_until(sub { !grep { !hold_peek($_) } @b }, 20);
my $c = hold("$base/conc/both.cgi", $bip, quick => 1);
ok t_cmp(hold_status($c) . ' ' . ($c->{headers}{'retry-after'} // ''), '429 1', 'both: refused by the concurrency limit');
ok t_cmp(redis('ZCARD', $rate), 2, '... which consumed no rate quota');
open_gate($b[1]);
hold_status($b[1]);
my $d = hold("$base/conc/both.cgi", $bip);
wait_until(sub { hold_peek($d) }, 20);
ok t_cmp(hold_peek($d), 200, 'both: a lease given back admits the third of the minute');
open_gate($d);
hold_status($d);
my $e = hold("$base/conc/both.cgi", $bip, quick => 1);
ok t_cmp(hold_status($e), 429, 'both: the fourth of the minute is refused by the rate limit');
ok($e->{headers}{'retry-after'} > 1, "... with the rate limit's wait ($e->{headers}{'retry-after'} s)");
ok t_cmp(redis('ZCARD', $conc), 1, '... and took no lease: only the one held is in flight');
open_gate($b[0]);
hold_status($b[0]);

# <If> tier: gold clients have 3 in flight, the others 1.
my $tip = fresh_ip();
my @g = map { hold("$base/conc/tier.cgi", $tip, headers => { 'X-Tier' => 'gold' }) } 1 .. 5;
wait_until(sub { !grep { !hold_peek($_) } @g }, 20);
my @p = map { hold("$base/conc/tier.cgi", fresh_ip()) } 1 .. 1;
my $plain = hold("$base/conc/tier.cgi", $tip);
wait_until(sub { hold_peek($plain) && hold_peek($p[0]) }, 20);
ok t_cmp(join(' ', scalar(grep { hold_peek($_) == 200 } @g), hold_peek($plain)), '3 200',
    '<If> tier: 3 gold in flight of 5; the plain line is its own budget');
open_gate($_), hold_status($_) for @g, @p, $plain;
$srv->stop;
