#!/usr/bin/perl
# SPDX-License-Identifier: Apache-2.0
# Holds its request in flight until the gate file its query string names
# exists (t/100-concurrent.t and the next ones); without a name it answers
# at once. It writes a byte every 100 ms meanwhile, so that httpd finds out
# when the client has gone; it gives up after 30 s.
use strict;
use warnings;

$| = 1;
my $id = $ENV{QUERY_STRING} // '';
print "Content-Type: text/plain\n\n";
exit 0 if $id !~ /^[A-Za-z0-9_-]+$/;
my $gate = "$ENV{DOCUMENT_ROOT}/conc/gate/$id";
for (1 .. 300) {
    last if -e $gate;
    print '.';
    select(undef, undef, undef, 0.1);
}
print "done\n";
