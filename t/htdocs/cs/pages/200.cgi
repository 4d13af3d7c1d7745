#!/usr/bin/perl
# SPDX-License-Identifier: Apache-2.0
# An ErrorDocument that is a program and says its own status: the client
# gets a 200 for a failed login.
print "Status: 200 OK\nContent-Type: text/plain\n\ncs 200 program\n";
