# Graceful restarts (SIGUSR1, as apachectl -k graceful) under load: no
# request lost or failed, no Redis connection left behind, no shared memory
# segment added per generation.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Time::HiRes qw(time sleep);
use SL::Test;
use SL::Fault;

plan tests => 7;

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

require Apache::TestRequest;
my $old  = Apache::TestRequest::module('sl_fault_patient');
my $base = 'http://' . Apache::TestRequest::hostport();
Apache::TestRequest::module($old);

my $maps0 = shared_maps();
my %kids0 = map { $_ => 1 } children();
my $workers = 4;
# A new connection per request: a graceful restart closes idle keep-alive
# connections, which a client must expect anyway.
my $collect = load("$base/f/wideclosed/g", workers => $workers, seconds => 5,
    keep_alive => 0);
sleep 1;
for (1 .. 2) {
    kill 'USR1', $parent or die "cannot signal httpd $parent: $!";
    sleep 1.5;
}
my %total = %{ $collect->() };
delete $total{max};
my $n = 0;
$n += $_ for values %total;
t_debug(join ' ', map {"$_=$total{$_}"} sort keys %total);
ok($n > 50, "$n requests during two graceful restarts");
ok t_cmp(join(',', sort keys %total), '200:allowed',
    'every one answered and decided by Redis (none lost, none failed)');

# Old generations finish their requests and exit; let them.
wait_until(sub { my @k = children(); @k <= 6 }, 10);
sleep 1;
my @kids    = children();
my $clients = redis_clients();
my $threads = $ENV{SL_TEST_MPM} && $ENV{SL_TEST_MPM} eq 'prefork' ? 1 : $workers;
ok($clients <= @kids * $threads,
    "$clients Redis connections for " . scalar(@kids) . ' children: at most one per concurrent request each');
ok(kill(0, $parent), 'httpd survived');
ok(!grep({ $kids0{$_} } @kids), 'the restarts replaced every child');
ok t_cmp(shared_maps(), $maps0, 'no shared memory mapping added by the restarts');
my $r = vhost_get('sl_fault_patient', '/f/wideclosed/g', 'X-Forwarded-For' => fresh_ip());
ok t_cmp($r->{headers}{'x-sl-result'}, 'allowed', 'the new generation decides with Redis');
