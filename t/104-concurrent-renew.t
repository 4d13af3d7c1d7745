# SPDX-License-Identifier: Apache-2.0
# SlidingLimitConcurrent's leases are renewed while their request runs: a
# request held for 2.5 leases (2 s each) still holds its place, on Redis
# and on the shm store, and gives it back when it ends; the renewed lease
# is scored with a recent store time, not its admission's, also after a
# SCRIPT FLUSH.
# Runs under each MPM: the renewer is a thread of each child, prefork too.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Time::HiRes qw(time sleep);
use SL::Test;
use SL::Httpd;
use SL::Hold;

plan tests => 2 * 4 + 1;

my $shm = SL::Httpd->start(conf => ['concurrent.conf'], name => 'conc-renew-shm', store => 'shm');

for my $case ([ redis => server_url() ], [ shm => $shm->url ]) {
    my ($store, $base) = @$case;
    my $ip = fresh_ip();
    my $h  = hold("$base/conc/long.cgi", $ip);
    wait_until(sub { hold_peek($h) }, 20);
    my $t0 = time;
    ok t_cmp(hold_peek($h), 200, "$store: one request in flight");
    # The renewal runs by its hash: after SCRIPT FLUSH it is loaded again.
    redis('SCRIPT', 'FLUSH') if $store eq 'redis';
    # Two and a half leases: without renewal it would have expired twice.
    sleep 5;
    ok t_cmp(hold_status(hold("$base/conc/long.cgi", $ip, quick => 1)), 429,
        sprintf("$store: %.1f s later (2 s leases) it still holds its place", time - $t0));
    if ($store eq 'redis') {
        my $key = sl_key(ip => $ip, policy => 'conc-long', alg => 'n');
        my $v = redis('ZRANGE', $key, 0, -1, 'WITHSCORES');
        my $now = store_now();
        ok(@$v == 2 && $now - $v->[1] < 2e6,
            sprintf('redis: its lease was renewed %.2f s ago', ($now - ($v->[1] // 0)) / 1e6));
    }
    open_gate($h);
    ok t_cmp(hold_status($h), 200, "$store: it ends with its 200");
    ok wait_until(sub { hold_status(hold("$base/conc/long.cgi", $ip, quick => 1)) == 200 }, 10),
        "$store: and its lease is given back";
}
$shm->stop;

sub store_now {
    my $t = redis('TIME');
    return $t->[0] * 1e6 + $t->[1];
}
