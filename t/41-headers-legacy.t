# The draft03 and x-ratelimit header sets and "off", each checked against
# the log in Redis; with all three sets on, they describe the same policy.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Wire;

plan tests => 36;

sub none_of {
    my ($h, @names) = @_;
    return !grep { defined $h->{$_} } @names;
}
my @IETF = ('ratelimit-policy', 'ratelimit');
my @D03  = ('ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset');
my @XRL  = ('x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset');

# --- draft03: RateLimit-Limit/-Remaining/-Reset (delta seconds)
my $ip = fresh_ip();
my $key = sl_key(ip => $ip, policy => 'wire-draft03');
for my $i (1 .. 2) {
    my $h = http_get('/wire/draft03.html', 'X-Forwarded-For' => $ip)->{headers};
    ok t_cmp($h->{'ratelimit-limit'}, 2, "draft03 $i: RateLimit-Limit");
    ok t_cmp($h->{'ratelimit-remaining'}, 2 - redis('ZCARD', $key),
        "draft03 $i: RateLimit-Remaining is the quota minus ZCARD");
    my $w = true_wait_log($key, 60);
    my $reset = $h->{'ratelimit-reset'};
    ok($reset >= $w && $reset < $w + 3,
        "draft03 $i: RateLimit-Reset $reset is the delta $w rounded up");
    ok(none_of($h, @IETF, @XRL), "draft03 $i: no other header set");
}
my $res = http_get('/wire/draft03.html', 'X-Forwarded-For' => $ip);
ok t_cmp($res->{status}, 429, 'draft03: refused');
ok t_cmp($res->{headers}{'ratelimit-remaining'}, 0, 'draft03: Remaining 0');
ok t_cmp($res->{headers}{'ratelimit-reset'}, $res->{headers}{'retry-after'},
    'draft03: Reset equals Retry-After');

# --- x-ratelimit: X-RateLimit-Reset is a Unix time, by the store's clock
$ip = fresh_ip();
$key = sl_key(ip => $ip, policy => 'wire-xrl');
for my $i (1 .. 2) {
    my $h = http_get('/wire/xrl.html', 'X-Forwarded-For' => $ip)->{headers};
    ok t_cmp($h->{'x-ratelimit-limit'}, 2, "x-ratelimit $i: Limit");
    ok t_cmp($h->{'x-ratelimit-remaining'}, 2 - redis('ZCARD', $key),
        "x-ratelimit $i: Remaining is the quota minus ZCARD");
    my $oldest = redis('ZRANGE', $key, 0, 0, 'WITHSCORES');
    my $expiry = ($oldest->[1] + 60e6) / 1e6;
    my $reset = $h->{'x-ratelimit-reset'};
    ok($reset >= $expiry && $reset < $expiry + 3,
        "x-ratelimit $i: Reset $reset is the oldest entry's expiry $expiry (Unix time), rounded up");
    ok(none_of($h, @IETF, @D03), "x-ratelimit $i: no other header set");
}
$res = http_get('/wire/xrl.html', 'X-Forwarded-For' => $ip);
ok t_cmp($res->{status}, 429, 'x-ratelimit: refused');
my $now = redis('TIME')->[0];
my $ra = $res->{headers}{'retry-after'};
ok(abs($res->{headers}{'x-ratelimit-reset'} - ($now + $ra)) <= 2,
    'x-ratelimit: Reset is now + Retry-After');

# --- off: no quota header, but a refusal still says when to retry
$ip = fresh_ip();
$res = http_get('/wire/off.html', 'X-Forwarded-For' => $ip);
ok t_cmp($res->{status}, 200, 'off: admitted');
ok(none_of($res->{headers}, @IETF, @D03, @XRL), 'off: no quota headers');
ok t_cmp(redis('ZCARD', sl_key(ip => $ip, policy => 'wire-off')), 1,
    'off: the request was still counted');
$res = http_get('/wire/off.html', 'X-Forwarded-For' => $ip);
ok t_cmp($res->{status}, 429, 'off: refused');
ok(none_of($res->{headers}, @IETF, @D03, @XRL), 'off: no quota headers on 429');
ok($res->{headers}{'retry-after'} >= 1, 'off: Retry-After is still sent');

# --- all three sets at once describe the same policy
$ip = fresh_ip();
$key = sl_key(ip => $ip, policy => 'wire-all');
for my $i (1 .. 3) {
    my $h = http_get('/wire/all.html', 'X-Forwarded-For' => $ip)->{headers};
    my $rl = sf_parse('list', $h->{ratelimit} // '');
    ok($rl, "all $i: RateLimit parses") or diag $@;
    my $p = $rl ? $rl->{members}[0]{params} : {};
    my $now = redis('TIME')->[0];
    ok($p->{r}{value} == $h->{'ratelimit-remaining'}
          && $p->{r}{value} == $h->{'x-ratelimit-remaining'}
          && $p->{r}{value} == 3 - redis('ZCARD', $key),
        "all $i: r, RateLimit-Remaining and X-RateLimit-Remaining agree with Redis");
    ok($p->{t}{value} == $h->{'ratelimit-reset'}
          && abs($h->{'x-ratelimit-reset'} - ($now + $p->{t}{value})) <= 2
          && $h->{'ratelimit-limit'} == 3 && $h->{'x-ratelimit-limit'} == 3,
        "all $i: t, RateLimit-Reset and X-RateLimit-Reset describe one moment");
}
