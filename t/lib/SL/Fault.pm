# SPDX-License-Identifier: Apache-2.0
package SL::Fault;

# Helpers for the failure tests (t/3*.t): the failure tests' own redis
# (started by t/run with a password, daemonized so that a test can stop and
# restart it), the circuit breaker's bound, and the error log.

use strict;
use warnings;

use Exporter qw(import);
use Time::HiRes qw(time sleep);
use IO::Socket::INET;
use Socket qw(PF_INET SOCK_STREAM SOL_SOCKET SO_REUSEADDR sockaddr_in inet_aton);
use SL::Test qw(wait_until);

our @EXPORT = qw(fault_blackhole fault_redis fault_pid fault_stop fault_start fault_hang
  fault_resume error_log_lines fault_port store_display breaker_calls_max);

sub fault_port { $ENV{SL_TEST_FAULT_REDIS_PORT} or die "SL_TEST_FAULT_REDIS_PORT unset" }

# fault_redis(qw(CLIENT LIST)): the reply, after AUTH; dies when it is down.
sub fault_redis {
    return SL::Test::redis_connect(port => fault_port(),
        password => $ENV{SL_TEST_FAULT_REDIS_PASSWORD})->(@_);
}

sub fault_pid {
    my $f = $ENV{SL_TEST_FAULT_REDIS_CONF} =~ s{redis\.conf$}{redis.pid}r;
    open my $fh, '<', $f or return undef;
    my $pid = <$fh>;
    chomp $pid if defined $pid;
    return $pid;
}

sub _up { my $ok = eval { fault_redis('PING') eq 'PONG' }; return $ok }

# SIGTERM, and wait until the process is gone (its port closed).
sub fault_stop {
    my $pid = fault_pid() or die "no fault redis pid";
    kill 'CONT', $pid;
    kill 'TERM', $pid;
    wait_until(sub { !kill(0, $pid) }, 30) or die "fault redis $pid did not stop";
}

sub fault_start {
    system('redis-server', $ENV{SL_TEST_FAULT_REDIS_CONF}) == 0
      or die "redis-server: $?";
    wait_until(\&_up, 30) or die "fault redis did not come back";
}

sub fault_hang   { kill 'STOP', fault_pid() }
sub fault_resume { kill 'CONT', fault_pid() }

# The most store calls that $secs of sequential requests to a failing store
# can make: the first failure opens the breaker, then one probe per backoff
# interval, which starts at 100 ms and doubles up to 2 s after each failed
# probe (src/sl_breaker.h). Counted from the status page, this tells the
# requests the breaker spared from those that waited, on any host speed.
sub breaker_calls_max {
    my ($secs) = @_;
    my ($calls, $at, $backoff) = (1, 0, 0.1);
    while (($at += $backoff) <= $secs) {
        $calls++;
        $backoff = $backoff * 2 > 2 ? 2 : $backoff * 2;
    }
    return $calls;
}

# The store as the module names it in its log lines (no password).
sub store_display { sprintf 'redis://***@127.0.0.1:%d/0', fault_port() }

# The error log's lines matching a regex (the suite's t/logs/error_log).
sub error_log_lines {
    my ($re) = @_;
    require Apache::Test;
    my $log = Apache::Test::vars('t_logs') . '/error_log';
    open my $fh, '<', $log or return ();
    return grep { /$re/ } <$fh>;
}

# A store address that never completes a connection: a socket listening on
# $port of 127.0.0.1 with a backlog of 0 (IO::Socket::INET would not pass
# a 0), its accept queue filled and never accepted, so the kernel drops
# further SYNs as a firewall that drops packets would. Returns what must
# stay open for as long as the port is to stay a black hole.
sub fault_blackhole {
    my ($port) = @_;
    socket(my $listen, PF_INET, SOCK_STREAM, 0) or die "socket: $!";
    setsockopt($listen, SOL_SOCKET, SO_REUSEADDR, 1);
    bind($listen, sockaddr_in($port, inet_aton('127.0.0.1'))) or die "bind $port: $!";
    listen($listen, 0) or die "listen: $!";
    my @held = ($listen);
    for (1 .. 2) {
        my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
            Timeout => 0.2);
        push @held, $s if $s;
    }
    return \@held;
}

1;
