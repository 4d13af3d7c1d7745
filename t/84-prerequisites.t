# SPDX-License-Identifier: Apache-2.0
# A Redis store's prerequisites (src/sl_prereq.c): INFO, asked on the first
# connection to each node of a store, and every problem logged as one line
# per server generation, whichever child connects first. Each server here
# runs every connection in a child of its own (MaxConnectionsPerChild 1),
# so its four requests are four children that each connect to the store
# for the first time. A Redis older than 3.2 does not run here: that rule
# is tested in tests/unit/sl_prereq_test.c.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use HTTP::Tiny;
use SL::Test;
use SL::Httpd;
use SL::Fault;

plan tests => 15;

my $CHILDREN = 4;
my $port = $ENV{SL_TEST_REDIS_PORT} or die "SL_TEST_REDIS_PORT unset\n";

sub log_lines {
    my ($h, $file, $re) = @_;
    open my $fh, '<', $h->dir . "/logs/$file" or return ();
    return grep { /$re/ } <$fh>;
}

# A server on $store; $CHILDREN requests, each on its own connection.
# Returns the server, the statuses ("200" when the store decided: quota
# headers) and how many children served them.
sub serve {
    my ($store) = @_;
    my $h = SL::Httpd->start(conf => ['algorithms.conf'], store => $store,
        extra => "MaxConnectionsPerChild 1\nCustomLog logs/pids \"%P %U\"\n"
          . "LogLevel warn slidinglimit:debug\n");
    my @st;
    for (1 .. $CHILDREN) {
        # Every connection is a new child, which the parent makes at its own
        # pace (slow under the sanitizers on a loaded machine): a generous
        # wait, which only a failure uses up.
        my $ua = HTTP::Tiny->new(timeout => 60, keep_alive => 0);
        my $r;
        # 599 is HTTP::Tiny's own: no answer at all, as when a child that
        # reached its MaxConnectionsPerChild closes a connection it took
        # on its way out. httpd's recycling, not the store's decision,
        # which the next connection (a new child) shows.
        for my $try (1 .. 3) {
            $r = $ua->get($h->url . '/alg/log/',
                { headers => { 'X-Forwarded-For' => fresh_ip() } });
            last if $r->{status} != 599;
            diag("no answer ($r->{content}); again");
        }
        push @st, $r->{status} . ($r->{headers}{ratelimit} ? '' : '-undecided');
    }
    my %pids;
    wait_until(sub {
        %pids = map { /^(\d+)/ ? ($1 => 1) : () } log_lines($h, 'pids', qr{^\d+ /alg/});
        keys %pids >= $CHILDREN;
    }, 10);
    return ($h, "@st", scalar keys %pids);
}

# Lines the module logged at warn or above.
sub problems { my ($h) = @_; return log_lines($h, 'error_log', qr/\[slidinglimit:(warn|error|crit)\]/) }

my $decided = join ' ', ('200') x $CHILDREN;

# A healthy store: checked once, nothing to say.
my ($h, $st, $kids) = serve("redis://127.0.0.1:$port");
is($st, $decided, 'healthy store: every request decided');
cmp_ok($kids, ">=", $CHILDREN, "$CHILDREN children (a new one each) served them")
  or diag(join '', log_lines($h, 'pids', qr/./), log_lines($h, 'access_log', qr/./));
is(scalar(problems($h)), 0, 'healthy store: no warning');
# Valkey is named with its own version, not the Redis one it reports for
# compatibility (redis_version).
my $server = redis('INFO', 'server');
my $runs = $server =~ /^server_name:valkey\r?$/m && $server =~ /^valkey_version:([\d.]+)/m
  ? "Valkey $1" : 'Redis ' . redis_version();
is(scalar(log_lines($h, 'error_log', qr/store redis:\/\/127\.0\.0\.1:$port\/0: node 127\.0\.0\.1:$port runs \Q$runs\E; prerequisites met/)),
    1, "asked once for all children (debug: runs $runs)");
$h->stop;

# Eviction under maxmemory: the failure tests' Redis (private to them and
# to this test), its settings restored at the end.
my %was = map { my $v = fault_redis('CONFIG', 'GET', $_); ($_ => $v->[1]) }
  qw(maxmemory maxmemory-policy);
END {
    eval { fault_redis('CONFIG', 'SET', $_, $was{$_}) for sort keys %was };
}
fault_redis('CONFIG', 'SET', 'maxmemory', '100mb');
fault_redis('CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lru');
my $pw = $ENV{SL_TEST_FAULT_REDIS_PASSWORD};
($h, $st, $kids) = serve("redis://:$pw\@127.0.0.1:" . fault_port());
is($st, $decided, 'evicting store: every request still decided');
cmp_ok($kids, ">=", $CHILDREN, "$CHILDREN children (a new one each) served them")
  or diag(join '', log_lines($h, 'pids', qr/./), log_lines($h, 'access_log', qr/./));
my $display = quotemeta store_display();
my $evict = qr/\[slidinglimit:warn\].*mod_slidinglimit: store $display has maxmemory 104857600 with maxmemory-policy allkeys-lru: .*set maxmemory-policy noeviction/;
my @warn = log_lines($h, 'error_log', $evict);
is(scalar(@warn), 1, 'one warning for all children, naming the setting')
  or diag(join '', problems($h));
is(scalar(problems($h)), 1, '... and nothing else');
# A graceful restart is a new generation: said once more, by one child.
kill 'USR1', $h->pid;
sub one_request {
    my ($h) = @_;
    HTTP::Tiny->new(timeout => 15, keep_alive => 0)->get($h->url . '/alg/log/',
        { headers => { 'X-Forwarded-For' => fresh_ip() } });
}
wait_until(sub { one_request($h); log_lines($h, 'error_log', $evict) >= 2 }, 30);
one_request($h) for 1 .. 2;
is(scalar(log_lines($h, 'error_log', $evict)), 2,
    'after a graceful restart: once more');
fault_redis('CONFIG', 'SET', $_, $was{$_}) for sort keys %was;
is(scalar(log_lines($h, 'error_log', qr/\Q$pw\E/)), 0, 'no password in the log');
$h->stop;

# A cluster:// store on a plain Redis: decided by that node, and one hint.
($h, $st, $kids) = serve("cluster://127.0.0.1:$port");
is($st, $decided, 'cluster:// on a plain Redis: decided');
@warn = log_lines($h, 'error_log',
    qr/\[slidinglimit:warn\].*store cluster:\/\/127\.0\.0\.1:$port, node 127\.0\.0\.1:$port is not a Redis Cluster node \(cluster_enabled:0\): .*use SlidingLimitStore redis:\/\/127\.0\.0\.1:$port/);
is(scalar(@warn), 1, 'one line says to use redis://') or diag(join '', problems($h));
$h->stop;

# A user whom an ACL denies INFO: nothing checked, a debug line, and the
# requests decided as ever. ACL users came with Redis 6.
SKIP: {
    skip 'ACL users need Redis 6; this one is ' . redis_version(), 3
      unless redis_at_least(6, 0);
    my $upw = 'noinfo' . int(rand(1e9));
    redis('ACL', 'SETUSER', 'sl-noinfo', 'on', ">$upw", '~*', '+@all', '-info');
    END { eval { redis('ACL', 'DELUSER', 'sl-noinfo') } }
    ($h, $st, $kids) = serve("redis://sl-noinfo:$upw\@127.0.0.1:$port");
    is($st, $decided, 'INFO denied: every request decided');
    is(scalar(problems($h)), 0, 'INFO denied: no warning');
    is(scalar(log_lines($h, 'error_log', qr/store redis:\/\/\*\*\*\@127\.0\.0\.1:$port\/0: node 127\.0\.0\.1:$port refused INFO \(NOPERM\); prerequisites not checked/)),
        1, 'one debug line says INFO was refused');
    $h->stop;
}
