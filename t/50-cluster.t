# SlidingLimitStore cluster://: a real three-node Redis Cluster on loopback.
# Keys of one identity share a hash tag, so both limits of a request are one
# script call on the node that owns the slot, reached by following MOVED
# from a seed that does not own it; the budget is exact across servers.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use File::Path qw(make_path);
use IO::Socket::INET;
use POSIX ();
use HTTP::Tiny;
use SL::Test;
use SL::Httpd;

my @ports;
for (1 .. 3) {
    for (1 .. 100) {
        my $p = 10000 + int(rand(10000));
        next if grep { $_ == $p || $_ + 10000 == $p } @ports;
        my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
            LocalPort => $p, Listen => 1, ReuseAddr => 1) or next;
        # The cluster bus listens on port + 10000 too.
        my $b = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
            LocalPort => $p + 10000, Listen => 1, ReuseAddr => 1) or next;
        push @ports, $p;
        last;
    }
}
plan skip_all => 'no free ports for a cluster' unless @ports == 3;
plan tests => 12;

my $base = Apache::Test::vars('t_dir') . "/tmp/cluster-$$";
my @pids;
END {
    kill 'TERM', @pids if @pids;
    waitpid($_, 0) for @pids;
}
for my $p (@ports) {
    make_path("$base/$p");
    my $pid = fork() // die "fork: $!";
    if (!$pid) {
        chdir "$base/$p";
        open STDOUT, '>', "$base/$p/out";
        open STDERR, '>&', \*STDOUT;
        exec('redis-server', '--port', $p, '--bind', '127.0.0.1',
            '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf',
            '--save', '', '--appendonly', 'no', '--dir', "$base/$p")
          or POSIX::_exit(127);
    }
    push @pids, $pid;
}
for my $p (@ports) {
    wait_until(sub { eval { redis({ port => $p }, 'PING') } }, 30);
}
my $out = `redis-cli --cluster create @{[ map { "127.0.0.1:$_" } @ports ]} --cluster-replicas 0 --cluster-yes 2>&1`;
my $ok = wait_until(sub {
    !grep { (eval { redis({ port => $_ }, 'CLUSTER', 'INFO') } // '') !~ /cluster_state:ok/ } @ports;
}, 30);
ok($ok, 'three-node cluster is up') or diag $out;

# An identity whose slot the first seed does not own: the module must
# follow MOVED.
my ($ip, $key_log, $owner);
for (1 .. 200) {
    $ip = fresh_ip();
    $key_log = sl_key(ip => $ip, policy => 'cl-log');
    my $slot = redis({ port => $ports[0] }, 'CLUSTER', 'KEYSLOT', $key_log);
    my $slots = redis({ port => $ports[0] }, 'CLUSTER', 'SLOTS');
    for my $range (@$slots) {
        $owner = $range->[2][1] if $slot >= $range->[0] && $slot <= $range->[1];
    }
    last if $owner != $ports[0];
}
isnt($owner, $ports[0], "identity's slot lives on node $owner, not the seed");

my @h = map { SL::Httpd->start(conf => ['cluster.conf'],
        store => "cluster://127.0.0.1:$ports[0],127.0.0.1:$ports[1]") } 1 .. 2;
my @st;
for my $i (0 .. 5) {
    my $res = http_get_url($h[$i % 2]->url . '/cluster/', $ip);
    push @st, $res->{status};
}
is("@st", '200 200 200 200 429 429', 'limit of 4 exact across two servers on the cluster');
my $key_counter = sl_key(ip => $ip, policy => 'cl-counter', alg => 'c');
is(redis({ port => $owner }, 'ZCARD', $key_log), 4, 'the log lives on the owning node');
ok(defined redis({ port => $owner }, 'GET', $key_counter), '... with the counter (same hash tag)');
is(redis({ port => $ports[0] }, "DBSIZE"), 0, "nothing written to the seed");
ok(redis({ port => $owner }, 'PTTL', $key_log) > 0, 'keys carry a TTL');

my $res = http_get_url($h[0]->url . '/cluster/', $ip);
is($res->{status}, 429, 'still refused');
like($res->{headers}{'ratelimit-policy'} // '', qr/"cl-log";q=4;w=600, "cl-counter";q=6;w=600/,
    'both policies reported');
like($res->{headers}{'retry-after'} // '', qr/^\d+$/, 'Retry-After set');

# Another identity: its own budget, wherever its slot is.
my $ip2 = fresh_ip();
is(http_get_url($h[1]->url . '/cluster/', $ip2)->{status}, 200, 'another client has its own budget');
my $errs = 0;
for my $h (@h) {
    open my $fh, '<', "$h->{dir}/logs/error_log" or next;
    $errs += grep { /slidinglimit.*(failed|error)/i } <$fh>;
}
is($errs, 0, 'no store errors logged while following redirections');

sub http_get_url {
    my ($url, $ip) = @_;
    return HTTP::Tiny->new(timeout => 10)->get($url, { headers => { 'X-Forwarded-For' => $ip } });
}
