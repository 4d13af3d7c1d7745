# SPDX-License-Identifier: Apache-2.0
# delay=: a request over its rate but within delay= waits for its
# admission and gets a 200, its quota headers from its final decision,
# SLIDINGLIMIT_RESULT allowed and SLIDINGLIMIT_DELAY the time held; one
# that would wait longer than delay= is refused at once with Retry-After;
# a dry run never waits; with SlidingLimitDelayMax unset a threaded MPM
# waits and prefork does not. Under Redis and the embedded store.
# Runs under each MPM
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Time::HiRes qw(time);
use SL::Test;

my $prefork = ($ENV{SL_TEST_MPM} // 'event') eq 'prefork';
plan tests => 2 * 14;

sub get {
    my ($vhost, $path, $ip) = @_;
    my $t0 = time;
    my $r  = http_get({ vhost => $vhost }, "/delay/$path", 'X-Forwarded-For' => $ip);
    $r->{took} = time - $t0;
    $r->{start} = $t0;
    return $r;
}

sub metric {
    my ($vhost, $name) = @_;
    my $page = http_get({ vhost => $vhost }, '/delay-status')->{content} // '';
    return $page =~ /^\Q$name\E (\S+)$/m ? $1 : -1;
}

for my $vhost (undef, 'sl_delay_shm') {
    my $store = $vhost ? 'shm' : 'redis';
    my $admitted = metric($vhost, 'slidinglimit_delayed_total{outcome="admitted"}');

    # 1 per 2s, delay=3s: the second request is held until the first's
    # admission is 2s old, which is no earlier than 2s after the first was
    # sent (same host: the same clock).
    my $ip = fresh_ip();
    my $r1 = get($vhost, 'wait.html', $ip);
    my $r2 = get($vhost, 'wait.html', $ip);
    my $end = $r2->{start} + $r2->{took};
    ok t_cmp($r1->{status} . ' ' . $r2->{status}, '200 200', "$store: the request over the rate is admitted");
    ok($end >= $r1->{start} + 1.99,
        sprintf("$store: ... no earlier than 2s after the first (%.3fs)", $end - $r1->{start}));
    ok($r2->{took} < 3.5, sprintf("$store: ... and within delay=3s (%.3fs)", $r2->{took}));
    my $held = $r2->{headers}{'x-sl-delay'} // '';
    ok($held =~ /^\d+$/ && $held >= 1_000_000 && $held <= 3_500_000,
        "$store: SLIDINGLIMIT_DELAY says the time held ($held us)");
    ok t_cmp($r2->{headers}{'x-sl-result'}, 'allowed', "$store: ... SLIDINGLIMIT_RESULT allowed");
    ok(($r2->{headers}{'x-ratelimit-remaining'} // '') eq '0' && !defined $r2->{headers}{'retry-after'}
          && ($r2->{headers}{'ratelimit'} // '') =~ /^"delay-wait";r=0;t=\d+$/,
        "$store: ... quota headers of its final decision, no Retry-After");
    ok(($r1->{headers}{'x-sl-delay'} // '') !~ /^\d+$/, "$store: a request that did not wait has no SLIDINGLIMIT_DELAY");

    # gcra: the same wait.
    $ip = fresh_ip();
    $r1 = get($vhost, 'count.html', $ip);
    $r2 = get($vhost, 'count.html', $ip);
    $end = $r2->{start} + $r2->{took};
    ok($r1->{status} == 200 && $r2->{status} == 200 && $end >= $r1->{start} + 1.99 && $r2->{took} < 3.5,
        sprintf("$store: gcra: admitted after the wait (%d %d, %.3fs)", $r1->{status}, $r2->{status}, $end - $r1->{start}));

    # 1 per 5s, delay=1s: a wait of about 5s does not fit, refused at once.
    $ip = fresh_ip();
    $r1 = get($vhost, 'short.html', $ip);
    $r2 = get($vhost, 'short.html', $ip);
    ok t_cmp($r1->{status} . ' ' . $r2->{status}, '200 429', "$store: beyond delay=: 429");
    ok($r2->{took} < 0.9 && ($r2->{headers}{'retry-after'} // '') =~ /^[45]$/,
        sprintf("$store: ... at once (%.3fs), Retry-After %s", $r2->{took}, $r2->{headers}{'retry-after'} // '-'));
    ok t_cmp($r2->{headers}{'x-sl-result'}, 'denied', "$store: ... SLIDINGLIMIT_RESULT denied");

    # A dry run never waits: passed at once, dryrun-denied.
    $ip = fresh_ip();
    $r1 = get($vhost, 'other.html', $ip);
    $r2 = get($vhost, 'other.html', $ip);
    ok($r2->{status} == 200 && $r2->{took} < 0.9 && ($r2->{headers}{'x-sl-result'} // '') eq 'dryrun-denied',
        sprintf("$store: dry run: passed at once (%.3fs, %s)", $r2->{took}, $r2->{headers}{'x-sl-result'} // '-'));

    # SlidingLimitDelayMax unset: a quarter of ThreadsPerChild (at least 1)
    # under a threaded MPM; none under prefork, where a waiting request
    # holds a whole child.
    $ip = fresh_ip();
    $r1 = get($vhost, 'default.html', $ip);
    $r2 = get($vhost, 'default.html', $ip);
    if ($prefork) {
        ok($r2->{status} == 429 && $r2->{took} < 0.9,
            sprintf("$store: prefork, no SlidingLimitDelayMax: refused at once (%d, %.3fs)", $r2->{status}, $r2->{took}));
    }
    else {
        ok($r2->{status} == 200 && $r2->{start} + $r2->{took} >= $r1->{start} + 1.99,
            sprintf("$store: threaded, no SlidingLimitDelayMax: waits (%d, %.3fs)", $r2->{status}, $r2->{took}));
    }

    my $now = metric($vhost, 'slidinglimit_delayed_total{outcome="admitted"}');
    ok($now >= $admitted + 2 + !$prefork,
        "$store: slidinglimit_delayed_total{outcome=\"admitted\"} counts the waits ($admitted -> $now)");
}
