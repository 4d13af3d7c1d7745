# SPDX-License-Identifier: Apache-2.0
# Two limits in one section (a: 3 per 600 s, log; b: 5 per 600 s, counter),
# each also used alone in another section under the same name: a request
# passes only if both have room, and a refused request consumes nothing
# from either (one script call).
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Algo;

plan tests => 22;

sub get { http_get($_[0], 'X-Forwarded-For' => $_[1]) }

sub state {
    my ($ip) = @_;
    my $a = redis('ZCARD', sl_key(ip => $ip, policy => 'two-a', alg => 'l'));
    my $v = redis('GET', sl_key(ip => $ip, policy => 'two-b', alg => 'c'));
    my (undef, $cur, $prev) = counter_decode($v, store_now(), 600e6);
    return ($a, $cur + $prev);
}

# a is the tighter one: the fourth request is refused by a while b has room.
my $ip = fresh_ip();
for my $i (1 .. 3) {
    my $res = get('/alg/two/', $ip);
    ok t_cmp($res->{status}, 200, "both have room: request $i admitted");
}
is_deeply([ state($ip) ], [ 3, 3 ], 'each admission counted in both limits');
my $res = get('/alg/two/', $ip);
ok t_cmp($res->{status}, 429, 'a is spent: refused although b has room');
is_deeply([ state($ip) ], [ 3, 3 ], 'the refusal consumed nothing from a nor from b');
ok t_cmp($res->{headers}{'ratelimit-policy'}, qr/"two-a";q=3;w=600/, 'RateLimit-Policy lists a');
ok t_cmp($res->{headers}{'ratelimit-policy'}, qr/"two-b";q=5;w=600/, '... and b');
ok t_cmp($res->{headers}{ratelimit}, qr/^"two-a";r=0;/, 'RateLimit reports the refusing limit a');
# b alone still has its two.
ok t_cmp(get('/alg/b-only/', $ip)->{status}, 200, 'b used alone elsewhere: admitted');
ok t_cmp(get('/alg/b-only/', $ip)->{status}, 200, 'b used alone: admitted again');
ok t_cmp(get('/alg/b-only/', $ip)->{status}, 429, 'b used alone: spent at 5');
is_deeply([ state($ip) ], [ 3, 5 ], 'b counted the requests of both sections; a only its own');

# b is spent first: the section refuses though a is empty, and a stays empty.
$ip = fresh_ip();
ok t_cmp(get('/alg/b-only/', $ip)->{status}, 200, "b alone: request $_ admitted") for 1 .. 5;
$res = get('/alg/two/', $ip);
ok t_cmp($res->{status}, 429, 'b is spent: refused although a is empty');
ok t_cmp($res->{headers}{ratelimit}, qr/^"two-b";r=0;/, 'RateLimit reports the refusing limit b');
my $akey = sl_key(ip => $ip, policy => 'two-a', alg => 'l');
ok t_cmp(redis('EXISTS', $akey), 0, 'the refusal wrote nothing to a (no key)');
is_deeply([ state($ip) ], [ 0, 5 ], 'and nothing more to b');
