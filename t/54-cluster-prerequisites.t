# SPDX-License-Identifier: Apache-2.0
# A plain redis:// store pointed at a node of the suite's Redis Cluster:
# the node redirects (MOVED) every request for a slot it does not serve,
# and the module says once, whichever children connect, to use cluster://
# (its
# prerequisites, src/sl_prereq.c; the other rules: t/84-prerequisites.t).
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use HTTP::Tiny;
use SL::Test;
use SL::Httpd;
use SL::Cluster;

if (my $why = cluster_skip()) { plan skip_all => $why }
plan tests => 5;

ok(wait_cluster(30), 'cluster up');
my ($node) = masters();
# Every connection in a child of its own: four requests, four children
# that each connect to the node for the first time.
my $h = SL::Httpd->start(conf => ['cluster.conf'],
    store => "redis://127.0.0.1:$node",
    extra => "MaxConnectionsPerChild 1\nCustomLog logs/pids \"%P %U\"\n");
my @st;
for (1 .. 4) {
    my $ua = HTTP::Tiny->new(timeout => 15, keep_alive => 0);
    push @st, $ua->get($h->url . '/cl-ha/',
        { headers => { 'X-Forwarded-For' => fresh_ip() } })->{status};
}
like("@st", qr/^(200|503)( (200|503)){3}$/,
    "requests answered, decided or in the fail mode (@st)");
my %pids;
wait_until(sub {
    open my $fh, '<', $h->dir . '/logs/pids' or return 0;
    %pids = map { /^(\d+)/ ? ($1 => 1) : () } grep {m{^\d+ /cl-ha/}} <$fh>;
    keys %pids >= 4;
}, 10);
is(scalar(keys %pids), 4, 'four children served them');
my @lines = grep {/\[slidinglimit:warn\].*store redis:\/\/127\.0\.0\.1:$node\/0 is a Redis Cluster node \(cluster_enabled:1\): .*use SlidingLimitStore cluster:\/\/127\.0\.0\.1:$node /}
  split /\n/, $h->error_log;
is(scalar(@lines), 1, 'one line says to use cluster://')
  or diag($h->error_log);
# Requests the node redirects go to other nodes, which are not the store's.
is(scalar(grep {/Redis Cluster node/} split /\n/, $h->error_log), 1,
    'and only once, for the node the store names');
$h->stop;
