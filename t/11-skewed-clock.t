# SPDX-License-Identifier: Apache-2.0
# Servers whose clocks disagree by 74 minutes still share one budget and
# agree on every decision: time comes from the store. Three httpd: the
# test server, one 37 minutes ahead and one 37 minutes behind (libfaketime).
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use HTTP::Date qw(str2time);
use POSIX qw(ceil);
use Time::HiRes qw(time);
use SL::Test;
use SL::Httpd;
use SL::Algo;

plan skip_all => 'libfaketime is not installed (Debian package faketime)'
  unless SL::Httpd->faketime_available;
plan tests => 2 + 3 * 3 + 3 + 4;

my $ahead  = SL::Httpd->start(conf => ['algorithms.conf'], name => 'ahead',  faketime => '+37m');
my $behind = SL::Httpd->start(conf => ['algorithms.conf'], name => 'behind', faketime => '-37m');
my @urls = (server_url(), $ahead->url, $behind->url);


# The shift really applies: httpd's own Date header runs 37 minutes off.
# Date is whole seconds of httpd's clock when it answered, between the two
# readings of ours.
for ([ $ahead, 37 * 60 ], [ $behind, -37 * 60 ]) {
    my ($h, $shift) = @$_;
    my $before = time;
    my $res = http_get($h->url . '/alg/a-only/', 'X-Forwarded-For' => fresh_ip());
    my $after = time;
    my $date = str2time($res->{headers}{date}) // 0;
    ok($date >= int($before) + $shift && $date <= $after + $shift,
        "Date of the server at " . ($shift > 0 ? '+' : '') . "$shift s is "
          . ($date - int($before)) . ' s off');
}

my $N = 20;
for my $alg (qw(log gcra counter)) {
    my $ip = fresh_ip();
    my $t0 = store_now();
    my ($all) = burst([ map {"$_/alg/$alg/"} @urls ],
        total => 240, workers => 12, headers => { 'X-Forwarded-For' => $ip });
    my $t1 = store_now();
    my $ok = $all->{200} // 0;
    t_debug("$alg: " . join(' ', map {"$_=$all->{$_}"} sort keys %$all));
    if ($alg eq 'counter') {
        counter_admitted_ok($ok, $N, $t0, $t1, 600e6, 'counter: over three skewed servers');
    }
    else {
        ok t_cmp($ok, $N, "$alg: exactly $N of 240 admitted over three skewed servers");
    }
    ok t_cmp($all->{429} // 0, 240 - $ok, "$alg: every other request refused with 429");

    # The state carries store time only, never a server's.
    my $key = sl_key(ip => $ip, policy => "alg-$alg", alg => substr($alg, 0, 1));
    if ($alg eq 'log') {
        my $s = redis('ZRANGE', $key, 0, -1, 'WITHSCORES');
        my @scores = @$s[ grep { $_ % 2 } 0 .. $#$s ];
        my @off = grep { $_ < $t0 || $_ > $t1 } @scores;
        ok(!@off && @scores == $N, 'log: every entry is stamped with store time');
    }
    elsif ($alg eq 'gcra') {
        my $tat = redis('GET', $key);
        # From an empty bucket: TAT = first admission + 20 intervals of 30 s.
        ok($tat >= $t0 + 600e6 && $tat <= $t1 + 600e6, 'gcra: TAT in store time');
    }
    else {
        # The window tag is the store's window; a server's own clock, 37
        # minutes (3.7 windows) off, would give another tag.
        my ($tag) = redis('GET', $key) =~ /^(\d)/;
        ok($tag == int($t0 / 600e6) % 8 + 1 || $tag == int($t1 / 600e6) % 8 + 1, 'counter: window tag in store time');
    }
}

# SlidingLimitAllotment auto over the three: a grant's deadline runs on
# each child's own monotonic clock from before it asked, its units are
# scored in store time (the grant's, plus D). 600 requests against a
# limit of 100: never more than 100 admitted, every admission counted,
# every entry in store time.
{
    my $ip  = fresh_ip();
    my $t0  = store_now();
    my ($all) = burst([ map {"$_/alg/allot-log/"} @urls ],
        total => 600, workers => 12, headers => { 'X-Forwarded-For' => $ip });
    my $t1  = store_now();
    my $ok  = $all->{200} // 0;
    my $key = sl_key(ip => $ip, policy => 'alg-allot-log', alg => 'l');
    my $units = log_units($key);
    t_debug('allot-log: ' . join(' ', map {"$_=$all->{$_}"} sort keys %$all) . ", $units units counted");
    ok($ok > 0 && $ok <= 100, "auto: $ok of 600 admitted over three skewed servers, at most 100");
    ok($units >= $ok && $units <= 100, "auto: the store counts $units units for $ok admissions");
    my $s = redis('ZRANGE', $key, 0, -1, 'WITHSCORES');
    my @members = @$s[ grep { !($_ % 2) } 0 .. $#$s ];
    my @off = grep { $s->[ 2 * $_ + 1 ] < $t0 || $s->[ 2 * $_ + 1 ] > $t1 + 1e6 }
      grep { $members[$_] !~ /^#/ } 0 .. $#members;
    ok(!@off && grep({ allotment($_) } @members),
        'auto: grants in use, every entry stamped with store time (a grant\'s: plus D)');
}

# The same refusal is answered alike by all three: Retry-After comes from
# store time, not from the server's clock. The log's oldest entry expires
# at E (store microseconds): each Retry-After is E minus that refusal's
# store time, rounded up, and X-RateLimit-Reset is E rounded up, the same
# for all three.
my $ip = fresh_ip();
http_get("$urls[0]/alg/a-only/", 'X-Forwarded-For' => $ip) for 1 .. 3;
my $key = sl_key(ip => $ip, policy => 'two-a', alg => 'l');
my $E = redis('ZRANGE', $key, 0, 0, 'WITHSCORES')->[1] + 600e6;
my (@st, @ra, @reset, @range);
for my $u (@urls) {
    my $t0 = store_now();
    my $res = http_get("$u/alg/a-only/", 'X-Forwarded-For' => $ip);
    my $t1 = store_now();
    push @st, $res->{status};
    push @ra, $res->{headers}{'retry-after'} // -1;
    push @reset, $res->{headers}{'x-ratelimit-reset'} // -1;
    push @range, [ ceil(($E - $t1) / 1e6), ceil(($E - $t0) / 1e6) ];
}
t_debug("Retry-After @ra, X-RateLimit-Reset @reset");
ok t_cmp("@st", '429 429 429', 'all three refuse the spent budget');
ok(!grep({ $ra[$_] < $range[$_][0] || $ra[$_] > $range[$_][1] } 0 .. 2),
    'each with the exact wait by the store\'s clock: '
      . join(', ', map {"$ra[$_] in $range[$_][0]..$range[$_][1]"} 0 .. 2));
my $want = ceil($E / 1e6);
ok t_cmp("@reset", "$want $want $want", 'and the same X-RateLimit-Reset, the expiry in store time');
ok t_cmp(redis('ZCARD', $key), 3, 'the refusals consumed nothing');
