#!/usr/bin/perl
# SPDX-License-Identifier: Apache-2.0
# A back end that reports what the request cost in a header (as an LLM
# gateway reports its tokens): the query string is the value, "err" puts it
# in a 500 response.
my $q = $ENV{QUERY_STRING} // '';
my $status = $q =~ s/^err-// ? "500 Internal Server Error" : "200 OK";
print "Status: $status\nContent-Type: text/plain\nX-Cost: $q\n\nbody\n";
