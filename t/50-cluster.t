# SPDX-License-Identifier: Apache-2.0
# SlidingLimitStore cluster:// against the suite's six-node Redis Cluster:
# the slot map, the budget exact across servers and across the three
# masters under a concurrent burst, and an ACL user authenticated on every
# node whose password never reaches a log.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Httpd;
use SL::Cluster;

if (my $why = cluster_skip()) { plan skip_all => $why }
plan tests => 17 + 3 * 3;

ok(wait_cluster(30), 'cluster up: three masters, every node ok');
my @m = masters();
is(scalar @m, 3, "three masters (@m)");

# An identity whose slot no seed serves: the module learns the map.
my $ip = identity_on($m[2], 'cl-log');
my $key_log = sl_key(ip => $ip, policy => 'cl-log');
my @h = map { SL::Httpd->start(conf => ['cluster.conf'],
        store => 'cluster://' . seeds(@m[0, 1])) } 1 .. 2;
my @st = map { get($h[$_ % 2], '/cluster/', $ip)->{status} } 0 .. 5;
is("@st", '200 200 200 200 429 429', 'limit of 4 exact across two servers on the cluster');
my $key_counter = sl_key(ip => $ip, policy => 'cl-counter', alg => 'c');
is(cnode($m[2], 'ZCARD', $key_log), 4, 'the log lives on the owning master');
ok(defined cnode($m[2], 'GET', $key_counter), '... with the counter (same hash tag)');
ok(cnode($m[2], 'PTTL', $key_log) > 0, 'keys carry a TTL');
my $res = get($h[0], '/cluster/', $ip);
is($res->{status}, 429, 'still refused');
like($res->{headers}{'ratelimit-policy'} // '', qr/"cl-log";q=4;w=600, "cl-counter";q=6;w=600/,
    'both policies reported');
is(get($h[1], '/cluster/', fresh_ip())->{status}, 200, 'another client has its own budget');

# Exactness on every master: 30 concurrent requests per identity, limit 10,
# from two servers (four workers each: the threads of a child share the
# client, and its pipeline, per node).
for my $i (0 .. 2) {
    my $who = identity_on($m[$i], 'cl-burst');
    my $count = burst([ map { $_->url . '/cl-burst/' } @h[0, 1] ], total => 32,
        workers => 8, headers => { 'X-Forwarded-For' => $who });
    my $sum = join ' ', map {"$_=$count->{$_}"} sort keys %$count;
    t_debug("burst on master $m[$i]: $sum");
    is($sum, '200=10 429=22', "master $m[$i]: exactly 10 of 32 concurrent requests admitted");
}
# The same with SlidingLimitAllotment auto, a limit of 200 and 600
# requests on each master: never more than 200 admitted, every admission
# counted by the owning master (the unused rest of a grant too, until it
# goes back), and grants in use.
for my $i (0 .. 2) {
    my $who   = identity_on($m[$i], 'cl-allot');
    my $count = burst([ map { $_->url . '/cl-allot/' } @h[0, 1] ], total => 600,
        workers => 8, headers => { 'X-Forwarded-For' => $who });
    my $ok    = $count->{200} // 0;
    my $key   = sl_key(ip => $who, policy => 'cl-allot');
    my $units = log_units({ port => $m[$i] }, $key);
    t_debug("allotments on master $m[$i]: " . join(' ', map {"$_=$count->{$_}"} sort keys %$count)
          . ", $units units counted");
    ok($ok > 0 && $ok <= 200, "master $m[$i], auto: $ok of 600 admitted, at most 200");
    ok($units >= $ok && $units <= 200, "master $m[$i], auto: the master counts $units units for $ok admissions");
    ok(scalar(grep { allotment($_) } @{ cnode($m[$i], 'ZRANGE', $key, 0, -1) }) > 0,
        "master $m[$i], auto: its log holds allotments");
}
my $errs = 0;
for my $h (@h) {
    open my $fh, '<', "$h->{dir}/logs/error_log" or next;
    $errs += grep { /slidinglimit.*(failed|error)/i } <$fh>;
}
is($errs, 0, 'no store errors logged while learning the map');
$_->stop for @h;

# An ACL user on every node (ACLs are per node); the default user may no
# longer run the script, so only a client that authenticated as the user
# on the node it asks gets decisions. ACL users came with Redis 6.
SKIP: {
    skip 'ACL users need Redis 6; this one is ' . redis_version({ port => $m[0] }), 4
      unless redis_at_least(6, 0, { port => $m[0] });
    my $pw = 'clpw' . int(rand(1e9)) . 'x';
    my @acl = ('on', ">$pw", 'resetkeys', '~*', '-@all',
        map {"+$_"} qw(evalsha script|load cluster|slots asking ping del pexpire
          set time zadd zcard zrange get zremrangebyscore));
    my @ports = cluster_ports();
    END {
        for my $p (cluster_ports()) {
            eval { cnode($p, 'ACL', 'SETUSER', 'default', '+@all') };
            eval { cnode($p, 'ACL', 'DELUSER', 'slapp') };
        }
    }
    cnode($_, 'ACL', 'SETUSER', 'slapp', @acl) for @ports;
    cnode($_, 'ACL', 'SETUSER', 'default', '-evalsha') for @ports;

    my $debug = "LogLevel slidinglimit:debug\n";
    my $good = SL::Httpd->start(conf => ['cluster.conf'], extra => $debug,
        store => "cluster://slapp:$pw\@" . seeds(@m));
    my $bad = SL::Httpd->start(conf => ['cluster.conf'], extra => $debug,
        store => "cluster://slapp:wrong$pw\@" . seeds(@m));
    my $none = SL::Httpd->start(conf => ['cluster.conf'], extra => $debug,
        store => 'cluster://' . seeds(@m));
    my @ok = map { get($good, '/cl-ha/', identity_on($_, 'cl-ha'))->{headers}{'x-sl-result'} // '' } @m;
    is("@ok", 'allowed allowed allowed', 'AUTH as the ACL user on every master');
    my @refused = map { get($bad, '/cl-ha/', identity_on($_, 'cl-ha'))->{status} } @m;
    is("@refused", '503 503 503', 'a wrong password: the fail mode');
    my @noauth = map { get($none, '/cl-ha/', identity_on($_, 'cl-ha'))->{status} } @m;
    is("@noauth", '503 503 503', 'no credentials: the default user may not run the script');
    $_->stop for $good, $bad, $none;
    my $seen = 0;
    for my $h ($good, $bad, $none) {
        for my $f (glob "$h->{dir}/logs/*") {
            open my $fh, '<', $f or next;
            local $/;
            my $text = <$fh> // '';
            $seen++ if index($text, $pw) >= 0;
        }
    }
    is($seen, 0, 'the password appears in no log (error_log, access_log, stdout)');
}

sub get {
    my ($h, $path, $ip) = @_;
    return http_get($h->url . $path, 'X-Forwarded-For' => $ip);
}
