# SPDX-License-Identifier: Apache-2.0
# SlidingLimitKey form:FIELD with multipart/form-data, and bodies the module
# does not read:
#  - the field of a multipart body is the key, and an upload beside it
#    (binary, with CRLFs and the boundary's dashes inside) reaches the
#    application byte for byte;
#  - a file part named like the field is no field (PHP puts it in $_FILES):
#    the address;
#  - a form body over 64 KiB, or without a Content-Length (chunked), is not
#    read: every such request shares one budget (source "form-unread:log"),
#    whatever its address or account, and still reaches the application
#    whole;
#  - a body of another type (JSON) is no form: the address.
# Runs under each MPM
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Digest::SHA qw(sha1_hex);
use HTTP::Tiny;
use SL::Test;
use SL::Keys qw(tag);

plan tests => 15;

sub post {
    my ($from, $type, $body) = @_;
    return HTTP::Tiny->new(timeout => 20, max_redirect => 0)->request(
        'POST',
        server_url() . '/form/upload.cgi',
        {   headers => { 'X-Forwarded-For' => $from, 'Content-Type' => $type },
            content => $body
        });
}

sub form_key { sl_key(identity => sl_identity('form:log', $_[0]), policy => 'form-upload') }
sub ip_key   { sl_key(ip => $_[0], policy => 'form-upload') }
my $unread = sl_key(identity => sl_identity('form-unread:log', '-'), policy => 'form-upload');

sub multipart {
    my ($boundary, @parts) = @_;
    my $body = '';
    while (my ($head, $content) = splice @parts, 0, 2) {
        $body .= "--$boundary\r\n$head\r\n\r\n$content\r\n";
    }
    return $body . "--$boundary--\r\n";
}

my $b = '----form' . tag();
# Bytes 0-255, CRLFs, dashes and a near-boundary: all the application's.
my $file = join("", map { chr } 0 .. 255) x 40 . "\r\n--" . substr($b, 0, -1) . "\r\n--" . "\0\r\n" x 100;

{
    my $dave = 'dave-' . tag();
    my $body = multipart($b,
        'Content-Disposition: form-data; name="pad"', 'x' x 100,
        qq{Content-Disposition: form-data; name="upload"; filename="a;name=\\"log\\".bin"\r\nContent-Type: application/octet-stream}, $file,
        qq{Content-Disposition: form-data; name="log"}, "  \u$dave ",
        qq{Content-Disposition: form-data; name="pwd"}, 'wrong');
    my $res = post(fresh_ip(), "multipart/form-data; boundary=$b", $body);
    is($res->{status}, 200, 'multipart: admitted');
    is($res->{headers}{'x-body-length'}, length $body, '... the application read the whole body');
    is($res->{headers}{'x-body-sha1'}, sha1_hex($body), '... byte for byte');
    is(redis('ZCARD', form_key($dave)), 1, '... keyed by the field, trimmed and folded');

    # A quoted boundary, the field first.
    my $erin = 'erin-' . tag();
    my $q = multipart("q$b", 'Content-Disposition: form-data; name=log', $erin);
    post(fresh_ip(), qq{multipart/form-data; charset=utf-8; boundary="q$b"}, $q);
    is(redis('ZCARD', form_key($erin)), 1, 'a quoted boundary, an unquoted name: the field');
}

# A file part named "log": no field.
{
    my $ip = fresh_ip();
    my $frank = 'frank-' . tag();
    my $body = multipart($b, qq{Content-Disposition: form-data; name="log"; filename="x"}, $frank);
    post($ip, "multipart/form-data; boundary=$b", $body);
    is(redis('ZCARD', form_key($frank)), 0, 'a file part named like the field: not the account');
    is(redis('ZCARD', ip_key($ip)), 1, '... the address');
}

# Too large to read, or no length: one budget for all of them.
{
    redis('DEL', $unread);
    my $big = 'log=grace&pad=' . ('y' x 70000);
    my $res = post(fresh_ip(), 'application/x-www-form-urlencoded', $big);
    is($res->{status}, 200, 'a form body over 64 KiB: admitted');
    is($res->{headers}{'x-body-sha1'}, sha1_hex($big), '... and reaches the application whole');
    is(redis('ZCARD', $unread), 1, '... in the budget of unread bodies');
    is(redis('ZCARD', form_key('grace')), 0, '... not the account it names');
    post(fresh_ip(), 'application/x-www-form-urlencoded', 'log=heidi&pad=' . ('z' x 70000));
    is(redis('ZCARD', $unread), 2, '... another address, another account: the same budget');

    my @chunks = ('log=ivan&', 'pwd=wrong');
    my $chunked = HTTP::Tiny->new(timeout => 20)->request('POST', server_url() . '/form/upload.cgi',
        {   headers => { 'X-Forwarded-For' => fresh_ip(), 'Content-Type' => 'application/x-www-form-urlencoded' },
            content => sub { shift @chunks } });
    is($chunked->{headers}{'x-body-sha1'}, sha1_hex('log=ivan&pwd=wrong'),
        'a chunked form body reaches the application whole');
    is(redis('ZCARD', $unread), 3, '... and spends the budget of unread bodies');
}

# JSON is no form.
{
    my $ip = fresh_ip();
    post($ip, 'application/json', '{"log":"judy"}');
    is(redis('ZCARD', ip_key($ip)), 1, 'a JSON body: keyed by the address');
}
