# SPDX-License-Identifier: Apache-2.0
# An unnamed limit belongs to its virtual host: name-based hosts on one
# address whose sections read the same keep apart budgets (by IP and by a
# user name), while two servers with the same configuration share them.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use SL::Test;
use SL::Keys;
use SL::Httpd;

plan tests => 7;

my $one = SL::Httpd->start(conf => ['vhosts.inc'], name => 'vh-one');
my $two = SL::Httpd->start(conf => ['vhosts.inc'], name => 'vh-two');

# HTTP::Tiny will not send a Host header of our choosing.
sub get {
    my ($server, $host, %h) = @_;
    return raw_request("GET /basic/ HTTP/1.0\r\nHost: $host\r\n"
          . join('', map {"$_: $h{$_}\r\n"} sort keys %h) . "\r\n", $server->url);
}

{
    my $ip = fresh_ip();
    my @a = map { get($one, 'a.vh.test', 'X-Forwarded-For' => $ip) } 1 .. 2;
    is("@a", '200 200', 'host a: the first two requests pass');
    is(get($one, 'b.vh.test', 'X-Forwarded-For' => $ip), 200,
        'host b: the same client has its own budget');
    is(get($one, 'a.vh.test', 'X-Forwarded-For' => $ip), 429,
        'host a: its budget is spent');
    is(get($two, 'a.vh.test', 'X-Forwarded-For' => $ip), 429,
        'another server with the same hosts shares host a\'s budget');
    is(get($two, 'b.vh.test', 'X-Forwarded-For' => $ip), 200,
        '... and host b\'s (one request left)');
}

{
    my $user = 'bob-' . tag();
    my @c = map { get($one, 'c.vh.test', 'X-User' => $user, 'X-Forwarded-For' => fresh_ip()) }
      1 .. 3;
    is("@c", '200 200 429', 'host c: user bob spends his budget');
    is(get($one, 'd.vh.test', 'X-User' => $user, 'X-Forwarded-For' => fresh_ip()), 200,
        'host d: the same user name on another tenant is not locked out');
}

$one->stop;
$two->stop;
