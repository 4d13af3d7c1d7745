# SPDX-License-Identifier: Apache-2.0
# The embedded store (SlidingLimitStore shm) admits exactly N under a
# concurrent burst served by several children (and threads).
# Runs under each MPM: exactness of shared memory under children and threads.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Fault;

plan tests => 4;

my $base = server_url('sl_shm');

my $ip = fresh_ip();
my $res = burst("$base/f/burst/b", total => 80, workers => 8,
    headers => { 'X-Forwarded-For' => $ip });
ok t_cmp($res->{200} // 0, 20, 'exactly 20 of 80 concurrent requests admitted');
ok t_cmp($res->{429} // 0, 60, 'the other 60 refused');

my $r = http_get({ vhost => 'sl_shm' }, '/f/burst/b', 'X-Forwarded-For' => $ip);
ok t_cmp("$r->{status} " . ($r->{headers}{'x-ratelimit-remaining'} // ''), '429 0',
    'still refused afterwards, nothing remaining');
$r = http_get({ vhost => 'sl_shm' }, '/f/burst/b', 'X-Forwarded-For' => fresh_ip());
ok t_cmp($r->{status}, 200, 'another client has its own budget');
