# SPDX-License-Identifier: Apache-2.0
# cost=after:header:NAME, under the Redis store (the main server) and the
# shm store (sl_shm): the back end (a CGI here, or mod_headers' "Header
# always set", which is err_headers_out) reports the request's cost in a
# header; the module takes it out of the response before the headers go
# (the client never sees it) and charges it after the response. A missing
# header or 0 costs the admission's unit; a 500 with the header is charged
# too; a value that is not a whole number, or more than the limit holds,
# is charged the most the limit holds (100), with a warning naming it, and
# the next request is refused.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Fault qw(error_log_lines);
use SL::After;

plan tests => 2 * 8 + 1;

for my $vhost (undef, 'sl_shm') {
    my $store = $vhost ? 'shm' : 'redis';
    my $o     = { $vhost ? (vhost => $vhost) : () };
    my $ip    = fresh_ip();
    my $cgi   = '/af/cost.cgi';
    my @h;

    my $r = af_get($o, "$cgi?7", 'X-Forwarded-For' => $ip);
    push @h, $r->{headers}{'x-cost'} // 'none';
    ok t_cmp("$r->{status} $r->{content}", "200 body\n", "$store: the CGI answers");
    ok t_cmp(af_used($o, $cgi, $ip, 'af-hdr'), 7, "$store: X-Cost: 7 is charged (1 at admission, 6 after)");
    $r = af_get($o, "$cgi?0", 'X-Forwarded-For' => $ip);
    push @h, $r->{headers}{'x-cost'} // 'none';
    $r = af_get($o, "$cgi?", 'X-Forwarded-For' => $ip);
    ok t_cmp(af_used($o, $cgi, $ip, 'af-hdr'), 9, "$store: X-Cost: 0 and an empty one cost the admission's unit");
    # httpd closes the connection after a 500: read until it has, which
    # is after the charge (SL::After).
    $r = af_get_eof($o, "$cgi?err-5", 'X-Forwarded-For' => $ip);
    push @h, $r->{headers}{'x-cost'} // 'none';
    ok t_cmp($r->{status} . ' ' . af_used($o, $cgi, $ip, 'af-hdr'), '500 14', "$store: a 500 with X-Cost: 5 is charged 5");

    # err_headers_out (Header always set X-Cost 3).
    my $aip = fresh_ip();
    $r = af_get($o, '/af/hdr-always/100.txt', 'X-Forwarded-For' => $aip);
    push @h, $r->{headers}{'x-cost'} // 'none';
    ok t_cmp($r->{status} . ' ' . af_used($o, '/af/hdr-always/100.txt', $aip, 'af-hdr-always'), '200 3',
        "$store: a header in err_headers_out is charged");
    ok t_cmp("@h", 'none none none none', "$store: the client never sees the header");

    # Bad values: the most the limit holds, a warning, then refusals.
    for my $bad ('abc', '99999999999999999999999') {
        my $bip = fresh_ip();
        $r = af_get($o, "$cgi?$bad", 'X-Forwarded-For' => $bip);
        my $next = af_get($o, "$cgi?1", 'X-Forwarded-For' => $bip);
        ok t_cmp("$r->{status} " . af_used($o, $cgi, $bip, 'af-hdr') . " $next->{status}", '200 100 429',
            "$store: X-Cost: $bad is charged 100, the next request refused");
    }
}
my @warn = error_log_lines(qr/policy af-hdr: header X-Cost of the response is 'abc', not a whole number: charged the most the limit holds \(100\)/);
my @over = error_log_lines(qr/policy af-hdr: header X-Cost of the response is '9+', more than the limit holds/);
ok t_cmp(scalar(@warn) . ' ' . scalar(@over), '2 2', 'each bad value is named in a warning');
