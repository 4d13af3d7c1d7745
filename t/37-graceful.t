# SPDX-License-Identifier: Apache-2.0
# Graceful restarts (SIGUSR1, as apachectl -k graceful) under load: no
# request lost or failed, no Redis connection left behind, no shared memory
# segment added per generation.
# Runs under each MPM: each MPM restarts its children its own way.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Time::HiRes qw(time sleep);
use SL::Test;
use SL::Fault;
use SL::Wire;

plan tests => 8;

my $logs = Apache::Test::vars('t_logs');
open my $pf, '<', "$logs/httpd.pid" or die "httpd.pid: $!";
chomp(my $parent = <$pf>);

sub shared_maps {
    open my $fh, '<', "/proc/$parent/maps" or die "maps: $!";
    return scalar grep { /^\S+ ...s / } <$fh>;
}

sub children {
    my @kids;
    for my $stat (glob '/proc/[0-9]*/stat') {
        open my $fh, '<', $stat or next;
        my $line = <$fh> // next;
        my ($pid, $ppid) = $line =~ /^(\d+) \(.*\) \S (\d+)/ or next;
        push @kids, $pid if $ppid == $parent;
    }
    return @kids;
}

sub redis_clients {
    my $list = fault_redis('CLIENT', 'LIST');
    # Our own connection (the one asking) is not the module's.
    return (() = $list =~ /^id=/mg) - 1;
}

my $base = server_url('sl_fault_patient');

my $maps0 = shared_maps();
my %kids0 = map { $_ => 1 } children();
my $workers = 4;
my $d0 = decisions('fwideclosed', 'allowed') // die "status page: no answer\n";
# A new connection per request: a graceful restart closes idle keep-alive
# connections, which a client must expect anyway. The load goes on until
# requests were decided before, between and after the restarts.
my $collect = load("$base/f/wideclosed/g", workers => $workers, seconds => 120,
    keep_alive => 0);
my $running = decided_more('fwideclosed', 'allowed', 20);
my $restarts = 0;
for (1 .. 2) {
    my %before = map { $_ => 1 } children();
    kill 'USR1', $parent or die "cannot signal httpd $parent: $!";
    # A child that was not there: the new generation is up.
    wait_until(sub { grep { !$before{$_} } children() }, 30)
      and decided_more('fwideclosed', 'allowed', 20)
      and $restarts++;
}
my %total = %{ $collect->() };
delete $total{max};
my $n = 0;
$n += $_ for values %total;
t_debug(join ' ', map {"$_=$total{$_}"} sort keys %total);
ok($running && $restarts == 2,
    "$n requests, decided before, between and after two graceful restarts");
ok t_cmp(join(',', sort keys %total), '200:allowed',
    'every one answered and decided by Redis (none lost, none failed)');
ok t_cmp(decisions('fwideclosed', 'allowed') - $d0, $n,
    "the server decided each of the $n requests once");

# Old generations finish their requests and exit, and Redis sees their
# connections close.
my $threads = $ENV{SL_TEST_MPM} && $ENV{SL_TEST_MPM} eq 'prefork' ? 1 : $workers;
my (@kids, $clients);
# Both are awaited: an old child may still be on its way out (a loaded
# host) when the connections are already down to the bound.
wait_until(sub {
    @kids    = children();
    $clients = redis_clients();
    $clients <= @kids * $threads && !grep { $kids0{$_} } @kids;
}, 30);
ok($clients <= @kids * $threads,
    "$clients Redis connections for " . scalar(@kids) . ' children: at most one per concurrent request each');
ok(kill(0, $parent), 'httpd survived');
ok(!grep({ $kids0{$_} } @kids), 'the restarts replaced every child');
ok t_cmp(shared_maps(), $maps0, 'no shared memory mapping added by the restarts');
my $r = http_get({ vhost => 'sl_fault_patient' }, '/f/wideclosed/g', 'X-Forwarded-For' => fresh_ip());
ok t_cmp($r->{headers}{'x-sl-result'}, 'allowed', 'the new generation decides with Redis');
