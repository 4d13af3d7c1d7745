# SPDX-License-Identifier: Apache-2.0
# SlidingLimitKeySecret: the identity in a store key is HMAC-SHA1 of the key
# value under the server's secret, so the same client under another secret
# (or none) has another key, and nobody who reads the store can recompute an
# identity without the secret.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use SL::Test;
use SL::Keys;
use File::Temp qw(tempdir);

plan tests => 13;

my $conf = top_dir() . '/t/conf';

sub get {
    my ($vhost, $ip) = @_;
    return http_get({ vhost => $vhost }, '/keys/secret/', 'X-Forwarded-For' => $ip)->{status};
}

my $ip = fresh_ip();
# Under a secret the policy's part of the key is keyed too.
my $pid = sl_policy_named('keys-secret');
my $ka = sl_key(identity => keyed_identity("$conf/keysecret-a", 'ip', $ip),
    policy_id => keyed_policy("$conf/keysecret-a", $pid));
my $kb = sl_key(identity => keyed_identity("$conf/keysecret-b", 'ip', $ip),
    policy_id => keyed_policy("$conf/keysecret-b", $pid));
my $plain = sl_key(identity => sl_identity('ip', $ip), policy => 'keys-secret');

# (Whether $ka and $kb differ, or keep the key shape, is the test's own
# computation: what the store holds under them is checked below.)

is(get('sl_secret_a', $ip), 200, 'secret a: admitted');
is(redis('ZCARD', $ka), 1, 'secret a: counted under the keyed identity');
is(get('sl_secret_b', $ip), 200, 'secret b: the same client is admitted');
is(redis('ZCARD', $kb), 1, 'secret b: counted under its own keyed identity');
is(redis('EXISTS', $plain), 0, 'no key under the unkeyed identity');
is(redis('EXISTS', sl_key(identity => keyed_identity("$conf/keysecret-a", 'ip', $ip),
    policy => 'keys-secret')), 0, 'no key under the unkeyed policy id');
is_deeply([ map { get('sl_secret_a', $ip) } 1 .. 3 ], [ 200, 200, 429 ],
    'secret a: its own budget of 3 is spent, b\'s request did not count');
is(get(undef, $ip), 200, 'no secret: admitted');
is(redis('ZCARD', $plain), 1, 'no secret: counted under the unkeyed identity, as before');

# A secret file others can read is accepted with a warning; one readable by
# its owner only passes quietly.
{
    my $dir = tempdir(CLEANUP => 1, TMPDIR => 1);
    open my $f, '>', "$dir/secret" or die "$dir/secret: $!";
    print $f 'x' x 32;
    close $f;
    chmod 0644, "$dir/secret";
    my ($rc, $out) = httpd_check("SlidingLimitKeySecret $dir/secret");
    is($rc, 0, 'a world-readable secret is accepted') or diag($out);
    like($out, qr/SlidingLimitKeySecret: '\Q$dir\E\/secret' is readable by others/,
        '... with a warning naming the directive and the file');
    chmod 0600, "$dir/secret";
    ($rc, $out) = httpd_check("SlidingLimitKeySecret $dir/secret");
    is($rc, 0, 'a secret readable by its owner only is accepted') or diag($out);
    unlike($out, qr/readable by others/, '... without a warning');
}
