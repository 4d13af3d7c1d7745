# SPDX-License-Identifier: Apache-2.0
# Every Redis store has its own series on the status page, labelled with its
# URL as shown in logs (credentials as ***): a virtual host whose own store
# is down shows slidinglimit_breaker_open 1 for that store and 0 for the
# main server's, and its failed calls count as that store's errors, not
# the main store's. The page stays valid for promtool.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Wire;

plan tests => 10;

my $main = sprintf 'redis://127.0.0.1:%d/0', $ENV{SL_TEST_REDIS_PORT};
my $dead = 'redis://***@127.0.0.1:1/0';
my $m0 = metrics();

# The main store answers; the dead one fails and opens its breaker.
my $ip = fresh_ip();
my $s0 = http_get('/basic', 'X-Forwarded-For' => $ip)->{status};
ok($s0 < 400, "the main store decides and admits ($s0)");
my @st = map { http_get({ vhost => 'sl_deadstore' }, '/sm/limited', 'X-Forwarded-For' => $ip)->{status} } 1 .. 3;
ok t_cmp("@st", '200 200 200', 'the host with the dead store fails open');

my $m1 = metrics();
ok t_cmp(metric($m1, 'slidinglimit_breaker_open', store => $dead), 1, "breaker_open{store=\"$dead\"} is 1");
ok t_cmp(metric($m1, 'slidinglimit_breaker_open', store => $main), 0, "breaker_open{store=\"$main\"} is 0");
my $err = metric($m1, 'slidinglimit_store_errors_total', store => $dead)
  - metric($m0, 'slidinglimit_store_errors_total', store => $dead);
ok($err >= 1, "the dead store's errors rose ($err)");
ok t_cmp(metric($m1, 'slidinglimit_store_errors_total', store => $main)
      - metric($m0, 'slidinglimit_store_errors_total', store => $main), 0, "... the main store's did not");
ok(metric($m1, 'slidinglimit_store_calls_total', store => $main)
      > metric($m0, 'slidinglimit_store_calls_total', store => $main), "the main store's calls rose");
ok(metric($m1, 'slidinglimit_store_latency_seconds_count', store => $main) >= 1, 'a latency histogram per store');

my $page = http_get('/wire-status')->{content};
# Each family's samples together, after its TYPE line, as the text format
# wants: one run per family, however many stores.
my (@runs, %runs);
for (split /\n/, $page) {
    my $f;
    if (/^#/) {
        next unless /^# TYPE (\S+)/;
        $f = $1;
    }
    else {
        ($f) = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/ or next;
    }
    $f =~ s/_(?:bucket|sum|count)$// if $f =~ /^slidinglimit_store_latency_seconds/;
    push @runs, $f unless @runs && $runs[-1] eq $f;
}
$runs{$_}++ for @runs;
my @split = grep { $runs{$_} > 1 } sort keys %runs;
ok(!@split, 'every family in one piece (' . scalar(keys %runs) . ' families)') or diag("split: @split");
SKIP: {
    my $promtool = `sh -c 'command -v promtool'`;
    chomp $promtool;
    skip 'promtool not installed', 1 unless $promtool;
    ok(!grep(/sl-dead-secret/, $page) && do {
        open my $p, '|-', "$promtool check metrics >/dev/null 2>&1" or die $!;
        print $p $page;
        close $p;
    }, 'no credentials on the page; promtool check metrics accepts it');
}
