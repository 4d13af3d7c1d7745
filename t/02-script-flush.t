# SPDX-License-Identifier: Apache-2.0
# Redis forgets the script (SCRIPT FLUSH, restart): the module loads it again
# and the next requests are still limited correctly.
# Runs under each MPM: the reload after NOSCRIPT, pipelined or direct.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;

plan tests => 6;

my $ip = fresh_ip();
for my $i (1 .. 2) {
    ok t_cmp(http_get('/flush/', 'X-Forwarded-For' => $ip)->{status}, 200,
        "request $i admitted");
}
ok t_cmp(redis('SCRIPT', 'FLUSH'), 'OK', 'SCRIPT FLUSH');
my @after = map { http_get('/flush/', 'X-Forwarded-For' => $ip)->{status} } 1 .. 3;
ok t_cmp("@after", '200 200 429', 'after the flush: 2 more admitted, then refused');
ok t_cmp(redis('ZCARD', sl_key(ip => $ip, policy => 'flush')), 4, '4 admissions logged');
my $scripts = redis('SCRIPT', 'EXISTS', 'x' x 40);
ok(ref $scripts eq 'ARRAY', 'redis still answers');
