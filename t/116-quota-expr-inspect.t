# SPDX-License-Identifier: Apache-2.0
# The status handler's look at a client under an expr: quota
# (t/conf/sl.d/failure-vhost.inc's /f/qx-status), under Redis and shm. The
# quota is read from the look-up the query describes: with:X-Quota=N sends
# the header the client's requests carry; without, the query gets
# quota-default= and says so. A variable that SetEnvIf sets in a section is
# not there: httpd runs the header parsers (SetEnvIf's hook in a section)
# only for a main request, never for a look-up, so the look-up says
# quota-default= (README "Limits from an expression"). A reset frees the
# one budget whatever quota the client had.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use HTTP::Tiny;
use JSON::PP qw(decode_json);
use SL::Test;

plan tests => 2 * 12;

my $ua = HTTP::Tiny->new(timeout => 10, max_redirect => 0);

sub get {
    my ($vhost, $path, $ip, %h) = @_;
    local $_;
    return $ua->get(server_url($vhost) . $path, { headers => { 'X-Forwarded-For' => $ip, %h } });
}

sub ask {
    my ($vhost, $method, $query) = @_;
    my %h = $method eq 'POST' ? ('X-SlidingLimit-Reset' => 1) : ();
    my $res = $ua->request($method, server_url($vhost) . "/f/qx-status?$query", { headers => \%h });
    my $j = eval { decode_json($res->{content}) } // {};
    return (($j->{limits} // [])->[0] // {}, $res);
}

for my $vhost (qw(sl_fault sl_shm)) {
    my $store = $vhost eq 'sl_shm' ? 'shm' : 'redis';
    my $ip = fresh_ip();
    get($vhost, '/f/qx/log', $ip, 'X-Quota' => 5) for 1 .. 3;

    my ($l, $res) = ask($vhost, 'GET', "path=/f/qx/log&ip=$ip&with:X-Quota=5");
    ok t_cmp($res->{status}, 200, "$store: show: 200");
    ok t_cmp($l->{requests}, 5, "$store: with:X-Quota=5: requests 5");
    ok t_cmp("$l->{used} $l->{remaining}", '3 2', "$store: ... 3 used, 2 remaining");
    ok t_cmp("$l->{quota} $l->{quota_from}", '5 expr', "$store: ... quota 5 from the expression");

    ($l) = ask($vhost, 'GET', "path=/f/qx/log&ip=$ip&with:X-Quota=9");
    ok t_cmp("$l->{requests} $l->{remaining}", '9 6', "$store: with:X-Quota=9: the same count under 9");

    ($l) = ask($vhost, 'GET', "path=/f/qx/log&ip=$ip");
    ok t_cmp("$l->{requests} $l->{quota_from}", '2 request', "$store: no header: quota-default=2, the request decides");
    ok t_cmp($l->{remaining}, 0, "$store: ... nothing left under it");

    ($l) = ask($vhost, 'GET', "path=/f/qx/log&ip=$ip&with:X-Quota=0");
    ok t_cmp("$l->{quota} $l->{quota_from}", '0 expr', "$store: with:X-Quota=0: quota 0");

    my $g = fresh_ip();
    get($vhost, '/f/qx/env', $g, 'X-Plan' => 'gold') for 1 .. 2;
    ($l) = ask($vhost, 'GET', "path=/f/qx/env&ip=$g&with:X-Plan=gold");
    ok t_cmp("$l->{requests} $l->{used} $l->{quota_from}", '2 2 request',
        "$store: with:X-Plan=gold through SetEnvIf: not run on a look-up, quota-default= (2 used)");

    # A fixed limit says nothing of a quota's source.
    ($l) = ask($vhost, 'GET', "path=/f/qx/mixed&ip=$ip&name=fqxfixed");
    ok(!exists $l->{quota_from}, "$store: a literal quota has no quota_from");

    # The reset: one budget, whatever quota the client had.
    ($l, $res) = ask($vhost, 'POST', "path=/f/qx/log&ip=$ip&with:X-Quota=5");
    ok t_cmp($res->{status}, 200, "$store: reset: 200");
    ok t_cmp(get($vhost, '/f/qx/log', $ip, 'X-Quota' => 2)->{headers}{'x-ratelimit-remaining'}, 1,
        "$store: ... then quota 2 has 1 left after one");
}
