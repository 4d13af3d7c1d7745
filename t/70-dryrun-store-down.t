# SPDX-License-Identifier: Apache-2.0
# SlidingLimitDryRun on never refuses: with SlidingLimitFailMode closed and
# a store that fails every call, requests pass as failed-open, without the
# 503 or its Retry-After; with the store up, dry run decides as usual.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Fault;

plan tests => 5;

# sl_badauth: the store refuses the password, every call fails.
my $ip = fresh_ip();
my @got = map {
    my $r = http_get({ vhost => 'sl_badauth' }, '/f/dryclosed/a', 'X-Forwarded-For' => $ip);
    "$r->{status} " . ($r->{headers}{'x-sl-result'} // '-')
        . (defined $r->{headers}{'retry-after'} ? ' retry-after' : '');
} 1 .. 3;
ok t_cmp($got[0], '200 failed-open', 'store down, dry run, fail-closed: passes');
ok t_cmp("@got", join(' ', ('200 failed-open') x 3), 'every time');
my $r = http_get({ vhost => 'sl_badauth' }, '/f/closed/a', 'X-Forwarded-For' => $ip);
ok t_cmp("$r->{status} $r->{headers}{'x-sl-result'}", '503 failed-closed',
    'the same store down without dry run: 503');

# The store up: dry run decides, counts and never blocks.
$ip = fresh_ip();
@got = map {
    my $r = http_get({ vhost => 'sl_fault' }, '/f/dryclosed/a', 'X-Forwarded-For' => $ip);
    "$r->{status} $r->{headers}{'x-sl-result'}";
} 1 .. 4;
ok t_cmp("@got[0 .. 2]", join(' ', ('200 allowed') x 3), 'the store up: allowed');
ok t_cmp($got[3], '200 dryrun-denied', 'then dryrun-denied, still 200');
