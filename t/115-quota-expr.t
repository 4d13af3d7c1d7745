# SPDX-License-Identifier: Apache-2.0
# SlidingLimit expr:STRING: a limit's quota read from each request (here
# X-Quota, or an environment variable SetEnvIf sets from X-Plan), under the
# Redis store and the embedded one (t/conf/sl.d/failure-vhost.inc). Two
# clients on one location get their own quotas; a client whose quota
# changes keeps its count (one store key whatever the quota) and the next
# request is decided under the new quota, right after a refusal the deny
# cache holds too; the headers say the request's quota; an empty or bad
# value gets quota-default= and a line in the error log; 0 refuses
# without a store call; beside a literal limit in one section, both apply.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use HTTP::Tiny;
use SL::Test;
use SL::Fault;
use SL::Wire qw(sf_parse);

plan tests => 2 * 34 + 2;

my $ua = HTTP::Tiny->new(timeout => 10, max_redirect => 0);

# One request from $ip with X-Quota $q (none when undef).
sub get {
    my ($vhost, $path, $ip, $q, %more) = @_;
    local $_;
    my %h = ('X-Forwarded-For' => $ip, %more);
    $h{'X-Quota'} = $q if defined $q;
    return $ua->get(server_url($vhost) . $path, { headers => \%h });
}

# The statuses of requests from $ip with the quotas @q, in order.
sub seq {
    my ($vhost, $path, $ip, @q) = @_;
    return join ' ', map { get($vhost, $path, $ip, $_)->{status} } @q;
}

sub hits {
    my ($vhost) = @_;
    my $c = $ua->get(server_url($vhost) . '/f/qx-status')->{content} // '';
    my ($n) = $c =~ /^slidinglimit_deny_cache_hits_total (\d+)$/m;
    return $n // 0;
}

for my $vhost (qw(sl_fault sl_shm)) {
    my $store = $vhost eq 'sl_shm' ? 'shm' : 'redis';

    # Two clients, one location, their own quotas.
    my ($a, $b) = (fresh_ip(), fresh_ip());
    ok t_cmp(seq($vhost, '/f/qx/log', $a, 1, 1), '200 429', "$store: client A, quota 1: 200 429");
    ok t_cmp(seq($vhost, '/f/qx/log', $b, 3, 3, 3, 3), '200 200 200 429',
        "$store: client B, quota 3 on the same location: 200 200 200 429");

    # The headers say the request's quota.
    my $ip = fresh_ip();
    my $r = get($vhost, '/f/qx/log', $ip, 7);
    ok t_cmp($r->{headers}{'ratelimit-policy'} // '-', '"fqxlog";q=7;w=60', "$store: RateLimit-Policy q=7");
    ok t_cmp($r->{headers}{'x-ratelimit-limit'} // '-', 7, "$store: X-RateLimit-Limit 7");
    my $sf = sf_parse('list', $r->{headers}{'ratelimit-policy'} // '');
    ok t_cmp($sf ? $sf->{canonical} : "unparsed: $@", '"fqxlog";q=7;w=60', "$store: ... an RFC 8941 list");
    $sf = sf_parse('list', $r->{headers}{'ratelimit'} // '');
    ok t_cmp($sf ? $sf->{canonical} : "unparsed: $@", qr/^"fqxlog";r=6;t=\d+$/, "$store: RateLimit r=6, an RFC 8941 list");
    ok t_cmp($r->{headers}{'x-ratelimit-remaining'} // '-', 6, "$store: ... 6 remaining");
    $r = get($vhost, '/f/qx/log', $ip, 12);
    ok t_cmp($r->{headers}{'ratelimit-policy'} // '-', '"fqxlog";q=12;w=60', "$store: the next request's q=12");
    ok t_cmp($r->{headers}{'x-ratelimit-remaining'} // '-', 10, "$store: ... on the same count: 10 remaining");

    # A quota raised right after a refusal (which the deny cache holds
    # under Redis: the admission that used the last unit put it there, and
    # the next request at quota 2 is answered from it) is used at once.
    for my $alg (qw(log counter)) {
        $ip = fresh_ip();
        ok t_cmp(seq($vhost, "/f/qx/$alg", $ip, 2, 2), '200 200', "$store $alg: quota 2: 200 200");
        my $before = hits($vhost);
        ok t_cmp(seq($vhost, "/f/qx/$alg", $ip, 2), '429', "$store $alg: ... the third at 2: 429");
        if ($store eq 'redis') {
            ok(hits($vhost) > $before, "redis $alg: ... answered from the deny cache");
        }
        else {
            ok(hits($vhost) == $before, "shm $alg: ... the shm store has no deny cache");
        }
        ok t_cmp(seq($vhost, "/f/qx/$alg", $ip, 3, 3), '200 429',
            "$store $alg: raised to 3: the very next request passes, one only");
        ok t_cmp(seq($vhost, "/f/qx/$alg", $ip, 1), '429', "$store $alg: lowered to 1: refused (3 used)");
    }

    # gcra: the burst is the request's quota; the budget is time, the
    # window's share already used: 1 of 4 (15 s), then 1 of 2 (30 s) fits
    # in 60 s, another of 2 does not, one of 4 (15 s) does.
    $ip = fresh_ip();
    ok t_cmp(seq($vhost, '/f/qx/gcra', $ip, 4, 2, 2, 4, 4), '200 200 429 200 429',
        "$store gcra: quotas 4, 2, 2, 4, 4: 200 200 429 200 429");

    # Bad and empty values: quota-default=2, each logged.
    $ip = fresh_ip();
    ok t_cmp(seq($vhost, '/f/qx/log', $ip, 'abc', '', '99999999999'), '200 200 429',
        "$store: abc, empty, 11 digits: quota-default=2");
    $ip = fresh_ip();
    ok t_cmp(seq($vhost, '/f/qx/log', $ip, undef, undef, undef), '200 200 429', "$store: no header: quota-default=2");
    ok t_cmp(seq($vhost, '/f/qx/log', fresh_ip(), '-3', '1.5', '0x9'), '200 200 429',
        "$store: -3, 1.5, 0x9: quota-default=2");

    # 0: no requests at all, nothing asked or consumed.
    $ip = fresh_ip();
    $r = get($vhost, '/f/qx/log', $ip, 0);
    ok t_cmp($r->{status}, 429, "$store: quota 0: 429");
    ok t_cmp($r->{headers}{'retry-after'} // '-', 60, "$store: ... Retry-After a window");
    ok t_cmp($r->{headers}{'ratelimit-policy'} // '-', '"fqxlog";q=0;w=60', "$store: ... q=0");
    ok t_cmp(seq($vhost, '/f/qx/log', $ip, 1, 1), '200 429', "$store: ... and consumed nothing");

    # A dry run lets a quota of 0 through, as dryrun-denied.
    $ip = fresh_ip();
    my @d = map { get($vhost, '/f/qx/dry', $ip, $_) } 0, 1, 1;
    ok t_cmp(join(' ', map { "$_->{status}/$_->{headers}{'x-sl-result'}" } @d),
        '200/dryrun-denied 200/allowed 200/dryrun-denied', "$store: dry run: quotas 0, 1, 1");

    # count=: the reservation under the request's quota is given back (500
    # is never the status): quota 1 admits request after request, and the
    # headers say q=1.
    $ip = fresh_ip();
    my $keep = HTTP::Tiny->new(timeout => 10, max_redirect => 0, keep_alive => 1);
    my @c = map { $keep->get(server_url($vhost) . '/f/qx/count',
        { headers => { 'X-Forwarded-For' => $ip, 'X-Quota' => 1 } }) } 1 .. 3;
    ok t_cmp(join(' ', map { $_->{status} } @c), '200 200 200', "$store: count=500 under quota 1: given back, 200 x3");
    ok t_cmp($c[2]{headers}{'x-ratelimit-limit'} // '-', 1, "$store: ... X-RateLimit-Limit 1");

    # Beside a literal limit: both apply.
    $ip = fresh_ip();
    ok t_cmp(seq($vhost, '/f/qx/mixed', $ip, 10, 10, 10, 10, 10), '200 200 200 200 429',
        "$store: literal 4 beside quota 10: the literal refuses the fifth");
    $ip = fresh_ip();
    ok t_cmp(seq($vhost, '/f/qx/mixed', $ip, 1, 1), '200 429', "$store: ... and quota 1 the second");

    # From an environment variable.
    my @plan = map { my $p = $_; my $i = fresh_ip();
        scalar(grep { get($vhost, '/f/qx/env', $i, undef, 'X-Plan' => $p)->{status} == 200 } 1 .. 6) }
        qw(gold free none);
    ok t_cmp("@plan", '5 1 2', "$store: SetEnvIf plans gold, free, none: 5, 1, 2 admitted");

    # A fixed cost above the request's quota: 413, as a cost=expr: one.
    $ip = fresh_ip();
    ok t_cmp(seq($vhost, '/f/qx/cost', $ip, 2, 9, 9, 9, 9), '413 200 200 200 429',
        "$store: cost=3 under quota 2: 413; under 9: three");
}

my @w = error_log_lines(qr/policy fqxlog: quota 'abc' is not a whole number .*using quota-default=2/);
ok(@w >= 2, 'the bad value is logged, naming the policy and the default (' . scalar(@w) . ')');
@w = error_log_lines(qr/policy fqxlog: quota '' is not a whole number/);
ok(@w >= 2, 'an empty value too');
