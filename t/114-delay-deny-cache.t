# SPDX-License-Identifier: Apache-2.0
# delay= and the deny cache: an admission that leaves a limit exhausted
# tells the cache when the next one fits, so the request after it waits on
# that time without a store call and makes one call, when it fits: one
# script call per request, waited or not. Redis (the shm store has no
# deny cache).
# Runs under each MPM
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Time::HiRes qw(time);
use SL::Test;

plan tests => 4;

# The count of script calls is INFO commandstats' failed_calls (script_calls).
my $calls_skip = redis_at_least(6, 2) ? ''
  : "commandstats' failed_calls need Redis 6.2; this one is " . redis_version();
my $calls = sub { $calls_skip ? 0 : script_calls() };

my $ip = fresh_ip();
my $c0 = $calls->();
my $t1 = time;
my $r1 = http_get('/delay/wait.html', 'X-Forwarded-For' => $ip);
my $c1 = $calls->();
my $r2 = http_get('/delay/wait.html', 'X-Forwarded-For' => $ip);
my $t2 = time;
my $c2 = $calls->();

ok t_cmp("$r1->{status} $r2->{status}", '200 200', 'the second request is admitted after its wait');
ok($t2 >= $t1 + 1.99, sprintf('... no earlier than 2s after the first (%.3fs)', $t2 - $t1));
SKIP: {
    skip $calls_skip, 2 if $calls_skip;
    ok t_cmp($c1 - $c0, 1, 'the first: one script call');
    ok t_cmp($c2 - $c1, 1, 'the second: one script call (the wait was on the deny cache)');
}
