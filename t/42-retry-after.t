# SPDX-License-Identifier: Apache-2.0
# Retry-After: whole seconds rounded up, never earlier than the true time
# (computed from Redis) nor than t; the JSON body; SlidingLimitStatus; error
# responses drop what the mapping phases chose for the resource.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use JSON::PP qw(decode_json);
use POSIX qw(ceil);
use SL::Test;
use SL::Wire;
use SL::Algo ();

plan tests => 31;

# --- a 4500ms window: w rounds up to 5, Retry-After to whole seconds
my $ip = fresh_ip();
my $key = sl_key(ip => $ip, policy => 'wire-frac');
my $res = http_get('/wire/frac.html', 'X-Forwarded-For' => $ip);
my $E = log_expiry($key, 4.5);
# Three refusals 0.4 s apart, well within the window, with the store's
# clock around each; checked afterwards (parsing runs a node process).
my @refused;
for my $i (1 .. 3) {
    select(undef, undef, undef, 0.4) if $i > 1;
    my ($r, $t0, $t1) = http_get_timed('/wire/frac.html', 'X-Forwarded-For' => $ip);
    push @refused, [ $r, $t0, $t1 ];
}
my $entries = redis('ZCARD', $key);
ok t_cmp($res->{status}, 200, 'first request admitted');
my $pol = sf_parse('list', $res->{headers}{'ratelimit-policy'});
ok t_cmp($pol->{members}[0]{params}{w}{value}, 5,
    'w of a 4500ms window is 5 (whole seconds, rounded up)');
my @seen;
for my $i (1 .. 3) {
    my ($r, $t0, $t1) = @{ $refused[ $i - 1 ] };
    my ($lo, $hi) = wait_range($E, $t0, $t1);
    ok t_cmp($r->{status}, 429, "refused ($i)");
    my $ra = $r->{headers}{'retry-after'} // '';
    ok($ra =~ /^[0-9]+$/, "Retry-After '$ra' is whole seconds");
    ok($ra =~ /^[0-9]+$/ && $ra >= $lo && $ra >= 1 && $ra <= $hi,
        "Retry-After $ra is the true wait rounded up, never earlier ($lo..$hi)");
    my $rl = sf_parse('list', $r->{headers}{ratelimit});
    ok($ra >= $rl->{members}[0]{params}{t}{value},
        "Retry-After $ra is never earlier than t");
    my $body = eval { decode_json($r->{content}) } || {};
    ok t_cmp($body->{error}{retry_after_seconds}, $ra,
        'the JSON body names the same wait');
    push @seen, $ra;
}
ok($seen[0] >= $seen[1] && $seen[1] >= $seen[2],
    "the wait shrinks as time passes (@seen)");
ok t_cmp($entries, 1, 'refusals consumed nothing');
# Waiting out the last Retry-After (from its answer on) admits the next
# request.
my $wait = $refused[-1][2] / 1e6 + $seen[-1] - SL::Algo::store_now() / 1e6;
select(undef, undef, undef, $wait) if $wait > 0;
ok t_cmp(http_get('/wire/frac.html', 'X-Forwarded-For' => $ip)->{status}, 200,
    'after Retry-After seconds the request is admitted');

# --- SlidingLimitStatus 503 and 403
for my $code (503, 403) {
    my $ip = fresh_ip();
    http_get("/wire/s$code.html", 'X-Forwarded-For' => $ip);
    my $res = http_get("/wire/s$code.html", 'X-Forwarded-For' => $ip);
    ok t_cmp($res->{status}, $code, "SlidingLimitStatus $code");
    ok($res->{headers}{'retry-after'} >= 1 && defined $res->{headers}{ratelimit},
        "$code: Retry-After and the quota headers");
    my $body = eval { decode_json($res->{content}) } || {};
    ok t_cmp($body->{error}{code}, 'TOO_MANY_REQUESTS', "$code: the JSON body");
}
my $ip2 = fresh_ip();
http_get('/wire/s403.html', 'X-Forwarded-For' => $ip2);
$res = http_get('/wire/s403.html', 'X-Forwarded-For' => $ip2);
ok t_cmp($res->{headers}{'x-wire-always'}, 'yes',
    '"Header always set" applies to the refusal');

# --- mod_mime's Content-Encoding for a .gz file does not reach the JSON
$ip = fresh_ip();
$res = http_get('/wire/data.txt.gz', 'X-Forwarded-For' => $ip);
ok t_cmp($res->{headers}{'content-encoding'}, 'x-gzip',
    'the admitted file is served with its encoding');
$res = http_get('/wire/data.txt.gz', 'X-Forwarded-For' => $ip);
ok t_cmp($res->{status}, 429, 'refused');
ok(!defined $res->{headers}{'content-encoding'},
    'the JSON refusal carries no Content-Encoding');
ok t_cmp($res->{headers}{'content-type'}, qr{^application/json}, 'and is JSON');
