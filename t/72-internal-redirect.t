# SPDX-License-Identifier: Apache-2.0
# Internal redirects reach a limited URL with a decision of its own: a
# per-directory rewrite, a CGI's local Location: and a fail-closed target
# are decided there; a redirect within the same limits (a CGI in the
# section, the refusal's own ErrorDocument) is never counted twice.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Fault;

plan tests => 17;

sub get { my ($path, $ip) = @_; return http_get($path, 'X-Forwarded-For' => $ip) }

# An exhausted limit stays closed behind an unlimited rewrite or CGI.
my $ip = fresh_ip();
my @st = map { get('/redir/limited/', $ip)->{status} } 1 .. 3;
ok t_cmp("@st", '200 200 429', 'the limit admits two, refuses the third');
my $res = get('/redir/alias/index.html', $ip);
ok t_cmp($res->{status}, 429, 'a rewrite into the exhausted location is refused');
ok t_cmp($res->{headers}{'x-ratelimit-limit'}, 2, '... with its quota headers');
$res = get('/redir/cgi/go.cgi?/redir/limited/index.html', $ip);
ok t_cmp($res->{status}, 429, "a CGI's local Location: into it is refused");

# A fresh client: every route into the location counts, once.
$ip = fresh_ip();
my $key = sl_key(ip => $ip, policy => 'redir-limited');
$res = get('/redir/alias/index.html', $ip);
ok t_cmp($res->{status}, 200, 'the rewrite is admitted');
ok t_cmp($res->{content}, qr/redir limited page/, '... and serves the target');
ok t_cmp(redis('ZCARD', $key), 1, '... counted against the target');
$res = get('/redir/cgi/go.cgi?/redir/limited/index.html', $ip);
ok t_cmp($res->{status}, 200, 'the CGI redirect is admitted');
ok t_cmp(redis('ZCARD', $key), 2, '... counted against the target');
$res = get('/redir/alias/index.html', $ip);
ok t_cmp($res->{status}, 429, 'the third route in is refused');

# A redirect within the same limits is not counted again.
$ip = fresh_ip();
$key = sl_key(ip => $ip, policy => 'redir-limited');
$res = get('/redir/limited/go.cgi?/redir/limited/index.html', $ip);
ok t_cmp($res->{status}, 200, 'a CGI of the section redirecting inside it');
ok t_cmp(redis('ZCARD', $key), 1, '... counts once');

# The refusal's own ErrorDocument under the same limits.
$ip = fresh_ip();
$key = sl_key(ip => $ip, policy => 'redir-self');
@st = map { get('/redir/self/', $ip)->{status} } 1 .. 2;
ok t_cmp("@st", '200 429', 'one admitted, then refused');
$res = get('/redir/self/', $ip);
ok t_cmp($res->{content}, qr/redir self 429 page/, 'the ErrorDocument page is the body');
ok t_cmp(redis('ZCARD', $key), 1, 'neither the refusals nor their pages counted');

# Fail-closed: on a host whose store refuses every call, a redirect into
# the fail-closed location gets its 503.
$res = http_get({ vhost => 'sl_badauth' }, '/redir/cgi/go.cgi?/redir/closed/index.html',
    'X-Forwarded-For' => fresh_ip());
ok t_cmp("$res->{status} $res->{headers}{'x-sl-result'}", '503 failed-closed',
    'a redirect into a fail-closed location fails closed');
$res = http_get({ vhost => 'sl_badauth' }, '/redir/closed/index.html',
    'X-Forwarded-For' => fresh_ip());
ok t_cmp("$res->{status} $res->{headers}{'x-sl-result'}", '503 failed-closed',
    'as the location itself does');
