# SPDX-License-Identifier: Apache-2.0
# A section's SlidingLimit lines replace the list it inherits: where the
# configuration nests them (an <If> with limits inside a <Location> with
# limits), httpd -t and the start-up warn once for the inner section,
# naming both places and the outer lines it drops; repeating the outer
# lines by name= drops nothing and silences it, as does "SlidingLimit off".
# The warning tells the truth: the <If>'s requests are limited by its own
# list only, and with the names repeated by both.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use HTTP::Tiny;
use SL::Keys;
use SL::Test;
use SL::Httpd;

plan tests => 9;

my $conf = <<'EOT';
<Location /ir/login.html>
    SlidingLimit 2 1m name=iw-ip
    <If "%{REQUEST_METHOD} == 'POST'">
        SlidingLimit 50 1m name=iw-site
    </If>
</Location>
<Location /ir/user.html>
    SlidingLimit 2 1m name=iw-ip2
    <If "%{REQUEST_METHOD} == 'POST'">
        SlidingLimit 2 1m name=iw-ip2
        SlidingLimit 50 1m name=iw-site2
    </If>
</Location>
<Location /ir/block.html>
    SlidingLimit 2 1m name=iw-ip3
    <If "%{REQUEST_METHOD} == 'POST'">
        SlidingLimit off
    </If>
</Location>
EOT

my ($rc, $out) = httpd_check($conf);
ok t_cmp($rc, 0, '-t passes: a warning, not an error');
my @w = $out =~ /^.*replace, for the requests it holds.*$/mg;
ok t_cmp(scalar(@w), 1, 'one warning: the <If> that drops iw-ip');
ok t_cmp($w[0] // '', qr{<If "%\{REQUEST_METHOD\} == 'POST'"> \(\S+:\d+\) replace.* from <Location /ir/login.html> \(\S+:\d+\), which it drops there: SlidingLimit 2 1m name=iw-ip\.},
    'it names both places and the dropped line');

my $h = SL::Httpd->start(name => "iw-$$", extra => $conf);
my @s = $h->error_log =~ /^.*replace, for the requests it holds.*$/mg;
ok t_cmp(scalar(@s), 1, 'start-up: the same warning, once');

# What it says happens: a POST is limited by the <If>'s list only.
my $ua = HTTP::Tiny->new(timeout => 10);
my $post = sub {
    my ($url, $ip) = @_;
    $ua->request('POST', $h->url . $url, { headers => { 'X-Forwarded-For' => $ip } })->{status};
};
my $ip = fresh_ip();
my @st = map { $post->('/ir/login.html', $ip) } 1 .. 3;
ok(!grep($_ == 429, @st), 'login: three POSTs, none refused: iw-ip (2/1m) does not apply inside the <If>');
@st = map { $ua->get($h->url . '/ir/login.html', { headers => { 'X-Forwarded-For' => $ip } })->{status} } 1 .. 3;
ok t_cmp($st[2], 429, 'login: GETs get iw-ip: the third refused');
# Repeated by name: one budget, applied to both.
my $ip2 = fresh_ip();
$ua->get($h->url . '/ir/user.html', { headers => { 'X-Forwarded-For' => $ip2 } });
ok t_cmp($post->('/ir/user.html', $ip2), 200, 'user: a GET, then a POST: admitted');
ok t_cmp($post->('/ir/user.html', $ip2), 429, '... the next POST refused: iw-ip2 is one budget across both sections');
ok t_cmp($ua->get($h->url . '/ir/user.html', { headers => { 'X-Forwarded-For' => $ip2 } })->{status}, 429,
    '... and a GET too');
