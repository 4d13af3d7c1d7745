# SPDX-License-Identifier: Apache-2.0
package SL::Hold;

# Requests held in flight, for the SlidingLimitConcurrent tests: each is a
# raw HTTP/1.0 request to conc/*.cgi (t/htdocs/conc/hold.cgi), which answers
# once the gate file named by its query string exists. So a test decides
# when each request ends, and never waits for one to end by luck.
#
#   my $h = hold("$base/conc/hold.cgi", $ip);   # sent, not read
#   open_gate($h);  hold_status($h);            # 200 once released
#   drop($h);                                   # the client goes away

use strict;
use warnings;

use Exporter qw(import);
use File::Basename ();
use File::Path qw(make_path);
use IO::Socket::INET;
use Socket qw(MSG_PEEK MSG_DONTWAIT);
use Time::HiRes qw(time);

our @EXPORT = qw(hold open_gate hold_status hold_peek drop gate_dir);

my $seq = 0;

sub gate_dir {
    my $d = File::Basename::dirname(__FILE__) . '/../../htdocs/conc/gate';
    make_path($d);
    return $d;
}

# hold($url, $ip[, quick => 1, headers => {...}]) -> a held request
# (quick: no gate, it answers at once)
sub hold {
    my ($url, $ip, %a) = @_;
    my ($host, $port, $path) = $url =~ m{^http://([^:/]+):(\d+)(/.*)$}
      or die "SL::Hold: bad url $url\n";
    my $id = $a{quick} ? '' : sprintf('g%d_%d_%d', $$, ++$seq, int(time * 1000) % 1e6);
    unlink gate_dir() . "/$id" if $id;
    my $s = IO::Socket::INET->new(PeerAddr => $host, PeerPort => $port,
        Proto => 'tcp', Timeout => 5) or die "SL::Hold: connect $host:$port: $!\n";
    my $more = join '', map {"$_: $a{headers}{$_}\r\n"} sort keys %{ $a{headers} || {} };
    print $s "GET $path?$id HTTP/1.0\r\nHost: $host\r\nX-Forwarded-For: $ip\r\n$more\r\n";
    return { sock => $s, id => $id };
}

sub open_gate {
    my ($h) = @_;
    return unless $h->{id};
    open my $fh, '>', gate_dir() . "/$h->{id}" or die "SL::Hold: gate: $!\n";
    close $fh;
}

# The response's status (0: none within 20 s); headers in $h->{headers}.
sub hold_status {
    my ($h) = @_;
    my $s = $h->{sock} or return 0;
    my $resp = '';
    eval {
        local $SIG{ALRM} = sub { die "timeout\n" };
        alarm 20;
        while (sysread($s, my $buf, 65536)) { $resp .= $buf }
        alarm 0;
    };
    alarm 0;
    close $s;
    $h->{sock} = undef;
    my ($head, $body) = split /\r\n\r\n/, $resp, 2;
    $h->{body} = $body;
    $h->{headers} = {};
    for my $line (split /\r\n/, $head // '') {
        $h->{headers}{ lc $1 } = $2 if $line =~ /^([^:]+):\s*(.*)$/;
    }
    return $resp =~ m{^HTTP/\S+ (\d+)} ? $1 : 0;
}

# The status line's code once it has come (0: not yet), read without
# waiting and without taking it: an admitted request's 200 comes at once,
# long before it ends.
sub hold_peek {
    my ($h) = @_;
    my $s = $h->{sock} or return 0;
    my $buf = '';
    recv($s, $buf, 64, MSG_PEEK | MSG_DONTWAIT);
    return $buf =~ m{^HTTP/\S+ (\d+) } ? $1 : 0;
}

# The client closes its connection without reading the answer.
sub drop {
    my ($h) = @_;
    close $h->{sock} if $h->{sock};
    $h->{sock} = undef;
}

1;
