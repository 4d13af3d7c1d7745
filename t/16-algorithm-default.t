# SPDX-License-Identifier: Apache-2.0
# SlidingLimitAlgorithm sets the algorithm of lines without algorithm=; an
# inner section inherits it; algorithm= on a line wins. Seen in the store:
# the key's suffix and type, and the algorithm's behaviour.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use POSIX qw(ceil);
use SL::Test;
use SL::Algo;

plan tests => 8;

my $ip = fresh_ip();
my $res = http_get('/alg/default-alg/', 'X-Forwarded-For' => $ip);
ok t_cmp($res->{status}, 200, 'admitted');
my $g = sl_key(ip => $ip, policy => 'default-alg', alg => 'g');
my $l = sl_key(ip => $ip, policy => 'default-alg-log', alg => 'l');
ok t_cmp(redis('TYPE', $g), 'string', 'the line without algorithm= is gcra (a TAT under .g)');
ok t_cmp(redis('EXISTS', sl_key(ip => $ip, policy => 'default-alg', alg => 'l')), 0, '... and not a log');
ok t_cmp(redis('TYPE', $l), 'zset', 'algorithm=log wins over the default');

# GCRA with 3 per 600 s: a burst of 3, then one every 200 s. The next
# admission is at TAT + T - tau (T = 200 s, tau = 3 T): one interval after
# the first admission. Retry-After is that minus the refusal's store time
# (between t0 and t1), rounded up.
http_get('/alg/default-alg/', 'X-Forwarded-For' => $ip) for 1 .. 2;
my $t0 = store_now();
$res = http_get('/alg/default-alg/', 'X-Forwarded-For' => $ip);
my $t1 = store_now();
ok t_cmp($res->{status}, 429, 'the gcra limit refuses the fourth request');
my $ra = $res->{headers}{'retry-after'} // -1;
my $E = redis('GET', $g) - 2 * 200e6;
my ($lo, $hi) = (ceil(($E - $t1) / 1e6), ceil(($E - $t0) / 1e6));
ok($ra >= $lo && $ra <= $hi && $ra <= 200,
    "Retry-After $ra: one emission interval (200 s) from the first admission ($lo..$hi), not the window");

my $inner = sl_key(ip => $ip, policy => 'default-alg-inner', alg => 'g');
$res = http_get('/alg/default-alg/inner/', 'X-Forwarded-For' => $ip);
ok t_cmp($res->{status}, 200, 'the inner section has its own limit');
ok t_cmp(redis('TYPE', $inner), 'string', 'and inherits gcra from the outer section');
