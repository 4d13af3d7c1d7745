# SPDX-License-Identifier: Apache-2.0
# Only the initial request counts: mod_dir's DirectoryIndex subrequest and
# fast redirect must not consume quota a second time.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;

plan tests => 4;

my $ip = fresh_ip();
my $key = sl_key(ip => $ip, policy => 'dirindex');
my @st = map { http_get('/dirindex/', 'X-Forwarded-For' => $ip)->{status} } 1 .. 3;
ok t_cmp("@st", '200 200 200', 'three directory requests admitted');
ok t_cmp(redis('ZCARD', $key), 3, 'each counted once');
my $res = http_get('/dirindex/', 'X-Forwarded-For' => $ip);
ok t_cmp($res->{status}, 429, 'the fourth is refused');
ok t_cmp($res->{headers}{'x-ratelimit-limit'}, 3, 'with the quota headers');
