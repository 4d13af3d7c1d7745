#!/usr/bin/perl
# SPDX-License-Identifier: Apache-2.0
# A back end: prints what mod_slidinglimit put in its environment.
print "Content-Type: text/plain\n\n";
for my $name (qw(SLIDINGLIMIT_RESULT SLIDINGLIMIT_POLICY SLIDINGLIMIT_REMAINING
    HTTP_X_SL_RESULT HTTP_X_SL_REMAINING)) {
    print "$name=", ($ENV{$name} // ''), "\n";
}
