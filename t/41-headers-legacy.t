# SPDX-License-Identifier: Apache-2.0
# The draft03 and x-ratelimit header sets and "off", each checked against
# the log in Redis; with all three sets on, they describe the same policy.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use POSIX ();
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

# A wait is the exact time until the log's oldest entry expires
# (log_expiry, store microseconds) minus the decision's store time, rounded
# up: between wait_range's bounds for the store times around the request.
# X-RateLimit-Reset is that expiry itself, rounded up.

# --- draft03: RateLimit-Limit/-Remaining/-Reset (delta seconds)
my $ip = fresh_ip();
my $key = sl_key(ip => $ip, policy => 'wire-draft03');
for my $i (1 .. 2) {
    my ($res, $t0, $t1) = http_get_timed('/wire/draft03.html', 'X-Forwarded-For' => $ip);
    my $h = $res->{headers};
    ok t_cmp($h->{'ratelimit-limit'}, 2, "draft03 $i: RateLimit-Limit");
    ok t_cmp($h->{'ratelimit-remaining'}, 2 - redis('ZCARD', $key),
        "draft03 $i: RateLimit-Remaining is the quota minus ZCARD");
    my ($lo, $hi) = wait_range(log_expiry($key, 60), $t0, $t1);
    my $reset = $h->{'ratelimit-reset'};
    ok($reset >= $lo && $reset <= $hi,
        "draft03 $i: RateLimit-Reset $reset is the delta rounded up ($lo..$hi)");
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
    my $expiry = POSIX::ceil(log_expiry($key, 60) / 1e6);
    ok t_cmp($h->{'x-ratelimit-reset'}, $expiry,
        "x-ratelimit $i: Reset is the oldest entry's expiry (Unix time), rounded up");
    ok(none_of($h, @IETF, @D03), "x-ratelimit $i: no other header set");
}
my ($t0, $t1);
($res, $t0, $t1) = http_get_timed('/wire/xrl.html', 'X-Forwarded-For' => $ip);
ok t_cmp($res->{status}, 429, 'x-ratelimit: refused');
my $E = log_expiry($key, 60);
my ($lo, $hi) = wait_range($E, $t0, $t1);
my $ra = $res->{headers}{'retry-after'};
ok($res->{headers}{'x-ratelimit-reset'} == POSIX::ceil($E / 1e6) && $ra >= $lo && $ra <= $hi,
    "x-ratelimit: Reset is the expiry and Retry-After the wait to it ($ra in $lo..$hi)");

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
    my ($res, $t0, $t1) = http_get_timed('/wire/all.html', 'X-Forwarded-For' => $ip);
    my $h = $res->{headers};
    my $z = redis('ZCARD', $key);
    my $E = log_expiry($key, 45);
    my $rl = sf_parse('list', $h->{ratelimit} // '');
    ok($rl, "all $i: RateLimit parses") or diag $@;
    my $p = $rl ? $rl->{members}[0]{params} : {};
    ok($p->{r}{value} == $h->{'ratelimit-remaining'}
          && $p->{r}{value} == $h->{'x-ratelimit-remaining'}
          && $p->{r}{value} == 3 - $z,
        "all $i: r, RateLimit-Remaining and X-RateLimit-Remaining agree with Redis");
    my ($lo, $hi) = wait_range($E, $t0, $t1);
    ok($p->{t}{value} == $h->{'ratelimit-reset'}
          && $p->{t}{value} >= $lo && $p->{t}{value} <= $hi
          && $h->{'x-ratelimit-reset'} == POSIX::ceil($E / 1e6)
          && $h->{'ratelimit-limit'} == 3 && $h->{'x-ratelimit-limit'} == 3,
        "all $i: t, RateLimit-Reset and X-RateLimit-Reset describe one moment");
}
