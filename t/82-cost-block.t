# SPDX-License-Identifier: Apache-2.0
# cost= and block= through httpd, under the Redis store and the embedded
# one: cost=3 on a limit of 10 admits three requests (7, 4, 1 left); with
# block=3s on a 300 ms window, the refusal that starts the block is
# answered with the block's end, and the limit keeps refusing after its own
# window freed, until the block ends. Under Redis, the deny cache answers
# the blocked identity without a store call.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Time::HiRes qw(sleep time);
use SL::Test;
use SL::Fault;

my $fault = { port => fault_port(), password => $ENV{SL_TEST_FAULT_REDIS_PASSWORD} };
plan tests => 7 + 6;
# The count of store calls is INFO commandstats' failed_calls (script_calls).
my $calls_skip = redis_at_least(6, 2, $fault) ? ''
  : "commandstats' failed_calls need Redis 6.2; this one is " . redis_version($fault);

for my $vhost (qw(sl_fault sl_shm)) {
    my $store = $vhost eq 'sl_shm' ? 'shm' : 'redis';
    my $ip    = fresh_ip();
    my (@st, @left);
    for (1 .. 4) {
        my $r = http_get({ vhost => $vhost }, '/f/cost/a', 'X-Forwarded-For' => $ip);
        push @st,   $r->{status};
        push @left, $r->{headers}{'x-ratelimit-remaining'} // '-';
    }
    ok t_cmp("@st", '200 200 200 429', "$store: cost=3 on 10 admits 3");
    ok t_cmp("@left", '7 4 1 0', "$store: ... leaving 7, 4, 1");

    # The second request must be decided within 300 ms of the first (both
    # between $t1 and $t2), and the three after the window within the
    # block, which starts with the second's decision (after $tb): should
    # the host stall a request past that, the case runs again with a fresh
    # client (at most three times). The stores' clock is this host's.
    my ($r1, $r2, $t1, $tb, $t2, $calls, @b, $in_block);
    for my $attempt (1 .. 3) {
        $ip = fresh_ip();
        $t1 = time;
        $r1 = http_get({ vhost => $vhost }, '/f/block/a', 'X-Forwarded-For' => $ip);
        $tb = time;
        $r2 = http_get({ vhost => $vhost }, '/f/block/a', 'X-Forwarded-For' => $ip);
        $t2 = time;
        # The 300 ms window has passed: only the block refuses now.
        sleep 0.5;
        $calls = $store eq 'redis' && !$calls_skip ? script_calls($fault) : 0;
        @b = map { http_get({ vhost => $vhost }, '/f/block/a', 'X-Forwarded-For' => $ip) } 1 .. 3;
        $in_block = time < $tb + 3;
        last if $t2 - $t1 < 0.3 && $in_block;
        t_debug(sprintf "$store (attempt $attempt): the two requests took %.3f s, the three "
              . 'after the window ended %.3f s after the block began', $t2 - $t1, time - $tb);
    }
    ok t_cmp("$r1->{status} $r2->{status}", '200 429', "$store: block=3s: the second request in 300 ms is refused");
    ok t_cmp($r2->{headers}{'retry-after'}, 3, "$store: ... with the block's end as Retry-After");
    ok($in_block && !grep({ $_->{status} != 429 } @b) && $b[0]{headers}{'retry-after'} =~ /^[123]$/,
        "$store: after the window freed, still refused (Retry-After $b[0]{headers}{'retry-after'})");
    if ($store eq 'redis') {
      SKIP: {
            skip $calls_skip, 1 if $calls_skip;
            ok t_cmp(script_calls($fault) - $calls, 0, 'redis: blocked requests are answered without a store call');
        }
    }
    # The block ends 3 s after the refusal that started it.
    my $wait = $t2 + 3.1 - time;
    sleep $wait if $wait > 0;
    my $r = http_get({ vhost => $vhost }, '/f/block/a', 'X-Forwarded-For' => $ip);
    ok t_cmp($r->{status}, 200, "$store: after the block: admitted");
}
