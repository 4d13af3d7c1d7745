# SPDX-License-Identifier: Apache-2.0
# SlidingLimitFailStatus: under fail-closed, a store that cannot answer (here
# one that refuses our password, so every request fails at once) gets the
# configured status with Retry-After and the JSON body; an inner section
# inherits it, and without it the answer stays 503.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use JSON::PP qw(decode_json);
use SL::Test;
use SL::Fault;

plan tests => 7;

my $r = http_get({ vhost => 'sl_badauth' }, '/f/closed504/a', 'X-Forwarded-For' => fresh_ip());
ok t_cmp($r->{status}, 504, 'store down, fail-closed, SlidingLimitFailStatus 504: 504');
ok t_cmp($r->{headers}{'x-sl-result'}, 'failed-closed', '... marked failed-closed');
ok(($r->{headers}{'retry-after'} // '') =~ /^\d+$/, '... with Retry-After');
my $body = eval { decode_json($r->{content}) } // {};
ok t_cmp($body->{error}{code}, 'SERVICE_UNAVAILABLE', '... and the JSON body');

$r = http_get({ vhost => 'sl_badauth' }, '/f/closed504/inner/a', 'X-Forwarded-For' => fresh_ip());
ok t_cmp($r->{status}, 504, 'an inner section inherits it');

$r = http_get({ vhost => 'sl_badauth' }, '/f/closed/a', 'X-Forwarded-For' => fresh_ip());
ok t_cmp($r->{status}, 503, 'without it: 503');

# The store up: the limit decides as usual.
$r = http_get({ vhost => 'sl_fault' }, '/f/closed504/b', 'X-Forwarded-For' => fresh_ip());
ok t_cmp("$r->{status} $r->{headers}{'x-sl-result'}", '200 allowed', 'store up: decided by Redis');
