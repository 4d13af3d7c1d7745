# SPDX-License-Identifier: Apache-2.0
# .htaccess: under AllowOverride Limit the per-directory directives work as
# in <Directory> (limits, inheritance into subdirectories, one budget per
# directory for unnamed lines); a name is the directory's own, and the
# name of a server policy is refused; other override classes and the store
# directives are refused by httpd (500), AllowOverride None ignores it.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Fault qw(error_log_lines);

plan tests => 11;

sub st {
    my ($path, $ip) = @_;
    return http_get($path, 'X-Forwarded-For' => $ip)->{status};
}

{
    my $ip = fresh_ip();
    my @s = map { st('/htaccess/limited/', $ip) } 1 .. 3;
    ok t_cmp("@s", '200 200 429', '.htaccess SlidingLimit 2 60s: the third is refused');
    my $r = http_get('/htaccess/limited/', 'X-Forwarded-For' => fresh_ip());
    ok(defined $r->{headers}{'ratelimit-limit'} && !defined $r->{headers}{'x-ratelimit-limit'},
        '.htaccess SlidingLimitHeaders draft03 applies');
    ok t_cmp(st('/htaccess/limited/sub/', $ip), 429, 'a subdirectory inherits the limit and its budget');
}
{
    my $ip = fresh_ip();
    my @s = (st('/htaccess/limited/', $ip), st('/htaccess/limited/', $ip), st('/htaccess/other/', $ip));
    ok t_cmp("@s", '200 200 200', 'the same line in another directory\'s .htaccess is another budget');
}
{
    my $ip = fresh_ip();
    my @s = map { st('/htaccess/srvnamed/', $ip) } 1 .. 3;
    my @h = map { st('/htaccess/named/', $ip) } 1 .. 2;
    ok t_cmp("@s | @h", '200 200 429 | 500 500',
        'name= in .htaccess may not be a server policy\'s name (500); the server\'s policy is untouched');
    @h = map { st('/htaccess/ownname/', $ip) } 1 .. 3;
    my $r = http_get('/htaccess/ownname/', 'X-Forwarded-For' => fresh_ip());
    ok t_cmp("@h " . ($r->{headers}{'ratelimit-policy'} // ''), qr/^200 200 429 "hta-own";/,
        'a name no server policy has is the directory\'s own budget, shown by its name');
}
{
    my $ip = fresh_ip();
    my @s = map { st('/htaccess/none/', $ip) } 1 .. 3;
    ok t_cmp("@s", '200 200 200', 'AllowOverride None: the file is not read');
    my $r = http_get('/htaccess/none/', 'X-Forwarded-For' => $ip);
    ok(!defined $r->{headers}{'ratelimit-policy'}, '... no limit applies');
}
ok t_cmp(st('/htaccess/auth/', fresh_ip()), 500, 'AllowOverride AuthConfig: not allowed (500)');
ok t_cmp(st('/htaccess/store/', fresh_ip()), 500, 'SlidingLimitStore in .htaccess: not allowed (500)');
my @l = error_log_lines(qr/SlidingLimitStore not allowed here/);
ok(@l >= 1, 'the error log names the directive');
