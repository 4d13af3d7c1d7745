# SPDX-License-Identifier: Apache-2.0
# Slot migration: forced step by step (ASK to the importing node, a
# NOSCRIPT there answered with the script's reload under ASKING, then MOVED
# once the slot is handed over), and redis-cli --cluster reshard under
# traffic. No request fails and no admission is lost: each budget's log
# holds exactly the requests that were admitted.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Time::HiRes qw(time sleep);
use SL::Test;
use SL::Httpd;
use SL::Cluster;

if (my $why = cluster_skip()) { plan skip_all => $why }
plan tests => 12;

ok(wait_cluster(30), 'cluster up');
my @m = masters();
my ($src, $dst) = @m[0, 1];
my %id = map { ($_ => cnode($_, 'CLUSTER', 'MYID')) } @m;
my $h = SL::Httpd->start(conf => ['cluster.conf'], store => 'cluster://' . seeds(@m));
sub get { http_get($h->url . $_[0], 'X-Forwarded-For' => $_[1])->{status} }

# Step by step, one identity (limit 4, two keys of one hash tag).
my $ip   = identity_on($src, 'cl-log');
my $klog = sl_key(ip => $ip, policy => 'cl-log');
my $kc   = sl_key(ip => $ip, policy => 'cl-counter', alg => 'c');
my $slot = cnode($src, 'CLUSTER', 'KEYSLOT', $klog);
is(get('/cluster/', $ip), 200, "request 1 decided on $src (slot $slot)");
cnode($dst, 'CLUSTER', 'SETSLOT', $slot, 'IMPORTING', $id{$src});
cnode($src, 'CLUSTER', 'SETSLOT', $slot, 'MIGRATING', $id{$dst});
cnode($src, 'MIGRATE', '127.0.0.1', $dst, '', 0, 5000, 'KEYS', $klog, $kc);
cnode($dst, 'SCRIPT', 'FLUSH');
is(get('/cluster/', $ip), 200, 'request 2: ASK to the importing node, NOSCRIPT there, reload under ASKING');
is(cnode_asking($dst, 'ZCARD', $klog), 2, '... counted on the importing node');
is(get('/cluster/', $ip), 200, 'request 3 through ASK again');
cnode($_, 'CLUSTER', 'SETSLOT', $slot, 'NODE', $id{$dst}) for $dst, $src, $m[2];
is(get('/cluster/', $ip), 200, 'request 4: MOVED to the new owner');
is(get('/cluster/', $ip), 429, 'request 5 refused: the limit of 4 held through the migration');
is(cnode($dst, 'ZCARD', $klog), 4, 'four admissions in the log on the new owner');

# redis-cli --cluster reshard of the source's lowest 500 slots (the ones it
# moves first) under traffic, with identities placed in them.
my @ranges = sort { $a->[0] <=> $b->[0] } grep { $_->[2][1] == $src } @{ cnode($src, 'CLUSTER', 'SLOTS') };
my @srcslots = map { $_->[0] .. $_->[1] } @ranges;
my %moving = map { ($_ => 1) } @srcslots[0 .. 499];
my (@movers, @stay);
for (1 .. 3000) {
    last if @movers >= 8 && @stay >= 4;
    my $cand = fresh_ip();
    my $s = cnode($src, 'CLUSTER', 'KEYSLOT', sl_key(ip => $cand, policy => 'cl-ha'));
    if ($moving{$s}) { push @movers, $cand if @movers < 8 }
    elsif (@stay < 4 && owner_of(sl_key(ip => $cand, policy => 'cl-ha')) != $src) { push @stay, $cand }
}
my @ips = (@movers, @stay);
my @warm = map { get('/cl-ha/', $_) } @ips;
my $collect = traffic($h->url . '/cl-ha/', \@ips, workers => 4, seconds => 20);
sleep 1.5;
my $t0 = time;
my $out = `timeout 60 redis-cli --cluster reshard 127.0.0.1:$src --cluster-from $id{$src} --cluster-to $id{$dst} --cluster-slots 500 --cluster-yes 2>&1`;
my $rc = $?;
my $took = time - $t0;
my $ev = $collect->();
ok($rc == 0, sprintf 'reshard of 500 slots under traffic took %.2f s', $took) or diag $out;
my $moved = grep { owner_of(sl_key(ip => $_, policy => 'cl-ha')) == $dst } @movers;
is($moved, scalar @movers, "the $moved identities placed in the moved slots live on $dst now");
my @bad = grep { $_->[2] != 200 } @$ev;
my @during = grep { $_->[0] >= $t0 && $_->[0] <= $t0 + $took } @$ev;
diag(sprintf 'reshard: %d requests, %d during the %.2f s migration, %d not 200',
    scalar @$ev, scalar @during, $took, scalar @bad);
ok(@during > 20 && !@bad, sprintf 'no request failed (%d during the migration)', scalar @during);
# What the failed ones were answered (status and X-SL-Result).
my %why;
$why{"$_->[2] $_->[3]"}++ for @bad;
diag(join ', ', map { "$_: $why{$_} times" } sort keys %why) if @bad;
my $lost = 0;
for my $i (@ips) {
    my $admitted = 1 + grep { $_->[1] eq $i && $_->[2] == 200 } @$ev;
    my $k = sl_key(ip => $i, policy => 'cl-ha');
    my $log = cnode(owner_of($k), 'ZCARD', $k);
    $lost += $admitted - $log;
    t_debug("$i: $admitted admitted, $log in the log");
}
is($lost, 0, 'every admission is in its budget\'s log on the owning master');
$h->stop;
