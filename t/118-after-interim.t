# cost=after:header:NAME and interim responses: a back end behind
# mod_proxy_http (nph-hints.cgi on the suite's server) answers two
# 103 Early Hints, each with a Link and an X-Cost of its own (the second
# spelled x-cost), before its 200 with X-Cost: 7. The proxy relays the 1xx
# to the client (ap_send_interim_response, which no request filter sees):
# the client gets both 103s with their Link but without X-Cost, and the
# 200 without it; the charge is the final response's 7, never an interim
# value. Read from a raw socket: HTTP clients hide 1xx responses.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use IO::Socket::INET;
use SL::Test;
use SL::Httpd;
use SL::After;

my $mods = '/usr/lib/apache2/modules';
plan tests => 6, need { 'mod_proxy_http' => -e "$mods/mod_proxy.so" && -e "$mods/mod_proxy_http.so" };

my $px = SL::Httpd->start(conf => ['after.conf'], name => 'after-interim', extra => <<"EOT");
LoadModule proxy_module $mods/mod_proxy.so
LoadModule proxy_http_module $mods/mod_proxy_http.so
<Location /px/>
    ProxyPass ${\ server_url()}/af/backend/
    SlidingLimit 100 1d name=af-px cost=after:header:X-Cost
</Location>
EOT

# The whole answer to one request, as the bytes came (the server closes).
sub raw {
    my ($path, $ip) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $px->{port}, Timeout => 10)
      or die "connect: $!";
    print {$s} "GET $path HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: $ip\r\nConnection: close\r\n\r\n";
    local $/;
    my $all = <$s> // '';
    close $s;
    return $all;
}

my $ip  = fresh_ip();
my $all = raw('/px/nph-hints.cgi?7', $ip);
my @blocks = split /\r\n\r\n/, $all;
my @interim = grep {/^HTTP\/1\.1 1\d\d /} @blocks;
my ($final) = grep {/^HTTP\/1\.1 200 /} @blocks;

ok t_cmp(scalar(@interim), 2, 'the client gets both 103 Early Hints');
ok t_cmp(join(' ', map { /^Link: <([^>]+)>/mi ? $1 : 'none' } @interim), '/a.css /b.js',
    '... each with its Link');
ok t_cmp(join(' ', map { /^x-cost:/mi ? 'X-Cost' : 'none' } @interim), 'none none',
    '... and neither with X-Cost (nor x-cost)');
ok t_cmp(($final // '') =~ /^x-cost:/mi ? 'X-Cost' : 'none', 'none', 'the 200 has no X-Cost');
ok t_cmp($all =~ /\r\n\r\nbody\n\z/ ? 'body' : $all, 'body', 'the body follows, whole');
ok t_cmp(af_used({ base => $px->url }, '/px/nph-hints.cgi', $ip, 'af-px'), 7,
    'the final response\'s X-Cost: 7 is charged, no interim value');
$px->stop;
