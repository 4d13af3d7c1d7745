#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# conc/hold.cgi under another limit (t/conf/sl.d/concurrent.conf).
exec ./hold.cgi
