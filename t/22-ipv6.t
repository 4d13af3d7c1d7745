# SPDX-License-Identifier: Apache-2.0
# IPv6 clients through mod_remoteip: addresses in one /64 share a budget,
# another /64 does not; SlidingLimitIPv6Prefix 48 widens it; IPv4-mapped
# addresses count as IPv4.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Keys;

plan tests => 21;

# A fresh 2001:db8:XXXX:YYYY::/64 for this run.
my ($h1, $h2) = (sprintf('%x', ($$ % 0xfff0) + 1), sprintf('%x', int(rand(0xffff))));
my $net64 = "2001:db8:$h1:$h2";

# /64 (default)
{
    my @s = (
        http_get('/keys/v6/', 'X-Forwarded-For' => "${net64}::1")->{status},
        http_get('/keys/v6/', 'X-Forwarded-For' => "$net64:dead:beef:0:2")->{status},
        http_get('/keys/v6/', 'X-Forwarded-For' => "$net64:ffff:ffff:ffff:ffff")->{status},
        http_get('/keys/v6/', 'X-Forwarded-For' => "${net64}:1234::99")->{status},
    );
    is("@s", '200 200 200 429', 'v6: four addresses of one /64 share 3');
    my $key = sl_key(identity => sl_identity('ip', "$net64\::/64"), policy => 'keys-v6');
    is(redis('ZCARD', $key), 3, 'v6: the budget is the hashed /64');
    my $other = sprintf('2001:db8:%s:%x::1', $h1, (hex($h2) + 1) % 0x10000);
    is(http_get('/keys/v6/', 'X-Forwarded-For' => $other)->{status}, 200,
        'v6: the neighbouring /64 has its own budget');
    is(http_get('/keys/v6/', 'X-Forwarded-For' => uc("${net64}::abcd"))->{status}, 429,
        'v6: upper-case spelling of the same /64 is the same budget');
    my $long = join(':', '2001', '0db8', sprintf('%04s', $h1), sprintf('%04s', $h2),
        0, 0, 0, 7);
    is(http_get('/keys/v6/', 'X-Forwarded-For' => $long)->{status}, 429,
        'v6: the uncompressed spelling too');
}

# /48 in another location
{
    my $a = "2001:db8:$h1:1::1";
    my $b = "2001:db8:$h1:ffff::2";
    my $c = "2001:db8:$h1:42:1:2:3:4";
    my @s = map { http_get('/keys/v6-48/', 'X-Forwarded-For' => $_)->{status} } $a, $b, $c,
        "2001:db8:$h1:abc::5";
    is("@s", '200 200 200 429', 'v6 /48: four /64s of one /48 share 3');
    my $key = sl_key(identity => sl_identity('ip', "2001:db8:$h1\::/48"),
        policy => 'keys-v6-48');
    is(redis('ZCARD', $key), 3, 'v6 /48: the budget is the hashed /48');
    my $other48 = sprintf('2001:db8:%x::1', (hex($h1) + 1) % 0x10000);
    is(http_get('/keys/v6-48/', 'X-Forwarded-For' => $other48)->{status}, 200,
        'v6 /48: another /48 has its own budget');
    # The /64 location is not affected by the /48 one.
    is(http_get('/keys/v6/', 'X-Forwarded-For' => $a)->{status}, 200,
        'v6: the prefix is per location');
}

# IPv6 forms that carry an IPv4 client (NAT64/SIIT, 6to4) are keyed by it:
# translated IPv4 clients do not share one /64, and one 6to4 site does not
# get a budget per /64 of its /48.
{
    my $ip = fresh_ip();
    my $key = sl_key(identity => sl_identity('ip', $ip), policy => 'keys-v6');
    my @s = (
        http_get('/keys/v6/', 'X-Forwarded-For' => "64:ff9b::$ip")->{status},
        http_get('/keys/v6/', 'X-Forwarded-For' => $ip)->{status},
        http_get('/keys/v6/', 'X-Forwarded-For' => "::$ip")->{status},
        http_get('/keys/v6/', 'X-Forwarded-For' => "64:ff9b::$ip")->{status},
    );
    is("@s", '200 200 200 429', 'nat64, plain and ipv4-compatible: one budget');
    is(redis('ZCARD', $key), 3, 'nat64: keyed as the IPv4 address');
    is(http_get('/keys/v6/', 'X-Forwarded-For' => '64:ff9b::' . fresh_ip())->{status}, 200,
        'nat64: another IPv4 client behind the translator has its own budget');
    my $v4 = fresh_ip();
    my $six = sprintf('2002:%02x%02x:%02x%02x', split /\./, $v4);
    @s = map { http_get('/keys/v6/', 'X-Forwarded-For' => "$six:$_\::1")->{status} }
        qw(1 2 ffff 42);
    is("@s", '200 200 200 429', '6to4: every /64 of the site shares the IPv4 budget');
}

# IPv4-mapped
{
    my $ip = fresh_ip();
    my $key = sl_key(identity => sl_identity('ip', $ip), policy => 'keys-v6');
    my @s = (
        http_get('/keys/v6/', 'X-Forwarded-For' => $ip)->{status},
        http_get('/keys/v6/', 'X-Forwarded-For' => "::ffff:$ip")->{status},
        http_get('/keys/v6/', 'X-Forwarded-For' => "::FFFF:$ip")->{status},
        http_get('/keys/v6/', 'X-Forwarded-For' => $ip)->{status},
    );
    is("@s", '200 200 200 429', 'v4-mapped: the same budget as plain IPv4');
    is(redis('ZCARD', $key), 3, 'v4-mapped: keyed as the IPv4 address');
    # Not masked to /64 with the mapped prefix: another IPv4 address stays apart.
    my $ip2 = fresh_ip();
    is(http_get('/keys/v6/', 'X-Forwarded-For' => "::ffff:$ip2")->{status}, 200,
        'v4-mapped: another IPv4 address has its own budget');
}

# No raw address reaches the store.
{
    my $keys = redis('KEYS', 'sltest:*');
    ok(scalar(@$keys) > 0, 'store has keys');
    ok(!grep({ /2001|db8|::|10\.\d/ } @$keys), 'no address in any store key');
    ok(!grep({ !shape_ok($_) } @$keys), 'every key has the fixed shape')
        or diag(join "\n", grep { !shape_ok($_) } @$keys);
}

# Garbage in X-Forwarded-For is mod_remoteip's business: the peer address
# stays the client.
{
    my $res = http_get('/keys/v6/', 'X-Forwarded-For' => 'not-an-address');
    ok($res->{status} == 200 || $res->{status} == 429 || $res->{status} == 400,
        "garbage X-Forwarded-For answered sanely ($res->{status})");
    isnt($res->{status}, 500, '... never 500');
}
