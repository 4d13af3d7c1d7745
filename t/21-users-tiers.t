# SPDX-License-Identifier: Apache-2.0
# Basic-auth users with their own budgets, and tiers chosen with
# <If>/<ElseIf>/<Else>: an exempt internal network (through mod_remoteip),
# users, enterprise API keys and anonymous addresses.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Keys;

plan tests => 28;

# An address outside 10.99.0.0/16 (the exempt network below).
my $n = 0;
sub outside_ip { $n++; sprintf('172.16.%d.%d', $$ % 250 + 1, ($n + int(rand(200))) % 250 + 1) }

# Users: the module runs in fixups, after authentication, so r->user is set.
{
    my $ip = fresh_ip();
    my @a = map { http_get('/keys/users/', 'X-Forwarded-For' => $ip,
            Authorization => basic('alice', 'alice-pw'))->{status} } 1 .. 4;
    is("@a", '200 200 200 429', 'users: alice (bcrypt) has 3');
    is(redis('ZCARD', sl_key(identity => sl_identity('user', 'alice'),
        policy => 'keys-users')), 3, 'users: her budget is the hashed user name');
    my $res = http_get('/keys/users/', 'X-Forwarded-For' => $ip,
        Authorization => basic('bob', 'bob-pw'));
    is($res->{status}, 200, 'users: bob (apr1), same address, has his own budget');
    is($res->{headers}{'x-ratelimit-remaining'}, 2, '... and it is full');
    is(http_get('/keys/users/', 'X-Forwarded-For' => $ip)->{status}, 401,
        'users: no credentials, no answer but 401');
    is(http_get('/keys/users/', 'X-Forwarded-For' => $ip,
        Authorization => basic('alice', 'nope'))->{status}, 401,
        'users: a wrong password is 401, not 429');
    my $keys = redis('KEYS', 'sltest:*');
    # Keys are base64 hashes, where "bob" turns up by chance: a name counts
    # only as a whole segment, not inside a hash.
    my $b64 = 'A-Za-z0-9+/';
    ok(!grep({ /(?:^|[^$b64])(?:alice|bob)(?:[^$b64]|$)/ } @$keys),
        'users: no user name in any store key');
}

# Tiers.
{
    # Anonymous: 2 per address.
    my $ip = outside_ip();
    my @s = map { http_get('/keys/tiers/', 'X-Forwarded-For' => $ip)->{status} } 1 .. 3;
    is("@s", '200 200 429', 'tiers: anonymous address gets 2');
    is(redis('ZCARD', sl_key(identity => sl_identity('ip', $ip),
        policy => 'keys-tier-anon')), 2, 'tiers: anonymous budget in Redis');
    my $res = http_get('/keys/tiers/', 'X-Forwarded-For' => outside_ip());
    is($res->{headers}{'ratelimit-policy'}, '"keys-tier-anon";q=2;w=60',
        'tiers: anonymous policy announced');

    # Users: 4 each, whatever the address.
    @s = map {
        http_get('/keys/tiers/', 'X-Forwarded-For' => outside_ip(),
            Authorization => basic('carol', 'carol-pw'))->{status}
    } 1 .. 5;
    is("@s", '200 200 200 200 429', 'tiers: a user gets 4 across addresses');
    is(redis('ZCARD', sl_key(identity => sl_identity('user', 'carol'),
        policy => 'keys-tier-user')), 4, 'tiers: user budget in Redis');
    is(http_get('/keys/tiers/', 'X-Forwarded-For' => $ip,
        Authorization => basic('bob', 'bob-pw'))->{status}, 200,
        'tiers: a user on a spent anonymous address is not anonymous');
    is(http_get('/keys/tiers/', 'X-Forwarded-For' => $ip,
        Authorization => basic('bob', 'forged'))->{status}, 401,
        'tiers: forged credentials do not buy the user tier');

    # Enterprise keys: 6 per key, whatever the address.
    my $ekey = sl_key(identity => sl_identity('header:x-keys-enterprise', 'ent-alpha'),
        policy => 'keys-tier-enterprise');
    redis('DEL', $ekey);
    @s = map {
        http_get('/keys/tiers/', 'X-Forwarded-For' => outside_ip(),
            'X-Keys-Enterprise' => 'ent-alpha')->{status}
    } 1 .. 7;
    is("@s", '200 200 200 200 200 200 429', 'tiers: an enterprise key gets 6');
    is(redis('ZCARD', $ekey), 6, 'tiers: enterprise budget in Redis');
    $res = http_get('/keys/tiers/', 'X-Forwarded-For' => outside_ip(),
        'X-Keys-Enterprise' => 'ent-beta');
    is($res->{status}, 200, 'tiers: another enterprise key has its own budget');
    is($res->{headers}{'x-ratelimit-limit'}, 6, '... of 6');

    # An unknown key is just anonymous.
    @s = map {
        http_get('/keys/tiers/', 'X-Forwarded-For' => $ip,
            'X-Keys-Enterprise' => 'made-up-' . tag())->{status}
    } 1 .. 2;
    is("@s", '429 429', 'tiers: an unknown enterprise key is anonymous (and spent)');

    # The exempt network: no limit, no headers, no store key.
    my $internal = sprintf('10.99.%d.%d', int(rand(250)) + 1, int(rand(250)) + 1);
    my $before = redis('DBSIZE');
    @s = map { http_get('/keys/tiers/', 'X-Forwarded-For' => $internal)->{status} } 1 .. 5;
    is("@s", '200 200 200 200 200', 'tiers: 10.99.0.0/16 is exempt');
    $res = http_get('/keys/tiers/', 'X-Forwarded-For' => $internal);
    ok(!exists $res->{headers}{'ratelimit-policy'}
          && !exists $res->{headers}{'x-ratelimit-limit'},
        'tiers: an exempt request gets no quota headers');
    is(redis('DBSIZE'), $before, 'tiers: and makes no store key');
    $res = http_get('/keys/tiers/', 'X-Forwarded-For' => $internal,
        Authorization => basic('carol', 'carol-pw'));
    is($res->{status}, 200, 'tiers: the exemption comes first, even for a spent user');
    ok(!exists $res->{headers}{'x-ratelimit-limit'}, '... with no headers');

    # The exemption follows mod_remoteip's r->useragent_ip: a client that
    # is not a trusted proxy cannot claim the network by header.
    # httpd before 2.4.9 checks every hop against the connection's address
    # instead of the hop to its right (PR 54651: README, Requirements), so
    # there the leftmost address is the client's.
    my $hops = "$internal, $ip";
    SKIP: {
        skip 'mod_remoteip trusts every hop before httpd 2.4.9 (PR 54651)', 1
          unless have_min_apache_version('2.4.9');
        @s = map { http_get('/keys/tiers/', 'X-Forwarded-For' => $hops)->{status} } 1 .. 2;
        is("@s", '429 429',
            'tiers: "10.99.x, spent address" is the spent address, not exempt');
    }
    $res = http_get('/keys/tiers/', 'X-Forwarded-For' => '10.98.0.1');
    is($res->{headers}{'x-ratelimit-limit'}, 2, 'tiers: 10.98.0.1 is outside /16');
    is(http_get('/keys/tiers/', 'X-Forwarded-For' => '10.99.255.254')->{status}, 200,
        'tiers: 10.99.255.254 is inside /16');
    is(http_get('/keys/tiers/', 'X-Forwarded-For' => '10.99.255.254')->{headers}{'x-ratelimit-limit'},
        undef, '... and exempt');
}
