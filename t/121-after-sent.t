# cost=after:bytes charges the bytes of the body that left the server, one
# byte per unit here (/af/sent): a GET of a 1000-byte file 1000; a HEAD,
# and a 304, the admission's unit alone (no body went); a Range the bytes
# of the part sent, one range or several (multipart/byteranges, boundaries
# and all, as the client got them); a download the client gave up after
# 100 bytes (a server of its own with a small send buffer, a client with a
# small receive buffer that closes without reading the rest: httpd's
# writes fail with most of the 4 MiB file unwritten) far less than the
# file: what was written before the connection failed. Three GETs
# pipelined on one connection are charged 1000 each: one response's bytes
# are never counted to its neighbour.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Socket qw(PF_INET SOCK_STREAM SOL_SOCKET SO_RCVBUF inet_aton pack_sockaddr_in);
use SL::Test;
use SL::Httpd;
use SL::After;

plan tests => 8;

my $big = Apache::Test::vars('documentroot') . '/af/sent/big.bin';
my $size = 4 * 1024 * 1024;
open my $fh, '>', $big or die "$big: $!";
print {$fh} 'x' x $size;
close $fh;

my $o = {};
my $used = sub { af_used($o, '/af/sent/1000.txt', $_[0], 'af-sent') };

my $ip = fresh_ip();
my $r  = af_get($o, '/af/sent/1000.txt', 'X-Forwarded-For' => $ip);
ok t_cmp("$r->{status} " . $used->($ip), '200 1000', 'a GET of 1000 bytes costs 1000');

$ip = fresh_ip();
$r  = af_get({ method => 'HEAD' }, '/af/sent/big.bin', 'X-Forwarded-For' => $ip);
ok t_cmp("$r->{status} $r->{headers}{'content-length'} " . $used->($ip), "200 $size 1",
    'a HEAD of the 4 MiB file costs the admission\'s unit alone');

$ip = fresh_ip();
my $etag = af_get($o, '/af/sent/1000.txt', 'X-Forwarded-For' => $ip)->{headers}{etag} // 'none';
$r = af_get($o, '/af/sent/1000.txt', 'X-Forwarded-For' => $ip, 'If-None-Match' => $etag);
ok t_cmp("$r->{status} " . $used->($ip), '304 1001', 'a 304 costs the admission\'s unit alone');

$ip = fresh_ip();
$r  = af_get($o, '/af/sent/big.bin', 'X-Forwarded-For' => $ip, Range => 'bytes=0-99');
ok t_cmp("$r->{status} " . length($r->{content}) . ' ' . $used->($ip), '206 100 100',
    'a Range of 100 bytes of the 4 MiB file costs 100');

$ip = fresh_ip();
$r  = af_get($o, '/af/sent/big.bin', 'X-Forwarded-For' => $ip, Range => 'bytes=0-9,1000-1009');
my $len = length($r->{content});
ok t_cmp("$r->{status} " . $used->($ip), "206 $len",
    "two ranges cost the multipart body the client got ($len bytes)");

# Pipelined: the three requests in one write, the answers read after.
{
    $ip = fresh_ip();
    my ($port) = server_url() =~ /:(\d+)$/;
    socket(my $s, PF_INET, SOCK_STREAM, 0) or die "socket: $!";
    connect($s, pack_sockaddr_in($port, inet_aton('127.0.0.1'))) or die "connect: $!";
    my $req = "GET /af/sent/1000.txt HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: $ip\r\n";
    syswrite($s, "$req\r\n$req\r\n${req}Connection: close\r\n\r\n");
    my $all = '';
    while (sysread($s, $all, 65536, length $all)) { }
    close $s;
    my $n = () = $all =~ m{HTTP/1\.1 200 }g;
    ok t_cmp("$n " . $used->($ip), '3 3000', 'three pipelined GETs of 1000 bytes cost 1000 each');
}

# The download given up.
my $h = SL::Httpd->start(conf => ['after.conf'], name => 'after-sent', extra => "SendBufferSize 4096\n");
my $ho = { base => $h->url };
$ip = fresh_ip();
socket(my $s, PF_INET, SOCK_STREAM, 0) or die "socket: $!";
setsockopt($s, SOL_SOCKET, SO_RCVBUF, 4096) or die "SO_RCVBUF: $!";
connect($s, pack_sockaddr_in($h->{port}, inet_aton('127.0.0.1'))) or die "connect: $!";
syswrite($s, "GET /af/sent/big.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: $ip\r\n\r\n");
my $got = '';
while (!($got =~ /\r\n\r\n(.*)\z/s && length($1) >= 100)) {
    sysread($s, $got, 100, length $got) or last;
}
close $s;
my ($head) = split /\r\n\r\n/, $got;
ok t_cmp($head =~ m{^HTTP/1\.1 200 } ? 'started' : $head, 'started', 'the download started');
wait_until(sub { af_used($ho, '/af/sent/1000.txt', $ip, 'af-sent') > 1 }, 20);
my $u = af_used($ho, '/af/sent/1000.txt', $ip, 'af-sent');
ok($u >= 100 && $u < 1024 * 1024, "given up after 100 bytes: charged $u, at least 100 and far less than $size");
$h->stop;
