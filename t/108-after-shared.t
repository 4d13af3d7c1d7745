# SPDX-License-Identifier: Apache-2.0
# cost=after: across servers and in flight:
#  - two httpd servers sharing one Redis: a response of the first is
#    charged to the budget the second decides on;
#  - requests in flight together (held at a slow back end until the test
#    releases them, on servers of their own with enough workers, Redis and
#    shm): each admitted one found room and holds its unit, so a limit of 3
#    admits 3 held requests and refuses the next ones, and the 3 charges
#    after them (X-Cost: 2, one unit more each) leave 6 units: concurrent
#    requests overdraw by at most what the admitted ones cost beyond their
#    unit;
#  - a proxied response (mod_proxy to the suite's server, whose back end
#    sets the header): charged at the proxy, never seen by the client;
#  - a charge to a store that does not answer (the fault Redis hung while
#    the request is held): the request is served, the charge is counted as
#    failed on the status page and logged.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Time::HiRes qw(sleep time);
use HTTP::Tiny;
use SL::Test;
use SL::Fault;
use SL::Httpd;
use SL::After;

my $mods  = '/usr/lib/apache2/modules';
my $proxy = -e "$mods/mod_proxy.so" && -e "$mods/mod_proxy_http.so";
plan tests => 1 + 2 * 4 + 3 + 3;

my $tmp = Apache::Test::vars('serverroot') . '/tmp';
mkdir $tmp;

# Starts a request to $url that waits at wait.cgi; returns [pid, pipe].
# Its status is reported once a second request on the same kept-alive
# connection has been answered: httpd charges the first (log_transaction)
# before it reads the second, so a look after finish() sees the charge.
sub held {
    my ($base, $path, $ip) = @_;
    pipe(my $rd, my $wr) or die "pipe: $!";
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        close $rd;
        my $ua = HTTP::Tiny->new(keep_alive => 1, timeout => 30);
        my $r  = $ua->get($base . $path, { headers => { 'X-Forwarded-For' => $ip } });
        $ua->get("$base/af-status?path=/&ip=$ip");
        print {$wr} "$r->{status}\n";
        close $wr;
        POSIX::_exit(0);
    }
    close $wr;
    return [ $pid, $rd ];
}

sub finish {
    my ($k) = @_;
    chomp(my $s = readline($k->[1]) // '-');
    waitpid($k->[0], 0);
    return $s;
}

sub release {
    my ($token) = @_;
    open my $fh, '>', "$tmp/af-release-$token" or die $!;
    close $fh;
}

my $second = SL::Httpd->start(conf => ['after.conf'], name => 'after-second');
my $shm    = SL::Httpd->start(conf => ['after.conf'], name => 'after-shm', store => 'shm');

# One budget over two servers.
{
    my $ip = fresh_ip();
    af_get({}, '/af/bytes-log/1000.txt', 'X-Forwarded-For' => $ip);
    af_used({}, '/af/bytes-log/1000.txt', $ip, 'af-bytes-log');    # the charge is done
    my $r = http_get($second->url . '/af/bytes-log/100.txt', 'X-Forwarded-For' => $ip);
    ok t_cmp($r->{headers}{'x-ratelimit-remaining'}, 89,
        'the second server sees the first one\'s charge (100 - 10 - 1 left)');
}

for my $h ($second, $shm) {
    my $store = $h == $shm ? 'shm' : 'redis';
    my $o     = { base => $h->url };
    my $ip    = fresh_ip();
    my $token = $store . int(rand(1e9));
    my @kids  = map { held($h->url, "/af/wait.cgi?$token-2", $ip) } 1 .. 3;
    # Bounded: the three are admitted, whatever the machine's speed.
    wait_until(sub { af_used($o, '/af/wait.cgi', $ip, 'af-wait') == 3 }, 15);
    ok t_cmp(af_used($o, '/af/wait.cgi', $ip, 'af-wait'), 3, "$store: 3 requests held in flight hold a unit each");
    my @no = map { http_get($h->url . "/af/wait.cgi?$token-2", 'X-Forwarded-For' => $ip)->{status} } 1 .. 2;
    ok t_cmp("@no", '429 429', "$store: ... the next ones are refused while they run");
    release($token);
    my @ok = map { finish($_) } @kids;
    ok t_cmp("@ok", '200 200 200', "$store: ... the held ones are answered once released");
    if ($store eq 'redis') {
        my $key = sl_key(ip => $ip, policy => 'af-wait');
        # Each of weight 1: six members, no total (lua/sl_check.lua).
        ok t_cmp(redis('ZCARD', $key), 6, 'redis: the log holds 6 units: 3 admissions, 3 charges');
    }
    else {
        my $r = af_get($o, "/af/wait.cgi?$token-1", 'X-Forwarded-For' => $ip);
        ok t_cmp($r->{headers}{'retry-after'} // -1, 86400, 'shm: overdrawn: refused for the day the 6 units take to leave');
    }
}

# mod_proxy: the header comes from the back end's response.
SKIP: {
    skip 'no mod_proxy_http', 3 unless $proxy;
    my $px = SL::Httpd->start(conf => ['after.conf'], name => 'after-proxy', extra => <<"EOT");
LoadModule proxy_module $mods/mod_proxy.so
LoadModule proxy_http_module $mods/mod_proxy_http.so
<Location /px/>
    ProxyPass ${\ server_url()}/af/backend/
    SlidingLimit 100 1d name=af-px cost=after:header:X-Cost
</Location>
EOT
    my $o  = { base => $px->url };
    my $ip = fresh_ip();
    my $r  = af_get($o, '/px/cost.cgi?7', 'X-Forwarded-For' => $ip);
    ok t_cmp("$r->{status} $r->{content}", "200 body\n", 'proxied: the back end answers through the proxy');
    ok t_cmp($r->{headers}{'x-cost'} // 'none', 'none', 'proxied: the client never sees X-Cost');
    ok t_cmp(af_used($o, '/px/cost.cgi', $ip, 'af-px'), 7, 'proxied: X-Cost: 7 is charged at the proxy');
    $px->stop;
}

# A store that does not answer when the charge comes.
{
    my $before = () = error_log_lines(qr/units after the response not charged/);
    my $failed = sub {
        my $m = http_get('/af-status')->{content} // '';
        return $m =~ /^slidinglimit_charges_total\{outcome="failed"\} (\d+)$/m ? $1 : -1;
    };
    my $f0    = $failed->();
    my $ip    = fresh_ip();
    my $token = 'down' . int(rand(1e9));
    my $k = held(server_url('sl_fault'), "/af/wait.cgi?$token-3", $ip);
    wait_until(sub { af_used({ vhost => 'sl_fault' }, '/af/wait.cgi', $ip, 'af-wait') == 1 }, 15);
    fault_stop();
    release($token);
    my $st = finish($k);
    fault_start();
    ok t_cmp($st, 200, 'the store hangs before the charge: the request is served');
    wait_until(sub { $failed->() > $f0 }, 10);
    ok t_cmp($failed->() - $f0, 1, '... the charge is counted as failed');
    my $after = () = error_log_lines(qr/mod_slidinglimit: 2 units after the response not charged \(store redis:/);
    ok($after >= 1, '... and logged');
}
