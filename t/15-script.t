# SPDX-License-Identifier: Apache-2.0
# lua/sl_check.lua called directly (EVAL in the suite's Redis) and through
# httpd: bad arguments get an error reply, keys holding foreign data are
# read as empty and replaced (an error would fail the identity open for as
# long as the foreign key lives), every key gets a TTL, log members stay
# unique, and one key named by two limits counts a request once.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Algo;

plan tests => 14 + 3 * 3 + 6 + 4 + 4;

my $script = script_text('sl_check');
my $p = 'sltest:{script-' . $$ . '}';

# Other tests check that every key in the store has the module's shape:
# the keys made here directly go again, also when a test fails.
END {
    my $keys = eval { redis('KEYS', "sltest:{script-$$}*") } || [];
    eval { redis('DEL', $_) } for @$keys;
}

sub check { redis('EVAL', $script, @_) }

sub err_of {
    my @a = @_;
    my $r = eval { check(@a); '' };
    return defined $r ? $r : $@;
}

# Bad arguments: an error reply naming the problem, never a decision.
my %bad = (
    'no keys'             => [0, 'm'],
    'missing arguments'   => [1, "$p.l", 'm', 'l', 3, 1000000, 3, 1],
    'empty member'        => [1, "$p.l", '', 'l', 3, 1000000, 3, 1, 0],
    'unknown algorithm'   => [1, "$p.l", 'm', 'x', 3, 1000000, 3, 1, 0],
    'zero requests'       => [1, "$p.l", 'm', 'l', 0, 1000000, 3, 1, 0],
    'nan requests'        => [1, "$p.l", 'm', 'l', 'nan', 1000000, 3, 1, 0],
    'inf window'          => [1, "$p.l", 'm', 'l', 3, 'inf', 3, 1, 0],
    'hex window'          => [1, "$p.l", 'm', 'l', 3, '0x10', 3, 1, 0],
    'exponent window'     => [1, "$p.l", 'm', 'l', 3, '1e6', 3, 1, 0],
    'fractional requests' => [1, "$p.l", 'm', 'l', '2.5', 1000000, 3, 1, 0],
    'negative burst'      => [1, "$p.g", 'm', 'g', 3, 1000000, -1, 1, 0],
    'window over a year'  => [1, "$p.l", 'm', 'l', 3, 367 * 86400 * 1e6, 3, 1, 0],
    'window under 1 ms'   => [1, "$p.l", 'm', 'l', 3, 999, 3, 1, 0],
    'requests over 1e8'   => [1, "$p.l", 'm', 'l', 100000001, 1000000, 3, 1, 0],
);
for my $name (sort keys %bad) {
    ok t_cmp(err_of(@{ $bad{$name} }), qr/^redis error: ERR slidinglimit: bad/, "bad arguments refused: $name");
}

# Foreign data: another type, or a value out of shape.
for my $c ([ 'l', 'zset' ], [ 'c', 'string' ], [ 'g', 'string' ]) {
    my ($alg, $type) = @$c;
    my $key = "$p.foreign.$alg";
    redis('DEL', $key);
    redis('HSET', $key, 'x', 'y');    # no TTL, wrong type
    my $r = check(1, $key, 'm1', $alg, 3, 60e6, 3, 1, 0);
    ok($r->[2] == 1 && $r->[4] == 2, "$alg: a hash in the key is read as empty (admitted, 2 left)");
    ok t_cmp(redis('TYPE', $key), $type, "$alg: ... and replaced by a $type");
    my $ttl = redis('PTTL', $key);
    ok($ttl > 0, "$alg: ... with a TTL ($ttl ms)");
}
for my $v ('nan', 'inf', '-inf', 'garbage', '1e400') {
    my $key = "$p.gval";
    redis('SET', $key, $v);
    my $r = check(1, $key, 'm', 'g', 3, 60e6, 3, 1, 0);
    # A full bucket after one admission from empty: 2 left.
    ok($r->[2] == 1 && $r->[4] == 2 && $r->[5] > 0, "gcra: stored '$v' is read as empty");
}
{
    my $key = "$p.gfar";
    my $t = redis('TIME');
    redis('SET', $key, ($t->[0] + 86400) * 1e6);    # a TAT a day ahead
    my $r = check(1, $key, 'm', 'g', 3, 60e6, 3, 1, 0);
    ok($r->[2] == 1 && $r->[4] == 0 && $r->[5] > 0 && $r->[5] <= 20e6 + 1,
        "gcra: a TAT beyond any admission leaves one request (then wait $r->[5] us, one interval)");
    $r = check(1, $key, 'm2', 'g', 3, 60e6, 3, 1, 0);
    ok($r->[2] == 0, 'gcra: ... after which the bucket is full for one interval');
}

# Log members: the same member twice is still two entries.
{
    my $key = "$p.member";
    redis('DEL', $key);
    check(1, $key, 'same', 'l', 5, 60e6, 5, 1, 0) for 1 .. 3;
    ok t_cmp(redis('ZCARD', $key), 3, 'a reused member does not replace the older entry');
    my $m = redis('ZRANGE', $key, 0, -1);
    my %u = map { $_ => 1 } @$m;
    ok t_cmp(scalar(keys %u), 3, '... all members distinct');
}
# One key under two limits (one name= used twice): counted once.
{
    my $key = "$p.dup";
    redis('DEL', $key);
    my $r = check(2, $key, $key, 'm', 'l', 3, 60e6, 3, 1, 0, 'l', 5, 60e6, 5, 1, 0);
    ok t_cmp(redis('ZCARD', $key), 1, 'log: two limits on one key count the request once');
    redis('DEL', "$key.c");
    check(2, "$key.c", "$key.c", 'm', 'c', 3, 60e6, 3, 1, 0, 'c', 5, 60e6, 5, 1, 0);
    ok t_cmp(redis('GET', "$key.c") =~ /(\d{9})$/ && $1 + 0, 1, 'counter: likewise');
}

# Through httpd: a foreign key does not put the client in the fail mode.
{
    my $ip = fresh_ip();
    my $key = sl_key(ip => $ip, policy => 'alg-log', alg => 'l');
    redis('SET', $key, 'not a sorted set');
    my $res = http_get('/alg/log/', 'X-Forwarded-For' => $ip);
    ok t_cmp($res->{status}, 200, 'httpd: request with a foreign key admitted');
    ok t_cmp($res->{headers}{'x-ratelimit-remaining'}, 19, 'httpd: ... by the store (19 left)');
    ok t_cmp(redis('TYPE', $key), 'zset', 'httpd: ... and the key holds the log now');
}
