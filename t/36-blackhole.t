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

plan tests => 6;

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

my ($r, $t) = timed_get('sl_blackhole', '/f/closed/k', 'X-Forwarded-For' => fresh_ip());
ok t_cmp($r->{status}, 503, 'fail-closed: 503');
ok($t >= 0.09 && $t < 0.5, sprintf 'the first request waited the connect timeout (%.3f s; 100 ms configured)', $t);
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
