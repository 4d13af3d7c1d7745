# SPDX-License-Identifier: Apache-2.0
package SL::Test;

# Helpers for the suite, one of each: a small Redis client (RESP over a
# socket, so the tests need nothing but core Perl), the store key a request
# maps to, unique client addresses, the request helper (http_get), the port
# picker (free_port), and the fork-and-collect loop (workers) under
# concurrent bursts and load.

use strict;
use warnings;

use Cwd ();
use Digest::SHA qw(sha1);
use File::Basename ();
use Exporter qw(import);
use Fcntl qw(O_RDWR O_CREAT LOCK_EX);
use HTTP::Tiny;
use IO::Socket::INET;
use MIME::Base64 qw(encode_base64);
use Time::HiRes qw(sleep time);

our @EXPORT = qw(redis redis_connect sl_identity sl_policy_named sl_key fresh_ip
  burst workers load server_url http_get wait_until free_port script_calls
  redis_version redis_at_least log_units allotment);

sub redis_port { $ENV{SL_TEST_REDIS_PORT} or die "SL_TEST_REDIS_PORT unset" }

sub _read_reply {
    my ($sock) = @_;
    my $line = <$sock>;
    die "redis: connection closed" unless defined $line;
    $line =~ s/\r\n\z//;
    my ($type, $rest) = (substr($line, 0, 1), substr($line, 1));
    return $rest if $type eq '+';
    return $rest + 0 if $type eq ':';
    die "redis error: $rest\n" if $type eq '-';
    if ($type eq '$') {
        return undef if $rest < 0;
        my $buf = '';
        while (length($buf) < $rest + 2) {
            my $n = read($sock, $buf, $rest + 2 - length($buf), length($buf));
            die "redis: short read" unless $n;
        }
        return substr($buf, 0, $rest);
    }
    if ($type eq '*') {
        return undef if $rest < 0;
        return [ map { _read_reply($sock) } 1 .. $rest ];
    }
    die "redis: bad reply '$line'";
}

# redis_connect(port => P, password => PW) -> a connection to a Redis
# server (default: the suite's), to call as $c->(qw(ZCARD key)) for each
# reply in turn; dies on an error reply. One connection for many calls
# keeps a sequence of calls as close together as the server allows.
sub redis_connect {
    my %a    = @_;
    my $port = $a{port} // redis_port();
    my $sock = IO::Socket::INET->new(
        PeerAddr => '127.0.0.1',
        PeerPort => $port,
        Timeout  => 5
    ) or die "redis: cannot connect to $port: $!";
    binmode $sock;
    my $call = sub {
        my @args = @_;
        my $cmd = '*' . scalar(@args) . "\r\n";
        $cmd .= '$' . length($_) . "\r\n$_\r\n" for @args;
        print $sock $cmd;
        return _read_reply($sock);
    };
    $call->('AUTH', $a{password}) if defined $a{password};
    return $call;
}

# The scripts a Redis ran, from INFO commandstats: EVALSHA and EVAL calls
# that did not fail (the first EVALSHA on a fresh Redis fails with NOSCRIPT
# and the script is sent again: still one decision). script_calls({ port =>
# P }) for another server. Before Redis 6.2 commandstats has no
# failed_calls, and a NOSCRIPT would count as a call: it dies there.
sub script_calls {
    my $info = redis(@_, 'INFO', 'commandstats');
    my $n    = 0;
    die "script_calls: INFO commandstats has no failed_calls before Redis 6.2\n"
      if $info =~ /^cmdstat_eval/m && $info !~ /failed_calls=/;
    while ($info =~ /^cmdstat_(?:evalsha|eval):calls=(\d+),.*?rejected_calls=(\d+),failed_calls=(\d+)/mg) {
        $n += $1 - $2 - $3;
    }
    return $n;
}

# redis_version() -> "6.2.16" (INFO server's redis_version; Valkey reports
# the Redis version it is compatible with); redis_version({ port => P }).
sub redis_version {
    my $info = redis(@_, 'INFO', 'server');
    return $info =~ /^redis_version:([0-9.]+)/m ? $1 : '0';
}

# redis_at_least(6, 2) -> true on Redis 6.2 or later: what a test needs of
# a newer server is skipped, with the reason, on an older one
# (tools/compat/run.sh runs the suite against 3.2 and 5.0 too).
sub redis_at_least {
    my ($major, $minor, @to) = @_;
    my ($ma, $mi) = split /\./, redis_version(@to);
    return $ma > $major || ($ma == $major && $mi >= ($minor // 0));
}

# redis(qw(ZCARD key)) -> the reply, on a connection of its own; dies on an
# error reply. redis({ port => P }, ...) talks to another server.
sub redis {
    my @args = @_;
    my %to = @args && ref $args[0] eq 'HASH' ? %{ shift @args } : ();
    return redis_connect(%to)->(@args);
}

# The units a log key's window holds now ({ port => ... } first for
# another Redis): its total when it keeps one, else each member's units
# (a request's member and an allotment's begin with them, "N*").
sub log_units {
    my @args = @_;
    my $to = @args && ref $args[0] eq 'HASH' ? shift @args : {};
    my ($key) = @args;
    my $first = redis($to, 'ZRANGE', $key, 0, 0, 'WITHSCORES');
    return -$first->[1] if @$first && $first->[0] =~ /^#\d+$/ && $first->[1] < 0;
    my $units = 0;
    $units += /^(\d+)\*/ ? $1 : 1 for @{ redis($to, 'ZRANGE', $key, 0, -1) };
    return $units;
}

# Whether a log member is an allotment (SlidingLimitAllotment): its units,
# 'a' (or 'r', what is left of it after a give-back), the 12-byte grant id
# and its score. A request's own member is its cost, '*' and 12 bytes that
# may begin with any byte, 'a' and 'r' too.
sub allotment { $_[0] =~ /^\d+\*[ar].{12}\@\d+\z/s }

sub _b64 { my $s = encode_base64($_[0], ''); return $s }

# The hashed identity of a key value, as the module computes it.
sub sl_identity {
    my ($source, $value) = @_;
    return _b64(substr(sha1("$source\0$value"), 0, 12));
}

# The id of a named policy: 96 bits of SHA-1 (keyed under a secret in the
# store key: SL::Keys::keyed_policy).
sub sl_policy_named { _b64(substr(sha1("n\n$_[0]"), 0, 12)) }

# The store key of a budget: sl_key(ip => '10.1.2.3', policy => 'basic',
# alg => 'l'); identity => a hashed identity (sl_identity) instead of ip,
# policy_id => an unnamed line's id (SL::Keys::policy_unnamed) instead of
# policy, prefix => another key prefix.
sub sl_key {
    my %a      = @_;
    my $prefix = $a{prefix} // 'sltest';
    my $ident  = $a{identity} // sl_identity($a{source} // 'ip', $a{ip});
    my $pol    = $a{policy_id} // sl_policy_named($a{policy});
    return "$prefix:{$ident}$pol." . ($a{alg} // 'l');
}

# wait_until(sub { condition }, $seconds) -> 1 once the condition holds
# (polled every 50 ms), 0 if it still does not after $seconds.
sub wait_until {
    my ($cond, $timeout) = @_;
    my $end = time + $timeout;
    while (time < $end) {
        return 1 if $cond->();
        sleep 0.05;
    }
    return $cond->() ? 1 : 0;
}

my $ip_counter = 0;

# A client address no other test of the run has used: numbered from one
# counter that every test process shares (a file in the staged tree, under
# flock), forked workers included. Addresses drawn at random could meet:
# two test files' budgets of the same policy would then be one, and a
# limit's exact sequence would come out wrong. The number's lowest digit (base
# 250) is the second octet, so two fresh addresses never share a /16.
# Without the staged tree (a test run by hand), the process id and chance.
sub fresh_ip {
    my $n;
    if (my $stage = $ENV{SL_TEST_STAGE}) {
        my $path = "$stage/t/fresh-ip.count";
        sysopen(my $fh, $path, O_RDWR | O_CREAT, 0644) or die "$path: $!";
        flock($fh, LOCK_EX) or die "$path: $!";
        $n = (<$fh> // 0) + 1;
        seek($fh, 0, 0);
        truncate($fh, 0);
        syswrite($fh, "$n\n");
        close $fh;
    }
    else {
        $ip_counter++;
        $n = ($$ + $ip_counter) % 250 + 250 * int(rand(62500));
    }
    return sprintf('10.%d.%d.%d', $n % 250 + 1, int($n / 250) % 250 + 1,
        int($n / 62500) % 250 + 1);
}

# server_url() -> the main server's base URL; server_url('sl_fault') -> that
# virtual host's (t/conf/extra.conf.in).
sub server_url {
    my ($vhost) = @_;
    require Apache::Test;
    my $cfg = Apache::Test::config();
    return 'http://' . $cfg->{vars}{servername} . ':' . $cfg->{vars}{port}
      unless $vhost;
    require Apache::TestRequest;
    my $old = Apache::TestRequest::module($vhost);
    my $hp  = Apache::TestRequest::hostport();
    Apache::TestRequest::module($old);
    return "http://$hp";
}

# http_get([{ method => 'HEAD', vhost => 'sl_fault', timeout => 60 },]
#          $where, %headers) -> HTTP::Tiny response (headers lower-cased)
# The suite's one request helper: $where is a path on the main server (or
# on the virtual host named), or a whole URL; GET unless a method is named;
# 10 s unless a timeout is.
sub http_get {
    local $_;
    my $o = ref $_[0] eq 'HASH' ? shift : {};
    my ($where, %h) = @_;
    my $url = $where =~ m{^https?://} ? $where : server_url($o->{vhost}) . $where;
    return HTTP::Tiny->new(timeout => $o->{timeout} // 10, max_redirect => 0)
      ->request($o->{method} // 'GET', $url, { headers => \%h });
}

# free_port($low, $span, $count) -> the first of $count consecutive
# loopback ports in $low .. $low + $span - 1 that nothing listens on
# (tools/free-port.sh, which the shell scripts use too).
sub free_port {
    my ($low, $span, $count) = @_;
    my $lib = Cwd::abs_path(File::Basename::dirname(__FILE__) . '/../../../tools/free-port.sh');
    my $p = `bash -c '. "\$0"; free_port "\$@"' '$lib' $low $span ${\ ($count // 1)}`;
    chomp $p;
    die "no free port in $low.." . ($low + $span - 1) . "\n" unless $p =~ /^\d+$/;
    return $p;
}

# workers(W, sub { my ($w) = @_; ...; return \%counts }) -> a collector:
# forks W processes, which all start the sub (worker number 0 .. W-1) once
# every one is forked, and send back their counts; the collector waits for
# them all and returns the counts added up (a key that begins with "max"
# keeps the largest value instead, one that begins with "min" the
# smallest). The suite's one fork-and-collect loop.
sub workers {
    my ($n, $body) = @_;
    my @pipes;
    # Closed once all are forked: then it reads as end of file.
    pipe(my $go_r, my $go_w) or die "pipe: $!";
    for my $w (0 .. $n - 1) {
        pipe(my $r, my $wr) or die "pipe: $!";
        my $pid = fork() // die "fork: $!";
        if (!$pid) {
            close $r;
            close $go_w;
            my $go = <$go_r>;
            my $count = $body->($w);
            print $wr join(',', map {"$_=$count->{$_}"} sort keys %$count), "\n";
            close $wr;
            require POSIX;
            POSIX::_exit(0);
        }
        close $wr;
        push @pipes, [ $pid, $r ];
    }
    close $go_w;
    close $go_r;
    return sub {
        my %total;
        for my $p (@pipes) {
            my ($pid, $r) = @$p;
            my $line = <$r> // '';
            chomp $line;
            for (split /,/, $line) {
                my ($k, $c) = split /=/;
                if ($k =~ /^max/) {
                    $total{$k} = $c if !defined $total{$k} || $c > $total{$k};
                }
                elsif ($k =~ /^min/) {
                    $total{$k} = $c if !defined $total{$k} || $c < $total{$k};
                }
                else {
                    $total{$k} += $c;
                }
            }
            waitpid($pid, 0);
        }
        return \%total;
    };
}

# burst($url, total => N, workers => W, headers => {..}) -> { status => count }
# W processes share N requests, each on its own keep-alive connection, and
# start at once. With a list of URLs, [ $url1, $url2, ... ], worker i sends
# to URL i mod their number, and in list context the counts per URL follow:
# ({ status => count }, { url => { status => count } }).
sub burst {
    my ($urls, %a) = @_;
    $urls = [$urls] unless ref $urls;
    my $total   = $a{total};
    my $workers = $a{workers} // 10;
    my $headers = $a{headers} // {};
    my $got = workers($workers, sub {
        my ($w) = @_;
        my $n = int($total / $workers) + ($w < $total % $workers ? 1 : 0);
        my $u = $w % @$urls;
        my $ua = HTTP::Tiny->new(timeout => 15, keep_alive => 1);
        my %count;
        for (1 .. $n) {
            my $res = $ua->get($urls->[$u], { headers => $headers });
            $count{"$u $res->{status}"}++;
            if ($res->{status} == 599 && !$count{"$u err"}++) {
                (my $e = $res->{content}) =~ s/[\s,=]+/ /g;
                print STDERR "# burst: $urls->[$u]: $e\n";
            }
        }
        delete $count{"$u err"};
        return \%count;
    })->();
    my (%all, %per);
    for my $k (keys %$got) {
        my ($u, $status) = split / /, $k;
        $all{$status} += $got->{$k};
        $per{ $urls->[$u] }{$status} += $got->{$k};
    }
    return wantarray ? (\%all, \%per) : \%all;
}

# load($url, workers => W, seconds => S, keep_alive => 0|1) -> a collector
# of { "status:X-SL-Result" => count, max => slowest seconds }: W processes
# request $url, each request from a fresh client address, while the caller
# does something to the server or the store meanwhile; calling the
# collector stops them (each finishes its request in flight) and adds up
# their counts. S bounds the load should the caller never call it.
sub load {
    my ($url, %a) = @_;
    my $secs = $a{seconds};
    my $keep = $a{keep_alive} // 1;
    # Closed by the caller to stop the load: then it reads as end of file.
    pipe(my $stop_r, my $stop_w) or die "pipe: $!";
    my $collect = workers($a{workers}, sub {
        close $stop_w;
        my $ua = HTTP::Tiny->new(timeout => 10, keep_alive => $keep);
        my %count;
        my $max = 0;
        my $end = time + $secs;
        my $bits = '';
        vec($bits, fileno($stop_r), 1) = 1;
        while (time < $end && !select(my $r = $bits, undef, undef, 0)) {
            my $t0  = time;
            my $res = $ua->get($url, { headers => { 'X-Forwarded-For' => fresh_ip() } });
            my $t   = time - $t0;
            $max = $t if $t > $max;
            $count{"$res->{status}:" . ($res->{headers}{'x-sl-result'} // '')}++;
        }
        $count{max} = $max;
        return \%count;
    });
    close $stop_r;
    return sub {
        close $stop_w;
        return $collect->();
    };
}

1;
