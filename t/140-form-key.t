# SPDX-License-Identifier: Apache-2.0
# SlidingLimitKey form:FIELD with a urlencoded login (t/htdocs/form/login.cgi
# answers as WordPress does: failures 200, a good login 302):
#  - failures are counted by the account posted, across addresses, and the
#    fourth is refused whatever address it comes from;
#  - the account is trimmed and its ASCII letters folded: " Bob ", "BOB"
#    and "bob" are one budget;
#  - a good login reaches the application with the whole body, unchanged,
#    and is given back;
#  - a login without the field, and a GET, are keyed by the address;
#  - the store key is the one the README describes (source "form:log").
# Runs under each MPM
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Digest::SHA qw(sha1_hex);
use HTTP::Tiny;
use SL::Test;
use SL::Keys qw(tag);
use SL::After;

plan tests => 19;

sub post {
    my ($path, $from, $body, %h) = @_;
    return HTTP::Tiny->new(timeout => 10, max_redirect => 0)->request(
        'POST',
        server_url() . $path,
        {   headers => {
                'X-Forwarded-For' => $from,
                'Content-Type'    => 'application/x-www-form-urlencoded',
                %h
            },
            content => $body
        });
}

sub form_key { sl_key(identity => sl_identity('form:log', $_[0]), policy => $_[1]) }
sub ip_key   { sl_key(ip => $_[0], policy => $_[1]) }

my $alice = 'alice-' . tag();
my $k = form_key($alice, 'form-login');
redis('DEL', $k);

# One account from four addresses: counted across them.
{
    my @st = map { post('/form/login.cgi', fresh_ip(), "log=$alice&pwd=wrong")->{status} } 1 .. 4;
    is("@st", '200 200 200 429', 'four wrong logins as one account from four addresses: the 4th is refused');
    is(redis('ZCARD', $k), 3, '... counted in the account budget, under the source "form:log"');
    my $res = post('/form/login.cgi', fresh_ip(), "log=$alice&pwd=right-$alice");
    is($res->{status}, 429, '... the right password too, while the account is refused');
    ok($res->{headers}{'retry-after'}, '... with a Retry-After');
    my $other = 'other-' . tag();
    is(post('/form/login.cgi', fresh_ip(), "log=$other&pwd=wrong")->{status}, 200,
        '... another account is not touched');
}

# Case and surrounding whitespace.
{
    my $bob = 'bob-' . tag();
    my @v = (" \t" . uc($bob) . "  ", ucfirst($bob), $bob);
    my @st = map {
        my $v = $_;
        $v =~ s/([^A-Za-z0-9-])/sprintf '%%%02X', ord $1/ge;
        post('/form/login.cgi', fresh_ip(), "log=$v&pwd=wrong")->{status}
    } @v, $bob;
    is("@st", '200 200 200 429', 'the account trimmed and folded: four spellings, one budget');
    is(redis('ZCARD', form_key($bob, 'form-login')), 3, '... keyed by the lower-case name');
}

# A good login: the application gets the body as sent; given back.
{
    my $carol = 'carol-' . tag();
    my $body  = "pad=" . ('x' x 3000) . "&log=$carol&pwd=right-$carol&redirect_to=%2Fwp-admin%2F&testcookie=1";
    my $res   = post('/form/login.cgi', fresh_ip(), $body);
    is($res->{status}, 302, 'the right password: 302 from the application');
    is($res->{headers}{'x-body-length'}, length $body, '... which read the whole body');
    is($res->{headers}{'x-body-sha1'}, sha1_hex($body), '... unchanged');
    ok(wait_until(sub { redis('ZCARD', form_key($carol, 'form-login')) == 0 }, 5),
        '... and given back (count=200)');
    # The fourth finds room only once an earlier one is given back, after
    # its response (log_transaction): on one kept-alive connection, before
    # the next request is read (SL::After).
    my @st = map {
        af_get({ method => 'POST', content => "log=$carol&pwd=right-$carol" }, '/form/login.cgi',
            'X-Forwarded-For' => fresh_ip(), 'Content-Type' => 'application/x-www-form-urlencoded')->{status}
    } 1 .. 4;
    is("@st", '302 302 302 302', '... good logins never use up the account');
}

# The field posted twice: the last one, as PHP takes it.
{
    my ($first, $last) = ('first-' . tag(), 'last-' . tag());
    post('/form/login.cgi', fresh_ip(), "log=$first&log=$last&pwd=x");
    is(redis('ZCARD', form_key($last, 'form-login')), 1, 'the field twice: the last value is the key');
}

# No field: the address.
{
    my $ip = fresh_ip();
    my @st = map { post('/form/login.cgi', $ip, "user=nobody&pwd=wrong")->{status} } 1 .. 4;
    is("@st", '200 200 200 429', 'no account field: keyed by the address');
    is(redis('ZCARD', ip_key($ip, 'form-login')), 3, '... in the address budget');
    is(post('/form/login.cgi', fresh_ip(), "user=nobody&pwd=wrong")->{status}, 200,
        '... another address has its own');
    my $empty = fresh_ip();
    post('/form/login.cgi', $empty, "log=%20%20&pwd=wrong");
    is(redis('ZCARD', ip_key($empty, 'form-login')), 1, 'an account of only spaces: the address');
}

# A GET has no body: the address (a section decided for every method).
{
    my $ip = fresh_ip();
    my $res = http_get('/form/upload.cgi?log=mallory', 'X-Forwarded-For' => $ip);
    is($res->{status}, 200, 'GET with the field in the query: admitted');
    is(redis('ZCARD', ip_key($ip, 'form-upload')), 1, '... keyed by the address, not the query');
}
