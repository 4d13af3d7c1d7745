# SPDX-License-Identifier: Apache-2.0
# Requests of several units on the log, over two httpd servers sharing one
# Redis: a concurrent burst of requests of 3 units on a limit of 20 admits
# exactly 6 (18 units; a seventh would be 21), whatever server asks. The
# sorted set holds one entry per admitted request, each carrying its
# weight, and the window's total of units beside them. Runs under each
# MPM: exactness under concurrency, with threads or processes.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Httpd;

plan tests => 6;

my $second  = SL::Httpd->start(conf => ['algorithms.conf'], name => 'second');
my @servers = (server_url(), $second->url);

my $ip = fresh_ip();
my ($all, $per) = burst([ map {"$_/alg/cost-log/"} @servers ],
    total => 240, workers => 12, headers => { 'X-Forwarded-For' => $ip, 'X-Batch' => 3 });
t_debug(join(' ', map {"$_=$all->{$_}"} sort keys %$all));
ok t_cmp($all->{200} // 0, 6, 'cost 3 on 20: exactly 6 of 240 admitted over two servers');
ok t_cmp($all->{429} // 0, 234, 'every other request refused with 429');
ok(($per->{ $servers[0] . '/alg/cost-log/' }{429} // 0) > 0
      && ($per->{ $servers[1] . '/alg/cost-log/' }{429} // 0) > 0,
    'both servers refused once the shared budget was spent');

my $key     = sl_key(ip => $ip, policy => 'alg-cost-log');
my $members = redis('ZRANGEBYSCORE', $key, '(0', '+inf');
ok t_cmp(scalar(@$members), 6, 'the log holds one entry per admitted request');
ok t_cmp(scalar(grep {/^3\*/} @$members), 6, '... each named with its weight');
my $total = redis('ZRANGE', $key, 0, 0, 'WITHSCORES');
ok t_cmp(join(' ', @$total), qr/^#\d{16} -18$/, '... and the window holds 18 units');
