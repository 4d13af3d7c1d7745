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

plan tests => 31;

# --- a 4500ms window: w rounds up to 5, Retry-After to whole seconds
my $ip = fresh_ip();
my $key = sl_key(ip => $ip, policy => 'wire-frac');
my $res = http_get('/wire/frac.html', 'X-Forwarded-For' => $ip);
ok t_cmp($res->{status}, 200, 'first request admitted');
my $pol = sf_parse('list', $res->{headers}{'ratelimit-policy'});
ok t_cmp($pol->{members}[0]{params}{w}{value}, 5,
    'w of a 4500ms window is 5 (whole seconds, rounded up)');
my @seen;
for my $i (1 .. 3) {
    $res = http_get('/wire/frac.html', 'X-Forwarded-For' => $ip);
    my $wait = true_wait_log($key, 4.5);
    ok t_cmp($res->{status}, 429, "refused ($i)");
    my $ra = $res->{headers}{'retry-after'};
    ok(defined $ra && $ra =~ /^[0-9]+$/, "Retry-After '$ra' is whole seconds");
    ok($ra >= $wait && $ra >= 1 && $ra < $wait + 3,
        "Retry-After $ra is never earlier than the true wait $wait, and its ceiling");
    my $rl = sf_parse('list', $res->{headers}{ratelimit});
    ok($ra >= $rl->{members}[0]{params}{t}{value},
        "Retry-After $ra is never earlier than t");
    my $body = eval { decode_json($res->{content}) } || {};
    ok t_cmp($body->{error}{retry_after_seconds}, $ra,
        'the JSON body names the same wait');
    push @seen, $ra;
    select(undef, undef, undef, 0.4);
}
ok($seen[0] >= $seen[1] && $seen[1] >= $seen[2],
    "the wait shrinks as time passes (@seen)");
ok t_cmp(redis('ZCARD', $key), 1, 'refusals consumed nothing');
# Waiting out the last Retry-After admits the next request.
sleep($seen[-1]);
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
