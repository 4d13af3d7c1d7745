#!/usr/bin/perl
# A back end that answers with interim responses first (t/120): two
# 103 Early Hints, each with a Link and a cost of its own in X-Cost (the
# second in lower case), then the 200, whose X-Cost is the query string.
# An nph- script: httpd passes its output to the proxy as it is.
$| = 1;
my $q = $ENV{QUERY_STRING} // '';
my $p = $ENV{SERVER_PROTOCOL} // 'HTTP/1.1';
print "$p 103 Early Hints\r\nLink: </a.css>; rel=preload\r\nX-Cost: 4242\r\n\r\n";
print "$p 103 Early Hints\r\nx-cost: 4243\r\nLink: </b.js>; rel=preload\r\n\r\n";
print "$p 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n",
  "Connection: close\r\nX-Cost: $q\r\n\r\nbody\n";
