# SPDX-License-Identifier: Apache-2.0
# Budgets and sections: a named budget shared by two locations; unnamed
# lines separate per section and stable (their store key is a function of
# the section and the values only); nested sections replace the inherited
# limit list while every other directive merges one by one.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Keys;

plan tests => 29;

# name= shares one budget between /keys/named-a and /keys/named-b.
{
    my $ip = fresh_ip();
    my @s = map { http_get("/keys/named-$_/", 'X-Forwarded-For' => $ip)->{status} }
        qw(a b a b a b);
    is("@s", '200 200 200 200 429 429', 'named: 4 across both locations');
    is(redis('ZCARD', sl_key(ip => $ip, policy => 'keys-shared')), 4,
        'named: one key in Redis');
}

# Unnamed lines: same values, different sections, different budgets.
{
    my $ip = fresh_ip();
    my $ida = policy_unnamed("<Location /keys/unnamed-a>\n", 3, 60_000_000);
    my $idb = policy_unnamed("<Location /keys/unnamed-b>\n", 3, 60_000_000);
    my $idc = policy_unnamed("<Location /keys/unnamed-c>\n", 3, 60_000_000);
    my @a = map { http_get('/keys/unnamed-a/', 'X-Forwarded-For' => $ip)->{status} } 1 .. 4;
    is("@a", '200 200 200 429', 'unnamed-a: 3');
    my $res = http_get('/keys/unnamed-b/', 'X-Forwarded-For' => $ip);
    is($res->{status}, 200, 'unnamed-b: its own budget, same values');
    is($res->{headers}{'ratelimit-policy'}, '"3-per-1m";q=3;w=60',
        'unnamed: named after its values in the headers');
    my $id = sl_identity('ip', $ip);
    is(redis('ZCARD', sl_key(identity => $id, policy_id => $ida)), 3,
        'unnamed-a: the key is computed from "<Location /keys/unnamed-a>" and 3/60s');
    is(redis('ZCARD', sl_key(identity => $id, policy_id => $idb)), 1,
        'unnamed-b: likewise from its own section');
    # <IfModule> is a parse-time condition, not a section a request is in:
    # wrapping a <Location> in it does not change the budget.
    http_get('/keys/unnamed-c/', 'X-Forwarded-For' => $ip);
    is(redis('ZCARD', sl_key(identity => $id, policy_id => $idc)), 1,
        'unnamed-c: <IfModule> around the section does not change the key');
}

# An unnamed line inside <If> inside <Location>: both sections, outermost
# first, as written.
{
    my $ip = fresh_ip();
    my $id = sl_identity('ip', $ip);
    my $loc = policy_unnamed("<Location /keys/unnamed-if>\n", 3, 60_000_000);
    my $if = policy_unnamed("<Location /keys/unnamed-if>\n<If \"%{QUERY_STRING} == 'x'\">\n",
        3, 60_000_000);
    http_get('/keys/unnamed-if/', 'X-Forwarded-For' => $ip);
    http_get('/keys/unnamed-if/?x', 'X-Forwarded-For' => $ip) for 1 .. 2;
    is(redis('ZCARD', sl_key(identity => $id, policy_id => $loc)), 1,
        'unnamed in <Location>: its key');
    is(redis('ZCARD', sl_key(identity => $id, policy_id => $if)), 2,
        'unnamed in <If> in <Location>: a budget of its own, keyed by both sections');
}

# Nested: /keys/nest sets headers draft03, status 451, key header:X-Keys-Nest
# ip and a 5/1m limit; /keys/nest/inner sets only its own 2/1m limit.
# (403 before httpd 2.4.23, which has no status line for 451.)
{
    my $st = have_min_apache_version('2.4.23') ? 451 : 403;
    my $v = 'nest-' . tag();
    my $res = http_get('/keys/nest/', 'X-Keys-Nest' => $v);
    is($res->{status}, 200, 'outer: admitted');
    is($res->{headers}{'ratelimit-limit'}, 5, 'outer: draft03 headers, 5');
    ok(!exists $res->{headers}{'x-ratelimit-limit'}
          && !exists $res->{headers}{'ratelimit-policy'},
        'outer: only draft03 (the default set is replaced)');

    my @s = map { http_get('/keys/nest/inner/', 'X-Keys-Nest' => $v) } 1 .. 3;
    is(join(' ', map { $_->{status} } @s), "200 200 $st",
        "inner: its own 2/1m, refused with the inherited status $st");
    is($s[0]{headers}{'ratelimit-limit'}, 2, 'inner: the inherited draft03 headers, 2');
    ok(!exists $s[0]{headers}{'x-ratelimit-limit'}, 'inner: no x-ratelimit');
    ok(defined $s[2]{headers}{'retry-after'}, 'inner: the refusal has Retry-After');
    my $id = sl_identity('header:x-keys-nest', $v);
    is(redis('ZCARD', sl_key(identity => $id, policy => 'keys-nest-inner')), 2,
        'inner: the inherited key source (header) in Redis');
    is(redis('ZCARD', sl_key(identity => $id, policy => 'keys-nest-outer')), 1,
        'inner: the outer limit does not apply there (replaced, not added)');

    # <If> inside the inner location changes one directive, keeps the limits.
    $res = http_get('/keys/nest/inner/?dry', 'X-Keys-Nest' => $v);
    is($res->{status}, 200, 'inner <If>: dry run lets the spent budget through');
    is($res->{headers}{'ratelimit-remaining'}, 0, '... with the inherited limit, r=0');
    ok(!defined $res->{headers}{'retry-after'}, '... and no Retry-After');
    is(redis('ZCARD', sl_key(identity => $id, policy => 'keys-nest-inner')), 2,
        '... consuming nothing');
    is(http_get('/keys/nest/inner/?other', 'X-Keys-Nest' => $v)->{status}, $st,
        'inner: without the <If> it is refused again');

    # SlidingLimit off in the innermost location.
    my @o = map { http_get('/keys/nest/inner/off/', 'X-Keys-Nest' => $v) } 1 .. 4;
    is(join(' ', map { $_->{status} } @o), '200 200 200 200', 'off: no limit');
    ok(!exists $o[0]{headers}{'ratelimit-limit'}, 'off: no quota headers');

    # The outer budget is still its own.
    @s = map { http_get('/keys/nest/', 'X-Keys-Nest' => $v)->{status} } 1 .. 5;
    is("@s", "200 200 200 200 $st", 'outer: 5 in all (1 earlier + 4)');

    # The inherited key falls back to ip without the header.
    my $ip = fresh_ip();
    http_get('/keys/nest/inner/', 'X-Forwarded-For' => $ip);
    is(redis('ZCARD', sl_key(identity => sl_identity('ip', $ip),
        policy => 'keys-nest-inner')), 1, 'inner: the inherited chain falls back to ip');
}

# Named keys are independent of the section: a plain function of the name.
{
    my $ip = fresh_ip();
    http_get('/keys/ip/', 'X-Forwarded-For' => $ip);
    is(redis('ZCARD', sl_key(ip => $ip, policy => 'keys-ip')), 1,
        'named: the key is a function of the name only');
}
