# SPDX-License-Identifier: Apache-2.0
package SL::Cluster;

# The suite's Redis Cluster (started by t/run: six nodes, three masters with
# a replica each, cluster-node-timeout 1000): which node serves a slot,
# identities placed on a chosen master, killing and restarting a node,
# waiting for the cluster to settle, and traffic that records every answer
# with its time. The cluster tests run once, under SL_TEST_CLUSTER_MPM
# (event, where the threads of a child share the client).

use strict;
use warnings;

use Exporter qw(import);
use HTTP::Tiny;
use Time::HiRes qw(time sleep);
use SL::Test qw(redis fresh_ip sl_key);

our @EXPORT = qw(cluster_ports cluster_skip cnode cnode_asking masters owner_of
  identity_on replica_of kill_node start_node wait_cluster traffic
  node_ok seeds);

sub cluster_ports { split ' ', ($ENV{SL_TEST_CLUSTER_PORTS} // '') }

# A reason to skip this MPM's run, or undef. Dies when the cluster should
# be there and is not: a cluster test that silently skips cannot fail.
sub cluster_skip {
    my $mpm  = $ENV{SL_TEST_MPM}         // 'event';
    my $once = $ENV{SL_TEST_CLUSTER_MPM} // 'event';
    return "the cluster tests run once, under the $once MPM" if $mpm ne $once;
    die "SL_TEST_CLUSTER_PORTS unset: t/run did not start the cluster\n"
      unless cluster_ports() == 6;
    return;
}

sub seeds { join ',', map {"127.0.0.1:$_"} @_ }

# cnode($port, qw(CLUSTER INFO)): one node's reply; dies on error.
sub cnode { my $port = shift; return redis({ port => $port }, @_) }

# cnode_asking($port, qw(ZCARD key)): the command after ASKING, on one
# connection (a slot being imported answers only so).
sub cnode_asking {
    my ($port, @args) = @_;
    my $c = SL::Test::redis_connect(port => $port);
    $c->('ASKING');
    return $c->(@args);
}

sub node_ok {
    my ($port) = @_;
    my $info = eval { cnode($port, 'CLUSTER', 'INFO') } // '';
    return $info =~ /cluster_state:ok/;
}

sub _live { grep { eval { cnode($_, 'PING') } } cluster_ports() }

# The masters in slot order (as CLUSTER SLOTS of a live node tells).
sub masters {
    my ($ask) = _live();
    my $slots = cnode($ask, 'CLUSTER', 'SLOTS');
    my %seen;
    return grep { !$seen{$_}++ } map { $_->[2][1] }
      sort { $a->[0] <=> $b->[0] } @$slots;
}

sub owner_of {
    my ($key) = @_;
    my ($ask) = _live();
    my $slot = cnode($ask, 'CLUSTER', 'KEYSLOT', $key);
    for my $r (@{ cnode($ask, 'CLUSTER', 'SLOTS') }) {
        return $r->[2][1] if $slot >= $r->[0] && $slot <= $r->[1];
    }
    return;
}

# An address whose keys for policy live on the master at port.
sub identity_on {
    my ($port, $policy) = @_;
    for (1 .. 500) {
        my $ip = fresh_ip();
        my $o = owner_of(sl_key(ip => $ip, policy => $policy)) // 0;
        return $ip if $o == $port;
    }
    die "no identity found on $port\n";
}

# The port of the replica of the master at port.
sub replica_of {
    my ($port) = @_;
    my ($ask) = grep { $_ != $port } _live();
    my @nodes = map { [ split ' ' ] } split /\n/, cnode($ask, 'CLUSTER', 'NODES');
    my ($m) = grep { $_->[1] =~ /:$port\@/ } @nodes;
    my ($r) = grep { $_->[3] eq $m->[0] && $_->[2] =~ /slave/ } @nodes;
    return $r && $r->[1] =~ /:(\d+)\@/ ? $1 : undef;
}

sub _pidfile { "$ENV{SL_TEST_CLUSTER_DIR}/$_[0]/redis.pid" }

sub kill_node {
    my ($port) = @_;
    open my $fh, '<', _pidfile($port) or die "no pid file for $port\n";
    chomp(my $pid = <$fh>);
    kill 'KILL', $pid;
    my $end = time + 5;
    sleep 0.02 while kill(0, $pid) && time < $end;
    unlink _pidfile($port);
}

sub start_node {
    my ($port) = @_;
    system('redis-server', "$ENV{SL_TEST_CLUSTER_DIR}/$port/redis.conf") == 0
      or die "redis-server $port: $?\n";
    my $end = time + 10;
    sleep 0.05 until eval { cnode($port, 'PING') } || time > $end;
}

# Every node up, cluster_state:ok everywhere, and all agree on three
# masters that serve every slot; 1 when so within timeout seconds.
sub wait_cluster {
    my ($timeout) = @_;
    my $end = time + ($timeout // 30);
    while (time < $end) {
        my $ok = 1;
        for my $p (cluster_ports()) {
            $ok = 0, last unless node_ok($p);
        }
        if ($ok) {
            my %sig;
            for my $p (cluster_ports()) {
                my $s = eval { cnode($p, 'CLUSTER', 'SLOTS') } or next;
                $sig{ join ' ', map {"$_->[0]-$_->[1]:$_->[2][1]"}
                      sort { $a->[0] <=> $b->[0] } @$s } = 1;
            }
            return 1 if keys %sig == 1;
        }
        sleep 0.1;
    }
    return 0;
}

# traffic($url, \@ips, workers => 4, seconds => 10): requests from each
# worker in turn for the given addresses until the time is up; returns a
# sub that waits for the workers and gives [[time, ip, status, result],
# ...] sorted by time. The timestamps are the answers' arrival. The workers
# are SL::Test::workers, each answer counted under its event line.
sub traffic {
    my ($url, $ips, %a) = @_;
    my $secs = $a{seconds};
    my $collect = SL::Test::workers($a{workers} // 4, sub {
        my ($w) = @_;
        my $ua  = HTTP::Tiny->new(timeout => 10, keep_alive => 1);
        my $end = time + $secs;
        my $i   = $w;
        my %ev;
        while (time < $end) {
            my $ip  = $ips->[ $i++ % @$ips ];
            my $res = $ua->get($url, { headers => { 'X-Forwarded-For' => $ip } });
            $ev{ sprintf '%.4f %s %d %s', time, $ip, $res->{status},
                  $res->{headers}{'x-sl-result'} // '-' }++;
        }
        return \%ev;
    });
    return sub {
        my $got = $collect->();
        my @ev = map { my $e = [ split ' ', $_ ]; ($e) x $got->{$_} } keys %$got;
        return [ sort { $a->[0] <=> $b->[0] } @ev ];
    };
}

1;
