# SPDX-License-Identifier: Apache-2.0
# The failure tests' Redis forgets the script (SCRIPT FLUSH) or everything
# (FLUSHALL): no request fails, the script is loaded again, the breaker
# stays closed. On the virtual host with generous timeouts: this is about
# the script, not about a slow answer on a loaded host.
# Runs under each MPM: reloads after NOSCRIPT, pipelined or direct.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Fault;

plan tests => 8;

my $store = quotemeta store_display();
my $down0 = () = error_log_lines(qr/store $store failed \(/);
my $ip  = fresh_ip();
my $key = sl_key(ip => $ip, policy => 'fopen', prefix => 'slfault');

my @r = map { http_get({ vhost => 'sl_fault_patient' }, '/f/open/s', 'X-Forwarded-For' => $ip)->{headers}{'x-sl-result'} } 1 .. 2;
ok t_cmp("@r", 'allowed allowed', 'two admitted');

ok t_cmp(fault_redis('SCRIPT', 'FLUSH'), 'OK', 'SCRIPT FLUSH');
my $res = http_get({ vhost => 'sl_fault_patient' }, '/f/open/s', 'X-Forwarded-For' => $ip);
ok t_cmp("$res->{status} $res->{headers}{'x-sl-result'}", '200 allowed',
    'after SCRIPT FLUSH: decided by Redis, the third admitted');
$res = http_get({ vhost => 'sl_fault_patient' }, '/f/open/s', 'X-Forwarded-For' => $ip);
ok t_cmp($res->{status}, 429, 'and the fourth refused');
ok t_cmp(fault_redis('ZCARD', $key), 3, 'three admissions in Redis');

ok t_cmp(fault_redis('FLUSHALL'), 'OK', 'FLUSHALL');
# The deny cache of the child that refused still answers for this key (its
# refusal stands until it ends); a new client shows the store's state.
my $ip2 = fresh_ip();
my @st = map {
    my $x = http_get({ vhost => 'sl_fault_patient' }, '/f/open/s', 'X-Forwarded-For' => $ip2);
    "$x->{status}:" . ($x->{headers}{'x-sl-result'} // '');
} 1 .. 4;
ok t_cmp("@st", '200:allowed 200:allowed 200:allowed 429:denied',
    'after FLUSHALL: script reloaded, limit enforced by Redis');
my $down1 = () = error_log_lines(qr/store $store failed \(/);
ok t_cmp($down1 - $down0, 0, 'no store failure logged');
