#!/usr/bin/perl
# SPDX-License-Identifier: Apache-2.0
# An ErrorDocument that is a program: it says nothing of the status, which
# httpd then sends as the error's.
print "Content-Type: text/plain\n\ncs 401 program\n";
