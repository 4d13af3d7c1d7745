# A store address that never completes a connection (a listening socket
# whose backlog is full: the kernel drops further SYNs, as a firewall that
# drops packets would): the connect timeout bounds the wait.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use IO::Socket::INET;
use Socket qw(PF_INET SOCK_STREAM SOL_SOCKET SO_REUSEADDR sockaddr_in inet_aton);
use Time::HiRes qw(time);
use SL::Test;
use SL::Fault;

plan tests => 8;

my $port = $ENV{SL_TEST_BLACKHOLE_PORT} or die "SL_TEST_BLACKHOLE_PORT unset";
# listen(2) with a backlog of 0 (IO::Socket::INET would not pass a 0).
socket(my $listen, PF_INET, SOCK_STREAM, 0) or die "socket: $!";
setsockopt($listen, SOL_SOCKET, SO_REUSEADDR, 1);
bind($listen, sockaddr_in($port, inet_aton('127.0.0.1'))) or die "bind $port: $!";
listen($listen, 0) or die "listen: $!";
# Fill the accept queue; never accept.
my @fill;
for (1 .. 2) {
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
        Timeout => 0.2);
    push @fill, $s if $s;
}
my $t0 = time;
my $probe = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
    Timeout => 0.5);
my $probe_t = time - $t0;
ok(!$probe, sprintf 'the port is a black hole: a plain connect gave up after %.2f s', $probe_t);

# Concurrent requests while the breaker is still closed: each one connects
# on its own, and none may wait for another's connect (a pool that creates
# connections under its lock would make them queue: n x 100 ms).
my @pipes;
for (1 .. 8) {
    pipe(my $rd, my $wr) or die "pipe: $!";
    my $pid = fork() // die "fork: $!";
    if (!$pid) {
        close $rd;
        my ($res, $secs) = timed_get('sl_blackhole', '/f/nofb/c', 'X-Forwarded-For' => SL::Test::fresh_ip());
        print $wr "$res->{status} $secs\n";
        close $wr;
        require POSIX;
        POSIX::_exit(0);
    }
    close $wr;
    push @pipes, [ $pid, $rd ];
}
my (@cst, @ct);
for my $p (@pipes) {
    my $line = readline($p->[1]) // '0 99';
    my ($st, $secs) = split ' ', $line;
    push @cst, $st;
    push @ct, $secs;
    waitpid($p->[0], 0);
}
my ($cmax) = sort { $b <=> $a } @ct;
t_debug(sprintf 'concurrent latencies: %s', join ' ', map { sprintf '%.3f', $_ } sort { $a <=> $b } @ct);
ok t_cmp("@cst", join(' ', (200) x 8), '8 concurrent requests pass (fail-open)');
ok($cmax < 0.35, sprintf 'none waited for the others\' connects (slowest %.3f s; 100 ms connect timeout)', $cmax);

my ($r, $t) = timed_get('sl_blackhole', '/f/closed/k', 'X-Forwarded-For' => fresh_ip());
ok t_cmp($r->{status}, 503, 'fail-closed: 503');
# The breaker is open by now: wait for the next probe, which this request
# makes.
sleep 2.1;
($r, $t) = timed_get('sl_blackhole', '/f/closed/k', 'X-Forwarded-For' => fresh_ip());
ok($t >= 0.09 && $t < 0.5, sprintf 'a probe waits the connect timeout (%.3f s; 100 ms configured)', $t);
($r, $t) = timed_get('sl_blackhole', '/f/nofb/k', 'X-Forwarded-For' => fresh_ip());
ok t_cmp("$r->{status} $r->{headers}{'x-sl-result'}", '200 failed-open', 'fail-open passes');
my @t;
for (1 .. 10) {
    (undef, $t) = timed_get('sl_blackhole', '/f/nofb/k', 'X-Forwarded-For' => fresh_ip());
    push @t, $t;
}
my ($max) = sort { $b <=> $a } @t;
ok($max < 1, sprintf 'every request under 1 s (max %.3f s)', $max);
my $slow = grep { $_ >= 0.09 } @t;
ok($slow <= 4, "the breaker spares the others ($slow of 10 waited the connect timeout)");
close $_ for @fill;
close $listen;
