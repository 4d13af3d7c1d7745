# SPDX-License-Identifier: Apache-2.0
# The first real limit end to end: exactly N admitted, then 429 with the
# contract's headers and body; a second client has its own budget.
# Runs under each MPM: store calls pipelined (threads) or direct.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use POSIX qw(ceil);
use SL::Test;
use SL::Algo;

plan tests => 24;

my $ip = fresh_ip();
my $key = sl_key(ip => $ip, policy => 'basic');

for my $i (1 .. 5) {
    my $res = http_get('/basic/', 'X-Forwarded-For' => $ip);
    ok t_cmp($res->{status}, 200, "request $i of 5 admitted");
    ok t_cmp($res->{headers}{'x-ratelimit-remaining'}, 5 - $i,
        "X-RateLimit-Remaining counts down ($i)");
}
t_debug("key $key");
ok t_cmp(redis('ZCARD', $key), 5, 'the log in Redis holds the 5 admissions');

# The refusal's store time lies between these two readings of Redis' clock.
my $t0 = store_now();
my $res = http_get('/basic/', 'X-Forwarded-For' => $ip);
my $t1 = store_now();
ok t_cmp($res->{status}, 429, 'request 6 refused with 429');
my $h = $res->{headers};
my $retry = $h->{'retry-after'} // -1;
ok($retry >= 1 && $retry <= 60, "Retry-After $retry within the window");
ok t_cmp($h->{'content-type'}, qr{^application/json}, 'JSON body');
my $unit = $retry == 1 ? 'second' : 'seconds';
ok t_cmp($res->{content},
    qr/^\{"error":\{"code":"TOO_MANY_REQUESTS","message":"Rate limit exceeded\. Try again in $retry $unit\.","retry_after_seconds":$retry\}\}/,
    'body names the wait');
ok t_cmp($h->{'ratelimit-policy'}, '"basic";q=5;w=60', 'RateLimit-Policy');
ok t_cmp($h->{ratelimit}, "\"basic\";r=0;t=$retry", 'RateLimit says r=0 and t=Retry-After');
ok t_cmp($h->{'x-ratelimit-limit'}, 5, 'X-RateLimit-Limit');
ok t_cmp($h->{'x-ratelimit-remaining'}, 0, 'X-RateLimit-Remaining 0');

# The wait is exact: the oldest admission expires 60 s after it was made
# (E, store microseconds). Retry-After is E minus the refusal's time,
# rounded up; X-RateLimit-Reset is E itself, rounded up.
my $oldest = redis('ZRANGE', $key, 0, 0, 'WITHSCORES');
my $E = $oldest->[1] + 60e6;
my ($lo, $hi) = (ceil(($E - $t1) / 1e6), ceil(($E - $t0) / 1e6));
ok($retry >= $lo && $retry <= $hi,
    "Retry-After $retry is the true wait rounded up ($lo..$hi)");
ok t_cmp($h->{'x-ratelimit-reset'}, ceil($E / 1e6), 'X-RateLimit-Reset is the expiry, rounded up');
ok t_cmp(redis('ZCARD', $key), 5, 'a refused request consumes nothing');

my $other = fresh_ip();
$res = http_get('/basic/', 'X-Forwarded-For' => $other);
ok t_cmp($res->{status}, 200, 'another client has its own budget');
ok t_cmp($res->{headers}{'x-ratelimit-remaining'}, 4, '... and it is full');
