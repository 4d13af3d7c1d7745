# SPDX-License-Identifier: Apache-2.0
# The status handler's look at a client and its reset go through the
# store's circuit breaker, as requests do: with the store down (its port a
# black hole, as a Redis host gone behind a firewall that drops packets)
# and the breaker open, GET and POST answer 503 with the reason at once,
# instead of each waiting for the connect timeout. Only the breaker's probe
# may wait; the deny cache and the local fallback's state are still
# cleared by the reset, and the breaker stays open on the status page.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use HTTP::Tiny;
use JSON::PP qw(decode_json);
use Time::HiRes qw(sleep time);
use SL::Test;
use SL::Httpd;
use SL::Fault;

plan tests => 8;

# A port whose accept queue is full: the kernel drops further SYNs, so a
# connect waits for its timeout (SL::Fault's fault_blackhole).
my $port = free_port(10000, 10000);
my $blackhole = fault_blackhole($port);

my $C = 2;    # the connect timeout, long next to a fast answer
my $store = "redis://127.0.0.1:$port";
my $h = SL::Httpd->start(conf => ['inspect.inc'], name => "ib-$$", store => $store,
    children => 1, extra => "SlidingLimitStoreTimeout ${C}s 50ms\n");

sub breaker_open {
    my $page = http_get($h->url . '/ir-status')->{content} // '';
    my ($v) = $page =~ /^slidinglimit_breaker_open\{store="\Q$store\E\/0"\} (\d+)$/m;
    return $v // -1;
}

# (seconds taken, status, error) of one query to the status handler.
sub ask {
    my ($method, $query) = @_;
    my %hdr = $method eq 'POST' ? ('X-SlidingLimit-Reset' => 1) : ();
    my $t0 = time;
    my $res = HTTP::Tiny->new(timeout => 30)
      ->request($method, $h->url . "/ir-status?$query", { headers => \%hdr });
    my $took = time - $t0;
    my $json = eval { decode_json($res->{content}) } // {};
    return ($took, $res->{status}, $json->{error} // '');
}

# A request opens the breaker: it waits for the connect timeout once.
my $ip = fresh_ip();
my $r = http_get($h->url . '/ir/login.html', 'X-Forwarded-For' => $ip);
ok t_cmp($r->{status}, 200, 'the store does not answer: the request fails open');
ok t_cmp(breaker_open(), 1, '... and the store\'s breaker is open');

# Looks and resets, one after another: each at once, but for a probe.
my (@took, @show, @reset);
for my $k (1 .. 4) {
    my ($t, $s, $e) = ask('GET', "path=/ir/login.html&ip=$ip");
    push @took, $t;
    push @show, "$s" . ($e =~ /^the store did not answer: / ? '' : " ($e)");
    ($t, $s, $e) = ask('POST', "path=/ir/login.html&ip=$ip");
    push @took, $t;
    push @reset, "$s" . ($e =~ /^the store did not reset the budgets \(.*\); the deny cache and the local fallback's state were cleared$/
        ? '' : " ($e)");
}
t_debug('took ' . join(' ', map { sprintf '%.3f', $_ } @took) . ' s');
ok t_cmp("@show", '503 503 503 503', 'GET: 503, the store did not answer');
ok t_cmp("@reset", '503 503 503 503', 'POST: 503, the store did not reset, the local parts were cleared');
my $slow = grep { $_ >= $C * 0.9 } @took;
ok($slow <= 2, "at most the breaker's probes waited for the connect timeout ($slow of 8)");
my $sum = 0;
$sum += $_ for @took;
ok($sum < 4 * $C, sprintf 'the 8 answers took %.2f s in all (a wait each would be %d s)', $sum, 8 * $C);
ok t_cmp(breaker_open(), 1, 'the breaker is still open');

# The reset's log line is written even when the store is not reached.
my $log = $h->error_log;
ok(scalar(() = $log =~ /reset by 127\.0\.0\.1 of the budgets of client ip .*: the store is unavailable/g) >= 2,
    '... the refused resets are logged with the reason');
$h->stop;
close $_ for @$blackhole;
