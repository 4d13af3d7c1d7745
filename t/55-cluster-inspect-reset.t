# SPDX-License-Identifier: Apache-2.0
# The status handler's look at a client and its reset on a Redis Cluster:
# the look and the reset reach the master that owns the identity's hash
# tag (not a seed: the module learns the map), and the reset deletes the
# budget and its block (KEY and KEY.b, one DEL on that node).
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use HTTP::Tiny;
use JSON::PP qw(decode_json);
use SL::Test;
use SL::Httpd;
use SL::Cluster;

if (my $why = cluster_skip()) { plan skip_all => $why }
plan tests => 8;

ok(wait_cluster(30), 'cluster up: three masters, every node ok');
my @m  = masters();
my $ip = identity_on($m[2], 'ir-login');
my $h  = SL::Httpd->start(conf => ['inspect.inc'], name => "ir-cluster-$$",
    store => 'cluster://' . seeds(@m[0, 1]));
my $ua = HTTP::Tiny->new(keep_alive => 1, timeout => 10);
my $get = sub { $ua->get($h->url . $_[0], { headers => { 'X-Forwarded-For' => $ip } })->{status} };
my $ask = sub {
    my ($method, $q) = @_;
    my $res = HTTP::Tiny->new(timeout => 10)->request($method, $h->url . "/ir-status?$q",
        { headers => { 'X-SlidingLimit-Reset' => 1 } });
    my $j = eval { decode_json($res->{content}) } // {};
    return (grep { $_->{name} eq $_[2] } @{ $j->{limits} || [] })[0] // { error => $j->{error} };
};

my @st = map { $get->('/ir/login.html') } 1 .. 6;
is("@st", '200 200 200 200 200 429', 'exhausted on the third master');
my $key = sl_key(ip => $ip, policy => 'ir-login');
my $l = $ask->('GET', "path=/ir/login.html&ip=$ip", 'ir-login');
is(($l->{used} // $l->{error} // '-') . ' ' . ($l->{key} // '-'), "5 $key",
    'the look: used 5, the key on the third master');
is(cnode($m[2], 'ZCARD', $key), 5, '... which holds the 5 admissions');

@st = map { $get->('/ir/block.html') } 1 .. 3;
my $bkey = sl_key(ip => $ip, policy => 'ir-block');
is(cnode($m[2], 'EXISTS', $bkey, "$bkey.b"), 2, "block: @st, KEY and KEY.b on the third master");
$l = $ask->('POST', "path=/ir/block.html&ip=$ip", 'ir-block');
is(cnode($m[2], 'EXISTS', $bkey, "$bkey.b") . ' ' . ($l->{blocked} // $l->{error} // '-'), '0 0',
    'block: the reset deleted both');

$l = $ask->('POST', "path=/ir/login.html&ip=$ip", 'ir-login');
is(cnode($m[2], 'EXISTS', $key) . ' ' . ($l->{used} // $l->{error} // '-'), '0 0', 'login: reset');
is($get->('/ir/login.html'), 200, '... and admitted again');
$h->stop;
