# SPDX-License-Identifier: Apache-2.0
# The deny cache (src/sl_denycache.c), measured with Redis' own counts
# (INFO commandstats: EVALSHA calls) and the status page:
#  - an admission that leaves a limit with nothing remaining is answered
#    like a refusal: the next request gets its 429 without a store call,
#    with the headers the store would have given, until the exact earliest
#    time one more fits, and is admitted right after it;
#  - a GCRA flood from concurrent clients costs about one store call per
#    opening (room for one more request), not one per thread or child
#    that finds the opening;
#  - the table is shared by the server's children: a limit exhausted in
#    one child is refused by every other child without a store call;
#  - the cache never refuses what the store admits: a concurrent burst
#    gets exactly the quota.
# Runs under each MPM: the table shared by children and threads, single flight.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use HTTP::Tiny;
use POSIX qw(ceil);
use Time::HiRes qw(sleep time);
use SL::Test;
use SL::Algo;
use SL::Httpd;
use SL::Wire;

plan skip_all => "commandstats' failed_calls need Redis 6.2; this one is " . redis_version()
  unless redis_at_least(6, 2);

plan tests => 3 * 11 + 4 + 9 + 2 * 2 + 2 * 4;

# How many children of SL::Httpd $h answered the total requests tagged
# X-Test-Id: $id (from its access log, written after each answer).
sub children {
    my ($h, $id, $total) = @_;
    my %pids;
    for (1 .. 100) {
        %pids = ();
        my $n = 0;
        if (open my $fh, '<', $h->dir . '/logs/dc_access.log') {
            while (<$fh>) {
                my ($lid, undef, $pid) = split;
                next unless defined $pid && $lid eq $id;
                $pids{$pid} = 1;
                $n++;
            }
        }
        last if $n >= $total;
        sleep 0.1;
    }
    return scalar keys %pids;
}

sub sleep_until {
    my ($us) = @_;
    my $d = ($us - store_now()) / 1e6;
    sleep $d if $d > 0;
}

my %earliest = (
    c => sub {
        my ($key, $N, $W) = @_;
        my ($idx, $cur, $prev) = counter_decode(redis('GET', $key), store_now(), $W);
        my $start = $idx * $W;
        my $x     = $N - 1;
        return $cur <= $x ? $start + $W - $W * ($x - $cur) / $prev
                          : $start + 2 * $W - $W * $x / $cur;
    },
    g => sub {
        my ($key, $N, $W) = @_;
        my $T = $W / $N;
        # tat + T - tau; a key gone (expired) admits now
        return (redis('GET', $key) // store_now()) + $T - $N * $T;
    },
    l => sub {
        my ($key, $N, $W) = @_;
        my $n = redis('ZCARD', $key);
        my $e = redis('ZRANGE', $key, $n - $N, $n - $N, 'WITHSCORES');
        return $e->[1] + $W;
    },
);

# (a) Exhausted by admissions, on one keep-alive connection (one child).
# The requests that must come before the earliest admission time E (the
# refusal, and one 0.3 s before E) must be decided before it, and the
# counter's three admissions must share a window: should the host stall
# one of them past that, the case runs again with a fresh client (at most
# three times).
for my $alg (qw(c l g)) {
    my $r;
    for my $attempt (1 .. 3) {
        $r = exhaust($alg);
        t_debug(sprintf "$alg (attempt $attempt): earliest admission in %.3f s, Retry-After %s, "
              . 'the last refusal decided %.3f s before it',
            ($r->{E} - $r->{t1}) / 1e6, $r->{res}{headers}{'retry-after'} // '-',
            ($r->{E} - $r->{b1}) / 1e6);
        last if $r->{in_time};
    }
    my ($N, $pol, $res) = (3, "dc-exhaust-$alg", $r->{res});
    ok t_cmp("@{ $r->{st} }", '200 200 200', "$alg: three admitted");
    ok t_cmp($r->{c1} - $r->{c0}, 3, "$alg: one store call per admission");
    ok t_cmp($res->{status}, 429, "$alg: the fourth refused");
    ok t_cmp($r->{c2} - $r->{c1}, 0, "$alg: ... without a store call (the third left nothing)");
    my $d = sub { metric($r->{m1}, @_) - metric($r->{m0}, @_) };
    ok t_cmp($d->('slidinglimit_deny_cache_hits_total') . ' '
          . $d->('slidinglimit_store_calls_total'), '1 3',
        "$alg: status page: one deny-cache hit, three store calls");

    # What the store would have said: the exact earliest admission, no
    # earlier than the refusal could know (t1), no later than the third
    # admission's own reset (measured from before it, t3).
    my $ra = $res->{headers}{'retry-after'} // -1;
    my ($lo, $hi) = (ceil(($r->{E} - $r->{t1}) / 1e6), ceil(($r->{E} - $r->{t3}) / 1e6));
    ok($ra >= $lo && $ra <= $hi, "$alg: Retry-After $ra is the exact wait rounded up ($lo..$hi)");
    ok t_cmp($res->{headers}{ratelimit} // '', qr/^"\Q$pol\E";r=0;t=$ra$/,
        "$alg: RateLimit r=0, t equals Retry-After");
    ok t_cmp(($res->{headers}{'x-ratelimit-remaining'} // '') . ' '
          . ($res->{headers}{'x-ratelimit-limit'} // ''), '0 3',
        "$alg: X-RateLimit-Remaining 0 of 3");

    # The same child until the end: refused just before, admitted just after.
    ok($r->{before} == 429 && $r->{b1} < $r->{E},
        "$alg: still refused 0.3 s before ($r->{before}, decided "
          . sprintf('%.3f s before)', ($r->{E} - $r->{b1}) / 1e6));
    ok t_cmp($r->{c4} - $r->{c3}, 0, "$alg: ... from the cache");
    ok t_cmp($r->{after}, 200, "$alg: admitted right after the earliest time");
}

# One run of (a): a fresh client exhausts the limit with three admissions
# and is refused, then asks 0.3 s before the earliest admission time E and
# right after it, all on one keep-alive connection. Store times: t3 before
# the third admission, t0..t1 around the refusal, b1 after the request
# before E; c0..c4 script runs, m0/m1 the status page.
sub exhaust {
    my ($alg) = @_;
    my ($N, $W) = (3, 3e6);
    my $pol  = "dc-exhaust-$alg";
    my $ip   = fresh_ip();
    my $key  = sl_key(ip => $ip, policy => $pol, alg => $alg);
    my $ua   = HTTP::Tiny->new(keep_alive => 1, timeout => 10);
    my $url  = server_url() . "/dc/exhaust-$alg.html";
    my $get  = sub { $ua->get($url, { headers => { 'X-Forwarded-For' => $ip } }) };
    my %r;

    # The counter's three admissions must share a window: start early in one.
    if ($alg eq 'c') {
        my $now = store_now();
        my $k = int($now / $W);
        sleep_until(($k + 1) * $W + 0.05e6) if $now - $k * $W > 0.5 * $W;
    }
    $r{m0} = metrics();
    $r{c0} = script_calls();
    my $s0 = store_now();
    $r{st} = [ map { $get->()->{status} } 1 .. 2 ];
    $r{t3} = store_now();
    push @{ $r{st} }, $get->()->{status};
    my $s1 = store_now();
    $r{c1} = script_calls();
    $r{t0} = store_now();
    $r{res} = $get->();
    $r{t1} = store_now();
    $r{c2} = script_calls();
    $r{m1} = metrics();
    $r{E}  = $earliest{$alg}->($key, $N, $W);

    sleep_until($r{E} - 0.3e6);
    $r{c3} = script_calls();
    $r{before} = $get->()->{status};
    $r{b1} = store_now();
    $r{c4} = script_calls();
    sleep_until($r{E} + 0.03e6);
    $r{after} = $get->()->{status};
    $r{in_time} = $r{t1} < $r{E} && $r{b1} < $r{E}
      && ($alg ne 'c' || int($s0 / $W) == int($s1 / $W));
    return \%r;
}

# Both limits exhausted by the same admission: the cached refusal reports
# the longer wait (the store's own refusal would), not the first limit's.
{
    my $ip  = fresh_ip();
    my $ua  = HTTP::Tiny->new(keep_alive => 1, timeout => 10);
    my $get = sub {
        $ua->get(server_url() . '/dc/two.html', { headers => { 'X-Forwarded-For' => $ip } });
    };
    my @st = map { $get->()->{status} } 1 .. 2;
    my $c0 = script_calls();
    my $res = $get->();
    ok t_cmp("@st $res->{status}", '200 200 429', 'two limits: two admitted, the third refused');
    ok t_cmp(script_calls() - $c0, 0, 'two limits: ... without a store call');
    ok t_cmp($res->{headers}{'retry-after'} // '', 60, 'two limits: Retry-After is the longer wait');
    ok t_cmp($res->{headers}{ratelimit} // '', '"dc-two-long";r=0;t=60',
        'two limits: RateLimit describes the longer one');
}

# (b) A GCRA flood, 5/s, from concurrent keep-alive clients for 2 s, on
# an httpd of its own (SL::Httpd: LogLevel warn; event: 2 children of 8
# threads, so each child has several threads flooding the same key).
{
    my ($N, $W, $workers, $secs) = (5, 1e6, 16, 2);
    my $h   = SL::Httpd->start(conf => ['denycache.conf'], name => "dc-flood-$$");
    my $ip  = fresh_ip();
    my $key = sl_key(ip => $ip, policy => 'dc-flood-g', alg => 'g');
    my $url = $h->url . '/dc/flood-g.html';
    my $id  = "dc-flood-$$-" . time;
    my $status = sub {
        my $res = http_get($h->url . '/dc-status');
        my %m;
        # The store series also summed over their stores, without the label.
        while ($res->{content} =~ /^(slidinglimit_[a-z_]+)(\{[^}]*\})? (\d+)$/mg) {
            my ($n, $l, $v) = ($1, $2 // '', $3);
            $m{"$n$l"} += $v;
            $m{$n} += $v if $l =~ /^\{store="(?:[^"\\]|\\.)*"\}$/;
        }
        return \%m;
    };
    my $m0 = $status->();
    my $c0 = script_calls();
    my $s0 = store_now();
    my $collect = workers($workers, sub {
        my $ua  = HTTP::Tiny->new(keep_alive => 1, timeout => 10);
        my $end = time + $secs;
        my %count;
        my $slowest = 0;
        while (time < $end) {
            my $t = time;
            my $r = $ua->get($url,
                { headers => { 'X-Forwarded-For' => $ip, 'X-Test-Id' => $id } });
            $count{ $r->{status} }++;
            $slowest = time - $t if time - $t > $slowest;
            # When this client had its first answer; when it sent its last
            # request (microseconds, this host's clock, which Redis reads).
            $count{min_first} //= int(time * 1e6);
            $count{max_last} = int($t * 1e6);
        }
        $count{max_ms} = int($slowest * 1000);
        return \%count;
    });
    my $got = $collect->();
    my $s1  = store_now();
    my $slowest = delete $got->{max_ms};
    my ($first, $last) = (delete $got->{min_first}, delete $got->{max_last});
    my $calls = script_calls() - $c0;
    my $m1  = $status->();
    my $d   = sub { ($m1->{ $_[0] } // 0) - ($m0->{ $_[0] } // 0) };
    my ($ok, $no) = ($got->{200} // 0, $got->{429} // 0);
    my $total = 0;
    $total += $_ for values %$got;
    my $children = children($h, $id, $total);
    my $elapsed  = ($s1 - $s0) / 1e6;
    t_debug(sprintf 'flood: %d admitted, %d refused, %d store calls (%.4f per refusal), '
          . '%d children, %.2f s, slowest request %d ms', $ok, $no, $calls, $no ? $calls / $no : 0,
        $children, $elapsed, $slowest);

    ok t_cmp($ok + $no, $total, 'flood: every answer 200 or 429');
    ok($no > 5 * $ok, "flood: far over the limit ($no refused, $ok admitted)");
    ok t_cmp($d->('slidinglimit_store_calls_total'), $calls,
        'flood: the status page counts the store calls Redis saw');
    ok t_cmp($d->('slidinglimit_store_calls_total') + $d->('slidinglimit_deny_cache_hits_total'),
        $total, 'flood: every decision a store call or a deny-cache hit');
    ok t_cmp($d->('slidinglimit_decisions_total{result="denied",policy="dc-flood-g"}'),
        $no, 'flood: refusals counted');
    ok t_cmp($d->('slidinglimit_store_errors_total'), 0, 'flood: no store error');
    # GCRA is exact in the store: never more than the burst plus one per
    # 200 ms of the elapsed store time. The flood lasts from the first
    # admission (no later than the first answer) to the last decision (no
    # earlier than the last request sent); had the store been asked all
    # along, it admitted the burst plus the rate over that time. Not asking
    # while there is an opening (a cache that refuses too long) loses
    # openings: at least half the rate must be admitted. The other half is
    # the margin for a host that stalls every request of the flood past the
    # burst's 1 s (on a loaded host an opening not asked for is lost, not a
    # refusal too many).
    my $lasted = ($last - $first) / 1e6;
    t_debug(sprintf 'flood: the full rate over %.2f s is %d admissions',
        $lasted, $N + int($N * $lasted));
    ok($ok >= $N + int($N * $lasted / 2) && $ok <= $N + $N * $elapsed + 1,
        sprintf "flood: $ok admitted: the burst plus at least half the rate over %.2f s, "
          . 'at most the rate over %.2f s', $lasted, $elapsed);
    # Each admission is one store call. When an opening comes, one request
    # asks for every thread and every child, the others wait for its
    # answer; beyond that, a call early (the cache ends a refusal at its
    # start on this host's clock, earlier than the store by as much as the
    # call took) or a refused ask (another request took the opening). About
    # two calls per opening here; on a host where a store call takes a good
    # part of the 200 ms between openings (sanitizers beside two busy cores:
    # one run in three went over two) an opening takes a few more asks, one
    # at a time: at most four. Without single flight every thread that finds
    # the opening asks (16 flood here), and without caching the exhausting
    # admission the admitting thread's next request asks again.
    my $bound = 4 * ($ok + 1);
    ok($children >= 1 && $calls <= $bound,
        "flood: $calls store calls for $ok admissions and $no refusals "
          . "($children children: at most $bound)");

    # No over-refusal: right after the earliest time, admitted (whichever
    # child answers: every child's entry ended by then).
    my $E = $earliest{g}->($key, $N, $W);
    sleep_until($E + 0.03e6);
    ok t_cmp(http_get($url, 'X-Forwarded-For' => $ip)->{status}, 200,
        'flood: admitted right after the earliest time');
    $h->stop;
}

# (c) Exactness: a concurrent burst gets exactly the quota, no less.
for my $alg (qw(l c)) {
    my $ip  = fresh_ip();
    my $got = burst(server_url() . "/dc/exact-$alg.html", total => 60, workers => 6,
        headers => { 'X-Forwarded-For' => $ip });
    ok t_cmp(($got->{200} // 0) . ' ' . ($got->{429} // 0), '20 40',
        "$alg: exactly the quota of 20 admitted out of 60");
    my $key = sl_key(ip => $ip, policy => "dc-exact-$alg", alg => $alg);
    # A counter burst that ends past a window boundary counts in two
    # windows: the previous one's count and the current one's, together.
    my $stored = $alg eq 'l' ? redis('ZCARD', $key) : do {
        my (undef, $cur, $prev) = counter_decode(redis('GET', $key), store_now(), 600e6);
        $cur + $prev;
    };
    ok t_cmp($stored, 20, "$alg: the store holds 20 admissions");
}

# (d) Shared by the children: a limit exhausted on one connection (one
# child) is refused by every other child with no store call at all, however
# many children answer (prefork: one per concurrent connection). A
# per-child table would cost one call in each other child.
{
    my $h = SL::Httpd->start(conf => ['denycache.conf'], name => "dc-spread-$$");
    my $mpm = $ENV{SL_TEST_MPM} || 'event';
    for my $alg (qw(c l)) {
        my $ip  = fresh_ip();
        my $url = $h->url . "/dc/spread-$alg.html";
        my $id  = "dc-spread-$alg-$$-" . time;
        my $ua  = HTTP::Tiny->new(keep_alive => 1, timeout => 10);
        my @st  = map { $ua->get($url, { headers => { 'X-Forwarded-For' => $ip } })->{status} } 1 .. 3;
        undef $ua;    # under prefork, frees its child for the burst
        my $c0  = script_calls();
        # 8 connections of 8 requests each. Each is held after its first
        # answer until all 8 are (4 s at most, under httpd's 5 s keep-alive
        # timeout): under prefork a child serves one connection at a time,
        # so the 4 started children, and those spawned meanwhile, each
        # answer one.
        my $ready = $h->dir . "/spread-$alg.ready";
        my $collect = workers(8, sub {
            my $ua = HTTP::Tiny->new(keep_alive => 1, timeout => 10);
            my %count;
            my $get = sub {
                my $r = $ua->get($url,
                    { headers => { 'X-Forwarded-For' => $ip, 'X-Test-Id' => $id } });
                $count{ $r->{status} }++;
            };
            $get->();
            open my $fh, '>>', $ready or die "$ready: $!";
            syswrite $fh, '.';
            close $fh;
            wait_until(sub { -s $ready >= 8 }, 4);
            $get->() for 2 .. 8;
            return \%count;
        });
        my $got      = $collect->();
        my $calls    = script_calls() - $c0;
        my $children = children($h, $id, 64);
        t_debug("spread $alg: 64 requests answered by $children children, $calls store calls");
        ok t_cmp("@st", '200 200 200', "spread $alg: three admitted on one connection");
        ok t_cmp($got->{429} // 0, 64, "spread $alg: then 64 requests on 8 connections all refused");
        ok($children >= ($mpm eq 'prefork' ? 4 : 1), "spread $alg: answered by $children children");
        ok t_cmp($calls, 0, "spread $alg: ... with no store call");
    }
    $h->stop;
}
