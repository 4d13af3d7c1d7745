# SPDX-License-Identifier: Apache-2.0
# count= judges the status the client got: with an ErrorDocument, the
# error it answers, never the outcome of serving the document. Failed
# logins (count=401) are counted, never given back, whether the
# ErrorDocument is a page that does not exist (httpd then sends its own
# 401 page), a page (its body with the 401), a program (even one that
# answers 200), or a URL elsewhere (which httpd ignores for 401);
# count=403 counts a 403 that httpd sends as a 302 to the ErrorDocument's
# URL; the index file's 401 that mod_dir sends for the directory URL
# counts under the directory's limit. A good login is still given back.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Keys qw(basic);
use SL::After;

plan tests => 22;

sub get {
    my ($path, $ip, $pw) = @_;
    return http_get($path, 'X-Forwarded-For' => $ip,
        defined $pw ? (Authorization => basic('alice', $pw)) : ());
}

# Six wrong passwords against a count=401 limit of 5: five 401s counted,
# the sixth refused; returns what the client saw and the units left taken.
sub guess {
    my ($path, $policy) = @_;
    my $ip  = fresh_ip();
    my $key = sl_key(ip => $ip, policy => $policy);
    my @st  = map { get($path, $ip, 'wrong')->{status} } 1 .. 6;
    return ("@st", redis('ZCARD', $key), $ip, $key);
}

my ($st, $n, $ip, $key) = guess('/cs/login/missing/', 'cs-missing');
ok t_cmp($st, '401 401 401 401 401 429', 'ErrorDocument 401 to a missing page: five failures counted, the sixth refused');
ok t_cmp($n, 5, '... none given back');
my $res = get('/cs/login/missing/', fresh_ip(), 'wrong');
ok t_cmp($res->{headers}{'www-authenticate'}, qr/^Basic/, "... each a 401 with httpd's own page");

($st, $n) = guess('/cs/login/page/', 'cs-page');
ok t_cmp($st, '401 401 401 401 401 429', 'ErrorDocument 401 to a page: five failures counted, the sixth refused');
ok t_cmp($n, 5, '... none given back');
$res = get('/cs/login/page/', fresh_ip(), 'wrong');
ok t_cmp("$res->{status} $res->{content}", qr/^401 cs 401 page/, "... each the page's body with the 401");

($st, $n) = guess('/cs/login/cgi/', 'cs-cgi');
ok t_cmp($st, '401 401 401 401 401 429', 'ErrorDocument 401 to a program: five failures counted, the sixth refused');
ok t_cmp($n, 5, '... none given back');
$res = get('/cs/login/cgi/', fresh_ip(), 'wrong');
ok t_cmp("$res->{status} $res->{content}", qr/^401 cs 401 program/, "... each the program's output with the 401");

# Even when the program says 200: the failure is what counts.
($st, $n) = guess('/cs/login/cgi200/', 'cs-cgi200');
ok t_cmp($st, '200 200 200 200 200 429', 'ErrorDocument 401 to a program that answers 200: five failures counted');
ok t_cmp($n, 5, '... none given back');
$res = get('/cs/login/cgi200/', fresh_ip(), 'wrong');
ok t_cmp("$res->{status} $res->{content}", qr/^200 cs 200 program/, "... each the program's 200");

($st, $n) = guess('/cs/login/url/', 'cs-url401');
ok t_cmp($st, '401 401 401 401 401 429', 'ErrorDocument 401 to a URL (ignored by httpd): five failures counted');
ok t_cmp($n, 5, '... none given back');

# A 403 answered with a 302 to the ErrorDocument's URL is the 403.
$ip  = fresh_ip();
$key = sl_key(ip => $ip, policy => 'cs-url403');
my @st = map { get('/cs/denied/', $ip)->{status} } 1 .. 6;
ok t_cmp("@st", '302 302 302 302 302 429', 'ErrorDocument 403 to a URL: five 302s counted as their 403, the sixth refused');
ok t_cmp(redis('ZCARD', $key), 5, '... none given back');
$res = get('/cs/denied/', fresh_ip());
ok t_cmp($res->{headers}{location}, 'http://login.example.invalid/denied', "... each a 302 to the document's URL");

# The index file's 401, sent for the directory URL by mod_dir, counts
# under the directory's limit, with the file's own URL in one budget.
$ip  = fresh_ip();
$key = sl_key(ip => $ip, policy => 'cs-index');
@st = map { get($_, $ip, 'wrong')->{status} } ('/cs/indexauth/', '/cs/indexauth/index.html') x 3;
ok t_cmp("@st", '401 401 401 401 401 429', "the index file's 401 through the directory URL counts");
ok t_cmp(redis('ZCARD', $key), 5, '... none given back');
ok t_cmp(get('/cs/indexauth/', fresh_ip(), 'alice-pw')->{content}, qr/cs indexauth page/,
    '... and the right password is let in');

# A good login is given back under the same ErrorDocument. The sixth
# finds room only once an earlier one is given back, which is done after
# its response (log_transaction): on one kept-alive connection, before
# the next request is read (SL::After).
$ip  = fresh_ip();
$key = sl_key(ip => $ip, policy => 'cs-missing');
@st = map { af_get({}, '/cs/login/missing/', 'X-Forwarded-For' => $ip,
        Authorization => basic('alice', 'alice-pw'))->{status} } 1 .. 6;
ok t_cmp("@st", '200 200 200 200 200 200', 'six good logins under the same limit all pass');
# The last one is given back after its response has gone out.
ok(wait_until(sub { redis('ZCARD', $key) == 0 }, 5), '... each given back');
