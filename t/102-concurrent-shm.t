# SPDX-License-Identifier: Apache-2.0
# SlidingLimitConcurrent under "SlidingLimitStore shm", on one server:
# exactly N of many held in flight are admitted, releasing one admits one,
# an aborted client releases its lease, and the leases of SIGKILLed
# children expire with the lease (they cannot give anything back). Then a
# graceful restart of a Redis-backed server: requests in flight keep their
# leases through it and give them back when they end.
# Runs under each MPM: children or threads share the table in shared memory.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Time::HiRes qw(time sleep);
use SL::Test;
use SL::Httpd;
use SL::Hold;

plan tests => 12;

my $shm = SL::Httpd->start(conf => ['concurrent.conf'], name => 'conc-shm', store => 'shm');
my $url = $shm->url;
my $ip  = fresh_ip();

my @h = map { hold("$url/conc/hold.cgi", $ip) } 1 .. 5;
wait_until(sub { !grep { !hold_peek($_) } @h }, 20);
my @in  = grep { hold_peek($_) == 200 } @h;
my @out = grep { hold_peek($_) == 429 } @h;
ok t_cmp(scalar(@in) . ' ' . scalar(@out), '2 3', 'shm: five in flight, 2 admitted, 3 refused');
hold_status($_) for @out;
ok t_cmp($out[0]{headers}{'retry-after'}, 1, 'shm: Retry-After: 1');
open_gate($in[0]);
hold_status($in[0]);
my $next = hold("$url/conc/hold.cgi", $ip);
wait_until(sub { hold_peek($next) }, 20);
ok t_cmp(hold_peek($next), 200, 'shm: one released, one admitted');
ok t_cmp(hold_status(hold("$url/conc/hold.cgi", $ip, quick => 1)), 429, 'shm: and full again');
drop($next);
ok wait_until(sub { hold_status(hold("$url/conc/hold.cgi", $ip, quick => 1)) == 200 }, 10),
    'shm: an aborted client released its lease';
open_gate($in[1]);
hold_status($in[1]);

# SIGKILL of every child: the leases they held expire with the lease (3 s).
my $kip = fresh_ip();
my @k = map { hold("$url/conc/short.cgi", $kip) } 1 .. 2;
wait_until(sub { !grep { !hold_peek($_) } @k }, 20);
ok t_cmp(join(' ', map { hold_peek($_) } @k), '200 200', 'shm: two held');
my @children = grep {/^\d+$/} split /\s+/, `pgrep -P ${\ $shm->pid}`;
# None of their leases is renewed after the kill: each has expired the
# lease (3 s) after it, by the clock the shm store reads (this host's), a
# tenth more covering a renewal under way at it. Two requests are held
# once that much has passed: both places are free again, whenever the
# respawned children answer (how late a poll's answer comes tells
# nothing of the lease).
my $t0 = time;
kill 'KILL', @children;
ok(@children > 0, 'shm: ' . scalar(@children) . ' children killed');
drop($_) for @k;
sleep($t0 + 3.1 - time) if time < $t0 + 3.1;
my @again = map { hold("$url/conc/short.cgi", $kip) } 1 .. 2;
wait_until(sub { !grep { !hold_peek($_) } @again }, 20);
my @st = map { hold_peek($_) } @again;
open_gate($_), hold_status($_) for @again;
ok t_cmp($st[0], 200, sprintf('shm: admitted again %.1f s after the kill: within the lease (3 s)', time - $t0));
ok t_cmp($st[1], 200, 'shm: ... and a second one: both killed leases are gone');
$shm->stop;

# A graceful restart while two requests hold their leases (Redis store):
# they keep them (the old generation's children serve them to their end),
# so the new generation refuses a third; then they give them back.
# Room in the scoreboard for the new generation beside the old one's
# children, which stay until their requests end.
my $srv = SL::Httpd->start(conf => ['concurrent.conf'], name => 'conc-graceful',
    extra => "ServerLimit 8\n");
my $gip = fresh_ip();
my $key = sl_key(ip => $gip, policy => 'conc', alg => 'n');
my @g = map { hold($srv->url . '/conc/hold.cgi', $gip) } 1 .. 2;
wait_until(sub { !grep { !hold_peek($_) } @g }, 20);
$srv->graceful;
ok t_cmp(hold_status(hold($srv->url . '/conc/hold.cgi', $gip, quick => 1)), 429,
    'graceful restart: the leases in flight are kept');
open_gate($_) for @g;
ok t_cmp(join(' ', map { hold_status($_) } @g), '200 200', 'graceful restart: both end with their 200');
ok wait_until(sub { redis('ZCARD', $key) == 0 }, 10), '... and give their leases back';
$srv->stop;
