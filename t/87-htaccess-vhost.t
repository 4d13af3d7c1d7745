# SPDX-License-Identifier: Apache-2.0
# .htaccess inside virtual hosts: reading the file never writes what lives
# longer than the request (an unnamed line was once pushed onto the
# server's record from the request's pool: children crashed), and its
# unnamed limits are still each name-based host's own budget, the same on
# every server with that configuration.
# Runs under each MPM: the file is read by threads or by processes.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use SL::Test;
use SL::Keys;
use SL::Httpd;

plan tests => 6;

$ENV{SL_TEST_HTDOCS} = top_dir() . '/t/htdocs';
my $one = SL::Httpd->start(conf => ['htaccess-vhost.inc'], name => 'hv-one', children => 1);
my $two = SL::Httpd->start(conf => ['htaccess-vhost.inc'], name => 'hv-two');

sub get {
    my ($server, $host, $path, $ip) = @_;
    return raw_request("GET $path HTTP/1.0\r\nHost: $host\r\n"
          . "X-Forwarded-For: $ip\r\n\r\n", $server->url);
}

# What a request leaves in its pool is what the next request on that
# connection's pool finds there: requests with long header lines between
# the .htaccess ones fill it with bytes of the client's choosing.
{
    my $ip   = fresh_ip();
    my $fill = join '', map {"X-Fill-$_: " . ('A' x 2000) . "\r\n"} 1 .. 4;
    my @s;
    for my $i (1 .. 20) {
        push @s, get($one, $i % 2 ? 'a.hv.test' : 'b.hv.test', '/htaccess-vh/', $ip);
        push @s, raw_request("GET /htaccess-vh/index.html HTTP/1.0\r\nHost: c.hv.test\r\n"
              . "X-Forwarded-For: $ip\r\n$fill\r\n", $one->url);
    }
    my @bad = grep { $_ != 200 && $_ != 429 } @s;
    is(scalar(@bad), 0, '40 requests through an .htaccess limit in virtual hosts: each 200 or 429')
      or diag("statuses: @s");
    my @dead = grep {/Segmentation fault|exit signal/} split /\n/, $one->error_log;
    is(scalar(@dead), 0, 'no child died') or diag($dead[0]);
}
{
    my $ip = fresh_ip();
    my @a = map { get($one, 'a.hv.test', '/htaccess-vh/two/', $ip) } 1 .. 3;
    is("@a", '200 200 429', 'host a: the .htaccess limit of 2 applies');
    is(get($one, 'b.hv.test', '/htaccess-vh/two/', $ip), 200,
        'host b: the same file is its own budget');
    is(get($two, 'a.hv.test', '/htaccess-vh/two/', $ip), 429,
        'another server with the same hosts shares host a\'s budget');
    is(get($two, 'b.hv.test', '/htaccess-vh/two/', $ip), 200,
        '... and host b\'s');
}

$one->stop;
$two->stop;
