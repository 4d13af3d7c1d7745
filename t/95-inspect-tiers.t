# SPDX-License-Identifier: Apache-2.0
# Inspect and reset reach a client whose tier an <If> chooses (the layout
# README and conf/slidinglimit.conf recommend: t/conf/sl.d/inspect-tiers.conf):
# the section is chosen as it is for the client the query names (its
# address, its user, its headers), never by the status request's own
# address and headers. The operator sits on 127.0.0.1, inside the exempt
# network, and sends headers of its own:
#  - a header-keyed tier is found by header:NAME=VALUE, the key another
#    tier takes by its own; the operator's own X-Api-Key changes nothing;
#  - a user's tier (chosen by the presence of credentials) by user=NAME;
#  - an address tier by ip=, a tier a header chooses that is not the key
#    by with:NAME=VALUE, the address of a header-keyed client by from=;
#  - the reset reaches the tier's budget: the client is admitted again;
#  - a wrong query still answers 400 with the reason;
#  - the reset's log line names who reset, which client, the virtual host,
#    the section and the policies.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use HTTP::Tiny;
use JSON::PP qw(decode_json);
use SL::Test;
use SL::Keys;

plan tests => 30;

my $url = '/it/api/items.json';

# The status handler's answer: (status, decoded JSON or {}). The operator's
# own request carries headers of its own (%hdr).
sub ask {
    my ($method, $query, %hdr) = @_;
    $hdr{'X-SlidingLimit-Reset'} = 1 if $method eq 'POST';
    my $res = HTTP::Tiny->new(timeout => 10)
      ->request($method, server_url() . "/it-status?path=$url&$query", { headers => \%hdr });
    my $json = eval { decode_json($res->{content}) } // {};
    return ($res->{status}, $json);
}

# "policy used/remaining" of each limit shown.
sub state {
    my ($j) = @_;
    return join ' ', map { "$_->{name} $_->{used}/$_->{remaining}" } @{ $j->{limits} || [] };
}

sub get { http_get($url, @_)->{status} }

my $tag  = "$$-" . time;
my $ip   = fresh_ip();
my ($basic, $ent) = ("basic-$tag", "ent-$tag");

# A header-keyed tier.
my @st = map { get('X-Forwarded-For' => $ip, 'X-Api-Key' => $basic) } 1 .. 4;
is("@st", '200 200 200 429', 'the basic tier: 3 per minute per key');

my ($s, $j) = ask('GET', "header:X-Api-Key=$basic");
is($s, 200, 'show header:X-Api-Key=KEY from the exempt network: 200') or diag explain $j;
is(state($j), 'it-basic 3/0', '... the basic tier\'s budget, spent');

($s, $j) = ask('GET', "header:X-Api-Key=$basic&from=$ip");
is(state($j), 'it-basic 3/0', 'from=ADDR: the client\'s address, the same tier');

($s, $j) = ask('GET', "header:X-Api-Key=$ent", 'X-Api-Key' => $basic);
is($s, 200, 'show the enterprise key, the operator sending a basic key itself: 200');
is(state($j), 'it-enterprise 0/6', '... the enterprise tier of the key named, not the operator\'s header');

($s, $j) = ask('GET', "header:X-Api-Key=$basic", 'X-Api-Key' => $ent);
is(state($j), 'it-basic 3/0', 'and the other way round');

($s, $j) = ask('POST', "header:X-Api-Key=$basic");
is($s, 200, 'reset header:X-Api-Key=KEY: 200');
is(state($j), 'it-basic 0/3', '... the tier\'s budget is whole again');
is(get('X-Forwarded-For' => $ip, 'X-Api-Key' => $basic), 200, '... and the client is admitted');

# The reset's log line.
my $log = Apache::Test::vars('t_logs') . '/error_log';
my $line;
wait_until(sub {
    open my $fh, '<', $log or return 0;
    ($line) = grep { /mod_slidinglimit: reset by / && /it-basic/ } <$fh>;
    close $fh;
    return defined $line;
}, 5);
$line //= '';
like($line, qr/\bby 127\.0\.0\.1\b/, 'the log says who reset: the operator\'s address');
like($line, qr/client header:X-Api-Key \(hashed identity [A-Za-z0-9+\/]{16}\)/,
    '... which client, as the query named it, by its hashed identity');
unlike($line, qr/\Q$basic\E|sltest:/, '... neither the header\'s value nor a store key');
like($line, qr/virtual host \S+:\d+/, '... the virtual host');
like($line, qr/section <Location \/it\/api> <ElseIf /, '... the section');
like($line, qr/policies it-basic: done/, '... and the policies');

# An address tier, the operator inside the exempt network.
my $anon = fresh_ip();
@st = map { get('X-Forwarded-For' => $anon) } 1 .. 3;
is("@st", '200 200 429', 'the anonymous tier: 2 per minute per address');
($s, $j) = ask('GET', "ip=$anon");
is(state($j), 'it-anon 2/0', 'show ip=ADDR from the exempt network: the anonymous tier, spent');
($s, $j) = ask('POST', "ip=$anon");
is(state($j), 'it-anon 0/2', 'reset ip=ADDR: whole again');
is(get('X-Forwarded-For' => $anon), 200, '... and the client is admitted');

# A tier a header chooses that is not the key: with:NAME=VALUE.
my $gold = fresh_ip();
get('X-Forwarded-For' => $gold, 'X-Plan' => 'gold') for 1 .. 2;
($s, $j) = ask('GET', "ip=$gold&with:X-Plan=gold");
is(state($j), 'it-gold 2/3', 'with:X-Plan=gold: the tier that header chooses');
($s, $j) = ask('GET', "ip=$gold", 'X-Plan' => 'gold');
is(state($j), 'it-anon 0/2', 'without it the anonymous tier, whatever the operator sends');

# A user's tier, chosen by the presence of credentials.
redis('DEL', sl_key(identity => sl_identity('user', 'alice'), policy => 'it-user'));
@st = map { get('X-Forwarded-For' => fresh_ip(), Authorization => basic('alice', 'alice-pw')) } 1 .. 5;
is("@st", '200 200 200 200 429', 'the user tier: 4 per minute per user');
($s, $j) = ask('POST', 'user=alice');
is(state($j), 'it-user 0/4', 'reset user=NAME: the user tier\'s budget is whole again');
is(get('X-Forwarded-For' => fresh_ip(), Authorization => basic('alice', 'alice-pw')), 200,
    '... and the user is admitted');
# The look-up ends before authentication: the credentials it carries for
# the tier are never checked, no failure is logged for the user.
open my $fh, '<', $log or die "$log: $!";
my @auth = grep { /alice/ && m{/it/api} && /AH0161\d|authentication failure|Password Mismatch|not found/ } <$fh>;
close $fh;
is(scalar @auth, 0, '... and no authentication failure of alice is logged') or diag @auth;

# Wrong queries.
($s, $j) = ask('GET', "header:X-Api-Key=other-$tag");
like("$s " . ($j->{error} // ''), qr/^400 header:X-Api-Key is not a key source here; the section's are: ip\b/,
    'a key no tier takes: the anonymous tier, which is keyed by address: 400');
($s, $j) = ask('GET', 'ip=127.0.0.1');
like("$s " . ($j->{error} // ''), qr/^400 no SlidingLimit applies to \Q$url\E/,
    'a client inside the exempt network: 400, no limit applies');
($s, $j) = ask('GET', "header:X-Api-Key=$basic&from=nowhere");
is("$s " . ($j->{error} // ''), "400 from: 'nowhere' is not an IP address",
    'from= that is no address: 400');
($s, $j) = ask('GET', "ip=$ip&with:X(Plan=gold");
like("$s " . ($j->{error} // ''), qr/^400 'with:X\(Plan': with: names a header/,
    'with: that is no header name: 400');
