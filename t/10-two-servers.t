# SPDX-License-Identifier: Apache-2.0
# Two httpd servers sharing one Redis: a concurrent burst many times the
# limit, split over both, admits exactly N with log and gcra and never more
# than N with counter. The store keeps one budget, whatever server asks.
# Runs under each MPM: exactness under concurrency, with threads or processes.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Httpd;
use SL::Algo;

plan tests => 3 * 6;

my $second = SL::Httpd->start(conf => ['algorithms.conf'], name => 'second');
my @servers = (server_url(), $second->url);

my $N = 20;
for my $alg (qw(log gcra counter)) {
    my $ip = fresh_ip();
    my $t0 = store_now();
    my ($all, $per) = burst([ map {"$_/alg/$alg/"} @servers ],
        total => 240, workers => 12, headers => { 'X-Forwarded-For' => $ip });
    my $t1 = store_now();
    my $ok = $all->{200} // 0;
    t_debug("$alg: " . join(' ', map {"$_=$all->{$_}"} sort keys %$all));
    if ($alg eq 'counter') {
        counter_admitted_ok($ok, $N, $t0, $t1, 600e6, 'counter: over two servers');
    }
    else {
        ok t_cmp($ok, $N, "$alg: exactly $N of 240 admitted over two servers");
    }
    ok t_cmp($all->{429} // 0, 240 - $ok, "$alg: every other request refused with 429");
    ok(($per->{ $servers[0] . "/alg/$alg/" }{429} // 0) > 0
          && ($per->{ $servers[1] . "/alg/$alg/" }{429} // 0) > 0,
        "$alg: both servers refused once the shared budget was spent");

    my $key = sl_key(ip => $ip, policy => "alg-$alg", alg => substr($alg, 0, 1));
    my $ttl = redis('PTTL', $key);
    ok($ttl > 0 && $ttl <= 600_000 * 2 + 1000, "$alg: the key has a TTL ($ttl ms)");
    if ($alg eq 'log') {
        ok t_cmp(redis('ZCARD', $key), $N, 'log: the sorted set holds N entries');
        my $members = redis('ZRANGE', $key, 0, -1);
        my %seen = map { $_ => 1 } @$members;
        ok t_cmp(scalar(keys %seen), $N, 'log: every member is distinct');
    }
    elsif ($alg eq 'gcra') {
        my $tat = redis('GET', $key);
        # 20 admissions from an empty bucket: TAT = first + 20 * 30 s, the
        # first made during the burst.
        ok($tat >= $t0 + 600e6 && $tat <= $t1 + 600e6,
            sprintf 'gcra: TAT %.3f s after the burst began, one full burst', ($tat - $t0) / 1e6);
        ok t_cmp(redis('TYPE', $key), 'string', 'gcra: one string per identity');
    }
    else {
        my $v = redis('GET', $key);
        my ($idx, $cur, $prev) = counter_decode($v, store_now(), 600e6);
        ok t_cmp($cur + $prev, $ok, "counter: the state ($v) counts the admitted requests");
        ok t_cmp(redis('OBJECT', 'ENCODING', $key), 'int', 'counter: kept as an integer object');
    }
}

$second->stop;
