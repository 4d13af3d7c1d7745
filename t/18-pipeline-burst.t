# Under a threaded MPM the threads of a child that need Redis at the same
# time share round trips (one write, one read for a batch of EVALSHA). A
# burst of 4N concurrent requests from one client against a limit of N:
# exactly N admitted whatever batches carried the decisions, and each
# request that reached the store was exactly one EVALSHA (Redis's own
# count, INFO commandstats). Under prefork every call is its own round trip.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Wire;

plan tests => 15;

my $N = 20;
my $threaded = Apache::Test::config()->{server}{mpm} ne 'prefork';
t_debug('MPM ' . Apache::Test::config()->{server}{mpm});

sub evalsha_calls {
    my $info = redis('INFO', 'commandstats');
    return $info =~ /^cmdstat_evalsha:calls=(\d+)/m ? $1 : 0;
}

# One burst: its statuses, and the deltas of the status page's store
# counters and of Redis's EVALSHA count.
sub measured_burst {
    my ($path, $total, %headers) = @_;
    my $m0  = metrics();
    my $e0  = evalsha_calls();
    my $got = burst(server_url() . $path, total => $total, workers => 16,
        headers => \%headers);
    my $m1 = metrics();
    my %d  = (evalsha => evalsha_calls() - $e0);
    for my $k (qw(store_calls store_round_trips store_errors deny_cache_hits)) {
        my $name = "slidinglimit_${k}_total";
        $d{$k} = metric($m1, $name) - metric($m0, $name);
    }
    t_debug(join ' ', map {"$_=$d{$_}"} sort keys %d);
    return ($got, \%d);
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

# Many identities at once: every request goes to the store.
my ($got, $d) = measured_burst('/pipe/wide/', 400);
ok t_cmp($got->{200} // 0, 400, 'wide: all 400 admitted');
ok t_cmp($d->{store_calls}, 400, 'wide: 400 store calls');
ok t_cmp($d->{evalsha}, 400, 'wide: 400 EVALSHA');
ok t_cmp($d->{store_errors}, 0, 'wide: no store error');
if ($threaded) {
    # 16 clients on a few children: threads of a child overlap in the
    # store often enough over 400 requests for some batch to carry two.
    ok($d->{store_round_trips} >= 1 && $d->{store_round_trips} < 400,
        sprintf 'wide: %d round trips for 400 calls (%.2f per batch)',
        $d->{store_round_trips}, 400 / ($d->{store_round_trips} || 1));
}
else {
    ok t_cmp($d->{store_round_trips}, 400, 'wide: prefork: one round trip per call');
}
