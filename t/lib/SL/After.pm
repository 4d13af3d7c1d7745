# SPDX-License-Identifier: Apache-2.0
# cost=after: tests' helpers (t/105 .. t/109). The charge comes after the
# response, once the client has it, in log_transaction: httpd runs that
# before it reads the next request of the same connection (or closes it).
# So every request goes over one kept-alive connection per server, and a
# look after a request sees its charge, never by timing.
package SL::After;
use strict;
use warnings;

use Exporter 'import';
use HTTP::Tiny;
use SL::Test;

our @EXPORT = qw(af_get af_used af_look);

my %ua;

# af_get({ vhost => ... } or {}, $path, %headers) -> HTTP::Tiny response;
# { base => URL } for another httpd, { method => 'HEAD' } for another
# method.
sub af_get {
    # Apache::Test's look-up of a virtual host writes $_.
    local $_;
    my ($o, $path, %h) = @_;
    my $base = $o->{base} // server_url($o->{vhost});
    $ua{$base} //= HTTP::Tiny->new(keep_alive => 1, timeout => 10, max_redirect => 0);
    return $ua{$base}->request($o->{method} // 'GET', $base . $path, { headers => \%h });
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
