# The block's log line says where its limit comes from: source=server for
# the server configuration, source=htaccess for a tenant's .htaccess file,
# and the shipped fail2ban filter matches only the first, so that no
# tenant (nor a page whose images make visitors' browsers trip a tenant's
# limit) can have an address banned at the firewall for every virtual
# host. An .htaccess SlidingLimit may not take the name of a server
# policy (500, and the error log says why). The vhost= port is the one the
# connection came in on, never the port a client writes in its Host
# header. docs/REFERENCE.md's recipe (For logs and back ends), pasted as written,
# counts only what another site cannot make a browser send: GETs and POSTs
# with another site's Origin never start a block, POSTs without Origin or
# with the site's own do.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use File::Temp qw(tempfile);
use SL::Test;
use SL::Fault qw(error_log_lines);
use SL::Keys;
use SL::Httpd;
use HTTP::Tiny;

plan tests => 15;

my $cfg  = Apache::Test::config();
my $host = $cfg->{vars}{servername};
my $port = $cfg->{vars}{port};

# A server policy's block, the Host header naming another port.
my $ip = fresh_ip();
my @st = map {
    raw_request("GET /bl/login HTTP/1.0\r\nHost: $host:1\r\nX-Forwarded-For: $ip\r\n\r\n")
} 1 .. 3;
ok t_cmp("@st", '200 200 429', 'the server policy blocks the third request');
my @server = error_log_lines(qr/mod_slidinglimit: block started: client=\Q$ip\E /);
ok t_cmp(scalar @server, 1, 'one line for it');
like $server[0] // '',
  qr/ block started: client=\Q$ip\E policy=bl-login seconds=900 source=server vhost=\Q$host\E:$port uri=\/bl\/login$/,
  '... source=server, and the port of the connection, not of the Host header';

# A tenant's block: logged, as source=htaccess.
my $tenant = fresh_ip();
@st = map { http_get('/htaccess/f2b/', 'X-Forwarded-For' => $tenant)->{status} } 1 .. 2;
ok t_cmp("@st", '200 429', '.htaccess SlidingLimit 1 1m block=1h: the second request starts a block');
my @htaccess = error_log_lines(qr/mod_slidinglimit: block started: client=\Q$tenant\E /);
like $htaccess[0] // '',
  qr/ block started: client=\Q$tenant\E policy=tenant-login seconds=3600 source=htaccess vhost=\S+ uri=\/htaccess\/f2b\/$/,
  '... logged with source=htaccess';

SKIP: {
    my $f2b = `sh -c 'command -v fail2ban-regex'`;
    chomp $f2b;
    skip 'fail2ban-regex not installed (Debian package fail2ban)', 2 unless $f2b;
    my $filter = top_dir() . '/contrib/fail2ban/filter.d/apache-slidinglimit.conf';
    my ($fh, $log) = tempfile(UNLINK => 1);
    print $fh @server, @htaccess;
    close $fh;
    my @hosts = grep { /\S/ } `$f2b -o ip $log $filter 2>&1`;
    chomp @hosts;
    ok t_cmp("@hosts", $ip, 'fail2ban-regex: the server policy\'s block matches, the tenant\'s does not');
    my $sum = `$f2b $log $filter 2>&1`;
    my ($matched) = $sum =~ /Lines: \d+ lines, \d+ ignored, (\d+) matched/;
    ok t_cmp($matched, 1, '... one line of ' . (@server + @htaccess));
}

# The name of a server policy in .htaccess: refused.
ok t_cmp(http_get('/htaccess/f2bname/', 'X-Forwarded-For' => fresh_ip())->{status}, 500,
    '.htaccess SlidingLimit name=bl-login (a server policy\'s name): 500');
my @l = error_log_lines(qr/SlidingLimit: name 'bl-login' is a policy of the server configuration/);
ok(@l >= 1, '... and the error log says why');

# docs/REFERENCE.md's recipe, as written, behind Basic authentication that every
# request here fails (401, which the recipe counts).
require SL::Docs;
my ($recipe) = grep { /<Location \/login>/ && /block=/ }
  map { $_->{text} } grep { $_->{title} eq 'For logs and back ends' } SL::Docs::blocks(top_dir());
ok(defined $recipe, 'the recipe is in docs/REFERENCE.md');
my $t = SL::Httpd::_tdir();
my $h = SL::Httpd->start(extra => <<"EOT" . ($recipe // ''));
Alias /login "$t/htdocs/fault.html"
<Location /login>
    AuthType Basic
    AuthName recipe
    AuthUserFile "$t/conf/keys.htpasswd"
    Require valid-user
</Location>
EOT
my $ua = HTTP::Tiny->new(timeout => 10);
my $send = sub {
    my ($method, $who, %hdr) = @_;
    return $ua->request($method, $h->url . '/login', { headers => { 'X-Forwarded-For' => $who, %hdr }, content => '' })->{status};
};
my %who = map { $_ => fresh_ip() } qw(get cross plain own);
my @s = map { $send->('GET', $who{get}) } 1 .. 8;
ok t_cmp("@s", join(' ', (401) x 8), 'GETs (an <img> elsewhere) never count: 8 x 401');
@s = map { $send->('POST', $who{cross}, Origin => 'https://evil.example', 'Sec-Fetch-Site' => 'cross-site') } 1 .. 8;
ok t_cmp("@s", join(' ', (401) x 8), 'POSTs with another site\'s Origin never count: 8 x 401');
@s = map { $send->('POST', $who{plain}) } 1 .. 6;
ok t_cmp("@s", '401 401 401 401 401 429', 'POSTs without Origin (curl, scripts): the sixth is refused');
@s = map { $send->('POST', $who{own}, Origin => 'https://www.example.com') } 1 .. 6;
ok t_cmp("@s", '401 401 401 401 401 429', 'POSTs with the site\'s own Origin: the sixth is refused');
my @started = map { $h->error_log =~ /block started: client=\Q$who{$_}\E policy=login-failures seconds=900 source=server / ? $_ : () } qw(get cross plain own);
ok t_cmp("@started", 'plain own', 'blocks (and so bans) only for those two');
$h->stop;
