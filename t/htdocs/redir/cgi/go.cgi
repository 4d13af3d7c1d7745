#!/usr/bin/perl
# SPDX-License-Identifier: Apache-2.0
# A back end that answers with a local Location: httpd serves the target by
# an internal redirect. The target is the query string.
my $to = $ENV{QUERY_STRING} // '';
$to = '/redir/limited/index.html' unless $to =~ m{\A/redir/[a-z]+/[a-z0-9.]*\z};
print "Location: $to\n\n";
