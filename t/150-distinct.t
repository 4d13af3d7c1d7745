# SPDX-License-Identifier: Apache-2.0
# distinct= on Redis: at most N distinct values of a key source per key in
# a window, in the one atomic call. Five account names from one address
# pass, the sixth is refused and not recorded, a known name still passes
# (the deny cache never answers a distinct= limit), Retry-After is when the
# oldest value leaves the window, a value that left readmits, two servers
# share the set, and the values a client can vary (case, a missing value,
# a very long one) are what the README says.
# Runs under each MPM: store calls pipelined (threads) or direct.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use POSIX qw(ceil);
use SL::Test;
use SL::Algo;
use SL::Httpd;
use Time::HiRes qw(sleep);

plan tests => 23;

sub get {
    my ($where, $ip, $acct) = @_;
    return http_get($where, 'X-Forwarded-For' => $ip,
        defined $acct ? ('X-Account' => $acct) : ());
}

sub rem { ($_[0]{headers}{ratelimit} // '') =~ /;r=(\d+)/ ? $1 : -1 }

sub member { sl_identity('header:x-account', $_[0]) }

sub sleep_until {
    my ($us) = @_;
    my $d = ($us - store_now()) / 1e6;
    sleep $d if $d > 0;
}

# Five names, the sixth refused, a known one admitted after the refusal.
my $ip  = fresh_ip();
my $key = sl_key(ip => $ip, policy => 'd150-acct', alg => 'd');
my @st  = map { get('/distinct/acct/', $ip, "user$_") } 1 .. 5;
ok t_cmp(join(' ', map { $_->{status} } @st), '200 200 200 200 200',
    'five distinct names from one address pass');
ok t_cmp(join(' ', map { rem($_) } @st), '4 3 2 1 0',
    'remaining is the limit less the distinct names in the window');
my $t0 = store_now();
my $no = get('/distinct/acct/', $ip, 'user6');
my $t1 = store_now();
ok t_cmp($no->{status}, 429, 'the sixth name is refused');
# Retry-After: the oldest name leaves the window 60 s after it was seen.
my $old = redis('ZRANGE', $key, 0, 0, 'WITHSCORES');
my $E   = $old->[1] + 60e6;
my ($lo, $hi) = (ceil(($E - $t1) / 1e6), ceil(($E - $t0) / 1e6));
my $ra = $no->{headers}{'retry-after'} // -1;
ok($ra >= $lo && $ra <= $hi, "Retry-After $ra is when the oldest name leaves ($lo..$hi)");
ok t_cmp(get('/distinct/acct/', $ip, 'user3')->{status}, 200,
    'a known name passes right after a refusal');
get('/distinct/acct/', $ip, "other$_") for 1 .. 3;
my $members = redis('ZRANGE', $key, 0, -1);
ok t_cmp(scalar(@$members), 5, 'refused names are not recorded: the set holds 5');
ok t_cmp(join(' ', sort @$members), join(' ', sort map { member("user$_") } 1 .. 5),
    'the set holds the hashed names, never the names');
my $ttl = redis('PTTL', $key);
ok($ttl > 0 && $ttl <= 60001, "the set expires with the window (PTTL $ttl)");

# A short window: refused until the oldest name leaves, then a new one
# passes. Should the host stall the request meant for 0.4 s before that
# time past it, the case runs again with a fresh address.
my %r;
for my $attempt (1 .. 3) {
    my $sip  = fresh_ip();
    my $skey = sl_key(ip => $sip, policy => 'd150-short', alg => 'd');
    get('/distinct/short/', $sip, $_) for qw(a b);
    $r{t0} = store_now();
    $r{res} = get('/distinct/short/', $sip, 'c');
    $r{t1} = store_now();
    $r{E} = redis('ZRANGE', $skey, 0, 0, 'WITHSCORES')->[1] + 3e6;
    sleep_until($r{E} - 0.4e6);
    $r{before} = get('/distinct/short/', $sip, 'c')->{status};
    $r{b1} = store_now();
    sleep_until($r{E} + 0.03e6);
    $r{after} = get('/distinct/short/', $sip, 'c')->{status};
    $r{known} = get('/distinct/short/', $sip, 'b')->{status};
    t_debug(sprintf 'short window (attempt %d): Retry-After %s, earliest in %.3f..%.3f s',
        $attempt, $r{res}{headers}{'retry-after'} // '-', ($r{E} - $r{t1}) / 1e6,
        ($r{E} - $r{t0}) / 1e6);
    last if $r{b1} < $r{E};
}
($lo, $hi) = (ceil(($r{E} - $r{t1}) / 1e6), ceil(($r{E} - $r{t0}) / 1e6));
$ra = $r{res}{headers}{'retry-after'} // -1;
ok t_cmp($r{res}{status}, 429, 'short window: a third name is refused');
ok($ra >= $lo && $ra <= $hi, "short window: Retry-After $ra is true ($lo..$hi)");
ok t_cmp($r{before}, 429, 'short window: still refused 0.4 s before');
ok t_cmp($r{after}, 200, 'short window: admitted once the oldest name left');
ok t_cmp($r{known}, 200, 'short window: the name seen within the window still passes');

# Two servers on one Redis share the set.
my $b   = SL::Httpd->start(conf => ['distinct.conf'], name => 'd150-b');
my $ip2 = fresh_ip();
my @a = map { get('/distinct/acct/', $ip2, "n$_")->{status} } 1 .. 3;
my @bb = map { get($b->url . '/distinct/acct/', $ip2, "n$_")->{status} } 4 .. 6;
ok t_cmp(join(' ', @a, @bb), '200 200 200 200 200 429',
    'two servers: three names on one, two more on the other, the sixth refused');
ok t_cmp(get($b->url . '/distinct/acct/', $ip2, 'n1')->{status}, 200,
    'two servers: a name seen by the first passes on the second');
$b->stop;

# What a client can vary. Case: a header's value is compared as sent, so
# Alice and alice are two names (more counted, never fewer); the spaces
# around a header's value are no part of it (HTTP strips them).
my $ip3 = fresh_ip();
get('/distinct/acct/', $ip3, $_) for ('alice', 'Alice', ' alice ');
ok t_cmp(redis('ZCARD', sl_key(ip => $ip3, policy => 'd150-acct', alg => 'd')), 2,
    'case makes another name (counted, never merged); surrounding spaces do not');
# A missing value is one value of its own ("none"): requests without the
# header spend one place, whichever many they are.
my $ip4 = fresh_ip();
get('/distinct/acct/', $ip4, "m$_") for 1 .. 4;
my @miss = map { get('/distinct/acct/', $ip4)->{status} } 1 .. 3;
ok t_cmp(join(' ', @miss), '200 200 200', 'no header: one value, however many requests');
ok t_cmp(get('/distinct/acct/', $ip4, 'm5')->{status}, 429,
    'no header took the fifth place: a fifth name is refused');
# A very long value: one hashed member of 16 characters.
my $ip5  = fresh_ip();
my $long = 'x' x 8000;
ok t_cmp(get('/distinct/acct/', $ip5, $long)->{status}, 200, 'an 8000-byte name passes');
my $m = redis('ZRANGE', sl_key(ip => $ip5, policy => 'd150-acct', alg => 'd'), 0, -1);
ok t_cmp(length($m->[0]), 16, 'and is a member of 16 characters');

# Keyed by account, distinct addresses: the fourth address is refused.
my $acct = 'acct-' . fresh_ip();
my @addr = map { get('/distinct/addr/', fresh_ip(), $acct)->{status} } 1 .. 4;
ok t_cmp(join(' ', @addr), '200 200 200 429', 'three addresses per account, the fourth refused');

# block=: the refusal of a new name blocks the address, its known names
# too, until the block ends; the new name waits for the later of the
# block's end and the oldest name's leaving (60 s).
my $ip6 = fresh_ip();
get('/distinct/blk/', $ip6, $_) for qw(p q);
my $blk = get('/distinct/blk/', $ip6, 'r');
my $known = get('/distinct/blk/', $ip6, 'p');
ok t_cmp(join(' ', $blk->{status}, $blk->{headers}{'retry-after'} // '-', $known->{status},
        $known->{headers}{'retry-after'} // '-'),
    qr/^429 (59|60) 429 [123]$/,
    'block=: a new name starts the block, a known one is refused until it ends');
ok wait_until(sub { get('/distinct/blk/', $ip6, 'p')->{status} == 200 }, 6),
    'block=: a known name passes again once the block ended';
