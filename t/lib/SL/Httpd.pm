package SL::Httpd;

# Further httpd instances for a test, beside the one Apache::Test runs: the
# same module, the same Redis and key prefix, the same SlidingLimit sections
# (the t/conf/sl.d files named), so that several servers share budgets as
# a farm behind a load balancer does.
#
#   my $h = SL::Httpd->start(conf => ['algorithms.conf'],
#                            faketime => '-37m');
#   (store => URL and extra => "more server directives" change the store)
#   http_get($h->url . '/alg/log/', ...);
#   $h->stop;    # also done when $h goes away or the test exits
#
# Everything lives under the staged t/ directory (the suite may run as
# nobody): t/tmp/httpd-NAME/ holds the config, the logs and the runtime
# files, and the pid file is t/tmp/NAME.pid, which t/run kills should a test
# die without stopping it. With faketime, libfaketime is preloaded into httpd
# itself (the faketime wrapper would fork, hiding httpd's pid): every call
# to the clock in httpd and in the module is shifted by the given offset.

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use File::Path qw(make_path);
use IO::Socket::INET;
use POSIX qw(WNOHANG);
use Time::HiRes qw(sleep time);

use Exporter qw(import);
our @EXPORT_OK = qw(burst_split);

my $LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
my %running;    # pid -> object, for the END block

sub _tdir { abs_path(dirname(__FILE__) . '/../..') }

sub _free_port {
    for (1 .. 100) {
        # Below the suite's ports (20000-31999) and Linux's ephemeral range.
        my $p = 10000 + int(rand(10000));
        my $s = IO::Socket::INET->new(
            LocalAddr => '127.0.0.1',
            LocalPort => $p,
            Proto     => 'tcp',
            ReuseAddr => 1,
            Listen    => 1
        );
        next unless $s;
        close $s;
        return $p;
    }
    die "SL::Httpd: no free port\n";
}

sub _httpd {
    if (eval { require Apache::Test; 1 }) {
        my $cfg = Apache::Test::config();
        my $h = $cfg->{vars}{httpd};
        return $h if $h && -x $h;
    }
    for (qw(/usr/sbin/apache2 /usr/sbin/httpd)) {
        return $_ if -x $_;
    }
    die "SL::Httpd: no httpd binary\n";
}

sub _mpm_settings {
    my ($mpm) = @_;
    return <<'EOT' if $mpm eq 'prefork';
StartServers 4
MinSpareServers 2
MaxSpareServers 8
MaxRequestWorkers 16
EOT
    return <<'EOT';
StartServers 2
ServerLimit 2
ThreadsPerChild 8
MaxRequestWorkers 16
MinSpareThreads 4
MaxSpareThreads 16
EOT
}

# start(conf => [files in t/conf/sl.d], faketime => '+37m', name => 'x',
#       store => 'cluster://127.0.0.1:7000' (default: the suite's Redis),
#       extra => "more configuration\n")
sub start {
    my ($class, %a) = @_;
    my $t    = _tdir();
    my $root = abs_path("$t/..");
    my $mpm  = $ENV{SL_TEST_MPM} || 'event';
    my $port = _free_port();
    my $name = $a{name} || "sl-httpd-$$-$port";
    my $dir  = "$t/tmp/httpd-$name";
    my $redis = $ENV{SL_TEST_REDIS_PORT} or die "SL_TEST_REDIS_PORT unset\n";
    make_path("$dir/run", "$dir/logs");

    open my $setup, '<', "$t/setup/httpd-$mpm.conf"
      or die "SL::Httpd: $t/setup/httpd-$mpm.conf: $!\n";
    my @load = grep {/^\s*LoadModule\s/} <$setup>;
    close $setup;

    my $includes = join '',
      map {"Include \"$t/conf/sl.d/$_\"\n"} @{ $a{conf} || [] };
    my $conf = "$dir/httpd.conf";
    open my $fh, '>', $conf or die "SL::Httpd: $conf: $!\n";
    print $fh <<"EOT";
# Written by t/lib/SL/Httpd.pm for one test; removed with the staged tree.
ServerRoot "$dir"
ServerName 127.0.0.1
Listen 127.0.0.1:$port
PidFile "$t/tmp/$name.pid"
DefaultRuntimeDir "$dir/run"
Mutex file:$dir/run default
ErrorLog "$dir/logs/error_log"
LogLevel warn
LogFormat "%h %>s %U sl=%{SLIDINGLIMIT_RESULT}e rem=%{SLIDINGLIMIT_REMAINING}e" slaccess
CustomLog "$dir/logs/access_log" slaccess
TypesConfig /etc/mime.types
KeepAlive On
MaxKeepAliveRequests 0
${\ join('', @load)}LoadModule slidinglimit_module "$root/.libs/mod_slidinglimit.so"
${\ _mpm_settings($mpm)}
DocumentRoot "$t/htdocs"
<Directory "$t/htdocs">
    Require all granted
</Directory>
DirectoryIndex index.html
# Tells this instance from any other server that took the port meanwhile.
Header always set X-SL-Httpd "$name"

RemoteIPHeader X-Forwarded-For
RemoteIPInternalProxy 127.0.0.1 ::1

SlidingLimitStore ${\ ($a{store} || "redis://127.0.0.1:$redis")}
# Generous: these servers test decisions, not timeouts, and a loaded
# machine (a parallel build, the other MPM's suite) must not turn a slow
# answer into a failed-open one.
SlidingLimitStoreTimeout 2s 2s
SlidingLimitKeyPrefix sltest
$includes${\ ($a{extra} // '')}
EOT
    close $fh;

    my $httpd = _httpd();
    my $pid = fork() // die "SL::Httpd: fork: $!\n";
    if (!$pid) {
        # Its own process group: prefork, stopping in the foreground, sends
        # SIGTERM to its whole group, which would otherwise be the test's.
        POSIX::setsid();
        if ($a{faketime}) {
            -r $LIBFAKETIME or POSIX::_exit(126);
            $ENV{LD_PRELOAD} = $LIBFAKETIME;
            $ENV{FAKETIME}   = $a{faketime};
        }
        open STDIN,  '<', '/dev/null';
        open STDOUT, '>', "$dir/logs/stdout";
        open STDERR, '>&', \*STDOUT;
        exec($httpd, '-d', $dir, '-f', $conf, '-DFOREGROUND')
          or POSIX::_exit(127);
    }
    my $self = bless {
        pid => $pid, owner => $$, port => $port, dir => $dir,
        name => $name, faketime => $a{faketime},
    }, $class;
    $running{$pid} = $self;

    my $deadline = time + 20;
    while (time < $deadline) {
        if (waitpid($pid, WNOHANG) == $pid) {
            delete $running{$pid};
            $self->{pid} = undef;
            die "SL::Httpd: httpd exited at start-up:\n" . $self->_log_tail;
        }
        return $self if $self->_answers && waitpid($pid, WNOHANG) == 0;
        sleep 0.1;
    }
    $self->stop;
    die "SL::Httpd: httpd did not answer on $port within 20 s:\n"
      . $self->_log_tail;
}

sub _answers {
    my ($self) = @_;
    my $s = IO::Socket::INET->new(
        PeerAddr => '127.0.0.1',
        PeerPort => $self->{port},
        Timeout  => 1
    ) or return 0;
    print $s "GET /sl-httpd-probe HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    local $/;
    my $head = <$s> // '';
    close $s;
    return $head =~ m{^HTTP/1\.\d \d{3}} && $head =~ m{^X-SL-Httpd: \Q$self->{name}\E\r?$}mi;
}

sub _log_tail {
    my ($self) = @_;
    my $out = '';
    for my $f ("$self->{dir}/logs/stdout", "$self->{dir}/logs/error_log") {
        open my $fh, '<', $f or next;
        my @l = <$fh>;
        $out .= "--- $f\n" . join('', @l > 20 ? @l[-20 .. -1] : @l);
    }
    return $out;
}

# Whether start(faketime => ...) can shift a clock here.
sub faketime_available { -r $LIBFAKETIME }

sub port { $_[0]{port} }
sub url  { "http://127.0.0.1:$_[0]{port}" }
sub dir  { $_[0]{dir} }
sub pid  { $_[0]{pid} }

sub error_log {
    my ($self) = @_;
    open my $fh, '<', "$self->{dir}/logs/error_log" or return '';
    local $/;
    return <$fh>;
}

# Stops httpd (TERM, then KILL after 10 s) and reaps it.
sub stop {
    my ($self) = @_;
    my $pid = $self->{pid} or return;
    return unless $self->{owner} == $$;
    kill 'TERM', $pid;
    my $deadline = time + 10;
    while (time < $deadline) {
        last if waitpid($pid, WNOHANG) == $pid;
        sleep 0.05;
    }
    if (kill 0, $pid) {
        kill 'KILL', $pid;
        waitpid($pid, 0);
    }
    delete $running{$pid};
    $self->{pid} = undef;
}

sub DESTROY { $_[0]->stop }

# burst_split([$url1, $url2], total => N, workers => W, headers => {..})
# W processes share N requests; worker i sends to url i mod the number of
# urls, on its own keep-alive connection, and every worker starts at once.
# Returns ({ status => count }, { url => { status => count } }).
sub burst_split {
    my ($urls, %a) = @_;
    my $total   = $a{total};
    my $workers = $a{workers} // 10;
    my $headers = $a{headers} // {};
    my $start   = time + 0.3;
    my @kids;
    for my $w (0 .. $workers - 1) {
        my $n = int($total / $workers) + ($w < $total % $workers ? 1 : 0);
        my $url = $urls->[ $w % @$urls ];
        pipe(my $r, my $wr) or die "pipe: $!";
        my $pid = fork() // die "fork: $!";
        if (!$pid) {
            close $r;
            require HTTP::Tiny;
            my $ua = HTTP::Tiny->new(timeout => 15, keep_alive => 1);
            my %count;
            my $d = $start - time;
            sleep $d if $d > 0;
            for (1 .. $n) {
                my $res = $ua->get($url, { headers => $headers });
                $count{ $res->{status} }++;
                if ($res->{status} == 599 && !$count{err}++) {
                    (my $e = $res->{content}) =~ s/[\s,=]+/ /g;
                    print STDERR "# burst_split: $url: $e\n";
                }
            }
            delete $count{err};
            print $wr join(',', map {"$_=$count{$_}"} keys %count), "\n";
            close $wr;
            POSIX::_exit(0);
        }
        close $wr;
        push @kids, [ $pid, $r, $url ];
    }
    my (%all, %per);
    for my $k (@kids) {
        my ($pid, $r, $url) = @$k;
        my $line = <$r> // '';
        chomp $line;
        for (split /,/, $line) {
            my ($s, $c) = split /=/;
            $all{$s} += $c;
            $per{$url}{$s} += $c;
        }
        waitpid($pid, 0);
    }
    return (\%all, \%per);
}

END {
    my $rc = $?;
    $_->stop for values %running;
    $? = $rc;
}

1;
