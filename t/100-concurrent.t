# SPDX-License-Identifier: Apache-2.0
# SlidingLimitConcurrent over two httpd servers sharing one Redis: requests
# held in flight by conc/hold.cgi (SL::Hold) until the test releases them,
# so the overlap is forced, never hoped for. Exactly N of many in flight at
# once are admitted whatever server they reach; the others get 429 with a
# short Retry-After; releasing one admits one; a client that closes its
# connection mid-request releases its lease; a SIGKILLed httpd's leases
# expire within the lease.
# Runs under each MPM: the lease is released by the request pool's cleanup,
# in a worker thread or a prefork child.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use POSIX ();
use Time::HiRes qw(time sleep);
use SL::Test;
use SL::Httpd;
use SL::Hold;

plan tests => 14;

my $second = SL::Httpd->start(conf => ['concurrent.conf'], name => 'conc-second');
my @servers = (server_url(), $second->url);

my $ip  = fresh_ip();
my $key = sl_key(ip => $ip, policy => 'conc', alg => 'n');
my $in_flight = sub { redis('ZCARD', $_[0] // $key) };

# Six at once, three on each server, none released: exactly two admitted.
my @h = map { hold($servers[$_ % 2] . '/conc/hold.cgi', $ip) } 0 .. 5;
wait_until(sub { !grep { !hold_peek($_) } @h }, 20);
my @st = map { hold_peek($_) } @h;
my @in = grep { hold_peek($_) == 200 } @h;
my @out = grep { hold_peek($_) == 429 } @h;
ok t_cmp(scalar(@in) . ' ' . scalar(@out), '2 4', "six in flight over two servers: 2 admitted, 4 refused (@st)");
ok t_cmp($in_flight->(), 2, 'the store holds two leases');
hold_status($_) for @out;
ok t_cmp($out[0]{headers}{'retry-after'}, 1, 'a refusal says Retry-After: 1');

# Releasing one admits one, on either server.
open_gate($in[0]);
ok t_cmp(hold_status($in[0]), 200, 'a released request ends with its 200');
ok wait_until(sub { $in_flight->() == 1 }, 10), 'its lease is gone';
my $next = hold($servers[1] . '/conc/hold.cgi', $ip);
wait_until(sub { hold_peek($next) }, 10);
ok t_cmp(hold_peek($next), 200, 'the next request is admitted');
my $over = hold($servers[0] . '/conc/hold.cgi', $ip, quick => 1);
ok t_cmp(hold_status($over), 429, 'and one more is refused again');

# A client that goes away mid-request gives its lease back.
drop($next);
ok wait_until(sub { $in_flight->() == 1 }, 10), 'an aborted client released its lease';
my $after = hold($servers[0] . '/conc/hold.cgi', $ip, quick => 1);
ok t_cmp(hold_status($after), 200, 'a request is admitted in its place');
open_gate($in[1]);
hold_status($in[1]);
ok wait_until(sub { $in_flight->() == 0 }, 10), 'no lease is left once all ended';

# SIGKILL of the httpd holding leases: they expire with the lease (3 s).
my $kip  = fresh_ip();
my $kkey = sl_key(ip => $kip, policy => 'conc-short', alg => 'n');
my @k = map { hold($servers[1] . '/conc/short.cgi', $kip) } 1 .. 2;
wait_until(sub { !grep { !hold_peek($_) } @k }, 20);
ok t_cmp(join(' ', map { hold_peek($_) } @k), '200 200', 'two held on the second server');
ok t_cmp($in_flight->($kkey), 2, '... each with its lease');
my $pid = $second->pid;
# None of these leases is renewed after the kill, and each is scored
# with its last renewal: by the store's clock (this host's) each has
# expired the lease (3 s) after the kill, a tenth more covering a renewal
# under way at it. The request goes once that much has passed, however
# long a loaded host then takes to answer it (how late a poll's answer
# comes tells nothing of the lease); a renewal sent before the kill that
# a stalled redis-server scored late gets one more second.
my $t0 = time;
kill 'KILL', -$pid;
waitpid($pid, 0);
$second->{pid} = undef;
sleep($t0 + 3.1 - time) if time < $t0 + 3.1;
my $back = wait_until(sub { hold_status(hold($servers[0] . '/conc/short.cgi', $kip, quick => 1)) == 200 }, 1);
ok $back, sprintf('the main server admits again %.1f s after the kill: within the lease (3 s)', time - $t0);
ok t_cmp($in_flight->($kkey), 0, "... the killed server's leases are gone from the store");
drop($_) for @k;
