# SPDX-License-Identifier: Apache-2.0
# SlidingLimitKey form:FIELD and a client that stops sending its body: the
# read waits at most the server's Timeout (2 s in the sl_form_slow host),
# then the request is answered 408 without running the application and
# without spending a budget; other clients are answered meanwhile. A client
# that hangs up halfway costs nothing either, and the server stays up.
# Runs under each MPM
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use IO::Socket::INET;
use Time::HiRes qw(time);
use SL::Test;
use SL::Keys qw(tag);

plan tests => 7;

my ($host, $port) = server_url('sl_form_slow') =~ m{^http://([^:/]+):(\d+)};
my $account = 'slow-' . tag();
my $k = sl_key(identity => sl_identity('form:log', $account), policy => 'form-slow');

sub partial {
    my $body = "log=$account&pwd=wrong&pad=" . ('p' x 100);
    my $s = IO::Socket::INET->new(PeerAddr => $host, PeerPort => $port, Timeout => 30)
      or die "connect: $!";
    binmode $s;
    print $s "POST /form/upload.cgi HTTP/1.1\r\nHost: localhost\r\n",
      "X-Forwarded-For: ", fresh_ip(), "\r\n",
      "Content-Type: application/x-www-form-urlencoded\r\n",
      "Content-Length: ", length($body) + 50, "\r\n\r\n", $body;
    $s->flush;
    return $s;
}

{
    my $start = time;
    my $s = partial();
    # Another client while the first one's body is awaited.
    my $other = http_get({ vhost => 'sl_form_slow', method => 'POST' }, '/form/upload.cgi',
        'X-Forwarded-For' => fresh_ip());
    ok($other->{status} == 200 && time - $start < 2,
        'another client is answered while a body is awaited')
      or diag("status $other->{status} after " . (time - $start) . ' s');
    $s->timeout(30);
    my $line = <$s> // '';
    my $took = time - $start;
    like($line, qr{^HTTP/1\.1 408 }, 'a body that stops coming: 408, not the application');
    ok($took >= 1.5 && $took < 15, '... after the Timeout of 2 s')
      or diag("took $took s");
    close $s;
    is(redis('ZCARD', $k), 0, '... and no budget spent');
}

# A client that hangs up halfway.
{
    my $s = partial();
    close $s;
    ok(wait_until(sub { http_get({ vhost => 'sl_form_slow' }, '/form/upload.cgi')->{status} == 200 }, 10),
        'a client that hangs up halfway: the server answers the next request');
    is(redis('ZCARD', $k), 0, '... no budget spent');
}

# The whole body, in two pieces a second apart (within the Timeout).
{
    my $body = "log=$account&pwd=wrong";
    my $s = IO::Socket::INET->new(PeerAddr => $host, PeerPort => $port, Timeout => 30) or die;
    print $s "POST /form/upload.cgi HTTP/1.0\r\nHost: localhost\r\n",
      "Content-Type: application/x-www-form-urlencoded\r\n",
      "Content-Length: ", length $body, "\r\n\r\n", substr($body, 0, 5);
    $s->flush;
    sleep 1;
    print $s substr($body, 5);
    $s->flush;
    my $line = <$s> // '';
    close $s;
    ok($line =~ m{^HTTP/1\.1 200 } && redis('ZCARD', $k) == 1,
        'a body that comes slowly but within the Timeout: read, and the account counted')
      or diag($line, ' zcard ', redis('ZCARD', $k));
}
