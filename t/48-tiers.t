# SPDX-License-Identifier: Apache-2.0
# Tiers by authentication level (the recipe of docs/OPERATIONS.md):
# anonymous callers share a small budget per address, authenticated users
# get a larger one per user, and a bad password gets 401 and no quota.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Keys;

plan tests => 10;

my $ip = fresh_ip();
my $anon = sl_key(ip => $ip, policy => 'wire-anonymous');
my $user = sl_key(identity => sl_identity('user', 'alice'), policy => 'wire-user');
redis('DEL', $user);

my @st = map { http_get('/wire/tier.html', 'X-Forwarded-For' => $ip)->{status} } 1 .. 3;
ok t_cmp("@st", '200 200 429', 'anonymous: 2 per minute per address');
ok t_cmp(redis('ZCARD', $anon), 2, 'counted under the address');

my $res = http_get('/wire/tier.html', 'X-Forwarded-For' => $ip,
    Authorization => basic('alice', 'wrong'));
ok t_cmp($res->{status}, 401, 'a bad password is refused by authentication');
ok t_cmp(redis('EXISTS', $user), 0, '... and consumes no quota');

for my $i (1 .. 4) {
    $res = http_get('/wire/tier.html', 'X-Forwarded-For' => $ip,
        Authorization => basic('alice', 'secret'));
    ok(($res->{status} == 200 && ($res->{headers}{ratelimit} // '') =~ /^"wire-user";r=@{[4 - $i]};/),
        "alice, request $i: admitted on the user tier although her address is spent");
}
$res = http_get('/wire/tier.html', 'X-Forwarded-For' => fresh_ip(),
    Authorization => basic('alice', 'secret'));
ok t_cmp($res->{status}, 429, 'the user budget follows the user, not the address');
ok t_cmp(redis('ZCARD', $user), 4, 'counted under the user');
