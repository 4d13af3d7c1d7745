# SPDX-License-Identifier: Apache-2.0
# Limits apply to the resolved target: mod_dir serves the DirectoryIndex
# file and the FallbackResource by a fast redirect, which gives the request
# the target's sections after the fixups of the URL asked for began. A
# directory URL is limited like its index file, and shares its budget, as
# MultiViews and a type map share the budget of the file they serve; each
# request is counted once, also when the directory and the index file name
# the same budget, and a count= reservation of each is judged; a count=
# limit on an index file behind its own login counts the directory URL's
# failed logins; the redirect of DirectorySlash serves nothing and counts
# nothing; mod_include's subrequests never count.
# Runs under each MPM: the second fixups pass in children or threads.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Keys qw(basic);
use SL::Wire;
use SL::Fault qw(error_log_lines);
use SL::After;

plan tests => 52;

sub get { my ($path, $ip) = @_; return http_get($path, 'X-Forwarded-For' => $ip) }

# What the client saw: the status and the remaining quota of each request.
sub seen {
    my ($ip, @paths) = @_;
    return join ' ', map {
        my $r = get($_, $ip);
        "$r->{status}/" . ($r->{headers}{'x-ratelimit-remaining'} // '-')
    } @paths;
}

# <Files index.html> in the directory: the directory URL and the file's
# own URL draw on one budget, one unit each.
my $ip  = fresh_ip();
my $key = sl_key(ip => $ip, policy => 'res-files');
ok t_cmp(seen($ip, '/resolved/files/'), '200/2', '<Files index.html>: the directory URL is limited');
ok t_cmp(redis('ZCARD', $key), 1, '... counted once against the index file');
ok t_cmp(seen($ip, '/resolved/files/index.html', '/resolved/files/', '/resolved/files/index.html'),
    '200/1 200/0 429/0', '... one budget with the file itself, refused at the fourth');
ok t_cmp(redis('ZCARD', $key), 3, '... which holds three units');
$ip = fresh_ip();
ok t_cmp(seen($ip, ('/resolved/files/') x 4), '200/2 200/1 200/0 429/0',
    '... the directory URL alone is refused at the fourth');

# <Location /x/index.html>.
$ip  = fresh_ip();
$key = sl_key(ip => $ip, policy => 'res-loc');
ok t_cmp(seen($ip, '/resolved/loc/', '/resolved/loc/index.html', '/resolved/loc/', '/resolved/loc/'),
    '200/2 200/1 200/0 429/0', '<Location /x/index.html>: the directory URL shares the budget');
ok t_cmp(redis('ZCARD', $key), 3, '... three units for three admissions');

# FallbackResource: a URL of no file is served the fallback, under its limits.
$ip  = fresh_ip();
$key = sl_key(ip => $ip, policy => 'res-front');
my $res = get('/resolved/fallback/no/such/page', $ip);
ok t_cmp($res->{content}, qr/resolved fallback front page/, 'FallbackResource serves its target');
ok t_cmp($res->{headers}{'x-ratelimit-remaining'}, 2, '... under its limit');
ok t_cmp(seen($ip, '/resolved/fallback/front.html', '/resolved/fallback/other', '/resolved/fallback/x'),
    '200/1 200/0 429/0', '... one budget with the target itself');
ok t_cmp(redis('ZCARD', $key), 3, '... three units for three admissions');

# The directory and the index file under one name: one charge a request.
$ip  = fresh_ip();
$key = sl_key(ip => $ip, policy => 'res-same');
ok t_cmp(seen($ip, '/resolved/same/'), '200/2', 'the same name= on the directory and the index file');
ok t_cmp(redis('ZCARD', $key), 1, '... one request counts once');
ok t_cmp(seen($ip, '/resolved/same/', '/resolved/same/index.html', '/resolved/same/'),
    '200/1 200/0 429/0', '... the fourth is refused');
ok t_cmp(redis('ZCARD', $key), 3, '... three units for three admissions');

# Two budgets, the directory's and the index file's: each charged once.
$ip = fresh_ip();
my $kdir = sl_key(ip => $ip, policy => 'res-both-dir');
my $kidx = sl_key(ip => $ip, policy => 'res-both-index');
$res = get('/resolved/both/', $ip);
ok t_cmp($res->{status}, 200, 'a directory and its index file with budgets of their own');
ok t_cmp($res->{headers}{'ratelimit-policy'}, '"res-both-dir";q=5;w=60, "res-both-index";q=3;w=60',
    "... the headers list both decisions' limits");
ok t_cmp($res->{headers}{ratelimit}, '"res-both-index";r=2;t=60', '... and describe the one with fewest remaining');
ok t_cmp(redis('ZCARD', $kdir) . ' ' . redis('ZCARD', $kidx), '1 1', '... each charged once');
ok t_cmp(seen($ip, '/resolved/both/', '/resolved/both/', '/resolved/both/'), '200/1 200/0 429/0',
    "... the index file's limit of 3 refuses the fourth");
ok t_cmp(redis('ZCARD', $kdir) . ' ' . redis('ZCARD', $kidx), '4 3',
    "... the directory's limit, decided before the index file was found, keeps the refused request's unit");

# count= on both: the directory's reservation and the index file's, both
# given back after the 200 (which count=404 does not list).
$ip = fresh_ip();
$kdir = sl_key(ip => $ip, policy => 'res-counted-dir');
$kidx = sl_key(ip => $ip, policy => 'res-counted-index');
ok t_cmp(get('/resolved/counted/', $ip)->{status}, 200, 'count= on the directory and on its index file');
# The give-back follows the response.
ok(wait_until(sub { redis('ZCARD', $kdir) + redis('ZCARD', $kidx) == 0 }, 5),
    '... both reservations given back');

# MultiViews and a type map choose the file before fixups or by an
# internal redirect: its limits apply, from its budget.
$ip  = fresh_ip();
$key = sl_key(ip => $ip, policy => 'res-mv');
ok t_cmp(seen($ip, '/resolved/mv/page', '/resolved/mv/page.html', '/resolved/mv/page', '/resolved/mv/page'),
    '200/2 200/1 200/0 429/0', 'MultiViews: the file without its extension shares its budget');
ok t_cmp(redis('ZCARD', $key), 3, '... three units for three admissions');
$ip  = fresh_ip();
$key = sl_key(ip => $ip, policy => 'res-tm');
ok t_cmp(seen($ip, '/resolved/tm/page.var', '/resolved/tm/page.html', '/resolved/tm/page.var', '/resolved/tm/page.var'),
    '200/2 200/1 200/0 429/0', 'a type map: the map shares the budget of the file it serves');
ok t_cmp(redis('ZCARD', $key), 3, '... three units for three admissions');

# count= on an index file behind its own login: the directory URL's failed
# logins count (mod_dir's look-up of the file meets the login), refused
# before the password is checked once the budget is full.
$ip  = fresh_ip();
$key = sl_key(ip => $ip, policy => 'res-login');
my @st = map { http_get($_, 'X-Forwarded-For' => $ip, Authorization => basic('alice', 'wrong'))->{status} }
  '/resolved/login/', '/resolved/login/index.html', '/resolved/login/', '/resolved/login/';
ok t_cmp("@st", '401 401 401 429', "count=401 on the index file: the directory URL's failures count");
ok t_cmp(redis('ZCARD', $key), 3, '... none given back');
$res = http_get('/resolved/login/', 'X-Forwarded-For' => $ip, Authorization => basic('alice', 'alice-pw'));
ok t_cmp($res->{status}, 429, '... the right password is refused too, once the budget is full');
ok(($res->{headers}{'retry-after'} // 0) > 0 && ($res->{headers}{'x-ratelimit-remaining'} // '') eq '0',
    '... with Retry-After and the quota headers');
$ip  = fresh_ip();
$key = sl_key(ip => $ip, policy => 'res-login');
$res = http_get('/resolved/login/', 'X-Forwarded-For' => $ip, Authorization => basic('alice', 'alice-pw'));
ok t_cmp("$res->{status} $res->{content}", qr/^200 resolved login index page/, '... a good login is let in');
ok(wait_until(sub { redis('ZCARD', $key) == 0 }, 5), '... and given back');

# The login on the first of two index files: mod_dir drops the look-up
# that met it (401) and serves the second file. The password was checked, so
# the attempt counts: were it judged by the 200 the client got, a client
# could guess passwords through the directory URL with no limit, and learn
# from which page came back. Once the budget is full the look-up is refused
# before the password is checked, and even the right one gets the second
# page.
$ip  = fresh_ip();
$key = sl_key(ip => $ip, policy => 'res-login-next');
@st = map { my $r = http_get('/resolved/login-next/', 'X-Forwarded-For' => $ip,
    Authorization => basic('alice', "wrong$_")); "$r->{status} " . ($r->{content} =~ /(index|home)/)[0] } 1 .. 4;
ok t_cmp("@st", '200 home 200 home 200 home 200 home',
    'count=401 on the first of two index files: the second is served');
ok(wait_until(sub { redis('ZCARD', $key) == 3 }, 5), '... and the failed logins it hid count');
$res = http_get('/resolved/login-next/', 'X-Forwarded-For' => $ip, Authorization => basic('alice', 'alice-pw'));
ok t_cmp($res->{content}, qr/home page/, '... the right password, once the budget is full, is not checked');
$ip  = fresh_ip();
$res = http_get('/resolved/login-next/', 'X-Forwarded-For' => $ip, Authorization => basic('alice', 'alice-pw'));
ok t_cmp($res->{content}, qr/login-next index page/, '... and before, it is let in');

# DirectorySlash answers 301 before any file is chosen: nothing counts.
$ip  = fresh_ip();
$key = sl_key(ip => $ip, policy => 'res-files');
$res = get('/resolved/files', $ip);
ok t_cmp($res->{status}, 301, 'DirectorySlash redirects the directory without its slash');
ok t_cmp(redis('ZCARD', $key), 0, '... and the redirect counts nothing');

# mod_include's subrequests into the limited files never count.
$ip = fresh_ip();
my $id = test_id('resolved');
$res = http_get('/resolved/ssi/', 'X-Forwarded-For' => $ip, Authorization => basic('alice', 'wrong'),
    'X-Test-Id' => $id);
ok t_cmp($res->{content}, qr/resolved ssi page: resolved loc index page\s+resolved files index page/,
    'an SSI page includes the limited index files');
ok t_cmp(redis('ZCARD', sl_key(ip => $ip, policy => 'res-loc')), 0, '... the first include counts nothing');
ok t_cmp(redis('ZCARD', sl_key(ip => $ip, policy => 'res-files')), 0, '... nor the second');
my $line = wire_log($id, 1)->[0] // {};
ok t_cmp(($line->{result} // '?') . ' ' . ($line->{policy} // '?'), '- -',
    '... nor one into a count= section, which only look-ups of mod_dir decide');

# FallbackResource into a directory of its own .htaccess, which only
# mod_dir's look-up reads: its lease and its count= reservation are given
# back at the request's end from what the look-up's pool holds. Five
# requests, each with its lease and its reservation, of a limit of 1 in
# flight and of 3 a minute: all answered, nothing left in the store. One
# kept-alive connection: httpd ends a request (its log_transaction, its
# pool) before it reads the next (SL::After).
$ip = fresh_ip();
my $crashed = sub { scalar(() = error_log_lines(qr/AH00052|exit signal/)) };
my $crashes = $crashed->();
@st = map { af_get({}, "/resolved/fb-hta/no/such/$_", 'X-Forwarded-For' => $ip) } 1 .. 5;
ok t_cmp(join(' ', map {"$_->{status}"} @st), '200 200 200 200 200',
    'FallbackResource into an .htaccess directory: every request served');
ok t_cmp($st[0]{content}, qr/front controller/, '... by the fallback');
# A name in an .htaccess is that file's own (its key hashes the file's
# path too): the client's keys are found by its identity.
my $units = sub {
    my ($ip, $alg) = @_;
    my $n = 0;
    $n += redis('ZCARD', $_) for grep {/\.\Q$alg\E$/} @{ redis('KEYS', 'sltest:{' . sl_identity('ip', $ip) . '}*') };
    return $n;
};
ok(wait_until(sub { $units->($ip, 'n') == 0 }, 10), '... each lease given back');
ok(wait_until(sub { $units->($ip, 'l') == 0 }, 10),
    '... each reservation given back (count=404, the answers were 200)');
ok t_cmp($crashed->() - $crashes, 0, '... and no child crashed');

# The same behind a login: the look-up reserves (count=401), meets the
# login, and mod_dir destroys it and answers its 401. The reservation is
# judged at the request's end, by the limit that look-up's pool held: every
# 401 counts, and the fourth attempt is refused. Under the sanitizers
# (t/sanitize-httpd: MaxMemFree 1 hands a destroyed pool's memory back to
# malloc) a read of the destroyed pool is a report.
$ip = fresh_ip();
$crashes = $crashed->();
@st = map { af_get({}, "/resolved/fb-auth/no/such/$_", 'X-Forwarded-For' => $ip) } 1 .. 5;
ok t_cmp(join(' ', map {"$_->{status}"} @st), '401 401 401 429 429',
    'FallbackResource into a login: three 401s counted, then refused');
ok(wait_until(sub { $units->($ip, 'l') == 3 }, 10),
    '... the store holds the three failed attempts');
ok t_cmp(scalar(grep { ($_->{headers}{'ratelimit-policy'} // '') =~ /hta-auth/ } @st[3, 4]), 2,
    '... the refusals name the limit');
ok t_cmp($crashed->() - $crashes, 0, '... and no child crashed');
