# SlidingLimitAlgorithm sets the algorithm of lines without algorithm=; an
# inner section inherits it; algorithm= on a line wins. Seen in the store:
# the key's suffix and type, and the algorithm's behaviour.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;

plan tests => 8;

my $ip = fresh_ip();
my $res = http_get('/alg/default-alg/', 'X-Forwarded-For' => $ip);
ok t_cmp($res->{status}, 200, 'admitted');
my $g = sl_key(ip => $ip, policy => 'default-alg', alg => 'g');
my $l = sl_key(ip => $ip, policy => 'default-alg-log', alg => 'l');
ok t_cmp(redis('TYPE', $g), 'string', 'the line without algorithm= is gcra (a TAT under .g)');
ok t_cmp(redis('EXISTS', sl_key(ip => $ip, policy => 'default-alg', alg => 'l')), 0, '... and not a log');
ok t_cmp(redis('TYPE', $l), 'zset', 'algorithm=log wins over the default');

# GCRA with 3 per 600 s: a burst of 3, then one every 200 s.
http_get('/alg/default-alg/', 'X-Forwarded-For' => $ip) for 1 .. 2;
$res = http_get('/alg/default-alg/', 'X-Forwarded-For' => $ip);
ok t_cmp($res->{status}, 429, 'the gcra limit refuses the fourth request');
my $ra = $res->{headers}{'retry-after'} // -1;
ok($ra > 190 && $ra <= 200, "Retry-After $ra: one emission interval (200 s), not the window");

my $inner = sl_key(ip => $ip, policy => 'default-alg-inner', alg => 'g');
$res = http_get('/alg/default-alg/inner/', 'X-Forwarded-For' => $ip);
ok t_cmp($res->{status}, 200, 'the inner section has its own limit');
ok t_cmp(redis('TYPE', $inner), 'string', 'and inherits gcra from the outer section');
