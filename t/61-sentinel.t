# SPDX-License-Identifier: Apache-2.0
# sentinel:// against a master, two replicas and three Sentinels on
# loopback (t/servers-tls.sh, started once by t/run; down-after 1 s): the
# limit is exact through the Sentinels' master; SIGKILL of the master under
# traffic is followed within the Sentinels' promotion time plus 3 s (the
# fail mode meanwhile, no request waiting past the timeouts); a child that
# had nothing to do during the failover decides its first request after it
# on the new master (its pooled connection and the master's address it
# knew are the old master's), also once the old master is back as a
# replica; that changes nothing else; exact again afterwards.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Time::HiRes qw(time sleep);
use SL::Test;
use SL::Httpd;

plan skip_all => 'Sentinel servers not started (t/run starts them)'
  unless $ENV{SL_SENTINEL_PORTS};
plan skip_all => "runs once, under $ENV{SL_TEST_ONCE_MPM}"
  if ($ENV{SL_TEST_ONCE_MPM} // 'event') ne ($ENV{SL_TEST_MPM} // 'event');
plan tests => 12 + 3;

my $dpw = $ENV{SL_TEST_SENTINEL_DATA_PASSWORD};
my $spw = $ENV{SL_TEST_SENTINEL_PASSWORD};
my @sentinels = split /,/, $ENV{SL_SENTINEL_PORTS};
my $old = $ENV{SL_SENTINEL_MASTER_PORT};

sub sentinel_master {
    for my $p (@sentinels) {
        my $out = `REDISCLI_AUTH='$spw' redis-cli -p $p SENTINEL get-master-addr-by-name slmaster 2>/dev/null`;
        my (undef, $port) = split /\n/, $out;
        return $port if $port;
    }
    return 0;
}

my %store = (conf => ['tls.inc'],
    store => 'sentinel://' . ":$dpw\@" . join(',', map {"127.0.0.1:$_"} @sentinels) . '/slmaster',
    extra => "SlidingLimitSentinelAuth $spw\nSlidingLimitStoreTimeout 200ms 200ms");
my $h = SL::Httpd->start(%store);
# Servers of one child, so that the child that answers after the failover
# is the one that knew the old master: warmed now, then left alone, one
# until the failover is done, the other until the old master is back as a
# replica.
my @quiet = map { SL::Httpd->start(%store, children => 1, name => "sentinel-quiet-$_-$$") } 1 .. 2;
is(join(' ', map { http_get($_->url . '/sentinel/', 'X-Forwarded-For' => fresh_ip())->{status} } @quiet),
    '200 200', 'two more servers of one child each decide through the first master');

sub statuses {
    my ($n) = @_;
    my $ip = fresh_ip();
    return join ' ', map {
        http_get($h->url . '/sentinel/', 'X-Forwarded-For' => $ip)->{status}
    } 1 .. $n;
}

is(sentinel_master(), $old, 'the Sentinels name the first master');
is(statuses(7), '200 200 200 200 200 429 429', 'limit of 5 exact through the Sentinels');

# SlidingLimitAllotment auto through the Sentinels' master: 600 requests
# against a limit of 200, never more than 200 admitted, every admission
# counted by the master (the unused rest of a grant too, until it goes
# back), grants in use.
{
    my $ip    = fresh_ip();
    my $count = burst($h->url . '/sentinel-allot/', total => 600, workers => 8,
        headers => { 'X-Forwarded-For' => $ip });
    my $ok    = $count->{200} // 0;
    my $key   = sl_key(ip => $ip, policy => 'sentinel-allot');
    my $to    = { port => $old, password => $dpw };
    my $units = log_units($to, $key);
    t_debug('allotments through the Sentinels: ' . join(' ', map {"$_=$count->{$_}"} sort keys %$count)
          . ", $units units counted");
    ok($ok > 0 && $ok <= 200, "auto through the Sentinels: $ok of 600 admitted, at most 200");
    ok($units >= $ok && $units <= 200, "auto: the master counts $units units for $ok admissions");
    ok(scalar(grep { allotment($_) } @{ redis($to, 'ZRANGE', $key, 0, -1) }) > 0,
        'auto: the log holds allotments');
}

# SIGKILL the master under traffic: one request every 50 ms until Redis
# decides again (fail-closed: 503 meanwhile).
my $pidf = "$ENV{SL_SENTINEL_DIR}/master/redis.pid";
open my $fh, '<', $pidf or die "$pidf: $!";
chomp(my $pid = <$fh>);
close $fh;
my $t0 = time;
kill 'KILL', $pid;
my ($promoted, $back, $slowest, %seen) = (0, 0, 0);
while (time - $t0 < 30) {
    my $t = time;
    my $r = http_get($h->url . '/sentinel/', 'X-Forwarded-For' => fresh_ip());
    $slowest = time - $t if time - $t > $slowest;
    $seen{$r->{status}}++;
    if (!$promoted) {
        my $m = sentinel_master();
        $promoted = time - $t0 if $m && $m != $old;
    }
    if ($r->{status} == 200) {
        $back = time - $t0;
        last;
    }
    sleep 0.05;
}
my $new = sentinel_master();
ok($promoted && $new != $old, sprintf 'the Sentinels promoted %d after %.1f s', $new, $promoted);
ok($back && $back <= $promoted + 3,
    sprintf 'decided by the new master %.1f s after the kill (promotion + %.1f s)',
    $back, $back - $promoted);
ok($slowest < 1.5, sprintf 'no request waited past the timeouts meanwhile (slowest %.2f s; %s)',
    $slowest, join ' ', map {"$_:$seen{$_}"} sort keys %seen);
is(statuses(7), '200 200 200 200 200 429 429', 'exact on the new master');
# Its pooled connection finds the old master gone, and the address it knew
# refuses: the Sentinels are asked again within the request.
is(http_get($quiet[0]->url . '/sentinel/', 'X-Forwarded-For' => fresh_ip())->{status}, 200,
    'a child idle through the failover: its first request decided on the new master');
$quiet[0]->stop;

# The old master back, as a replica of the new one.
system("redis-server '$ENV{SL_SENTINEL_DIR}/master/redis.conf' --replicaof 127.0.0.1 $new") == 0
  or die "cannot restart the old master";
my $role = '';
for (1 .. 100) {
    $role = `REDISCLI_AUTH='$dpw' redis-cli -p $old ROLE 2>/dev/null`;
    last if $role =~ /^slave/ && $role =~ /connected/;
    sleep 0.1;
}
like($role, qr/^slave/, 'the old master is back as a replica');
# Normally still the new master; on a loaded host the Sentinels may fail
# over once more (a master that misses the 1 s down-after, seen once in
# fifteen runs), which the module follows like the first.
my $now = sentinel_master();
ok($now && $now != $old, "the Sentinels name a master other than the old one ($now; $new after the failover)");
# The address it knew takes connections again, and says READONLY: the
# Sentinels are asked again within the request.
is(http_get($quiet[1]->url . '/sentinel/', 'X-Forwarded-For' => fresh_ip())->{status}, 200,
    'a child idle until the old master is back as a replica: its first request decided on the new master');
$quiet[1]->stop;
# Exact on one master. Should the Sentinels fail over once more while the
# seven requests run (the loaded host above), the new master may lack the
# last write the old one took: Redis replicates asynchronously, and no
# client of it can be exact across that. So the check waits until the three
# Sentinels agree on the master and its configuration epoch (a failover
# raises it; one Sentinel may learn of it up to 2 s after another), and is
# made again, with the extra failover said, if the epoch moved while the
# seven requests ran.
sub sentinel_view {
    my %seen;
    for my $p (@sentinels) {
        my %m = split /\n/, `REDISCLI_AUTH='$spw' redis-cli -p $p SENTINEL MASTER slmaster 2>/dev/null`;
        return '' unless $m{port} && defined $m{'config-epoch'} && ($m{flags} // '') eq 'master';
        $seen{"$m{port}/$m{'config-epoch'}"} = 1;
    }
    return keys %seen == 1 ? (keys %seen)[0] : '';
}
sub sentinels_settled {
    my $view = '';
    for (1 .. 150) {
        $view = sentinel_view();
        return $view if $view;
        sleep 0.1;
    }
    return $view;
}
my ($got, $tries) = ('', 0);
while ($tries++ < 3) {
    my $before = sentinels_settled();
    $got = statuses(7);
    my $after = sentinel_view() || sentinels_settled();
    last if $before && $before eq $after;
    diag("the Sentinels failed over again during the check (master/epoch $before -> $after): once more");
    sleep 2;
}
is($got, '200 200 200 200 200 429 429', 'still exact, on the master they name')
  or diag(join '', map { `grep -hE '[+-](switch-master|odown|sdown|failover|tilt)' $ENV{SL_SENTINEL_DIR}/sentinel$_/sentinel.log 2>/dev/null | tail -n 20` } 1 .. 3);
