# SPDX-License-Identifier: Apache-2.0
# SlidingLimitKey user: only an authenticated user (r->user) is a key.
#  - without authentication a Basic name is nobody's proof: new names per
#    request are one budget, the address's, and a wrong password for alice
#    never spends the authenticated alice's budget;
#  - a request without a user is keyed by its address, never the shared
#    "-" bucket: count=401 block=1h keyed by user does not lock out every
#    browser after three first tries without credentials;
#  - where count= decides before authentication, the attempted name is
#    paired with the address: failures from one address never lock alice
#    out of hers, and the give-back after the response returns the same
#    budget the decision took;
#  - user:nocase folds the case of the name, authenticated or attempted,
#    and of the status handler's user=; a bad option fails start-up;
#  - the status handler finds and resets these budgets.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use HTTP::Tiny;
use JSON::PP qw(decode_json);
use SL::Test;
use SL::Keys qw(basic tag httpd_check);
use SL::After;

plan tests => 43;

sub get {
    my ($path, $from, @auth) = @_;
    return http_get($path, 'X-Forwarded-For' => $from,
        @auth ? (Authorization => basic(@auth)) : ());
}

sub ip_key   { sl_key(identity => sl_identity('ip', $_[0]), policy => $_[1]) }
sub user_key { sl_key(identity => sl_identity('user', $_[0]), policy => $_[1]) }
sub pair_key { sl_key(identity => sl_identity('sent-user+ip', "$_[0]\0$_[1]"), policy => $_[2]) }

# The status handler's answer: (status, decoded JSON or {}).
sub status_ask {
    my ($method, $query) = @_;
    # A reset is a request no browser form sends (t/89).
    my %opt = $method eq 'POST' ? (headers => { 'X-SlidingLimit-Reset' => 1 }) : ();
    my $res = HTTP::Tiny->new(timeout => 10)
      ->request($method, server_url() . "/user-status?$query", \%opt);
    return ($res->{status}, eval { decode_json($res->{content}) } // {});
}

my $alice = user_key('alice', 'user-shared');
redis('DEL', $alice);

# No authentication: a new made-up name per request is still one client.
{
    my $ip = fresh_ip();
    my @st = map { get('/user/open/', $ip, 'rnd' . tag(), 'x')->{status} } 1 .. 5;
    is("@st", '200 200 200 429 429', 'open: five made-up names from one address: the 4th is refused');
    is(redis('ZCARD', ip_key($ip, 'user-shared')), 3, '... in the address budget');

    my $attacker = fresh_ip();
    get('/user/open/', $attacker, 'alice', 'wrong') for 1 .. 3;
    is(redis('EXISTS', $alice), 0, "open: alice:wrong three times spends nothing of alice's");
    my $res = get('/user/auth/', fresh_ip(), 'alice', 'alice-pw');
    is($res->{status}, 200, '... and alice, authenticated, is admitted');
    is(redis('ZCARD', $alice), 1, '... on her own budget');
    is(get('/user/auth/', fresh_ip(), 'alice', 'wrong')->{status}, 401,
        'auth: a wrong password is answered by authentication');
}

# No user: each address its own budget, not one shared bucket.
{
    my @st = map { get('/user/open/', fresh_ip())->{status} } 1 .. 4;
    is("@st", '200 200 200 200', 'open: four anonymous addresses: four budgets');
}

# count=401 block=1h keyed by user: first tries without credentials.
{
    my @st = map { get('/user/login/', fresh_ip())->{status} } 1 .. 3;
    is("@st", '401 401 401', 'login: three first tries without credentials');
    my $ip  = fresh_ip();
    my $res = get('/user/login/', $ip);
    ok(($res->{status} == 401 && ($res->{headers}{'www-authenticate'} // '') =~ /^Basic/),
        "login: the next browser still gets 401 and WWW-Authenticate ($res->{status})");
    is(get('/user/login/', $ip, 'bob', 'bob-pw')->{status}, 200, '... and logs in');

    my $lone = fresh_ip();
    @st = map { get('/user/login/', $lone)->{status} } 1 .. 4;
    is("@st", '401 401 401 429', 'login: one address without credentials: its own budget, blocked');
    is(redis('ZCARD', ip_key($lone, 'user-login')), 3, '... keyed by the address');
}

# count=: the attempted name paired with the address.
{
    my ($attacker, $home) = (fresh_ip(), fresh_ip());
    my @st = map { get('/user/login/', $attacker, 'carol', 'wrong')->{status} } 1 .. 4;
    is("@st", '401 401 401 429', "login: carol:wrong from one address: 3 failures, then blocked");
    is(redis('ZCARD', pair_key('carol', $attacker, 'user-login')), 3, '... on (carol, that address)');
    is(get('/user/login/', $home, 'carol', 'carol-pw')->{status}, 200,
        '... carol from her own address is not locked out');
    is(get('/user/login/', $home, 'carol', 'wrong')->{status}, 401, '... and has her own failures left');

    # Good logins are given back to the budget the decision took. The
    # fourth finds room only once an earlier one is given back, after its
    # response (log_transaction): on one kept-alive connection, before the
    # next request is read (SL::After).
    my $ip = fresh_ip();
    @st = map { af_get({}, '/user/login/', 'X-Forwarded-For' => $ip,
            Authorization => basic('alice', 'alice-pw'))->{status} } 1 .. 5;
    is("@st", '200 200 200 200 200', 'login: five good logins on a limit of 3: none counts');
    # The give-back runs after the response (log_transaction).
    ok(wait_until(sub { redis('ZCARD', pair_key('alice', $ip, 'user-login')) == 0 }, 5),
        '... every reservation given back to (alice, that address)');
}

# The pair's address is masked as ip masks it: a client cannot escape by
# rotating through its /64.
{
    my $net = sprintf('2001:db8:%x:%x', $$ % 65535 + 1, int(rand(65535)) + 1);
    my @st = map { get('/user/login/', "$net\::$_", 'carol', 'wrong')->{status} } 1 .. 4;
    is("@st", '401 401 401 429', 'login: carol:wrong from four addresses of one /64: one budget');
    is(redis('ZCARD', pair_key('carol', "$net\::/64", 'user-login')), 3, '... of (carol, the /64)');
}

# user:any-address: the attempted name alone, whatever the address.
{
    my $key = sl_key(identity => sl_identity('sent-user', 'bob'), policy => 'user-login-any');
    redis('DEL', $key);
    my @st = map { get('/user/login-any/', fresh_ip(), 'bob', 'wrong')->{status} } 1 .. 4;
    is("@st", '401 401 401 429', 'login-any: bob:wrong from four addresses: one budget');
    is(redis('ZCARD', $key), 3, '... of the attempted name alone');
    my ($st, $j) = status_ask('GET', 'path=/user/login-any/&user=bob');
    ok(($st == 200 && ($j->{limits}[0]{key} // '') eq $key), "status: user= alone finds it ($st)");
}

# An ErrorDocument's redirect in the same section: one decision, one
# identity.
{
    my $ip = fresh_ip();
    my @st = map { get('/user/login-doc/', $ip, 'bob', 'wrong')->{status} } 1 .. 4;
    is("@st", '401 401 401 429', 'login-doc: 3 failures with an ErrorDocument 401, then refused');
    is(redis('ZCARD', pair_key('bob', $ip, 'user-login-doc')), 3,
        '... each counted once, on (bob, that address)');
    is(redis('EXISTS', user_key('bob', 'user-login-doc')), 0,
        '... and never as an authenticated bob');
}

# The status handler: a user section's address budget, and the pair.
{
    my $ip = fresh_ip();
    get('/user/open/', $ip) for 1 .. 2;
    my ($st, $j) = status_ask('GET', "path=/user/open/&ip=$ip");
    ok(($st == 200 && ($j->{limits}[0]{key} // '') eq ip_key($ip, 'user-shared')
            && $j->{limits}[0]{used} == 2),
        "status: ip= finds a user section's address budget ($st)");

    my $attacker = fresh_ip();
    get('/user/login/', $attacker, 'carol', 'wrong') for 1 .. 4;
    ($st, $j) = status_ask('GET', "path=/user/login/&user=carol&ip=$attacker");
    ok(($st == 200 && ($j->{limits}[0]{key} // '') eq pair_key('carol', $attacker, 'user-login')
            && $j->{limits}[0]{blocked} > 0),
        "status: user= and ip= find the pair, blocked ($st)");
    ($st) = status_ask('POST', "path=/user/login/&user=carol&ip=$attacker");
    is(get('/user/login/', $attacker, 'carol', 'carol-pw')->{status}, 200, '... and a reset unblocks it');
    for my $case ([ 'path=/user/login/&user=carol', qr/give ip=ADDR too/ ],
        [ "path=/user/open/&user=carol&ip=$attacker", qr/one identity only/ ],
        [ "path=/user/login-any/&user=carol&ip=$attacker", qr/one identity only/ ]) {
        my ($q, $why) = @$case;
        ($st, $j) = status_ask('GET', $q);
        ok(($st == 400 && ($j->{error} // '') =~ $why), "status: ?$q: 400 ($st: " . ($j->{error} // '-') . ')');
    }
    ($st, $j) = status_ask('GET', 'path=/user/open/&none=-');
    ok(($st == 400 && ($j->{error} // '') =~ /address/),
        "status: none= on a user section: no request uses the shared bucket ($st: "
          . ($j->{error} // '-') . ')');
}

# user:nocase: Dave and DAVE are dave, as the login backend says.
{
    my $key = user_key('dave', 'user-nocase');
    redis('DEL', $key);
    my @st = map { get('/user/nocase/', fresh_ip(), $_, 'dave-pw')->{status} } qw(dave Dave DAVE Dave);
    is("@st", '200 200 200 429', 'nocase: dave, Dave, DAVE: one budget of 3');
    is(redis('ZCARD', $key), 3, '... the budget of dave');
    my ($st, $j) = status_ask('GET', 'path=/user/nocase/&user=DAVE');
    ok(($st == 200 && ($j->{limits}[0]{key} // '') eq $key),
        "status: user=DAVE finds it ($st)");

    my $ip = fresh_ip();
    @st = map { get('/user/nocase-login/', $ip, $_, 'wrong')->{status} } qw(Dave DAVE dave dave);
    is("@st", '401 401 401 429', 'nocase: attempted Dave, DAVE, dave from one address: one count');
    is(redis('ZCARD', pair_key('dave', $ip, 'user-nocase-login')), 3, '... of (dave, that address)');
}

# Bad options fail start-up, naming the directive and the token.
for my $case ([ 'user:nocse', qr/'nocse' is not an option/ ], [ 'user:', qr/no option/ ],
    [ 'user:nocase,', qr/empty option/ ], [ 'users', qr/'users' is not a key source/ ]) {
    my ($token, $why) = @$case;
    my ($rc, $out) = httpd_check("<Location /x>\n    SlidingLimitKey $token\n</Location>");
    ok(($rc != 0 && $out =~ /SlidingLimitKey/ && $out =~ $why && $out !~ /Syntax OK/),
        "SlidingLimitKey $token: refused") or diag("rc=$rc\n$out");
}
{
    my ($rc, $out) = httpd_check("<Location /x>\n    SlidingLimitKey user:NoCase,any-address ip\n</Location>");
    is($rc, 0, 'SlidingLimitKey user:NoCase,any-address ip: accepted') or diag($out);
}
