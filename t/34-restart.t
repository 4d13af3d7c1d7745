# SPDX-License-Identifier: Apache-2.0
# Redis restarted while every child holds pooled connections to it: the
# stale connections are replaced and the script reloaded without a single
# request falling back to the fail mode.
# Runs under each MPM: stale pooled connections, per thread or per child.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Algo;
use SL::Fault;

plan tests => 5;

my $store = quotemeta store_display();
my $down0 = () = error_log_lines(qr/store $store failed \(/);

# The virtual host with generous timeouts: this is about stale
# connections, not about a slow answer on a loaded host.
my $base = server_url('sl_fault_patient');

# Warm the pools of several children/threads at once.
my $warm = burst("$base/f/wide/r", total => 60, workers => 6,
    headers => { 'X-Forwarded-For' => fresh_ip() });
ok t_cmp($warm->{200}, 60, 'warm-up: 60 admitted');
my $clients = fault_redis('CLIENT', 'LIST');
my $n = () = $clients =~ /^id=/mg;
t_debug("$n connections to the failure tests' redis before the restart");

fault_stop();
fault_start();

# Right after the restart: every request decided by Redis (not failed-open).
my %seen;
for (1 .. 30) {
    my $r = http_get({ vhost => 'sl_fault_patient' }, '/f/wideclosed/r', 'X-Forwarded-For' => fresh_ip());
    $seen{"$r->{status}:" . ($r->{headers}{'x-sl-result'} // '')}++;
}
ok t_cmp(join(',', sort keys %seen), '200:allowed',
    'sequential requests after the restart: all allowed by Redis');
my $b2 = burst("$base/f/wideclosed/r", total => 60, workers => 6,
    headers => { 'X-Forwarded-For' => fresh_ip() });
ok t_cmp(join(',', map {"$_=$b2->{$_}"} sort keys %$b2), '200=60',
    'concurrent requests after the restart: all admitted (fail-closed location)');
my $down1 = () = error_log_lines(qr/store $store failed \(/);
ok t_cmp($down1 - $down0, 0, 'no store failure logged: stale connections were retried');
my $scripts = fault_redis('SCRIPT', 'EXISTS', SL_script_sha());
ok t_cmp($scripts->[0], 1, 'the script was loaded again');

sub SL_script_sha {
    # The module's script as embedded at build time.
    require Digest::SHA;
    return Digest::SHA::sha1_hex(script_text('sl_check'));
}
