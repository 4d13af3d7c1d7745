# SPDX-License-Identifier: Apache-2.0
# cost=expr:: a request's cost from an ap_expr, under the Redis store and
# the embedded one (t/conf/sl.d/failure-vhost.inc). A header's number is
# consumed as that many units; the body's length counts in KiB through
# cost-unit=1024; an empty value or 0 costs 1. A cost above what the limit
# holds (the burst under gcra) is refused with 413 and a value that is no
# whole number with 400, both with a JSON reason, before any store call:
# nothing is consumed from any limit of the request. A dry run lets them
# through; count= gives back the cost it reserved. Under Redis, a refusal
# the deny cache holds for one cost does not refuse a cheaper request. On
# the log a request of a million units is one entry like any other: the
# store's work and memory do not grow with a cost.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use HTTP::Tiny;
use IO::Socket::INET;
use JSON::PP qw(decode_json);
use SL::Test;
use SL::Fault;

plan tests => 2 * 37 + 3;

# One request from $ip; returns the response (HTTP::Tiny, headers lower-cased).
sub batch {
    my ($vhost, $path, $ip, $n, $ua) = @_;
    # Called from map: Apache::Test's first look at the configuration
    # reads into $_, here a read-only constant.
    local $_;
    $ua //= HTTP::Tiny->new(timeout => 10, max_redirect => 0);
    my %h = ('X-Forwarded-For' => $ip);
    $h{'X-Batch'} = $n if defined $n;
    return $ua->get(server_url($vhost) . $path, { headers => \%h });
}

sub left { $_[0]{headers}{'x-ratelimit-remaining'} // '-' }

# The JSON error code of a refusal ('-' when the body is no such JSON).
sub code_of {
    my ($res) = @_;
    my $j = eval { decode_json($res->{content}) };
    return $j && ref $j->{error} eq 'HASH' ? $j->{error}{code} : '-';
}

# A request whose headers announce a body that is never sent: the module
# refuses it before the body is read. Returns (status, headers, body).
sub announce {
    my ($vhost, $path, $ip, $length) = @_;
    my ($host, $port) = server_url($vhost) =~ m{^http://([^:/]+):(\d+)};
    my $s = IO::Socket::INET->new(PeerAddr => $host, PeerPort => $port,
        Timeout => 10) or die "connect: $!";
    print $s "POST $path HTTP/1.1\r\nHost: $host\r\nX-Forwarded-For: $ip\r\n"
      . "Content-Length: $length\r\nConnection: close\r\n\r\n";
    local $/;
    my $got = <$s> // '';
    close $s;
    my ($head, $body) = split /\r\n\r\n/, $got, 2;
    my ($status) = ($head // '') =~ m{^HTTP/1\.\d (\d{3})};
    return ($status // 0, $head // '', $body // '');
}

for my $vhost (qw(sl_fault sl_shm)) {
    my $store = $vhost eq 'sl_shm' ? 'shm' : 'redis';

    # From a header: 3 then 4 of 10. 4 more do not fit in the 3 left, 3 do:
    # under Redis the refusal at cost 4 sits in the deny cache, and must
    # not refuse the cheaper request.
    my $ip = fresh_ip();
    my @r = map { batch($vhost, '/f/cx/batch', $ip, $_) } 3, 4, 4, 3, 1;
    ok t_cmp(join(' ', map { $_->{status} } @r), '200 200 429 200 429',
        "$store: X-Batch 3, 4, 4, 3, 1 on 10");
    ok t_cmp(join(' ', map { left($_) } @r[0, 1, 3]), '7 3 0', "$store: ... leaving 7, 3, 0");
    like($r[1]{headers}{ratelimit} // '', qr/;r=3;/, "$store: ... RateLimit r=3 after the second");
    ok t_cmp($r[2]{headers}{'retry-after'} // '-', qr/^\d+$/, "$store: ... the refusal is a 429 with Retry-After");

    # No header, an empty one, 0: one unit each.
    $ip = fresh_ip();
    @r = (batch($vhost, '/f/cx/batch', $ip), batch($vhost, '/f/cx/batch', $ip, ''),
        batch($vhost, '/f/cx/batch', $ip, '0'), batch($vhost, '/f/cx/batch', $ip, '007'));
    ok t_cmp(join(' ', map { left($_) } @r), '9 8 7 0', "$store: absent, empty and 0 cost 1, 007 costs 7");

    # Above the limit: 413 with its JSON reason, no Retry-After, nothing
    # consumed (a 20-digit value is just as much too large).
    $ip = fresh_ip();
    my @over = map { batch($vhost, '/f/cx/batch', $ip, $_) } '11', '99999999999999999999', '9' x 400;
    ok t_cmp(join(' ', map { $_->{status} } @over), '413 413 413', "$store: costs 11, 20 digits, 400 digits on 10: 413");
    ok t_cmp(code_of($over[0]), 'COST_EXCEEDS_LIMIT', "$store: ... JSON code COST_EXCEEDS_LIMIT");
    like($over[0]{content}, qr/"policy":"fcxbatch","limit":10\b/, "$store: ... naming the policy and what it holds");
    ok(!defined $over[0]{headers}{'retry-after'}, "$store: ... without Retry-After (waiting never admits it)");
    ok t_cmp($over[0]{headers}{'x-sl-result'}, 'denied', "$store: ... logged as denied");
    ok t_cmp(left(batch($vhost, '/f/cx/batch', $ip, 1)), 9, "$store: ... and nothing consumed");

    # Not a whole number: 400, nothing consumed, never a crash.
    $ip = fresh_ip();
    my @bad = ('abc', '-1', '1e9', '5abc', '0x10', '1.5', '+3', '5 5', '9' x 30 . 'x');
    my @st  = map { batch($vhost, '/f/cx/batch', $ip, $_) } @bad;
    ok t_cmp(join(' ', map { $_->{status} } @st), join(' ', (400) x @bad),
        "$store: " . join(', ', @bad[0 .. 7]) . ', 30 nines and an x: 400');
    ok t_cmp(join(' ', map { code_of($_) } @st), join(' ', ('BAD_COST') x @bad),
        "$store: ... JSON code BAD_COST");
    ok t_cmp(left(batch($vhost, '/f/cx/batch', $ip, 2)), 8, "$store: ... nothing consumed");

    # The body's length in KiB: 3000 bytes are 3, 1024 are 1, 1025 are 2,
    # none is 1.
    $ip = fresh_ip();
    my $ua = HTTP::Tiny->new(timeout => 10, max_redirect => 0);
    my $url = server_url($vhost) . '/f/cx/kib';
    my @k;
    for my $len (3000, 1024, 1025) {
        push @k, $ua->post($url, { headers => { 'X-Forwarded-For' => $ip },
            content => 'x' x $len });
    }
    push @k, $ua->get($url, { headers => { 'X-Forwarded-For' => $ip } });
    ok t_cmp(join(' ', map { left($_) } @k), '97 96 94 93',
        "$store: Content-Length 3000, 1024, 1025, none in KiB on 100");
    # 100 KiB and one byte: more than the limit holds, refused before the
    # body is read.
    my ($status, $head, $body) = announce($vhost, '/f/cx/kib', $ip, 100 * 1024 + 1);
    ok t_cmp($status, 413, "$store: Content-Length 102401 on 100 KiB: 413 before the body");
    like($body, qr/"code":"COST_EXCEEDS_LIMIT"/, "$store: ... with its JSON reason");
    ok t_cmp(left($ua->get($url, { headers => { 'X-Forwarded-For' => $ip } })), 92,
        "$store: ... and consumed nothing");

    # A chunked body announces no length: it costs 1 where the cost is
    # the length, and what an <If> on Transfer-Encoding gives it (10)
    # next to 3000 bytes costing 3 under the same name.
    $ip = fresh_ip();
    my @chunks;
    my $chunked = sub { my @c = ('x' x 3000); return sub { shift @c } };
    push @chunks, $ua->post($url, { headers => { 'X-Forwarded-For' => $ip }, content => $chunked->() });
    my $curl = server_url($vhost) . '/f/cx/chunk';
    push @chunks, $ua->post($curl, { headers => { 'X-Forwarded-For' => $ip }, content => $chunked->() });
    push @chunks, $ua->post($curl, { headers => { 'X-Forwarded-For' => $ip }, content => 'x' x 3000 });
    ok t_cmp(join(' ', map { left($_) } @chunks), '99 90 87',
        "$store: a chunked 3000 bytes cost 1 by length, 10 by the <If>, beside 3000 announced");
    ok t_cmp(join(' ', map { $_->{status} } @chunks), '200 200 200', "$store: ... all admitted");

    # gcra holds its burst: 6 never fits a burst of 5, 5 does.
    $ip = fresh_ip();
    @r = map { batch($vhost, '/f/cx/gcra', $ip, $_) } 6, 5;
    ok t_cmp(join(' ', map { $_->{status} } @r), '413 200', "$store: gcra burst=5: 6 is 413, 5 passes");
    like($r[0]{content}, qr/"limit":5\b/, "$store: ... the limit named is the burst");

    # Two limits: a bad cost on one consumes from neither.
    $ip = fresh_ip();
    @r = map { batch($vhost, '/f/cx/two', $ip, $_) } 'x', 21, 1;
    ok t_cmp(join(' ', map { $_->{status} } @r), '400 413 200', "$store: two limits: x, 21, 1");
    ok t_cmp(left($r[2]), 9, "$store: ... the fixed limit lost only the last request's unit");
    like($r[1]{content}, qr/"policy":"fcxtwob"/, "$store: ... the 413 names the limit that cannot take it");

    # Dry run: never refused, nothing consumed by what would have been.
    $ip = fresh_ip();
    @r = map { batch($vhost, '/f/cx/dry', $ip, $_) } 11, 'x', 4, 7;
    ok t_cmp(join(' ', map { $_->{status} } @r), '200 200 200 200', "$store: dry run: 11, x, 4, 7 all pass");
    ok t_cmp(join(' ', map { $_->{headers}{'x-sl-result'} } @r),
        'dryrun-denied dryrun-denied allowed dryrun-denied', "$store: ... as dryrun-denied, allowed, dryrun-denied");
    ok t_cmp(left($r[2]), 6, "$store: ... the 4 consumed 4, the others nothing");
    ok t_cmp(left(batch($vhost, '/f/cx/dry', $ip, 6)), 0, "$store: ... 6 still fit");

    # count=500 (never the status here): every request reserves its cost
    # and gives it back after the response. On one connection, the next
    # request is read after the previous one's give-back.
    $ip = fresh_ip();
    $ua = HTTP::Tiny->new(timeout => 10, max_redirect => 0, keep_alive => 1);
    @r = map { batch($vhost, '/f/cx/count', $ip, $_, $ua) } 4, 4, 4, 10;
    ok t_cmp(join(' ', map { $_->{status} } @r), '200 200 200 200', "$store: count=500: 4, 4, 4, 10 on 10 all pass");
    ok t_cmp(join(' ', map { left($_) } @r), '6 6 6 0', "$store: ... each given back what it reserved");

    # A million units on the log, twice, fill 2000000; one unit more waits
    # for the first to leave the 600 s window. Under Redis the key holds
    # the two requests and the window's total in a few hundred bytes,
    # where one entry per unit took 2000000 entries (and seconds of the
    # server's time, for everyone).
    $ip = fresh_ip();
    @r = map { batch($vhost, '/f/cx/big', $ip, $_) } 1000000, 1000000, 1;
    ok t_cmp(join(' ', map { $_->{status} } @r), '200 200 429', "$store: cost 1000000 twice on 2000000, then 1");
    ok t_cmp(join(' ', map { left($_) } @r), '1000000 0 0', "$store: ... leaving 1000000, then 0");
    ok t_cmp($r[2]{headers}{'retry-after'} // '-', qr/^(?:599|600)$/,
        "$store: ... the refusal waits for the first million to leave the window");
    if ($store eq 'redis') {
        my $key = sl_key(prefix => 'slfault', ip => $ip, policy => 'fcxbig');
        ok t_cmp(fault_redis('ZCOUNT', $key, '(0', '+inf'), 2, 'redis: ... the log holds 2 requests, not 2000000 units');
        my $total = fault_redis('ZRANGE', $key, 0, 0, 'WITHSCORES');
        ok t_cmp(join(' ', @$total), qr/^#\d{16} -2000000$/, 'redis: ... and the units in its window');
        my $bytes = fault_redis('MEMORY', 'USAGE', $key);
        ok($bytes < 1024, "redis: ... in $bytes bytes");
    }

    # The refusal is JSON like the module's others.
    $ip = fresh_ip();
    my $res = batch($vhost, '/f/cx/batch', $ip, 'nope');
    like($res->{headers}{'content-type'} // '', qr{^application/json}, "$store: a 400 is application/json");
    ok t_cmp($res->{headers}{'x-sl-result'}, 'denied', "$store: ... logged as denied");
    ok t_cmp(left(batch($vhost, '/f/cx/batch', $ip, 10)), 0, "$store: ... and the whole limit is still there");
}
