# SPDX-License-Identifier: Apache-2.0
# A reset needs a request a browser cannot send from another site: the
# header X-SlidingLimit-Reset (not CORS-safelisted, so a cross-site page
# cannot add it without a preflight, which the handler never grants), and
# no cross-site Origin or Sec-Fetch-Site. Each refusal is 403 with a reason
# and leaves the administrator's 429 in place; the status location is
# behind Require ip 127.0.0.1, as an operator's browser would be:
#  - a form POST (application/x-www-form-urlencoded, text/plain,
#    multipart/form-data), without the header;
#  - with the header, but Origin https://evil.example, Origin null, or the
#    same host on another port or scheme;
#  - with the header, but Sec-Fetch-Site cross-site or same-site;
#  - with the header and the request's own Origin, or Sec-Fetch-Site
#    same-origin or none: reset;
#  - tools/slidinglimit-client reset sends what is needed.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Cwd qw(abs_path);
use File::Basename qw(dirname);
use HTTP::Tiny;
use JSON::PP qw(decode_json);
use SL::Test;
use SL::Httpd;

plan tests => 3 + 4 + 2 + 3 + 2;

my $t = abs_path(dirname(__FILE__));
my $h = SL::Httpd->start(name => "sp-forged-$$",
    extra => "Define SP_DOCS \"$t/htdocs/sp\"\nInclude \"$t/conf/sl.d/statuspage.inc\"\n");
my $own = $h->url;    # http://127.0.0.1:PORT

sub login { HTTP::Tiny->new(timeout => 10)->get($h->url . '/sp/login.html',
    { headers => { 'X-Forwarded-For' => $_[0] } })->{status} }

# POST /sp-reset?path=/sp/login.html&ip=IP of a refused client with these
# headers and body: "STATUS REASON | the client's status after it".
sub try_reset {
    my ($hdr, $body) = @_;
    my $ip = fresh_ip();
    my $before = join ' ', map { login($ip) } 1 .. 3;
    return "setup: $before" if $before ne '200 200 429';
    my $res = HTTP::Tiny->new(timeout => 10)->request('POST',
        $h->url . "/sp-reset?path=/sp/login.html&ip=$ip",
        { headers => $hdr, (defined $body ? (content => $body) : ()) });
    my $why = eval { decode_json($res->{content})->{error} } // (eval { decode_json($res->{content})->{action} } // '-');
    return "$res->{status} $why | " . login($ip);
}

# Browser forms: CORS-simple requests, sent cross-site without a preflight.
for my $ct ('application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data; boundary=x') {
    my $got = try_reset({ 'Content-Type' => $ct, Origin => 'https://evil.example' }, 'a=b');
    ok t_cmp($got, qr/^403 .*X-SlidingLimit-Reset.* \| 429$/, "a form POST ($ct): refused, the refusal stays");
}

# The header, but from another origin.
for my $origin ('https://evil.example', 'null', "http://127.0.0.1:1", 'https://127.0.0.1:' . $h->port) {
    my $got = try_reset({ 'X-SlidingLimit-Reset' => 1, Origin => $origin });
    ok t_cmp($got, qr/^403 .*Origin.* \| 429$/, "the header with Origin $origin: refused");
}
for my $site ('cross-site', 'same-site') {
    my $got = try_reset({ 'X-SlidingLimit-Reset' => 1, 'Sec-Fetch-Site' => $site });
    ok t_cmp($got, qr/^403 .*Sec-Fetch-Site.* \| 429$/, "the header with Sec-Fetch-Site $site: refused");
}

# What the operator's own page or tool sends.
ok t_cmp(try_reset({ 'X-SlidingLimit-Reset' => 1, Origin => uc($own) }), '200 reset | 200',
    'the header with the request\'s own Origin (any case): reset');
ok t_cmp(try_reset({ 'X-SlidingLimit-Reset' => 1, 'Sec-Fetch-Site' => 'same-origin' }), '200 reset | 200',
    'the header with Sec-Fetch-Site same-origin: reset');
ok t_cmp(try_reset({ 'X-SlidingLimit-Reset' => 1, 'Sec-Fetch-Site' => 'none' }), '200 reset | 200',
    'the header with Sec-Fetch-Site none (typed by the user): reset');

# tools/slidinglimit-client
{
    my $ip = fresh_ip();
    my $before = join ' ', map { login($ip) } 1 .. 3;
    my $tool = "$t/../tools/slidinglimit-client";
    my $out = `sh $tool $own/sp-reset reset path=/sp/login.html ip=$ip 2>&1`;
    my $l = eval { decode_json($out)->{limits}[0] } // {};
    ok t_cmp("$before " . ($l->{used} // "- $out"), '200 200 429 0', 'slidinglimit-client reset: used 0');
    ok t_cmp(login($ip), 200, '... the client is admitted again');
}
$h->stop;
