# SPDX-License-Identifier: Apache-2.0
# A Redis store that cannot be used from the start (here a cluster none of
# whose 65 seeds answers; a client that cannot be made at all, which only
# running out of memory or locks can cause now that the client holds any
# number of nodes, takes the same way) is a store that does not answer: the
# configured fail mode applies to its requests, never a silent switch to
# the local shared-memory store, and the error log says so.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Fault;

plan tests => 5;

sub result {
    my ($path, $ip) = @_;
    my $r = http_get({ vhost => 'sl_noclient' }, $path, 'X-Forwarded-For' => $ip);
    return "$r->{status} " . ($r->{headers}{'x-sl-result'} // '-');
}

ok t_cmp(result('/f/closed/a', fresh_ip()), '503 failed-closed',
    'fail-closed: 503');
ok t_cmp(result('/f/nofb/a', fresh_ip()), '200 failed-open',
    'fail-open without the fallback: passes as failed-open');
my $ip = fresh_ip();
my @got = map { result('/f/open/a', $ip) } 1 .. 4;
ok t_cmp("@got[0 .. 2]", join(' ', ('200 failed-open') x 3),
    'fail-open with the fallback: failed-open');
ok t_cmp($got[3], '429 denied', '... and the fallback enforces the limit');
my @l = error_log_lines(
    qr/(?:cannot set up the client for|store) cluster:.*(?:the fail mode applies|applying the fail mode)/);
ok(scalar(@l) >= 1, 'the error log says the store cannot be used');
