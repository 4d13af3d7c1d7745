#!/usr/bin/perl
# SPDX-License-Identifier: Apache-2.0
# A form login as WordPress answers it (t/140-149): a wrong password, or
# none, is 200 and the form again; the right one ("right-" and the account
# in lower case) a 302. Every answer says what body arrived (its length and
# SHA-1), so a test sees that the application got the whole body, unchanged.
use strict;
use warnings;
use Digest::SHA qw(sha1_hex);

binmode STDIN;
my $body = '';
if (defined $ENV{CONTENT_LENGTH} && $ENV{CONTENT_LENGTH} ne '') {
    my $want = $ENV{CONTENT_LENGTH};
    while (length($body) < $want) {
        my $n = read(STDIN, $body, $want - length($body), length($body));
        last unless $n;
    }
}
else {
    local $/;
    $body = <STDIN> // '';
}
my %f;
if (($ENV{CONTENT_TYPE} // '') =~ m{^application/x-www-form-urlencoded}i) {
    for my $pair (split /&/, $body) {
        my ($k, $v) = map { my $s = $_ // ''; $s =~ tr/+/ /; $s =~ s/%([0-9A-Fa-f]{2})/chr hex $1/ge; $s }
          split /=/, $pair, 2;
        $f{$k} = $v;
    }
}
my $user = lc(($f{log} // '') =~ s/^\s+|\s+$//gr);
my $head = sprintf "X-Body-Length: %d\nX-Body-SHA1: %s\n", length $body, sha1_hex($body);
if ($user ne '' && ($f{pwd} // '') eq "right-$user") {
    print "Status: 302 Found\nLocation: /form/welcome\n$head\n";
}
else {
    print "Status: 200 OK\nContent-Type: text/plain\n$head\nlogin form\n";
}
