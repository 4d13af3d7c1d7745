# SPDX-License-Identifier: Apache-2.0
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
#   $h->graceful(store => URL);   # apachectl graceful with another store
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
use POSIX qw(WNOHANG);
use SL::Test ();
use Time::HiRes qw(sleep time);

my $LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
my %running;    # pid -> object, for the END block

sub _tdir { abs_path(dirname(__FILE__) . '/../..') }

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
    my ($mpm, $children) = @_;
    if ($mpm eq 'prefork') {
        return <<'EOT' unless $children;
StartServers 4
MinSpareServers 2
MaxSpareServers 8
MaxRequestWorkers 16
EOT
        return <<"EOT";
ServerLimit $children
StartServers $children
MinSpareServers 1
MaxSpareServers $children
MaxRequestWorkers $children
EOT
    }
    my $n = $children || 2;
    my $workers = 8 * $n;
    return <<"EOT";
StartServers $n
ServerLimit $n
ThreadsPerChild 8
MaxRequestWorkers $workers
MinSpareThreads 4
MaxSpareThreads $workers
EOT
}

# start(conf => [files in t/conf/sl.d], faketime => '+37m', name => 'x',
#       store => 'cluster://127.0.0.1:7000' (default: the suite's Redis),
#       children => 1 (default: 2 threaded, 4 to 8 under prefork),
#       extra => "more configuration\n")
sub start {
    my ($class, %a) = @_;
    my $t    = _tdir();
    my $root = abs_path("$t/..");
    my $mpm  = $ENV{SL_TEST_MPM} || 'event';
    # Below the suite's ports (20000-31999) and Linux's ephemeral range.
    my $port = SL::Test::free_port(10000, 10000);
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
# A crashed child leaves its core here too (t/run reports it).
CoreDumpDirectory "$dir"
LogLevel warn
LogFormat "%h %>s %U sl=%{SLIDINGLIMIT_RESULT}e rem=%{SLIDINGLIMIT_REMAINING}e" slaccess
CustomLog "$dir/logs/access_log" slaccess
TypesConfig /etc/mime.types
KeepAlive On
MaxKeepAliveRequests 0
# stop(): a request still held after this long ends with the child.
GracefulShutdownTimeout 3
${\ join('', @load)}LoadModule slidinglimit_module "$root/.libs/mod_slidinglimit.so"
${\ _mpm_settings($mpm, $a{children})}
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
    my $res = SL::Test::http_get({ timeout => 1 }, $self->url . '/sl-httpd-probe');
    return ($res->{headers}{'x-sl-httpd'} // '') eq $self->{name};
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

# A graceful restart (SIGUSR1) with another SlidingLimitStore, as an
# operator edits httpd.conf and runs "apachectl graceful"; returns once the
# new generation answers.
sub graceful {
    my ($self, %a) = @_;
    my $conf = "$self->{dir}/httpd.conf";
    open my $in, '<', $conf or die "SL::Httpd: $conf: $!\n";
    my $text = do { local $/; <$in> };
    close $in;
    $text =~ s/^SlidingLimitStore .*$/SlidingLimitStore $a{store}/m if $a{store};
    open my $out, '>', $conf or die "SL::Httpd: $conf: $!\n";
    print $out $text;
    close $out;
    my $resumed = sub { () = $self->error_log =~ /resuming normal operations/g };
    my $before = $resumed->();
    kill 'USR1', $self->{pid};
    my $deadline = time + 20;
    while (time < $deadline) {
        return $self if $resumed->() > $before && $self->_answers;
        sleep 0.1;
    }
    die "SL::Httpd: no graceful restart within 20 s:\n" . $self->_log_tail;
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
# A graceful stop (SIGWINCH), then SIGTERM, then SIGKILL. Not SIGTERM
# first: on it, each event child's main thread closes its workers' sockets
# while those threads may be destroying the pools the sockets live in
# (httpd's close_worker_sockets), and the child sometimes dies of a
# SIGSEGV in apr_os_sock_get: a crash of httpd's that the module's tests
# would count as the module's (t/60). A graceful stop still runs every
# child's exit, which is what the module has there.
sub stop {
    my ($self) = @_;
    my $pid = $self->{pid} or return;
    return unless $self->{owner} == $$;
    for my $sig ('WINCH', 'TERM') {
        kill $sig, $pid;
        my $deadline = time + ($sig eq 'WINCH' ? 10 : 5);
        while (time < $deadline) {
            last if waitpid($pid, WNOHANG) == $pid;
            sleep 0.05;
        }
        last unless kill 0, $pid;
    }
    if (kill 0, $pid) {
        kill 'KILL', $pid;
        waitpid($pid, 0);
    }
    delete $running{$pid};
    $self->{pid} = undef;
}

sub DESTROY { $_[0]->stop }

END {
    my $rc = $?;
    $_->stop for values %running;
    $? = $rc;
}

1;
