# SPDX-License-Identifier: Apache-2.0
# delay= keeps the limit exact: a burst on one identity (12 requests from
# 6 clients at once, 3 per 2s, delay=3s) is admitted in waves, and no 2s
# of the server's own clock (each admission's %t plus %D) holds more than
# 3 admissions, waited or not; some were admitted after a wait, and those
# that could not fit were refused. Under Redis and the embedded store.
# Runs under each MPM
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use HTTP::Tiny;
use SL::Test;

plan tests => 2 * 4;

for my $vhost (undef, 'sl_delay_shm') {
    my $store = $vhost ? 'shm' : 'redis';
    my $url = server_url($vhost) . '/delay/exact.html';
    my $ip = fresh_ip();
    my $got = SL::Test::workers(6, sub {
        my $ua = HTTP::Tiny->new(timeout => 15);
        my %c;
        for (1 .. 2) {
            my $r = $ua->get($url, { headers => { 'X-Forwarded-For' => $ip } });
            $c{"s$r->{status}"}++;
            next unless $r->{status} == 200;
            my ($t, $d) = ($r->{headers}{'x-sl-at'} // '') =~ /t=(\d+) D=(\d+)/;
            $c{ 'at' . ($t + $d) }++ if defined $d;
            $c{waited}++ if ($r->{headers}{'x-sl-delay'} // '') =~ /^\d+$/;
        }
        return \%c;
    })->();
    my @at = sort { $a <=> $b } map { /^at(\d+)$/ ? ($1) x $got->{$_} : () } keys %$got;
    my $ok = $got->{s200} // 0;
    my $worst = 1e9;
    for my $i (0 .. $#at - 3) {
        my $span = $at[ $i + 3 ] - $at[$i];
        $worst = $span if $span < $worst;
    }
    ok($ok >= 6 && @at == $ok, "$store: waves admitted: $ok of 12 (" . ($got->{s429} // 0) . ' refused)');
    # 2s less the time from a decision to its headers on a loaded host.
    ok($worst >= 1_800_000, sprintf("$store: any 4 admissions span 2s or more (shortest %.3fs)", $worst / 1e6));
    ok(($got->{waited} // 0) >= 3, "$store: some were admitted after a wait (" . ($got->{waited} // 0) . ')');
    ok(($got->{s200} // 0) + ($got->{s429} // 0) == 12, "$store: every request was answered 200 or 429");
}
