# Servers whose clocks disagree by 74 minutes still share one budget and
# agree on every decision: time comes from the store. Three httpd: the
# test server, one 37 minutes ahead and one 37 minutes behind (libfaketime).
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use HTTP::Date qw(str2time);
use SL::Test;
use SL::Httpd qw(burst_split);
use SL::Algo;

plan skip_all => 'libfaketime is not installed (Debian package faketime)'
  unless SL::Httpd->faketime_available;
plan tests => 2 + 3 * 3 + 4;

my $ahead  = SL::Httpd->start(conf => ['algorithms.conf'], name => 'ahead',  faketime => '+37m');
my $behind = SL::Httpd->start(conf => ['algorithms.conf'], name => 'behind', faketime => '-37m');
my @urls = (server_url(), $ahead->url, $behind->url);


# The shift really applies: httpd's own Date header runs 37 minutes off.
for ([ $ahead, 37 * 60 ], [ $behind, -37 * 60 ]) {
    my ($h, $shift) = @$_;
    my $res = HTTP::Tiny->new->get($h->url . '/alg/a-only/', { headers => { 'X-Forwarded-For' => fresh_ip() } });
    my $skew = str2time($res->{headers}{date}) - time;
    ok(abs($skew - $shift) < 5, "Date of the server at " . ($shift > 0 ? '+' : '') . "$shift s is $skew s off");
}

my $N = 20;
for my $alg (qw(log gcra counter)) {
    my $ip = fresh_ip();
    my $t0 = store_now();
    my ($all) = burst_split([ map {"$_/alg/$alg/"} @urls ],
        total => 240, workers => 12, headers => { 'X-Forwarded-For' => $ip });
    my $t1 = store_now();
    my $ok = $all->{200} // 0;
    t_debug("$alg: " . join(' ', map {"$_=$all->{$_}"} sort keys %$all));
    if ($alg eq 'counter') {
        ok($ok <= $N && $ok >= $N - 1, "counter: $ok of 240 admitted over three skewed servers, never more than $N");
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

# The same refusal is answered alike by all three: Retry-After comes from
# store time, not from the server's clock.
my $ip = fresh_ip();
my @retry;
for my $u (@urls) {
    http_get_url("$u/alg/a-only/", $ip) for 1 .. ($u eq $urls[0] ? 3 : 0);
}
for my $u (@urls) {
    my $res = http_get_url("$u/alg/a-only/", $ip);
    push @retry, [ $res->{status}, $res->{headers}{'retry-after'} // -1, $res->{headers}{'x-ratelimit-reset'} // -1 ];
}
t_debug(join " ", map {"@$_"} @retry);
t_debug("main: " . http_get_url("$urls[0]/alg/a-only/", $ip)->{content});
ok(!grep({ $_->[0] != 429 } @retry), 'all three refuse the spent budget');
ok(!grep({ abs($_->[1] - $retry[0][1]) > 1 } @retry), 'with the same Retry-After');
ok(!grep({ abs($_->[2] - $retry[0][2]) > 1 } @retry), 'and the same X-RateLimit-Reset (store time)');
my $t = redis('TIME');
ok(abs($retry[0][2] - ($t->[0] + $retry[0][1])) <= 2, 'X-RateLimit-Reset is store time + Retry-After');

sub http_get_url {
    my ($url, $ip) = @_;
    return HTTP::Tiny->new(timeout => 10)->get($url, { headers => { 'X-Forwarded-For' => $ip } });
}
