# SPDX-License-Identifier: Apache-2.0
# The slidinglimit-status page (Prometheus text format) counts for the whole
# server: read it before and after a burst from several connections (so,
# under prefork, several children decide) and compare the deltas per result
# and policy with the decisions this test saw. The tests of the suite run
# one after another, so nothing else moves these counters meanwhile.
# Runs under each MPM: counters shared by children and threads.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Wire;

plan tests => 22;

my $D = 'slidinglimit_decisions_total';
my $m0 = metrics();

my $ip = fresh_ip();
my $id = test_id('metrics');
my $got = burst(server_url() . '/wire/metrics.html', total => 20, workers => 4,
    headers => { 'X-Forwarded-For' => $ip, 'X-Test-Id' => $id });
ok t_cmp($got->{200} // 0, 8, 'the burst: 8 admitted');
ok t_cmp($got->{429} // 0, 12, 'the burst: 12 refused');
ok t_cmp(redis('ZCARD', sl_key(ip => $ip, policy => 'wire-metrics')), 8,
    'Redis holds the 8 admissions');
my %pids = map { $_->{pid} => 1 } @{ wire_log($id, 20) };
t_debug('children that decided: ' . join(' ', sort keys %pids));

my $dip = fresh_ip();
my @dry = map {
    http_get('/wire/metrics-dry.html', 'X-Forwarded-For' => $dip)->{status}
} 1 .. 3;
ok t_cmp("@dry", '200 200 200', 'dry run: three passed');

my $m1 = metrics();
my $delta = sub {
    my ($name, %lab) = @_;
    return metric($m1, $name, %lab) - metric($m0, $name, %lab);
};
ok t_cmp($delta->($D, result => 'allowed', policy => 'wire-metrics'), 8,
    'allowed{policy="wire-metrics"} rose by the admissions');
ok t_cmp($delta->($D, result => 'denied', policy => 'wire-metrics'), 12,
    'denied{policy="wire-metrics"} rose by the refusals');
ok t_cmp($delta->($D, result => 'dryrun-denied', policy => 'wire-metrics'), 0,
    'no dryrun-denied for the enforcing policy');
ok t_cmp($delta->($D, result => 'allowed', policy => 'wire-metrics-dry'), 1,
    'dry-run policy: one allowed');
ok t_cmp($delta->($D, result => 'dryrun-denied', policy => 'wire-metrics-dry'), 2,
    'dry-run policy: two dryrun-denied');
ok t_cmp($delta->($D, result => 'denied', policy => 'wire-metrics-dry'), 0,
    'dry-run policy: nothing denied');
my $all = 0;
for my $k (keys %$m1) {
    $all += $m1->{$k} - ($m0->{$k} // 0) if $k =~ /^\Q$D\E\{/;
}
ok t_cmp($all, 23, 'no other decision was counted: 23 in all');

# Each decision was one store call or a deny-cache hit.
my $calls = $delta->('slidinglimit_store_calls_total');
my $hits  = $delta->('slidinglimit_deny_cache_hits_total');
ok t_cmp($calls + $hits, 23, "store calls ($calls) + deny-cache hits ($hits) = 23");
# 8 + 1 admissions; the refusals may all be deny-cache hits (the eighth
# admission leaves nothing, and every child shares what it learned).
ok($calls >= 8 + 1, 'every admission went to the store');
ok t_cmp($delta->('slidinglimit_store_errors_total'), 0, 'no store error');
ok t_cmp($delta->('slidinglimit_local_fallback_total'), 0, 'no local fallback');
ok t_cmp(metric($m1, 'slidinglimit_breaker_open',
        store => "redis://127.0.0.1:$ENV{SL_TEST_REDIS_PORT}/0"), 0, "the main store's breaker closed");

# The latency histogram: one observation per store call, cumulative buckets.
my $H = 'slidinglimit_store_latency_seconds';
ok t_cmp($delta->("${H}_count"), $calls, 'histogram count rose by the store calls');
ok t_cmp($delta->("${H}_bucket", le => '+Inf'), $calls, '+Inf bucket too');
ok($delta->("${H}_sum") > 0, 'the latency sum grew');
my @le = sort { $a <=> $b } map { /le=([0-9.e+-]+)\}/ ? $1 : () }
  grep { /^\Q${H}_bucket\E\{le=[0-9]/ } keys %$m1;
my @cum = map { metric($m1, "${H}_bucket", le => $_) } @le;
ok(@le >= 5 && !grep({ $cum[$_] < $cum[ $_ - 1 ] } 1 .. $#cum)
      && $cum[-1] <= metric($m1, "${H}_bucket", le => '+Inf'),
    'buckets are cumulative (' . scalar(@le) . ' finite bounds)');

my @labels = map { /[{,]le=([^,}]*)[,}]/ ? $1 : () } grep { /^\Q${H}_bucket\E\{/ } keys %$m1;
ok(!grep({ !/^(?:\+Inf|[0-9]+(?:\.[0-9]+)?)$/ } @labels),
    'le labels are plain decimals with a leading digit, or +Inf');

# The page is protected with Require: a client coming through the trusted
# proxy with another address is refused.
my $res = http_get('/wire-status', 'X-Forwarded-For' => fresh_ip());
ok t_cmp($res->{status}, 403, 'Require ip keeps other clients out');
