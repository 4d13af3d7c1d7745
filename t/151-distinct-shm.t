# SPDX-License-Identifier: Apache-2.0
# distinct= under "SlidingLimitStore shm": the same answers as Redis from
# the table in shared memory, whichever child decides. Five names pass,
# the sixth is refused, a known one passes, Retry-After is when the oldest
# name leaves, and a name that left readmits.
# Runs under each MPM: children or threads share the table in shared memory.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use POSIX qw(ceil);
use SL::Test;
use SL::Httpd;
use Time::HiRes qw(sleep time);

plan tests => 10;

my $h   = SL::Httpd->start(conf => ['distinct.conf'], name => 'd151-shm', store => 'shm');
my $url = $h->url;

sub get {
    my ($where, $ip, $acct) = @_;
    return http_get("$url$where", 'X-Forwarded-For' => $ip,
        defined $acct ? ('X-Account' => $acct) : ());
}

sub rem { ($_[0]{headers}{ratelimit} // '') =~ /;r=(\d+)/ ? $1 : -1 }

my $ip = fresh_ip();
my $f0 = time;
my @st = map { get('/distinct/acct/', $ip, "user$_") } 1 .. 5;
my $f1 = time;
ok t_cmp(join(' ', map { $_->{status} } @st), '200 200 200 200 200', 'shm: five names pass');
ok t_cmp(join(' ', map { rem($_) } @st), '4 3 2 1 0', 'shm: remaining counts the names');
my $t0 = time;
my $no = get('/distinct/acct/', $ip, 'user6');
my $t1 = time;
ok t_cmp($no->{status}, 429, 'shm: the sixth name is refused');
# The first name was seen between $f0 and the end of its request.
my ($lo, $hi) = (ceil($f0 + 60 - $t1), ceil($f1 + 60 - $t0));
my $ra = $no->{headers}{'retry-after'} // -1;
ok($ra >= $lo && $ra <= $hi, "shm: Retry-After $ra is when the oldest name leaves ($lo..$hi)");
ok t_cmp(get('/distinct/acct/', $ip, 'user2')->{status}, 200, 'shm: a known name passes');
ok t_cmp(join(' ', map { get('/distinct/acct/', $ip, "late$_")->{status} } 1 .. 3),
    '429 429 429', 'shm: refused names are not recorded (still refused)');

# A short window: refused until the oldest name leaves, then a new one.
my %r;
for my $attempt (1 .. 3) {
    my $sip = fresh_ip();
    $r{a0} = time;
    get('/distinct/short/', $sip, 'a');
    $r{a1} = time;
    get('/distinct/short/', $sip, 'b');
    $r{res} = get('/distinct/short/', $sip, 'c');
    # The oldest leaves 3 s after it was seen, within a0 + 3 .. a1 + 3.
    sleep($r{a0} + 3 - 0.4 - time) if $r{a0} + 3 - 0.4 > time;
    $r{before} = get('/distinct/short/', $sip, 'c')->{status};
    $r{b1} = time;
    sleep($r{a1} + 3 + 0.05 - time) if $r{a1} + 3 + 0.05 > time;
    $r{after} = get('/distinct/short/', $sip, 'c')->{status};
    last if $r{b1} < $r{a0} + 3;
}
ok t_cmp($r{res}{status}, 429, 'shm short window: a third name is refused');
$ra = $r{res}{headers}{'retry-after'} // -1;
ok($ra >= 1 && $ra <= 3, "shm short window: Retry-After $ra within the window");
ok t_cmp($r{before}, 429, 'shm short window: still refused before the oldest left');
ok t_cmp($r{after}, 200, 'shm short window: admitted once it left');
