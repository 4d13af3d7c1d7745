# SPDX-License-Identifier: Apache-2.0
# Inspect and reset one client through the status handler: GET
# ?path=URL&ip=ADDR shows each limit's state (used, remaining, reset, a
# running block, the store key), read without a write; POST resets it on
# the store and in the deny cache every child reads. Under the Redis store
# and the shm store, each on an httpd of its own (SL::Httpd, several
# children under prefork):
#  - an exhausted client is shown as such, with the key the request used;
#    another client's budget is its own;
#  - (Redis) the refusal is answered from the deny cache by every child,
#    without a store call; after the reset every child admits the client;
#  - a block (block=) is shown and cleared;
#  - a client named by a header (GCRA) is found by header:NAME=VALUE;
#  - bad queries get 400 with a reason, a client that Require refuses 403
#    (GET and POST), a store that does not answer 503.
# Runs under each MPM: the reset reaches every child of prefork and every
# thread of the threaded MPMs.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Cwd qw(abs_path);
use File::Basename qw(dirname);
use HTTP::Tiny;
use IO::Socket::INET;
use JSON::PP qw(decode_json);
use Time::HiRes qw(sleep time);
use SL::Test;
use SL::Algo;
use SL::Httpd;

plan tests => 2 * 22 + 16 + 3 + 3 + 6;

my $mpm = $ENV{SL_TEST_MPM} || 'event';

# The status handler's answer to a query: (status, decoded JSON or undef).
sub ask {
    my ($h, $method, $query, %hdr) = @_;
    # What a reset needs (t/89-reset-forged.t shows it refused without).
    $hdr{'X-SlidingLimit-Reset'} = 1 if $method eq 'POST';
    my $res = HTTP::Tiny->new(timeout => 10)
      ->request($method, $h->url . "/ir-status?$query", { headers => \%hdr });
    my $json = eval { decode_json($res->{content}) };
    return ($res->{status}, $json, $res);
}

sub show  { my ($h, $q) = @_; my (undef, $j) = ask($h, 'GET',  $q); return $j }
sub reset_ { my ($h, $q) = @_; my (undef, $j) = ask($h, 'POST', $q); return $j }

sub limit_of {
    my ($j, $name) = @_;
    return (grep { $_->{name} eq $name } @{ $j->{limits} || [] })[0] // {};
}

# A counter of $h's status page.
sub counter {
    my ($h, $name) = @_;
    my $c = http_get($h->url . '/ir-status')->{content} // '';
    # Summed over the series' labels (the store calls are per store).
    my @v = $c =~ /^\Q$name\E(?:\{[^}]*\})? (\d+)$/mg;
    my $sum = 0;
    $sum += $_ for @v;
    return @v ? $sum : -1;
}
sub deny_hits   { counter($_[0], 'slidinglimit_deny_cache_hits_total') }
sub store_calls { counter($_[0], 'slidinglimit_store_calls_total') }

# How many children answered the requests tagged $id (ir_access.log).
sub children {
    my ($h, $id, $total) = @_;
    my %pids;
    wait_until(sub {
        %pids = ();
        my $n = 0;
        open my $fh, '<', $h->dir . '/logs/ir_access.log' or return 0;
        while (<$fh>) {
            my ($lid, undef, $pid) = split;
            next unless defined $pid && $lid eq $id;
            $pids{$pid} = 1;
            $n++;
        }
        return $n >= $total;
    }, 10);
    return scalar keys %pids;
}

# $n connections that each send one request for $url, all open at once
# (under prefork each has a child of its own): the statuses, sorted.
sub spread {
    my ($h, $url, $ip, $id, $n) = @_;
    my $ready = $h->dir . "/$id.ready";
    my $collect = workers($n, sub {
        my $ua = HTTP::Tiny->new(keep_alive => 1, timeout => 10);
        # The connection is opened (and held) before anyone asks.
        $ua->get($h->url . '/ir-status');
        open my $fh, '>>', $ready or die "$ready: $!";
        syswrite $fh, '.';
        close $fh;
        wait_until(sub { -s $ready >= $n }, 4);
        my $r = $ua->get($url, { headers => { 'X-Forwarded-For' => $ip, 'X-Test-Id' => $id } });
        return { $r->{status} => 1 };
    });
    my $got = $collect->();
    return join ' ', map { ("$_") x $got->{$_} } sort keys %$got;
}

for my $store (qw(redis shm)) {
    my $h = SL::Httpd->start(conf => ['inspect.inc'], name => "ir-$store-$$",
        ($store eq 'shm' ? (store => 'shm') : ()));
    my ($a, $b) = (fresh_ip(), fresh_ip());
    my $login = $h->url . '/ir/login.html';
    my $ua = HTTP::Tiny->new(keep_alive => 1, timeout => 10);
    my @st = map { $ua->get($login, { headers => { 'X-Forwarded-For' => $a } })->{status} } 1 .. 6;
    my @sb = map { $ua->get($login, { headers => { 'X-Forwarded-For' => $b } })->{status} } 1 .. 2;
    ok t_cmp("@st @sb", '200 200 200 200 200 429 200 200', "$store: A exhausted 5/60s, B used 2");

    # (a) The exhausted client as the store holds it.
    my $j = show($h, "path=/ir/login.html&ip=$a");
    my $l = limit_of($j, 'ir-login');
    my $hr = limit_of($j, 'ir-login-hour');
    ok t_cmp("$l->{algorithm} $l->{requests} $l->{window} $l->{used} $l->{remaining}",
        'log 5 60 5 0', "$store: GET: ir-login log 5/60s, used 5, remaining 0");
    ok($l->{reset} >= 50 && $l->{reset} <= 60, "$store: ... reset in $l->{reset} s (the oldest admission's end)");
    ok t_cmp("$hr->{algorithm} $hr->{used} $hr->{remaining} $hr->{blocked}", 'counter 5 15 0',
        "$store: ... ir-login-hour: the refusal counted nothing (used 5 of 20)");
    my $key = sl_key(ip => $a, policy => 'ir-login', alg => 'l');
    ok t_cmp($l->{key}, $key, "$store: ... the key is the request's");
    my $one = show($h, "path=/ir/login.html&name=ir-login-hour&ip=$a");
    ok t_cmp(join(',', map { $_->{name} } @{ $one->{limits} || [] }), 'ir-login-hour',
        "$store: name= picks one limit");
    if ($store eq 'redis') {
        ok t_cmp(redis('ZCARD', $key), 5, 'redis: the store holds the 5 admissions');
    }
    else {
        ok t_cmp(limit_of(show($h, "path=/ir/login.html&ip=$a"), 'ir-login')->{used}, 5,
            'shm: a second look finds the same (the look wrote nothing)');
    }

    # The refusal in every child: from the deny cache (Redis; the shm
    # store decides in place, without it).
    my $calls = $store eq 'redis' ? store_calls($h) : 0;
    my $hits = deny_hits($h);
    my $n = $mpm eq 'prefork' ? 4 : 3;
    my $before = spread($h, $login, $a, "ir-before-$store-$$", $n);
    ok t_cmp($before, join(' ', ('429') x $n), "$store: refused on $n connections");
    if ($store eq 'redis') {
        ok t_cmp(store_calls($h) - $calls . ' ' . (deny_hits($h) - $hits), "0 $n",
            "redis: ... every one from the deny cache, none from the store");
    }
    else {
        ok t_cmp(deny_hits($h) - $hits, 0, 'shm: ... by the store (no deny cache)');
    }

    # (b) The reset, then every child admits the client.
    my $r = reset_($h, "path=/ir/login.html&ip=$a");
    $l = limit_of($r, 'ir-login');
    ok t_cmp("$r->{action} $l->{used} $l->{remaining} $l->{reset}", 'reset 0 5 0',
        "$store: POST: reset, used 0, remaining 5");
    ok t_cmp($r->{deny_cache_cleared}, $store eq 'redis' ? qr/^[12]$/ : 0,
        "$store: ... the deny cache forgot the refusal ($r->{deny_cache_cleared})");
    if ($store eq 'redis') {
        ok t_cmp(redis('EXISTS', $key), 0, 'redis: ... the key is gone');
    }
    else {
        ok t_cmp(limit_of($r, 'ir-login-hour')->{used}, 0, 'shm: ... and the other limit');
    }
    my $id = "ir-after-$store-$$";
    my $after = spread($h, $login, $a, $id, $n);
    my $children = children($h, $id, $n);
    ok t_cmp($after, join(' ', ('200') x $n), "$store: then admitted on $n connections");
    ok($mpm ne 'prefork' || $children == $n, "$store: ... answered by $children children");
    ok t_cmp(limit_of(show($h, "path=/ir/login.html&ip=$b"), 'ir-login')->{used}, 2,
        "$store: B's budget is untouched");

    # (c) A block is shown and cleared.
    my $c = fresh_ip();
    my $blk = $h->url . '/ir/block.html';
    @st = map { $ua->get($blk, { headers => { 'X-Forwarded-For' => $c } })->{status} } 1 .. 3;
    $l = limit_of(show($h, "path=/ir/block.html&ip=$c"), 'ir-block');
    ok($l->{blocked} > 3590 && $l->{blocked} <= 3600 && $l->{remaining} == 0 && $l->{reset} == $l->{blocked},
        "$store: block: @st, shown blocked for $l->{blocked} s");
    $l = limit_of(reset_($h, "path=/ir/block.html&ip=$c"), 'ir-block');
    ok t_cmp("$l->{blocked} $l->{used}", '0 0', "$store: ... reset clears it");
    ok t_cmp($ua->get($blk, { headers => { 'X-Forwarded-For' => $c } })->{status}, 200,
        "$store: ... and the client is admitted");
    if ($store eq 'redis') {
        ok t_cmp(redis('EXISTS', "$l->{key}.b"), 0, 'redis: ... KEY.b is gone');
    }
    else {
        ok t_cmp(limit_of(show($h, "path=/ir/block.html&ip=$c"), 'ir-block')->{used}, 1,
            'shm: ... and counted afresh');
    }

    # (d) A client named by a header (GCRA).
    my $user = "alice-$$-" . int(rand(1e6));
    my $uurl = $h->url . '/ir/user.html';
    @st = map { $ua->get($uurl, { headers => { 'X-User' => $user, 'X-Forwarded-For' => fresh_ip() } })->{status} } 1 .. 4;
    $j = show($h, "path=/ir/user.html&header:x-user=$user");
    $l = limit_of($j, 'ir-user');
    ok t_cmp("@st $l->{algorithm} $l->{used} $l->{remaining}", '200 200 200 429 gcra 3 0',
        "$store: header:X-User: 3 admitted from several addresses, one budget, shown exhausted");
    ok t_cmp($l->{key}, sl_key(identity => sl_identity('header:x-user', $user), policy => 'ir-user', alg => 'g'),
        "$store: ... the key is the request's");
    reset_($h, "path=/ir/user.html&header:X-User=$user");
    ok t_cmp($ua->get($uurl, { headers => { 'X-User' => $user } })->{status}, 200,
        "$store: ... reset, admitted again");
    $h->stop;
}

# Bad queries, Require, methods: on the Redis store's httpd.
{
    my $h = SL::Httpd->start(conf => ['inspect.inc'], name => "ir-bad-$$");
    my $ip = fresh_ip();
    my @bad = (
        [ '',                                        qr/path=/ ],
        [ "ip=$ip",                                  qr/path=/ ],
        [ "name=ir-login&ip=$ip",                    qr/path=, which is missing/ ],
        [ 'path=/ir/login.html',                     qr/no identity/ ],
        [ 'path=/ir/login.html&ip=not-an-address',   qr/not an IP address/ ],
        [ "path=/nowhere&ip=$ip",                    qr/no SlidingLimit applies/ ],
        [ "path=/ir/login.html&name=other&ip=$ip",   qr/no limit named other.*ir-login, ir-login-hour/ ],
        [ "path=/ir/login.html&header:X-User=bob",   qr/not a key source here.*: ip/ ],
        [ "path=/ir/login.html&ip=$ip&user=bob",     qr/one identity only/ ],
        [ "path=/ir/login.html&ip=$ip&colour=blue",  qr/unknown parameter 'colour'/ ],
        [ "path=/ir/login.html&ip=%zz",              qr/malformed/ ],
    );
    for my $case (@bad) {
        my ($q, $why) = @$case;
        my $m = $q eq '' ? 'POST' : 'GET';
        my ($st, $j) = ask($h, $m, $q);
        ok(($st == 400 && ($j->{error} // '') =~ $why),
            "$m ?$q: 400 ($st: " . ($j->{error} // '-') . ')');
    }
    ok t_cmp(http_get($h->url . '/ir-status')->{headers}{'content-type'}, qr{^text/plain},
        'GET without a query: still the Prometheus page');
    my ($st) = ask($h, 'PUT', "path=/ir/login.html&ip=$ip");
    ok t_cmp($st, 405, 'PUT: 405');

    # Require: a client not allowed gets 403, and changes nothing.
    my $ua = HTTP::Tiny->new(timeout => 10);
    $ua->get($h->url . '/ir/login.html', { headers => { 'X-Forwarded-For' => $ip } }) for 1 .. 2;
    my ($g) = ask($h, 'GET', "path=/ir/login.html&ip=$ip", 'X-Forwarded-For' => '192.0.2.9');
    my ($p) = ask($h, 'POST', "path=/ir/login.html&ip=$ip", 'X-Forwarded-For' => '192.0.2.9');
    ok t_cmp("$g $p", '403 403', 'a client that Require refuses: 403 for GET and POST');
    ok t_cmp(limit_of(show($h, "path=/ir/login.html&ip=$ip"), 'ir-login')->{used}, 2,
        '... and the budget was not reset');

    # An IPv6 client is its /64 (SlidingLimitIPv6Prefix), as for a request.
    my $net = sprintf '2001:db8:%x:%x', int(rand(65536)), $$ & 0xffff;
    $ua->get($h->url . '/ir/login.html', { headers => { 'X-Forwarded-For' => "${net}::10" } });
    ok t_cmp(limit_of(show($h, "path=/ir/login.html&ip=${net}::99"), 'ir-login')->{used}, 1,
        'ip=: an IPv6 address is masked to its /64 like a request\'s');

    # tools/slidinglimit-client: the same through curl.
    my $tool = abs_path(dirname(__FILE__) . '/../tools/slidinglimit-client');
    my $st_url = $h->url . '/ir-status';
    my $out = `sh $tool $st_url show path=/ir/login.html ip=$ip 2>&1`;
    ok t_cmp(limit_of(eval { decode_json($out) } // {}, 'ir-login')->{used}, 2,
        "slidinglimit-client show: used 2 ($out)");
    $out = `sh $tool $st_url reset path=/ir/login.html ip=$ip 2>&1`;
    ok t_cmp(limit_of(eval { decode_json($out) } // {}, 'ir-login')->{used}, 0,
        'slidinglimit-client reset: used 0');
    $out = `sh $tool $st_url show path=/ir/login.html ip=bad 2>&1`;
    my $rc = $? >> 8;
    ok t_cmp("$rc $out", qr/^1 .*400 .*not an IP address/, 'slidinglimit-client: a refusal exits 1 with the reason');
    $h->stop;
}

# A store that does not answer: 503 with the reason.
{
    my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0, Listen => 1, ReuseAddr => 1)
      or die "no port: $!";
    my $port = $s->sockport;
    close $s;
    my $h = SL::Httpd->start(conf => ['inspect.inc'], name => "ir-down-$$",
        store => "redis://127.0.0.1:$port");
    my $ip = fresh_ip();
    my ($st, $j) = ask($h, 'GET', "path=/ir/login.html&ip=$ip");
    ok(($st == 503 && ($j->{error} // '') =~ /did not answer/), "store down: GET 503 ($st: " . ($j->{error} // '-') . ')');
    ($st, $j) = ask($h, 'POST', "path=/ir/login.html&ip=$ip");
    ok(($st == 503 && ($j->{error} // '') =~ /did not reset.*deny cache/), "store down: POST 503 ($st: " . ($j->{error} // '-') . ')');
    my $log = $h->error_log;
    ok(scalar(() = $log =~ /reset by 127\.0\.0\.1 of the budgets of client ip \(hashed identity [A-Za-z0-9+\/]{16}\) at \/ir\/login\.html on virtual host /g) == 1 && $log !~ /\Q$ip\E/,
        '... the reset attempt is in the error log, without the address');
    $h->stop;
}

# The script's peek, called directly (EVAL in the suite's Redis): it reads
# and never writes (no expired log entry removed, no block started, no
# state changed).
{
    my $script = script_text('sl_check');
    my $p = "sltest:{ir-peek-$$}";
    # Whole microseconds near 1.8e15, as text (Perl would print a float
    # with 15 digits).
    my $us = sub { sprintf '%.0f', $_[0] };
    my $now = sub { my $t = redis('TIME'); $t->[0] * 1000000 + $t->[1] };
    my $peek = sub { redis('EVAL', $script, 1, $_[0], '-', @_[1 .. $#_], 'peek') };

    my $t0 = $now->();
    redis('ZADD', "$p.l", map { ($us->($t0 - $_->[0] * 1e6), $_->[1]) } [70, 'a'], [30, 'b'], [20, 'c'], [10, 'd']);
    my $r = $peek->("$p.l", 'l', 3, 60e6, 3, 1, 0);
    ok(@$r == 7 && "@$r[2 .. 4,6]" eq '0 0 0 0' && $r->[5] > 29e6 && $r->[5] <= 30e6,
        "peek, log: 3 live of 3, more in 30 s (@$r[2 .. 6])");
    is(redis('ZCARD', "$p.l"), 4, '... the expired entry is still there');

    $r = $peek->("$p.l", 'l', 3, 60e6, 3, 1, 3600e6);
    is(redis('EXISTS', "$p.l.b"), 0, 'peek, log with block=: refused, but no block started');
    redis('EVAL', $script, 1, "$p.l", 'm1', 'l', 3, 60e6, 3, 1, 3600e6);
    $r = $peek->("$p.l", 'l', 3, 60e6, 3, 1, 3600e6);
    ok($r->[6] > 3599e6 && $r->[6] <= 3600e6 && $r->[5] == $r->[6],
        "peek: the block a refusal started, its end as reset ($r->[6] us)");

    redis('SET', "$p.g", $us->($t0 + 5e6), 'PX', 60000);
    $r = $peek->("$p.g", 'g', 10, 10e6, 10, 1, 0);
    is(redis('GET', "$p.g") . " $r->[3] $r->[4]", $us->($t0 + 5e6) . ' 1 5',
        'peek, gcra: the TAT unchanged, 5 of 10 left');

    my $err = eval { redis('EVAL', $script, 1, "$p.c", '-', 'c', 3, 1e6, 3, 1, 0, 'peek', 'x'); '' } // $@;
    like($err, qr/bad arguments/, 'a peek with an argument too many is refused');
    redis('DEL', "$p.l", "$p.l.b", "$p.g");
}
