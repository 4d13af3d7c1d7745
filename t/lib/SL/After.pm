# SPDX-License-Identifier: Apache-2.0
# Helpers of the cost=after: tests (t/105 .. t/109), and of every test
# that looks at what a request does after its response (count='s
# give-backs and their counters too). The charge comes after the
# response, once the client has it, in log_transaction: httpd runs that
# before it reads the next request of the same connection (or closes it).
# So every request goes over one kept-alive connection per server, and a
# look after a request sees its charge, never by timing. After some
# responses httpd closes the connection (a 500, a 503:
# ap_status_drops_connection), and the next request would go over a new
# one, which another worker may answer first: af_get_eof reads such a
# response until httpd has closed, which it does after log_transaction.
package SL::After;
use strict;
use warnings;

use Exporter 'import';
use HTTP::Tiny;
use IO::Socket::INET;
use SL::Test;

our @EXPORT = qw(af_get af_get_eof af_used af_look);

my %ua;

# af_get({ vhost => ... } or {}, $path, %headers) -> HTTP::Tiny response;
# { base => URL } for another httpd, { method => 'HEAD' } for another
# method, { content => BODY } for a body (a POST's).
sub af_get {
    # Apache::Test's look-up of a virtual host writes $_.
    local $_;
    my ($o, $path, %h) = @_;
    my $base = $o->{base} // server_url($o->{vhost});
    $ua{$base} //= HTTP::Tiny->new(keep_alive => 1, timeout => 10, max_redirect => 0);
    return $ua{$base}->request($o->{method} // 'GET', $base . $path,
        { headers => \%h, defined $o->{content} ? (content => $o->{content}) : () });
}

# af_get_eof({ vhost => ... } or {}, $path, %headers) -> { status,
# headers (lower-cased), content }: a GET on a connection of its own that
# asks httpd to close it, read until httpd has: once it has, the request's
# log_transaction has run. For a response after which httpd closes the
# connection anyway (a 500, a 503), where af_get's next request would go
# over a new connection.
sub af_get_eof {
    local $_;
    my ($o, $path, %h) = @_;
    my $base = $o->{base} // server_url($o->{vhost});
    my ($host, $port) = $base =~ m{^http://([^:/]+):(\d+)}
      or die "SL::After: bad base $base\n";
    my $s = IO::Socket::INET->new(PeerAddr => $host, PeerPort => $port, Timeout => 10)
      or die "SL::After: connect $host:$port: $!\n";
    binmode $s;
    my $more = join '', map {"$_: $h{$_}\r\n"} sort keys %h;
    syswrite($s, "GET $path HTTP/1.1\r\nHost: $host:$port\r\nConnection: close\r\n$more\r\n");
    my $all = '';
    eval {
        local $SIG{ALRM} = sub { die "timeout\n" };
        alarm 10;
        while (sysread($s, $all, 65536, length $all)) { }
        alarm 0;
    };
    alarm 0;
    close $s;
    my ($head, $body) = split /\r\n\r\n/, $all, 2;
    my %hd;
    for my $line (split /\r\n/, $head // '') {
        $hd{ lc $1 } = $2 if $line =~ /^([^:]+):\s*(.*)$/;
    }
    return { status => ($head // '') =~ m{^HTTP/\S+ (\d+)} ? $1 : 0,
        headers => \%hd, content => $body // '' };
}

# The status handler's look at client $ip of $path (JSON text), at
# /af-status.
sub af_look {
    my ($o, $path, $ip) = @_;
    return af_get($o, "/af-status?path=$path&ip=$ip")->{content} // '';
}

# What that look says limit $name has used (-1: not shown).
sub af_used {
    my ($o, $path, $ip, $name) = @_;
    my ($u) = af_look($o, $path, $ip) =~ /"name":"\Q$name\E"[^}]*"used":(\d+)/;
    return $u // -1;
}

1;
