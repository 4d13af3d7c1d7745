#!/usr/bin/perl
# SPDX-License-Identifier: Apache-2.0
# A slow back end, held until the test releases it: the query is
# TOKEN-COST; it waits (10 s at most) for t/tmp/af-release-TOKEN, then
# answers with X-Cost: COST. Requests held here are in flight together
# whatever the machine's speed.
use strict;
use warnings;
use Time::HiRes qw(sleep);
my ($token, $cost) = ($ENV{QUERY_STRING} // '') =~ /^([a-z0-9]+)-(\d+)$/;
$token //= 'none';
my $flag = "$ENV{DOCUMENT_ROOT}/../tmp/af-release-$token";
my $n = 0;
while ($n++ < 200) {
    last if -e $flag;
    sleep 0.05;
}
print "Status: 200 OK\nContent-Type: text/plain\nX-Cost: " . ($cost // 1) . "\n\nwaited\n";
