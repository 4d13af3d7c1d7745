# SPDX-License-Identifier: Apache-2.0
# Under a threaded MPM the threads of a child that need Redis at the same
# time share round trips (one write, one read for a batch of EVALSHA). A
# burst of 4N concurrent requests from one client against a limit of N:
# exactly N admitted whatever batches carried the decisions, and each
# request that reached the store was exactly one EVALSHA (Redis's own
# count, INFO commandstats). Under prefork every call is its own round trip.
#
# That threads share a batch is forced, not hoped for: Redis holds its
# answers (CLIENT PAUSE WRITE, from another connection) while a burst
# reaches the module, so in each child one thread's EVALSHA waits in Redis
# and the others queue behind it; once Redis answers, each child's queue
# goes out in one round trip.
# Runs under each MPM: shared round trips under threads, none under prefork.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Time::HiRes qw(sleep time);
use SL::Test;
use SL::Wire;

plan skip_all => "CLIENT PAUSE WRITE and commandstats' failed_calls need Redis 6.2; this one is " . redis_version()
  unless redis_at_least(6, 2);

my $threaded = Apache::Test::config()->{server}{mpm} ne 'prefork';
t_debug('MPM ' . Apache::Test::config()->{server}{mpm});

plan tests => 15 + ($threaded ? 7 : 0);

my $N = 20;

sub evalsha_calls {
    my $info = redis('INFO', 'commandstats');
    return $info =~ /^cmdstat_evalsha:calls=(\d+)/m ? $1 : 0;
}

# The deltas of the status page's store counters and of Redis's EVALSHA
# count while $run runs; $run returns the statuses.
sub measured {
    my ($run) = @_;
    my $m0  = metrics();
    my $e0  = evalsha_calls();
    my $got = $run->();
    my $m1  = metrics();
    my %d   = (evalsha => evalsha_calls() - $e0);
    for my $k (qw(store_calls store_round_trips store_errors deny_cache_hits)) {
        my $name = "slidinglimit_${k}_total";
        $d{$k} = metric($m1, $name) - metric($m0, $name);
    }
    t_debug(join ' ', map {"$_=$d{$_}"} sort keys %d);
    return ($got, \%d);
}

sub measured_burst {
    my ($path, $total, %headers) = @_;
    return measured(sub {
        burst(server_url() . $path, total => $total, workers => 16,
            headers => \%headers);
    });
}

# Redis may not have the script yet (a fresh server, a flush by an earlier
# test): its NOSCRIPT and reload would count one more EVALSHA.
http_get('/pipe/wide/', 'X-Forwarded-For' => fresh_ip());

for my $alg (qw(log counter)) {
    my ($got, $d) = measured_burst("/pipe/$alg/", 4 * $N,
        'X-Forwarded-For' => fresh_ip());
    ok t_cmp($got->{200} // 0, $N, "$alg: exactly $N of " . 4 * $N . ' admitted');
    ok t_cmp($got->{429} // 0, 3 * $N, "$alg: the others refused");
    ok t_cmp($d->{store_calls} + $d->{deny_cache_hits}, 4 * $N,
        "$alg: each request one store call or one deny-cache hit");
    ok t_cmp($d->{evalsha}, $d->{store_calls},
        "$alg: one EVALSHA per store call ($d->{store_calls})");
    ok t_cmp($d->{store_errors}, 0, "$alg: no store error");
}

# A long burst from one identity with room for all: every request goes to
# the store, and none takes more than one round trip.
my ($got, $d) = measured_burst('/pipe/wide/', 400);
ok t_cmp($got->{200} // 0, 400, 'wide: all 400 admitted');
ok t_cmp($d->{store_calls}, 400, 'wide: 400 store calls');
ok t_cmp($d->{evalsha}, 400, 'wide: 400 EVALSHA');
ok t_cmp($d->{store_errors}, 0, 'wide: no store error');
if ($threaded) {
    ok($d->{store_round_trips} <= 400,
        "wide: $d->{store_round_trips} round trips for 400 calls, at most one each");
}
else {
    ok t_cmp($d->{store_round_trips}, 400, 'wide: prefork: one round trip per call');
}
exit 0 unless $threaded;

# --- Shared round trips, forced. The burst goes to the virtual host whose
# store timeouts (5 s connect, 30 s command) outlast the pause by far: no
# request gives up while Redis holds its answers.
my $K = 16;

# Worker threads of the main server busy with a request (mod_status's
# scoreboard, 'W': past reading, before the answer is written), this one
# included.
sub busy_workers {
    my $res = http_get('/server-status?auto');
    return 0 unless $res->{success};
    my ($board) = $res->{content} =~ /^Scoreboard: (\S+)$/m;
    return defined $board ? $board =~ tr/W// : 0;
}

# Connections whose command Redis holds.
sub held_evalsha {
    my $list = redis('CLIENT', 'LIST');
    return scalar grep { /\bflags=\S*b/ && /\bcmd=evalsha\b/ } split /\n/, $list;
}

my $pause_ms = 25_000;    # Redis releases them by itself should this test die
END { eval { redis('CLIENT', 'UNPAUSE') } if $threaded }

my $L;
my ($pgot, $pd) = measured(sub {
    ok t_cmp(redis('CLIENT', 'PAUSE', $pause_ms, 'WRITE'), 'OK',
        'Redis holds its answers to writes');
    my $t0 = time;
    my $collect = workers($K, sub {
        my $res = http_get({ vhost => 'sl_pipe', timeout => 60 }, '/pipe/wide/');
        return { $res->{status} => 1 };
    });
    # Every request in a worker thread, then a moment for the last of them
    # to pass the phases before ours (no I/O there) and queue.
    my $all = wait_until(sub { busy_workers() >= $K + 1 }, 15);
    sleep 0.5;
    $L = held_evalsha();
    t_debug(sprintf '%d requests in the module, %d EVALSHA held by Redis, after %.2f s',
        busy_workers() - 1, $L, time - $t0);
    ok($all, "all $K requests reached the module while Redis held its answers");
    redis('CLIENT', 'UNPAUSE');
    return $collect->();
});
ok t_cmp(($pgot->{200} // 0) . ' ' . $pd->{store_calls} . ' ' . $pd->{evalsha},
    "$K $K $K", "paused: $K admitted, $K store calls, $K EVALSHA");
ok t_cmp($pd->{store_errors}, 0, 'paused: no store error');
ok($L >= 1 && $L < $K, "paused: $L batches held in Redis (one per child with requests)");
ok($pd->{store_round_trips} < $K,
    "paused: $pd->{store_round_trips} round trips for $K calls: batches carried several");
ok($pd->{store_round_trips} <= 2 * $L,
    "paused: each child's queue went out in one round trip behind its held one "
      . "($pd->{store_round_trips} <= 2 x $L)");
