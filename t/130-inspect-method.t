# SPDX-License-Identifier: Apache-2.0
# Inspect and reset reach a limit inside <If "%{REQUEST_METHOD} == 'POST'">
# (a form login's recipe) and one inside an <If> on the query string: the
# query's method= is the method of the look-up, and path= may carry the
# URL's query. Without method= the look-up is a GET, which the section's
# <If> does not hold: the handler says no limit applies there and names
# method= as the way. slidinglimit-client, as the README shows it, unlocks
# the client.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Cwd qw(abs_path);
use File::Basename qw(dirname);
use HTTP::Tiny;
use JSON::PP qw(decode_json);
use SL::Test;
use SL::Httpd;

plan tests => 14;

my $h = SL::Httpd->start(name => "im-$$", extra => <<'EOT');
<Location /im-status>
    SetHandler slidinglimit-status
    SlidingLimitStatusPage reset
    SlidingLimit off
    Require ip 127.0.0.1 ::1
</Location>
<Location /ir/login.html>
    <If "%{REQUEST_METHOD} == 'POST'">
        SlidingLimit 3 60s name=im-post
    </If>
</Location>
<Location /ir/user.html>
    <If "%{QUERY_STRING} =~ /action=lostpassword/">
        SlidingLimit 2 60s name=im-lost
    </If>
</Location>
EOT

my $ua = HTTP::Tiny->new(timeout => 10);
sub post {
    my ($ip) = @_;
    return $ua->request('POST', $h->url . '/ir/login.html',
        { headers => { 'X-Forwarded-For' => $ip, 'Content-Type' => 'application/x-www-form-urlencoded' },
          content => 'log=a&pwd=b' })->{status};
}
sub ask {
    my ($method, $query) = @_;
    my %hdr = $method eq 'POST' ? ('X-SlidingLimit-Reset' => 1) : ();
    my $res = $ua->request($method, $h->url . "/im-status?$query", { headers => \%hdr });
    return ($res->{status}, eval { decode_json($res->{content}) } // {});
}

my $ip = fresh_ip();
my @st = map { post($ip) } 1 .. 4;
ok t_cmp($st[3], 429, 'four POSTs: the fourth refused');
ok t_cmp($ua->get($h->url . '/ir/login.html', { headers => { 'X-Forwarded-For' => $ip } })->{status},
    200, 'a GET is not limited (the <If> holds POSTs only)');

my ($s, $j) = ask('GET', "path=/ir/login.html&ip=$ip");
ok t_cmp($s, 400, 'no method=: 400');
ok t_cmp($j->{error} // '', qr/method=/, 'the error names method=');

($s, $j) = ask('GET', "path=/ir/login.html&ip=$ip&method=POST");
ok t_cmp($s, 200, 'method=POST: 200');
my $l = $j->{limits}[0] // {};
ok t_cmp("$l->{name} $l->{remaining}", 'im-post 0', 'method=POST: the POST limit, exhausted');

($s, $j) = ask('GET', "path=/ir/login.html&ip=$ip&method=post+x");
ok t_cmp($s, 400, 'a method that is no token: 400');

# The client tool, as the README shows it.
my $client = abs_path(dirname(__FILE__) . '/../tools/slidinglimit-client');
my $out = `sh $client ${\ $h->url}/im-status reset path=/ir/login.html method=POST ip=$ip 2>&1`;
ok t_cmp($?, 0, 'slidinglimit-client reset ... method=POST: exit 0');
ok t_cmp($out, qr/"action":"reset"/, 'its answer is the reset');
ok t_cmp(post($ip), 200, 'the client is unlocked');

# path= with the URL's query, for an <If> on %{QUERY_STRING}.
my $ip2 = fresh_ip();
$ua->get($h->url . '/ir/user.html?action=lostpassword', { headers => { 'X-Forwarded-For' => $ip2 } }) for 1 .. 2;
ok t_cmp($ua->get($h->url . '/ir/user.html?action=lostpassword', { headers => { 'X-Forwarded-For' => $ip2 } })->{status},
    429, 'lostpassword: the third refused');
($s, $j) = ask('GET', 'path=' . '%2Fir%2Fuser.html%3Faction%3Dlostpassword' . "&ip=$ip2");
$l = $j->{limits}[0] // {};
ok t_cmp("$s $l->{name} $l->{remaining}", '200 im-lost 0', 'path= with its query: the limit, exhausted');
($s, $j) = ask('POST', 'path=' . '%2Fir%2Fuser.html%3Faction%3Dlostpassword' . "&ip=$ip2");
ok t_cmp($s, 200, 'reset with the query: 200');
ok t_cmp($ua->get($h->url . '/ir/user.html?action=lostpassword', { headers => { 'X-Forwarded-For' => $ip2 } })->{status},
    200, 'lostpassword admitted again');
