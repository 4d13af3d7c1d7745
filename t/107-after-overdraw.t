# SPDX-License-Identifier: Apache-2.0
# cost=after: overdraws, under the Redis store (the main server) and the
# shm store (sl_shm), for every algorithm: a response that costs more than
# is left is charged in full (up to what the limit holds), and the next
# request is refused until the window frees it, with a Retry-After that
# the RateLimit header repeats and that is never early (the request after
# it is admitted). (Requests in flight together: t/108.)
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Time::HiRes qw(sleep time);
use SL::Test;
use SL::After;

plan tests => 2 * 3 * 3;

for my $vhost (undef, 'sl_shm') {
    my $store = $vhost ? 'shm' : 'redis';
    my $o     = { $vhost ? (vhost => $vhost) : () };

    for my $alg (qw(log counter gcra)) {
        my $dir = $alg eq 'log' ? 'over' : "over-$alg";
        my $ip  = fresh_ip();
        my @st  = map { af_get($o, "/af/$dir/$_", 'X-Forwarded-For' => $ip)->{status} } qw(100.txt 1000.txt);
        my $no  = af_get($o, "/af/$dir/100.txt", 'X-Forwarded-For' => $ip);
        my $ra  = $no->{headers}{'retry-after'} // -1;
        my ($t) = ($no->{headers}{ratelimit} // '') =~ /;t=(\d+)/;
        ok t_cmp("@st $no->{status}", '200 200 429', "$store $alg: 1000 bytes overdraw 5 units: the next request is refused");
        ok($ra >= 1 && $ra <= 8 && defined $t && $t == $ra,
            "$store $alg: Retry-After $ra, as RateLimit's t=" . ($t // '-'));
        sleep $ra;
        my $again = af_get($o, "/af/$dir/100.txt", 'X-Forwarded-For' => $ip);
        ok t_cmp($again->{status}, 200, "$store $alg: admitted once Retry-After has passed");
    }

}
