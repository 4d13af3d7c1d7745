# SPDX-License-Identifier: Apache-2.0
# A store address that never completes a connection (a listening socket
# whose backlog is full: the kernel drops further SYNs, as a firewall that
# drops packets would): the connect timeout bounds the wait.
# Runs under each MPM: concurrent connects within a child.
# Asserts wall-clock bounds: every request within two connect timeouts.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use IO::Socket::INET;
use Time::HiRes qw(sleep time);
use SL::Test;
use SL::Fault;
use SL::Wire;

plan tests => 8;

my $port = $ENV{SL_TEST_BLACKHOLE_PORT} or die "SL_TEST_BLACKHOLE_PORT unset";
my $blackhole = fault_blackhole($port);
my $t0 = time;
my $probe = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
    Timeout => 0.5);
my $probe_t = time - $t0;
ok(!$probe, sprintf 'the port is a black hole: a plain connect gave up after %.2f s', $probe_t);

# How long httpd took for each request (SL::Wire's took): on a loaded host
# the clients' own clocks would add their share of the machine to each.
my $C = 1;    # the virtual host's connect timeout (t/conf/extra.conf.in)
my $id = test_id('blackhole');
my $n = 0;
sub get {
    my ($path) = @_;
    $n++;
    my $res = http_get({ vhost => 'sl_blackhole' }, $path,
        'X-Forwarded-For' => fresh_ip(), 'X-Test-Id' => "$id.$n");
    return ($res, $n);
}

# Concurrent requests while the breaker is still closed: none may wait for
# more than two connects, the one of the batch it queued behind (threaded
# MPMs) and its own (README: bounded waits). A pool that connected under
# its lock would make the third request of a child wait three, the eighth
# eight.
my $collect = workers(8, sub {
    my ($w) = @_;
    my $res = http_get({ vhost => 'sl_blackhole' }, '/f/nofb/c',
        'X-Forwarded-For' => fresh_ip(), 'X-Test-Id' => "$id." . ($w + 1));
    return { "status$res->{status}" => 1 };
});
my $c = $collect->();
$n = 8;
my @ct = sort { $a <=> $b } took($id, 1 .. 8);
t_debug('concurrent requests took ' . join(' ', map { sprintf '%.3f', $_ } @ct) . ' s');
ok t_cmp($c->{status200} // 0, 8, '8 concurrent requests pass (fail-open)');
ok($ct[-1] < 3 * $C,
    sprintf 'none waited for more than two connects (slowest %.3f s; %d s connect timeout)', $ct[-1], $C);

my ($r, $i) = get('/f/closed/k');
ok t_cmp($r->{status}, 503, 'fail-closed: 503');
# The breaker is open by now: wait for the next probe (at most 2 s away),
# which this request makes.
sleep 2.1;
($r, $i) = get('/f/closed/k');
my ($t) = took($id, $i);
ok($t >= $C && $t < 2 * $C,
    sprintf 'a probe waits the connect timeout once (%.3f s; %d s configured)', $t, $C);
($r, $i) = get('/f/nofb/k');
ok t_cmp("$r->{status} $r->{headers}{'x-sl-result'}", '200 failed-open', 'fail-open passes');

# Which requests waited for the connect timeout, counted rather than
# timed: the store calls the status page counts.
my $m0 = metrics();
my $s0 = time;
($r, $i) = get('/f/nofb/k') for 1 .. 10;
my $secs = time - $s0;
my $calls = metric(metrics(), 'slidinglimit_store_calls_total')
  - metric($m0, 'slidinglimit_store_calls_total');
my ($max) = sort { $b <=> $a } took($id, $i - 9 .. $i);
ok($max < 2 * $C, sprintf 'every request under two connect timeouts (max %.3f s)', $max);
my $bound = breaker_calls_max($secs);
ok($calls <= $bound,
    "the breaker spares the others ($calls of 10 tried to connect; at most $bound in "
      . sprintf('%.2f s)', $secs));
close $_ for @$blackhole;
