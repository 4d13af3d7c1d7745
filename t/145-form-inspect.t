# SPDX-License-Identifier: Apache-2.0
# The status handler and form: budgets: form:FIELD=VALUE names an
# account's budget, its value normalised as a request's (" KIM " is kim),
# and a reset frees it; ip=ADDR names a request without the field; a value
# of spaces only, or a field the section does not key by, is a 400 that
# says why.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use HTTP::Tiny;
use JSON::PP qw(decode_json);
use URI::Escape qw(uri_escape);
use SL::Test;
use SL::Keys qw(tag);

plan tests => 6;

sub post {
    my ($from, $body) = @_;
    return HTTP::Tiny->new(timeout => 10)->request('POST', server_url() . '/form/upload.cgi',
        {   headers => { 'X-Forwarded-For' => $from, 'Content-Type' => 'application/x-www-form-urlencoded' },
            content => $body });
}
sub status_ask {
    my ($method, $query) = @_;
    my %opt = $method eq 'POST' ? (headers => { 'X-SlidingLimit-Reset' => 1 }) : ();
    my $res = HTTP::Tiny->new(timeout => 10)->request($method, server_url() . "/form-status?$query", \%opt);
    return ($res->{status}, eval { decode_json($res->{content}) } // {});
}

my $kim = 'kim-' . tag();
my $key = sl_key(identity => sl_identity('form:log', $kim), policy => 'form-upload');
post(fresh_ip(), 'log=' . uri_escape(" \U$kim ")) for 1 .. 2;
my ($st, $j) = status_ask('GET', 'path=/form/upload.cgi&form:log=' . uri_escape(" \U$kim "));
ok(($st == 200 && ($j->{limits}[0]{key} // '') eq $key && $j->{limits}[0]{used} == 2),
    "form:log= finds the account's budget, normalised ($st)") or diag(explain $j);
($st) = status_ask('POST', "path=/form/upload.cgi&form:log=$kim");
is(redis('EXISTS', $key), 0, '... and a reset frees it');

my $ip = fresh_ip();
post($ip, 'other=1');
($st, $j) = status_ask('GET', "path=/form/upload.cgi&ip=$ip");
ok(($st == 200 && ($j->{limits}[0]{key} // '') eq sl_key(ip => $ip, policy => 'form-upload')),
    "ip= names a request without the field ($st)");
($st, $j) = status_ask('GET', 'path=/form/upload.cgi&form:log=%20%20');
ok(($st == 400 && ($j->{error} // '') =~ /only spaces/), "form:log= of spaces: 400 ($st: " . ($j->{error} // '-') . ')');
($st, $j) = status_ask('GET', 'path=/form/upload.cgi&form:user=x');
ok(($st == 400 && ($j->{error} // '') =~ /form:user is not a key source here; the section's are: form:log/),
    "form:user=: 400, naming form:log ($st: " . ($j->{error} // '-') . ')');
($st, $j) = status_ask('GET', 'path=/form/upload.cgi&none=-');
ok(($st == 400 && ($j->{error} // '') =~ /address/), "none=: 400, a request without the field has its address ($st)");
