# SPDX-License-Identifier: Apache-2.0
# SIGKILL of a Redis Cluster master under traffic, fail-closed: identities
# whose slots live on the two other masters keep their answers (at least
# 99 % 200), and the dead master's identities are decided again within
# 3 s of its replica's promotion. The killed node is started again at the
# end (it rejoins as a replica) and the test waits for cluster_state:ok.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Time::HiRes qw(time sleep);
use SL::Test;
use SL::Httpd;
use SL::Cluster;

if (my $why = cluster_skip()) { plan skip_all => $why }
plan tests => 10;

ok(wait_cluster(30), 'cluster up');
my @m = masters();
my $victim  = $m[1];
my $replica = replica_of($victim);
ok($replica, "master $victim has a replica ($replica)");
my %on = map { my $p = $_; ($p => [ map { identity_on($p, 'cl-ha') } 1 .. 4 ]) } @m;
my %where = map { my $p = $_; map { ($_ => $p) } @{ $on{$p} } } @m;
my @ips = map { @{ $on{$_} } } @m;

my $h = SL::Httpd->start(conf => ['cluster.conf'],
    store => 'cluster://' . seeds(@m),
    extra => "SlidingLimitStoreTimeout 200ms 200ms\nLogLevel slidinglimit:debug\n");
my @warm = map { http_get($h->url . '/cl-ha/', 'X-Forwarded-For' => $_)->{status} } @ips;
is("@warm", join(' ', (200) x @ips), 'every identity decided before the kill');

my $collect = traffic($h->url . '/cl-ha/', \@ips, workers => 4, seconds => 12);
sleep 2;
my $t_kill = time;
kill_node($victim);
# The promotion, as the replica reports it.
my $t_promoted;
my $end = time + 15;
while (time < $end) {
    my $role = eval { cnode($replica, 'ROLE') };
    if ($role && $role->[0] eq 'master') { $t_promoted = time; last }
    sleep 0.05;
}
my $ev = $collect->();
ok($t_promoted, sprintf 'replica %s promoted %.2f s after the kill', $replica,
    ($t_promoted // time) - $t_kill);
$t_promoted //= time;

my (%n, %ok);
my ($last_fail, $first_after) = (0, undef);
for my $e (@$ev) {
    my ($t, $ip, $st) = @$e;
    next if $t < $t_kill;
    my $side = $where{$ip} == $victim ? 'dead' : 'other';
    $n{$side}++;
    $ok{$side}++ if $st == 200;
    if ($side eq 'dead') {
        $last_fail = $t if $st != 200;
    }
}
my $share = $n{other} ? 100 * ($ok{other} // 0) / $n{other} : 0;
my $recovery = $last_fail ? $last_fail - $t_promoted : -1;
diag(sprintf 'kill -> promotion %.2f s; other masters: %d/%d answered 200 (%.2f %%); '
      . 'dead master: %d/%d 200, last failure %.2f s after the promotion',
    $t_promoted - $t_kill, $ok{other} // 0, $n{other} // 0, $share,
    $ok{dead} // 0, $n{dead} // 0, $recovery);
ok($n{other} > 200, "traffic on the other masters during the failover ($n{other} requests)");
ok($share >= 99, sprintf 'other masters: %.2f %% answered 200 (at least 99 %%)', $share);
ok($n{dead} && ($ok{dead} // 0) < $n{dead}, 'the dead master\'s identities took the fail mode meanwhile');
ok($recovery < 3, sprintf 'the dead master\'s identities answered again %.2f s after the promotion (under 3 s)', $recovery);
my @tail = grep { $_->[0] > $t_promoted + 3 && $where{ $_->[1] } == $victim } @$ev;
ok(@tail && !grep({ $_->[2] != 200 } @tail),
    sprintf 'and every one of their %d later requests was decided', scalar @tail);
$h->stop;

# What the budget lost: admissions the dead master acknowledged but had not
# replicated yet (Redis replicates asynchronously). Reported, not asserted.
my ($admitted, $kept) = (0, 0);
for my $ip (@{ $on{$victim} }) {
    $admitted += 1 + grep { $_->[1] eq $ip && $_->[2] == 200 } @$ev;
    $kept += cnode($replica, 'ZCARD', sl_key(ip => $ip, policy => 'cl-ha'));
}
diag(sprintf 'dead master\'s identities: %d admissions acknowledged, %d in the '
      . 'promoted replica: %d lost', $admitted, $kept, $admitted - $kept);

# Put the cluster back: the killed node rejoins as a replica.
start_node($victim);
ok(wait_cluster(30), "cluster restored: the killed node rejoined, cluster_state:ok");
