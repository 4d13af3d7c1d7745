# SPDX-License-Identifier: Apache-2.0
# SlidingLimitAllotment auto over two httpd servers sharing one Redis: a
# burst within a large limit is admitted from allotments (far fewer store
# calls than admissions, every admission counted by the store), a load far
# above a short window's limit never puts more than the limit in any
# rolling window (the counter: in any of its fixed windows; measured from
# the clients' own send and receive times), a counter key gets no grant in
# the last D of its window, and a small limit never gets an allotment. The
# early refusals (what the clients were refused while the limit still had
# room) are measured.
# Runs under each MPM: per-child allotments, with threads or processes.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use HTTP::Tiny;
use Time::HiRes qw(time sleep);
use SL::Test;
use SL::Algo;
use SL::Httpd;

plan tests => 3 + 2 * 6 + 2 + 1 + 12 + 2 * 3 + 4 + 3;

my $second = SL::Httpd->start(conf => ['allot.conf'], name => 'allot', extra => <<'EOT');
<Location /allot-reset>
    SetHandler slidinglimit-status
    SlidingLimitStatusPage reset
    SlidingLimit off
    Require ip 127.0.0.1 ::1
</Location>
EOT
my @servers = (server_url(), $second->url);

# The last D (a second) of a counter window of 3 s: a grant made there
# could be used in the next window while counted in this one, so none is
# made, and every request is decided at the store. First in the file: no
# child holds another key's idle grant yet, whose give-back would add a
# store call. A fresh client whose whole burst (40 of 1000, all admitted)
# falls in one window's last 0.9 s; tried again in a later window should
# it not.
{
    my $win = 3e6;
    my ($ip, $all, $calls, $t0, $t1);
    for my $try (1 .. 4) {
        my $now = store_now();
        my $at  = $now - $now % $win + 2.1e6;
        $at += $win if $at < $now;
        sleep(($at - $now) / 1e6);
        $ip    = fresh_ip();
        $calls = script_calls();
        $t0    = store_now();
        $all   = burst([ map {"$_/allot/end-counter/"} @servers ],
            total => 40, workers => 6, headers => { 'X-Forwarded-For' => $ip });
        $calls = script_calls() - $calls;
        $t1    = store_now();
        last if int($t0 / $win) == int($t1 / $win) && $t0 % $win >= 2e6;
        t_debug("end-counter: try $try left the window's last D ($t0 .. $t1)");
    }
    my $key = sl_key(ip => $ip, policy => 'allot-end-counter', alg => 'c');
    my $ok  = $all->{200} // 0;
    t_debug(sprintf("end-counter: %d admitted, %d store calls, %.3f to %.3f s into the window",
        $ok, $calls, ($t0 % $win) / 1e6, ($t1 % $win) / 1e6));
    ok t_cmp($ok, 40, 'end-counter: all 40 admitted');
    ok t_cmp(redis('EXISTS', "$key.a"), 0, 'end-counter: no grant made in the last D of the window (no epoch)');
    ok($calls >= $ok, "end-counter: every request decided at the store ($calls calls, $ok admitted)");
}

# A burst of 1200 requests within a limit of 5000: all admitted, mostly
# from allotments.
for my $alg (qw(log gcra counter)) {
    # The counter's give-back goes only into the grant's own window (of
    # 600 s): the whole case in one, at least 40 s of it left.
    if ($alg eq 'counter') {
        my $now  = store_now();
        my $left = 600e6 - $now % 600e6;
        sleep($left / 1e6 + 0.1) if $left < 40e6;
    }
    my $idx   = int(store_now() / 600e6);
    my $ip    = fresh_ip();
    my $key   = sl_key(ip => $ip, policy => "allot-big-$alg", alg => substr($alg, 0, 1));
    my $calls = script_calls();
    my $t0    = redis('TIME');
    my ($all, $per) = burst([ map {"$_/allot/big-$alg/"} @servers ],
        total => 1200, workers => 8, headers => { 'X-Forwarded-For' => $ip });
    my $used = script_calls() - $calls;
    my $ok   = $all->{200} // 0;
    t_debug("$alg: " . join(' ', map {"$_=$all->{$_}"} sort keys %$all) . " store calls $used");
    ok t_cmp($ok, 1200, "$alg: all 1200 admitted within the limit of 5000");
    ok(($per->{"$servers[0]/allot/big-$alg/"}{200} // 0) > 0
          && ($per->{"$servers[1]/allot/big-$alg/"}{200} // 0) > 0,
        "$alg: both servers admitted");
    ok($used > 0 && $used <= 0.5 * $ok,
        sprintf("$alg: %d store calls for %d admissions (%.3f per admission)",
            $used, $ok, $ok ? $used / $ok : 0));
    # Whoever answers (from its grant or from the store), the remaining it
    # announces is never more than what is left of the limit.
    my $res = HTTP::Tiny->new->get("$servers[1]/allot/big-$alg/",
        { headers => { 'X-Forwarded-For' => $ip } });
    my ($r) = ($res->{headers}{ratelimit} // '') =~ /;r=(\d+)/;
    ok(defined $r && $r <= 5000 - 1201,
        "$alg: remaining announced " . ($r // 'none') . ", at most " . (5000 - 1201));
    if ($alg eq 'log') {
        my $members = redis('ZRANGE', $key, 0, -1);
        ok(scalar(grep { allotment($_) } @$members) > 0, 'log: the window holds allotments');
        # Every admission is counted, the unused rest of the grants too
        # until it is given back or ages out.
        my $units = log_units($key);
        ok($units >= $ok && $units <= 5000, "log: the store counts $units units for $ok admissions");
        # Idle now: the children's next grants (for another client, 2 s
        # later) give back what this key's grants left unused, and only
        # that.
        sleep 2.1;
        my $other = fresh_ip();
        burst([ map {"$_/allot/big-log/"} @servers ],
            total => 600, workers => 8, headers => { 'X-Forwarded-For' => $other });
        my $after = log_units($key);
        t_debug("log: $units units before the others' grants, $after after");
        ok($after < $units, "log: idle grants were given back ($units units, then $after)");
        ok($after >= $ok, "log: never below the $ok admissions ($after units)");
    }
    elsif ($alg eq 'counter') {
        my ($cur) = (counter_decode(redis('GET', $key), store_now(), 600e6))[1];
        ok(redis('EXISTS', "$key.a") == 1, 'counter: the key has an allotment epoch');
        ok($cur >= $ok && $cur <= 5000, "counter: the window counts $cur units for $ok admissions");
        # Idle now: the children's next grants (for another client, 2 s
        # later) give back what this key's grants left unused, into the
        # same window.
        sleep 2.1;
        my $other = fresh_ip();
        burst([ map {"$_/allot/big-counter/"} @servers ],
            total => 600, workers => 8, headers => { 'X-Forwarded-For' => $other });
        my ($after) = (counter_decode(redis('GET', $key), store_now(), 600e6))[1];
        t_debug("counter: $cur units before the others' grants, $after after");
        ok($after < $cur, "counter: idle grants were given back ($cur units, then $after)");
        ok($after >= $ok, "counter: never below the $ok admissions ($after units)");
        # The other client's children hold grants now. An operator's reset
        # takes its key and epoch; the counts made after it (100, set
        # here) get nothing of those grants back when they go back idle.
        my $okey = sl_key(ip => $other, policy => 'allot-big-counter', alg => 'c');
        HTTP::Tiny->new(timeout => 10)->post("$servers[1]/allot-reset?path=/allot/big-counter/&ip=$other",
            { headers => { 'X-SlidingLimit-Reset' => 1 } });
        ok t_cmp(redis('EXISTS', $okey) + redis('EXISTS', "$okey.a"), 0,
            'counter: a reset deletes the key and its epoch');
        redis('SET', $okey, sprintf('%d%09d%09d', $idx % 8 + 1, 0, 100), 'PX', 60000);
        my $records = scalar @{ redis('KEYS', "$okey.a?*") };
        sleep 2.1;
        burst([ map {"$_/allot/big-counter/"} @servers ],
            total => 300, workers => 8, headers => { 'X-Forwarded-For' => fresh_ip() });
        my $left = scalar @{ redis('KEYS', "$okey.a?*") };
        ok($left < $records, "counter: grants of before the reset went back ($records records, then $left)");
        my ($now_cur) = (counter_decode(redis('GET', $okey), store_now(), 600e6))[1];
        ok t_cmp($now_cur, 100, 'counter: ... and gave nothing back into the counts after it');
        ok t_cmp(int(store_now() / 600e6), $idx, 'counter: the case ran in one window of 600 s');
    }
    else {
        # The TAT stands one emission interval (120 ms) per unit counted
        # past the burst's start (far ahead of now all along): at least
        # one per admission.
        my $tat = redis('GET', $key) // 0;
        my $units = ($tat - ($t0->[0] * 1e6 + $t0->[1])) / 120e3;
        ok(redis('EXISTS', "$key.a") == 1, 'gcra: the key has an allotment epoch');
        ok($units >= $ok - 0.01,
            sprintf("gcra: the TAT holds %.0f units for %d admissions", $units, $ok));
        # An operator's reset takes the epoch with the key: a grant made
        # before it gives nothing back into the new budget.
        HTTP::Tiny->new(timeout => 10)->post("$servers[1]/allot-reset?path=/allot/big-gcra/&ip=$ip",
            { headers => { 'X-SlidingLimit-Reset' => 1 } });
        ok t_cmp(redis('EXISTS', $key) + redis('EXISTS', "$key.a"), 0, 'gcra: a reset deletes the key and its epoch');
    }
}

# A load many times the limit of 64 per 3 s over both servers for 7.5 s:
# no window of 3 s holds more than the algorithm allows: 64 for the log,
# 64 + 64 for gcra (a full burst, then one per emission interval of 3 s /
# 64, as without allotments), 64 + 64 for the counter (the previous fixed
# window's count fades out while the current one's grows). An admission
# happened between its request's send and its response's receipt: those
# whose whole span lies in [x, x + 3 s) were admitted in it, whatever the
# delays.
#
# The counter's own bound: every admission at store time u is counted in
# the count of u's fixed window [idx * 3 s, (idx + 1) * 3 s) (a grant's
# units are counted in the window that holds every use of them), and no
# decision lets that count pass 64: no fixed window holds more than 64
# admissions. The clients share the store's clock (one host): those whose
# whole span lies in one fixed window were admitted in it. It fails when
# units counted in one window are used in the next, where they weigh as
# the previous window's count, a fraction.
for my $alg (qw(log gcra counter)) {
    my $ip   = fresh_ip();
    my $secs = 7.5;
    my $file = Apache::Test::vars('t_dir') . "/tmp/allot-$alg-$$";
    # The counter's load starts in the last 0.3 s of a fixed window, with
    # all of the fresh key's room still there: grants are asked for at
    # once, at the window's end, where one whose units outlived it would
    # put them in the next window uncounted.
    if ($alg eq 'counter') {
        my $now = store_now();
        my $at  = $now - $now % 3e6 + 2.7e6;
        $at += 3e6 if $at < $now;
        sleep(($at - $now) / 1e6);
    }
    my $got  = workers(6, sub {
        my ($w) = @_;
        my $url = $servers[ $w % 2 ] . "/allot/edge-$alg/";
        my $ua  = HTTP::Tiny->new(timeout => 10, keep_alive => 1);
        my (%count, @spans);
        my $end = time + $secs;
        while (time < $end) {
            my $t0  = time;
            my $res = $ua->get($url, { headers => { 'X-Forwarded-For' => $ip } });
            my $t1  = time;
            $count{ $res->{status} }++;
            push @spans, "$t0 $t1" if $res->{status} == 200;
        }
        open my $fh, '>', "$file.$w" or die "$file.$w: $!";
        print $fh "$_\n" for @spans;
        close $fh;
        return \%count;
    })->();
    my @spans;
    for my $w (0 .. 5) {
        open my $fh, '<', "$file.$w" or die "$file.$w: $!";
        push @spans, map { [ split ' ' ] } <$fh>;
        close $fh;
        unlink "$file.$w";
    }
    @spans = sort { $a->[0] <=> $b->[0] } @spans;
    my $max = 0;
    for my $i (0 .. $#spans) {
        my $x = $spans[$i][0];
        my $n = grep { $_->[0] >= $x && $_->[1] < $x + 3 } @spans[ $i .. $#spans ];
        $max = $n if $n > $max;
    }
    my $ok = $got->{200} // 0;
    # Demand far above the limit: what an exact limiter admits in 7.5 s.
    # The log: 64 at once, 64 again as each batch leaves the window (at
    # 3 s and 6 s). gcra: a burst of 64, then one per 3 s / 64.
    # The counter: 64 in each fixed window the load touched.
    my $first = @spans ? int($spans[0][0] / 3) : 0;
    my $last  = $first;
    my %fixed;
    for (@spans) {
        my ($in, $out) = (int($_->[0] / 3), int($_->[1] / 3));
        $fixed{$in}++ if $in == $out;
        $last = $out if $out > $last;
    }
    my $ideal = $alg eq 'log' ? 64 * 3
        : $alg eq 'gcra' ? int(64 + $secs / 3 * 64)
        : 64 * ($last - $first + 1);
    t_debug("$alg: " . join(' ', map {"$_=$got->{$_}"} sort keys %$got));
    if ($alg eq 'counter') {
        my ($most) = sort { $b <=> $a } values %fixed;
        $most //= 0;
        t_debug('counter: per fixed window ' . join(' ', map {"$_=$fixed{$_}"} sort keys %fixed));
        ok($most <= 64, "counter: no fixed window of 3 s holds more than 64 admissions (at most $most)");
    }
    my $bound = $alg eq 'log' ? 64 : 128;
    ok($max <= $bound, "$alg: no 3 s window holds more than $bound admissions (at most $max)");
    ok(($got->{429} // 0) > 0, "$alg: the load was refused beyond the limit");
    ok($ok > 0 && $ok <= $ideal, sprintf("$alg: %d admitted of an exact limiter's %d (%.0f%%;"
                . " the rest refused early)", $ok, $ideal, 100 * $ok / $ideal));
}

# A small limit: exactly 5 admitted, never an allotment.
{
    my $ip  = fresh_ip();
    my $key = sl_key(ip => $ip, policy => 'allot-small', alg => 'l');
    my $all = burst([ map {"$_/allot/small/"} @servers ],
        total => 40, workers => 4, headers => { 'X-Forwarded-For' => $ip });
    ok t_cmp($all->{200} // 0, 5, 'small: exactly 5 of 40 admitted');
    my $members = redis('ZRANGE', $key, 0, -1);
    ok t_cmp(scalar(grep { allotment($_) } @$members), 0, 'small: no allotment in its log');
    ok t_cmp(scalar(@$members), 5, 'small: one entry per admission');
}
