# SPDX-License-Identifier: Apache-2.0
# The README's recipes, each block pasted as written (SL::Docs; only the
# operator's files under /etc/apache2/ and the proxy's address are the
# test's) into a server of its own, and what a client sends to get around
# each:
#  - Basic-auth login: failures counted per address, whatever user name
#    each try names; good logins never counted.
#  - Form login (WordPress): failed POSTs (200) counted, good ones (302)
#    given back; a GET is not limited; a method-override header changes
#    nothing.
#  - API tiers: a known key gets its quota from the map; a made-up key, a
#    quota header or a rotating key gets the address's default budget.
#  - Scrapers behind a proxy: each client its own budget; prepending
#    addresses to X-Forwarded-For or sending it without being the proxy
#    changes nothing; a private client address is believed; an IPv6 /64
#    is one budget.
#  - Slow endpoints: four requests of a client in flight, the fifth
#    refused until one ends (conc/hold.cgi, SL::Hold).
#  - Floods: past the rate, a block, also for requests the rate would
#    admit again.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Digest::SHA qw(sha1_base64);
use File::Temp qw(tempdir);
use HTTP::Tiny;
use MIME::Base64 qw(encode_base64);
use SL::Docs;
use SL::Keys;
use SL::Test;
use SL::Httpd;
use SL::Hold;

plan tests => 24;

my %recipe = map { $_->{title} => $_ } grep { $_->{file} eq 'README.md' } SL::Docs::blocks(top_dir());
my $docroot = SL::Httpd::_tdir() . '/htdocs';
my $ua = HTTP::Tiny->new(timeout => 10, max_redirect => 0, keep_alive => 1);

sub start {
    my ($title, $extra, %files) = @_;
    my $b = $recipe{$title} or die "no README recipe '$title'\n";
    my $dir = tempdir(CLEANUP => 1, TMPDIR => 1);
    chmod 0755, $dir;
    my $conf = SL::Docs::paste($b, $dir, %files);
    my $name = lc($title =~ s/\W+/-/gr);
    return SL::Httpd->start(name => "rc-$name-$$", extra => ($extra // '') . $conf, conf_text => $conf);
}
sub req {
    my ($h, $method, $path, $ip, %hdr) = @_;
    return $ua->request($method, $h->url . $path, { headers => { 'X-Forwarded-For' => $ip, %hdr } });
}

# Basic-auth login.
{
    my $h = start('Basic-auth login', "Alias /admin \"$docroot/fault.html\"\n",
        'admin.htpasswd' => 'admin:{SHA}' . sha1_base64('right') . "=\n");
    my $ip = fresh_ip();
    my @st = map { req($h, 'GET', '/admin', $ip, Authorization => 'Basic ' . encode_base64("user$_:wrong", ''))->{status} } 1 .. 11;
    ok t_cmp("@st[0..9]", join(' ', ('401') x 10), 'basic: ten failures, each under another user name: 401');
    ok t_cmp($st[10], 429, '... the eleventh refused: the address is counted, not the name');
    ok t_cmp(req($h, 'GET', '/admin', $ip, Authorization => 'Basic ' . encode_base64('admin:right', ''))->{status}, 429,
        '... and blocked, even with the right password');
    my $good = fresh_ip();
    @st = map { req($h, 'GET', '/admin', $good, Authorization => 'Basic ' . encode_base64('admin:right', ''))->{status} } 1 .. 15;
    ok(!grep($_ != 200, @st), 'basic: fifteen good logins from one address: none refused');
}

# Form login (WordPress): a good password is a 302, as WordPress answers.
{
    my $h = start('Form logins that answer 200 (WordPress and the like)', <<'EOT');
<Location /wp-login.php>
    RewriteEngine On
    RewriteCond %{HTTP:X-Test-Password} =right
    RewriteRule .* /wp-admin/ [R=302,L]
</Location>
EOT
    my $ip = fresh_ip();
    my @st = map { req($h, 'POST', '/wp-login.php', $ip, 'Content-Type' => 'application/x-www-form-urlencoded')->{status} } 1 .. 6;
    ok t_cmp("@st", '200 200 200 200 200 429', 'wp: five failed POSTs (200), the sixth refused');
    ok t_cmp(req($h, 'GET', '/wp-login.php', $ip)->{status}, 200, 'wp: the form (GET) is not limited');
    ok t_cmp(req($h, 'POST', '/wp-login.php', $ip, 'X-HTTP-Method-Override' => 'GET')->{status}, 429,
        'wp: a method-override header changes nothing');
    my $good = fresh_ip();
    @st = map { req($h, 'POST', '/wp-login.php', $good, 'X-Test-Password' => 'right')->{status} } 1 .. 8;
    ok t_cmp("@st", join(' ', ('302') x 8), 'wp: eight good logins (302): given back, none refused');
}

# API tiers.
{
    my $key = 'k600aaaaaaaaaaaaaaaaaaaa';
    my $h = start('API tiers from a key, without a proxy', "AliasMatch ^/api/ \"$docroot/fault.html\"\n",
        'api-keys.txt' => "$key 600\n");
    my $ip = fresh_ip();
    ok t_cmp(req($h, 'GET', '/api/x', $ip, 'X-Api-Key' => $key)->{headers}{'x-ratelimit-limit'}, 600, 'api: the known key: 600');
    ok t_cmp(req($h, 'GET', '/api/x', $ip, 'X-Api-Key' => 'madeupmadeupmadeup')->{headers}{'x-ratelimit-limit'}, 60,
        'api: a made-up key: quota-default=60');
    ok t_cmp(req($h, 'GET', '/api/x', $ip, 'X-Api-Key' => 'madeupmadeupmadeup', 'Api-Quota' => 99999, 'X-Api-Quota' => 99999)->{headers}{'x-ratelimit-limit'},
        60, 'api: a quota header: 60');
    my @rem = map { req($h, 'GET', '/api/x', $ip, 'X-Api-Key' => "rotating$_" . ('x' x 12))->{headers}{'x-ratelimit-remaining'} } 1 .. 3;
    # After the two made-up keys above (59, 58): the same budget goes on.
    ok t_cmp("@rem", '57 56 55', 'api: rotating made-up keys: one budget, the address\'s');
}

# Scrapers behind a reverse proxy: the test's client at 127.0.0.1 is the proxy.
{
    my $b = $recipe{'Scrapers behind a reverse proxy'};
    (my $text = $b->{text}) =~ s/10\.0\.0\.5/127.0.0.1/;
    my $h = SL::Httpd->start(name => "rc-proxy-$$", extra => "AliasMatch ^/catalogue \"$docroot/fault.html\"\n$text");
    my $rem = sub { req($h, 'GET', '/catalogue', @_)->{headers}{'x-ratelimit-remaining'} };
    my $c = fresh_ip();
    ok t_cmp(join(' ', map { $rem->($c) } 1 .. 2), '119 118', 'proxy: a client through the proxy: its own budget');
    ok t_cmp($rem->("203.0.113.99, $c"), 117, 'proxy: an address the client prepends: the same budget');
    ok t_cmp($rem->('10.1.2.3'), 119, 'proxy: a private client address is believed (RemoteIPInternalProxy)');
    my $direct = HTTP::Tiny->new(timeout => 10, local_address => '127.0.0.2');
    my @d = map { $direct->get($h->url . '/catalogue', { headers => { 'X-Forwarded-For' => fresh_ip() } })->{headers}{'x-ratelimit-remaining'} } 1 .. 2;
    ok t_cmp("@d", '119 118', 'proxy: a client that is not the proxy, sending X-Forwarded-For: keyed by its own address');
    ok t_cmp(join(' ', $rem->('2001:db8:77::1'), $rem->('2001:db8:77::2')), '119 118', 'proxy: two addresses of one IPv6 /64: one budget');
}

# Slow endpoints: /reports is conc/hold.cgi, which answers when the test
# opens its gate.
{
    my $h = start('Slow endpoints', <<"EOT");
Alias /reports "$docroot/conc/hold.cgi"
<Location /reports>
    SetHandler cgi-script
    Options +ExecCGI
</Location>
EOT
    my $ip = fresh_ip();
    my @held = map { hold($h->url . '/reports', $ip) } 1 .. 4;
    # All four admitted (their 200 has come) before the fifth is sent.
    wait_until(sub { !grep { hold_peek($_) != 200 } @held }, 20);
    ok t_cmp(hold_status(hold($h->url . '/reports', $ip, quick => 1)), 429, 'slow: four in flight, the fifth refused');
    ok t_cmp(hold_status(hold($h->url . '/reports', fresh_ip(), quick => 1)), 200, 'slow: another client is served');
    open_gate($held[0]);
    hold_status($held[0]);
    ok t_cmp(hold_status(hold($h->url . '/reports', $ip, quick => 1)), 200, 'slow: one ended, the next admitted');
    open_gate($_) for @held[1 .. 3];
    hold_status($_) for @held[1 .. 3];
}

# Floods.
{
    my $h = start('Floods', "AliasMatch ^/ \"$docroot/fault.html\"\n");
    my $ip = fresh_ip();
    my @st = map { req($h, 'GET', '/', $ip)->{status} } 1 .. 301;
    ok t_cmp(scalar(grep { $_ == 200 } @st), 300, 'flood: 300 admitted');
    ok t_cmp($st[-1], 429, '... the 301st refused');
    my $r = req($h, 'GET', '/', $ip);
    ok t_cmp($r->{headers}{'retry-after'} // 0, qr/^(?:59\d|600)$/, '... and blocked for ten minutes (Retry-After)');
    ok t_cmp(req($h, 'GET', '/', fresh_ip())->{status}, 200, 'flood: another client is served');
}
