# SPDX-License-Identifier: Apache-2.0
# Hostile header values used as keys: braces, quotes, CR/LF attempts,
# control bytes, 8 KB values, non-UTF-8 bytes, values that look like store
# keys. Each is answered sanely (never 500), the server stays up, every
# store key keeps its fixed shape, and different values never share a
# budget (the whole value is hashed, not a prefix of it).
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Keys;

# Sends one request with X-Keys-Hostile: $value, raw bytes.
sub hostile {
    my ($value) = @_;
    return raw_request("GET /keys/hostile/ HTTP/1.1\r\nHost: localhost\r\n"
          . "X-Keys-Hostile: $value\r\nConnection: close\r\n\r\n");
}

sub key_for {
    sl_key(identity => sl_identity('header:x-keys-hostile', $_[0]),
        policy => 'keys-hostile');
}

my $u = tag();
my $big = ('A' x 8000) . $u;
# Values httpd passes on to the module as they are.
my @accepted = (
    [ 'braces', "{$u}" ],
    [ 'unbalanced braces', "}{$u}{{" ],
    [ 'quotes', qq{"'$u'"\\} ],
    [ 'store key look-alike', "sltest:{AAAAAAAAAAAAAAAA}AAAAAAAA.l$u" ],
    [ 'another key look-alike', "}sltest:{$u" ],
    [ 'Redis protocol', "\$3 DEL *1 $u FLUSHALL" ],
    [ 'non-UTF-8 bytes', "\xff\xfe\xc0\xaf$u\x80" ],
    [ 'tab inside', "a\tb$u" ],
    # Two values that differ only after 8000 bytes: two budgets (a cap on
    # the hashed length, as an earlier 1024 bytes, would merge them and
    # refuse the second value's first requests).
    [ '8 KB value', $big ],
    [ '8 KB value, other tail', ('A' x 8000) . "$u-other" ],
);

plan tests => 2 * @accepted + 12;

# (The key shape is checked on what the store holds, below: key_for is the
# test's own computation, and its shape says nothing about the module.)
for my $case (@accepted) {
    my ($name, $v) = @$case;
    my @s = map { hostile($v) } 1 .. 3;
    is("@s", '200 200 429', "$name: its own budget of 2");
    is(redis('ZCARD', key_for($v)), 2, "$name: the budget in Redis is the hash of the whole value");
}

# Bytes httpd itself refuses (400) before any module runs: never a 500.
my @refused = (
    [ 'bare CR', "x\ry-$u" ],
    [ 'NUL byte', "x\0y-$u" ],
    [ 'control byte', "x\x01y-$u" ],
    [ 'DEL', "x\x7fy-$u" ],
    [ 'over LimitRequestFieldSize', 'B' x 9000 ],
);
for my $case (@refused) {
    my ($name, $v) = @$case;
    my $s = hostile($v);
    ok($s == 400 || ($s >= 200 && $s < 300) || $s == 429,
        "$name: answered without 500 ($s)");
}

# CR LF injection: the value ends at CR LF, the rest is another header line
# (here a valid one): the key is the part before it.
{
    my $v = "inj-$u";
    my @s = map {
        raw_request("GET /keys/hostile/ HTTP/1.1\r\nHost: localhost\r\n"
              . "X-Keys-Hostile: $v\r\nX-Injected: 1\r\nConnection: close\r\n\r\n")
    } 1 .. 3;
    is("@s", '200 200 429', 'CR LF: the value ends at the line end');
    is(redis('ZCARD', key_for($v)), 2, 'CR LF: keyed by the first line only');
}

# obs-fold (a continuation line) is refused by httpd's strict parser.
{
    my $s = raw_request("GET /keys/hostile/ HTTP/1.1\r\nHost: localhost\r\n"
          . "X-Keys-Hostile: fold-$u\r\n  more\r\nConnection: close\r\n\r\n");
    ok($s == 400 || $s == 200, "obs-fold: answered without 500 ($s)");
}

# Every key in the store still has the fixed shape, none holds a raw value.
{
    my $keys = redis('KEYS', '*');
    ok(!grep({ !shape_ok($_) } @$keys), 'every store key has the fixed shape')
        or diag(join "\n", grep { !shape_ok($_) } @$keys);
    ok(!grep({ index($_, $u) >= 0 } @$keys), 'no raw value in any store key');
}

# The server is still up and limiting.
{
    my $ip = fresh_ip();
    my $res = http_get('/keys/ip/', 'X-Forwarded-For' => $ip);
    is($res->{status}, 200, 'server still answers');
    is($res->{headers}{'x-ratelimit-remaining'}, 2, '... and still limits');
}
