# cost=after:header:NAME and interim responses: a back end behind
# mod_proxy_http (nph-hints.cgi on the suite's server) answers two
# 103 Early Hints, each with a Link and an X-Cost of its own (the second
# spelled x-cost), before its 200 with X-Cost: 7. The proxy relays the 1xx
# to the client (ap_send_interim_response, which no request filter sees):
# the client gets both 103s with their Link but without X-Cost, and the
# 200 without it; the charge is the final response's 7, never an interim
# value. Read from a raw socket: HTTP clients hide 1xx responses. On one
# connection, pipelined: a request through a proxy without the limit
# keeps X-Cost in its 103s (only a request that owes by the header loses
# it), and the next limited request loses it again. Under HTTP/2 (h2c,
# mod_http2, where the module is loaded; not under prefork, which
# mod_http2 does not serve), the same through curl.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use IO::Socket::INET;
use SL::Test;
use SL::Httpd;
use SL::After;

my $mods = '/usr/lib/apache2/modules';
plan tests => 10, need { 'mod_proxy_http' => -e "$mods/mod_proxy.so" && -e "$mods/mod_proxy_http.so" };

my $mpm = $ENV{SL_TEST_MPM} || 'event';
my $curl_h2 = (`curl -V 2>/dev/null` // '') =~ /^Features:.*\bHTTP2\b/m;
my $can_h2 = -e "$mods/mod_http2.so" && $curl_h2 && $mpm ne 'prefork';
my $h2 = $can_h2 ? "LoadModule http2_module $mods/mod_http2.so\nProtocols h2c http/1.1\nH2EarlyHints on\n" : '';
my $px = SL::Httpd->start(conf => ['after.conf'], name => 'after-interim', extra => <<"EOT");
LoadModule proxy_module $mods/mod_proxy.so
LoadModule proxy_http_module $mods/mod_proxy_http.so
$h2
<Location /px/>
    ProxyPass ${\ server_url()}/af/backend/
    SlidingLimit 100 1d name=af-px cost=after:header:X-Cost
</Location>
<Location /pxfree/>
    ProxyPass ${\ server_url()}/af/backend/
</Location>
EOT

# The whole answer to requests for the paths, pipelined on one
# connection, as the bytes came (the server closes after the last).
sub raw {
    my ($ip, @paths) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $px->{port}, Timeout => 10)
      or die "connect: $!";
    for my $i (0 .. $#paths) {
        my $close = $i == $#paths ? "Connection: close\r\n" : '';
        print {$s} "GET $paths[$i] HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: $ip\r\n$close\r\n";
    }
    local $/;
    my $all = <$s> // '';
    close $s;
    return $all;
}

my $ip  = fresh_ip();
my $all = raw($ip, '/px/nph-hints.cgi?7');
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

# One connection: limited, unlimited, limited.
$ip = fresh_ip();
my @resp = split /(?=^HTTP\/1\.1 )/m,
  raw($ip, '/px/nph-hints.cgi?1', '/pxfree/nph-hints.cgi?1', '/px/nph-hints.cgi?2');
my $seen = join ' ', map { my ($st) = /^HTTP\/1\.1 (\d+)/; ($st // '?') . (/^x-cost:/mi ? '+cost' : '') } @resp;
ok t_cmp($seen, '103 103 200 103+cost 103+cost 200+cost 103 103 200',
    'one connection: the unlimited request\'s responses keep X-Cost, the limited ones lose it');
ok t_cmp(af_used({ base => $px->url }, '/px/nph-hints.cgi', $ip, 'af-px'), 3,
    '... and the two limited ones are charged 1 and 2');

SKIP: {
    skip 'no HTTP/2 here (mod_http2, curl with HTTP2, not prefork)', 2 unless $can_h2;
    $ip = fresh_ip();
    my $h2seen = sub {
        my $d = `curl -s --http2-prior-knowledge -D - -o /dev/null -H 'X-Forwarded-For: $ip' ${\ $px->url}$_[0]`;
        return join ' ', map { my ($st) = /^HTTP\/2 (\d+)/; ($st // '?') . (/^x-cost:/mi ? '+cost' : '') . (/^link:/mi ? '+link' : '') } split /\r\n\r\n/, $d;
    };
    my $lim  = $h2seen->('/px/nph-hints.cgi?5');
    my $free = $h2seen->('/pxfree/nph-hints.cgi?5');
    ok t_cmp("$lim | $free", '103+link 103+link 200 | 103+cost+link 103+cost+link 200+cost',
        'HTTP/2: the 103s keep their Link and lose X-Cost, and the 200 too (without the limit they keep it)');
    # Under HTTP/2 a stream's request is logged when mod_http2 is done
    # with the stream, which may come after curl has its answer and has
    # gone: nothing the client sees tells when. A bounded wait for the
    # charge.
    wait_until(sub { af_used({ base => $px->url }, '/px/nph-hints.cgi', $ip, 'af-px') == 5 }, 10);
    ok t_cmp(af_used({ base => $px->url }, '/px/nph-hints.cgi', $ip, 'af-px'), 5, 'HTTP/2: X-Cost: 5 is charged');
}
$px->stop;
