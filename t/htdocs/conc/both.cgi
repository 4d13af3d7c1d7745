#!/bin/sh
# conc/hold.cgi under another limit (t/conf/sl.d/concurrent.conf).
exec ./hold.cgi
