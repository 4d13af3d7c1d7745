# SPDX-License-Identifier: Apache-2.0
# The status handler acts only where the server configuration opened it
# (SlidingLimitStatusPage metrics|inspect|reset), whatever set the handler:
#  - a tenant whose .htaccess sets the handler (SetHandler, AddHandler,
#    RewriteRule [H=]; AllowOverride FileInfo is enough for those) gets
#    neither the counters nor a client's budgets, and its POST resets
#    nothing: the administrator's refusal stays 429;
#  - SlidingLimitStatusPage itself is refused in .htaccess (500), also
#    inside <If> and <Files>;
#  - under a <Directory> the administrator opened, a tenant's handler gets
#    that level and no more;
#  - the administrator's own sections: the handler alone does nothing
#    (404, and the error log says what to add), and each level does
#    exactly its own: metrics (GET, HEAD), inspect (also GET with a query),
#    reset (also POST); OPTIONS and 405 answer the methods of the level.
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

plan tests => 9 + 4 + 3 + 4 + 7 + 5 + 5 + 2;

my $t = abs_path(dirname(__FILE__));
my $h = SL::Httpd->start(name => "sp-levels-$$",
    extra => "Define SP_DOCS \"$t/htdocs/sp\"\nInclude \"$t/conf/sl.d/statuspage.inc\"\n");
my %RESET = ('X-SlidingLimit-Reset' => 1);

sub req {
    my ($method, $path, %hdr) = @_;
    return HTTP::Tiny->new(timeout => 10, max_redirect => 0)
      ->request($method, $h->url . $path, { headers => \%hdr });
}
sub login { req('GET', '/sp/login.html', 'X-Forwarded-For' => $_[0])->{status} }

# A client the administrator's limit refuses: (address, its statuses).
sub refused {
    my $ip = fresh_ip();
    return ($ip, join ' ', map { login($ip) } 1 .. 3);
}

sub is_metrics { ($_[0]{content} // '') =~ /^slidinglimit_decisions_total/m }
sub first_line { (split /\n/, $_[0]{content} // '')[0] // '' }
# The methods in Allow, but TRACE (the core answers it, by TraceEnable).
sub allow { join ',', sort grep { $_ ne 'TRACE' } split /,\s*/, $_[0]{headers}{allow} // '' }

# Tenants.
for my $case (
    [ 'SetHandler',         '/sp/tenant/set/page.html',     "tenant set page\n" ],
    [ 'AddHandler .txt',    '/sp/tenant/add/status.txt',    "tenant add text\n" ],
    [ 'RewriteRule [H=]',   '/sp/tenant/rewrite/page.html', "tenant rewrite page\n" ],
) {
    my ($how, $url, $file) = @$case;
    my ($ip, $before) = refused();
    my $q = "?path=/sp/login.html&ip=$ip";
    my $g = req('GET', $url);
    ok(!is_metrics($g) && ($g->{content} // '') eq $file,
        "tenant $how: GET is the tenant's file, not the counters ($g->{status}: " . first_line($g) . ')');
    $g = req('GET', "$url$q");
    ok(($g->{content} // '') eq $file,
        "tenant $how: GET with a query is the file, not the budgets ($g->{status}: " . first_line($g) . ')');
    my $p = req('POST', "$url$q", %RESET);
    ok t_cmp("$before " . login($ip), '200 200 429 429',
        "tenant $how: its POST reset nothing, the refusal stays (POST: $p->{status})");
}

# SlidingLimitStatusPage in .htaccess, also in <If> and <Files>: refused.
ok t_cmp(req('GET', '/sp/tenant/plain/page.html')->{status}, 500, '.htaccess SlidingLimitStatusPage: 500');
ok t_cmp(req('GET', '/sp/tenant/if/page.html')->{status}, 500, '.htaccess <If> SlidingLimitStatusPage: 500');
ok t_cmp(req('GET', '/sp/tenant/files/page.html')->{status}, 500, '.htaccess <Files> SlidingLimitStatusPage: 500');
my $n = () = $h->error_log =~ /SlidingLimitStatusPage not allowed (?:here|in <(?:If|Files)> context)/g;
ok($n >= 3, "the error log names the directive ($n times)");

# A directory the administrator opened to the counters only.
{
    my ($ip, $before) = refused();
    my $q = "?path=/sp/login.html&ip=$ip";
    ok(is_metrics(req('GET', '/sp/opened/page.html')), 'opened metrics, tenant SetHandler: the counters');
    my $g = req('GET', "/sp/opened/page.html$q");
    ok t_cmp("$g->{status} " . (!defined(eval { decode_json($g->{content})->{limits} }) ? 'no budgets' : 'budgets'),
        '403 no budgets', '... a query: 403, no budgets');
    my $p = req('POST', "/sp/opened/page.html$q", %RESET);
    ok t_cmp("$p->{status} $before " . login($ip), '405 200 200 429 429', '... POST: 405, the refusal stays');
}

# The handler alone: nothing, and the log says what to add.
{
    my ($ip, $before) = refused();
    my $q = "?path=/sp/login.html&ip=$ip";
    my @st = map { req('GET', $_)->{status} } '/sp-none', "/sp-none$q";
    my $p = req('POST', "/sp-none$q", %RESET);
    ok t_cmp("@st", '404 404', 'SetHandler without SlidingLimitStatusPage: GET 404, with a query too');
    ok t_cmp("$p->{status} $before " . login($ip), '404 200 200 429 429', '... POST 404, the refusal stays');
    ok($h->error_log =~ /slidinglimit-status handler not enabled here: add SlidingLimitStatusPage metrics/,
        '... the error log says what to add');
    ok t_cmp(req('GET', '/sp-reset/off')->{status}, 404, 'an inner section\'s SlidingLimitStatusPage off: 404');
}

# metrics
{
    my ($ip, $before) = refused();
    my $q = "?path=/sp/login.html&ip=$ip";
    my $g = req('GET', '/sp-metrics');
    ok(is_metrics($g) && $g->{headers}{'content-type'} =~ m{^text/plain}, 'metrics: GET, the counters');
    my $hd = req('HEAD', '/sp-metrics');
    ok t_cmp("$hd->{status} " . length($hd->{content} // '') . " $hd->{headers}{'content-type'}",
        qr{^200 0 text/plain}, 'metrics: HEAD 200, no body');
    $g = req('GET', "/sp-metrics$q");
    my $err = eval { decode_json($g->{content})->{error} } // '';
    ok(($g->{status} == 403 && $err =~ /SlidingLimitStatusPage inspect/),
        "metrics: GET with a query 403 ($g->{status}: $err)");
    my $p = req('POST', "/sp-metrics$q", %RESET);
    ok t_cmp("$p->{status} $before " . login($ip), '405 200 200 429 429', 'metrics: POST 405, the refusal stays');
    ok t_cmp(allow($p), 'GET,HEAD,OPTIONS', '... Allow: GET, HEAD, OPTIONS');
    my $o = req('OPTIONS', '/sp-metrics');
    ok t_cmp("$o->{status} " . allow($o), '200 GET,HEAD,OPTIONS', 'metrics: OPTIONS 200, without POST');
    ok t_cmp(req('PUT', '/sp-metrics')->{status}, 405, 'metrics: PUT 405');
}

# inspect
{
    my ($ip, $before) = refused();
    my $q = "?path=/sp/login.html&ip=$ip";
    ok(is_metrics(req('GET', '/sp-inspect')), 'inspect: GET, the counters');
    my $g = req('GET', "/sp-inspect$q");
    my $l = eval { decode_json($g->{content})->{limits}[0] } // {};
    ok t_cmp("$g->{status} " . ($l->{used} // '-') . ' ' . ($l->{remaining} // '-'), '200 2 0',
        'inspect: GET with a query, the budget: used 2, remaining 0');
    my $p = req('POST', "/sp-inspect$q", %RESET);
    ok t_cmp("$p->{status} $before " . login($ip), '405 200 200 429 429', 'inspect: POST 405, the refusal stays');
    ok t_cmp(allow($p), 'GET,HEAD,OPTIONS', '... Allow: GET, HEAD, OPTIONS');
    my $o = req('OPTIONS', '/sp-inspect');
    ok t_cmp("$o->{status} " . allow($o), '200 GET,HEAD,OPTIONS', 'inspect: OPTIONS 200, without POST');
}

# reset
{
    my ($ip, $before) = refused();
    my $q = "?path=/sp/login.html&ip=$ip";
    ok(is_metrics(req('GET', '/sp-reset')), 'reset: GET, the counters');
    my $g = req('GET', "/sp-reset$q");
    my $l = eval { decode_json($g->{content})->{limits}[0] } // {};
    ok t_cmp("$g->{status} " . ($l->{used} // '-'), '200 2', 'reset: GET with a query, the budget');
    my $p = req('POST', "/sp-reset$q", %RESET);
    my $a = eval { decode_json($p->{content})->{action} } // '-';
    ok t_cmp("$p->{status} $a $before " . login($ip), '200 reset 200 200 429 200', 'reset: POST resets: admitted again');
    my $o = req('OPTIONS', '/sp-reset');
    ok t_cmp("$o->{status} " . allow($o), '200 GET,HEAD,OPTIONS,POST', 'reset: OPTIONS 200, with POST');
    ok t_cmp(req('PUT', '/sp-reset')->{status}, 405, 'reset: PUT 405');
}

# Require still guards every level.
{
    my $g = req('GET', '/sp-metrics', 'X-Forwarded-For' => '192.0.2.9');
    my $p = req('POST', '/sp-reset?path=/sp/login.html&ip=192.0.2.1', %RESET, 'X-Forwarded-For' => '192.0.2.9');
    ok t_cmp("$g->{status} $p->{status}", '403 403', 'a client Require refuses: 403 for the counters and a reset');
    ok(!is_metrics($g), '... and no counters');
}
$h->stop;
