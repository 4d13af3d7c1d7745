# docs/REFERENCE.md "Limits from an expression": its examples, pasted as written into
# a server's configuration, never let a client choose its quota. A client
# sends X-Customer-Quota: 99999 to the /api example and X-Plan: gold to the
# /v2 example, and each still gets its quota-default=; the examples start
# without the warning about a quota read from a client's header. The same
# blocks with the proxy's address made this test's show that the proxy's
# word is still taken.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Httpd;
use SL::Keys;

plan tests => 9;

# The section's ```apache blocks that configure a <Location>, as an
# operator would paste them.
require SL::Docs;
my @blocks = grep { /<Location / } map { $_->{text} }
  grep { $_->{title} eq 'Limits from an expression' } SL::Docs::blocks(top_dir());
ok(@blocks >= 1, scalar(@blocks) . ' example blocks in the section');
my $examples = join "\n", @blocks;
like($examples, qr{<Location /api>.*<Location /v2>}s, '... the /api and the /v2 examples');
note $examples;

my $alias = 'AliasMatch ^/(api|v2) "' . SL::Httpd::_tdir() . "/htdocs/fault.html\"\n";
my $get = sub {
    my ($h, $path, %hdr) = @_;
    return http_get($h->url . $path, 'X-Forwarded-For' => fresh_ip(), %hdr)->{headers}{'ratelimit-policy'} // '-';
};

my $h = SL::Httpd->start(extra => $alias . $examples);
ok t_cmp($get->($h, '/api/', 'X-Customer-Quota' => '99999'), '"api";q=100;w=60',
    '/api: a client\'s X-Customer-Quota: 99999 leaves quota-default=100');
ok t_cmp($get->($h, '/v2/', 'X-Plan' => 'gold'), '"v2";q=500;w=3600',
    '/v2: a client\'s X-Plan: gold leaves quota-default=500');
ok t_cmp($get->($h, '/api/'), '"api";q=100;w=60', '/api without the header: 100');
unlike($h->error_log, qr/a client can choose its own quota/, 'the examples start without the warning');
$h->stop;

# The proxy is this test's address: its word is taken.
(my $trusted = $examples) =~ s/\b10\.0\.0\.5\b/127.0.0.1/g;
SKIP: {
    skip 'the examples name no proxy address', 3 if $trusted eq $examples;
    $h = SL::Httpd->start(extra => $alias . $trusted);
    ok t_cmp($get->($h, '/api/', 'X-Customer-Quota' => '250'), '"api";q=250;w=60',
        'from the proxy\'s address, X-Customer-Quota: 250 is the quota');
    ok t_cmp($get->($h, '/v2/', 'X-Plan' => 'gold'), '"v2";q=5000;w=3600',
        'from the proxy\'s address, X-Plan: gold is 5000');
    ok t_cmp($get->($h, '/api/', 'X-Customer-Quota' => '25x'), '"api";q=100;w=60',
        '... and a value that is no number is not');
    $h->stop;
}
