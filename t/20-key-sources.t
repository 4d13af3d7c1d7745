# SPDX-License-Identifier: Apache-2.0
# Each SlidingLimitKey source, the fallback chain, and the shared "-"
# bucket; every budget is checked in Redis under the key the module must
# compute (hashed source tag and value, never the raw value).
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Keys;

plan tests => 43;

# ip (the default): r->useragent_ip as mod_remoteip set it.
{
    my $ip = fresh_ip();
    my $key = sl_key(identity => sl_identity('ip', $ip), policy => 'keys-ip');
    is(http_get('/keys/ip/', 'X-Forwarded-For' => $ip)->{status}, 200, "ip: request $_") for 1 .. 3;
    is(http_get('/keys/ip/', 'X-Forwarded-For' => $ip)->{status}, 429, 'ip: 4th refused');
    is(redis('ZCARD', $key), 3, 'ip: the budget is the hashed address');
    is(http_get('/keys/ip/', 'X-Forwarded-For' => fresh_ip())->{status}, 200,
        'ip: another address has its own budget');
}

# header:X-Keys-Api user ip -- the first source with a value wins.
{
    my $ip = fresh_ip();
    my $api = 'k-' . tag();
    my $hkey = sl_key(identity => sl_identity('header:x-keys-api', $api),
        policy => 'keys-chain');
    my $ikey = sl_key(identity => sl_identity('ip', $ip), policy => 'keys-chain');
    my $ukey = sl_key(identity => sl_identity('user', 'bob'), policy => 'keys-chain');

    is(http_get('/keys/chain/', 'X-Forwarded-For' => $ip, 'X-Keys-Api' => $api)->{status},
        200, "chain: header request $_") for 1 .. 3;
    is(redis('ZCARD', $hkey), 3, 'chain: the header budget holds 3');
    is(redis('EXISTS', $ikey), 0, '... and the address budget is untouched');
    is(http_get('/keys/chain/', 'X-Forwarded-For' => $ip, 'X-Keys-Api' => $api)->{status},
        429, 'chain: the header budget is spent');

    my $res = http_get('/keys/chain/', 'X-Forwarded-For' => $ip);
    is($res->{status}, 200, 'chain: without the header the address decides');
    is(redis('ZCARD', $ikey), 1, '... in its own budget');

    $res = http_get('/keys/chain/', 'X-Forwarded-For' => $ip, 'X-Keys-Api' => '');
    is($res->{status}, 200, 'chain: an empty header value is no value');
    is(redis('ZCARD', $ikey), 2, '... and falls through to the address');

    $res = http_get('/keys/chain/', 'X-Forwarded-For' => $ip,
        Authorization => basic('bob', 'bob-pw'));
    is($res->{status}, 200, 'chain: without the header, the user decides');
    is(redis('ZCARD', $ukey), 1, '... in the user budget');
    is(redis('ZCARD', $ikey), 2, '... not the address budget');

    my $before = redis('DBSIZE');
    $res = http_get('/keys/chain/', 'X-Forwarded-For' => $ip,
        Authorization => basic('bob', 'wrong')) for 1 .. 3;
    is($res->{status}, 401, 'chain: a wrong password is refused by auth');
    is(redis('DBSIZE'), $before, '... before the module runs: no budget made');
    is(redis('ZCARD', $ukey), 1, '... and nothing consumed');

    $res = http_get('/keys/chain/', 'X-Forwarded-For' => $ip, 'X-Keys-Api' => $api,
        Authorization => basic('bob', 'bob-pw'));
    is($res->{status}, 429, 'chain: header and user: the header (first) decides');
}

# No source yields a value: one shared bucket "-".
{
    my $key = sl_key(identity => sl_identity('none', '-'), policy => 'keys-none');
    my @st = map { http_get('/keys/none/', 'X-Forwarded-For' => fresh_ip())->{status} } 1 .. 4;
    is("@st", '200 200 200 429', 'none: four addresses share one bucket');
    is(redis('ZCARD', $key), 3, 'none: the bucket is the hash of "-"');
    is(http_get('/keys/none/', 'X-Forwarded-For' => fresh_ip(), 'X-Keys-None' => 'x')->{status},
        200, 'none: a request with a value has its own budget');
}

# env: from SetEnvIf.
{
    my $t = 't-' . tag();
    my $key = sl_key(identity => sl_identity('env:keys_tenant', $t), policy => 'keys-env');
    my @st = map {
        http_get('/keys/env/', 'X-Forwarded-For' => fresh_ip(), 'X-Keys-Tenant' => $t)->{status}
    } 1 .. 4;
    is("@st", '200 200 200 429', 'env: one budget per variable value, whatever the address');
    is(redis('ZCARD', $key), 3, 'env: the budget is the hashed value');
    is(http_get('/keys/env/', 'X-Keys-Tenant' => "$t-other")->{status}, 200,
        'env: another value, another budget');
    my $shared = sl_key(identity => sl_identity('none', '-'), policy => 'keys-env');
    is(http_get('/keys/env/')->{status}, 200, 'env: unset variable');
    is(redis('ZCARD', $shared), 1, '... uses the shared bucket');
}

# expr: an ap_expr string.
{
    my $t = 'acme-' . tag();
    my $tagname = 'expr:%{http:x-tenant}-%{request_method}';
    my $gkey = sl_key(identity => sl_identity($tagname, "$t-GET"), policy => 'keys-expr');
    my $hkey = sl_key(identity => sl_identity($tagname, "$t-HEAD"), policy => 'keys-expr');
    my @st = map {
        http_get('/keys/expr/', 'X-Forwarded-For' => fresh_ip(), 'X-Tenant' => $t)->{status}
    } 1 .. 4;
    is("@st", '200 200 200 429', 'expr: tenant and method make the budget');
    is(redis('ZCARD', $gkey), 3, 'expr: the budget is the hashed expression value');
    is(http_get({ method => 'HEAD' }, '/keys/expr/', 'X-Tenant' => $t)->{status}, 200,
        'expr: another method, another budget');
    is(redis('ZCARD', $hkey), 1, '... of its own');
    # Without the header the expression is still "-GET": a value, so there
    # is no fall-through (documented).
    my $nkey = sl_key(identity => sl_identity($tagname, '-GET'), policy => 'keys-expr');
    is(http_get('/keys/expr/', 'X-Forwarded-For' => fresh_ip())->{status}, 200, 'expr: no tenant');
    ok(redis('ZCARD', $nkey) >= 1, '... is the "-GET" budget');
}

# An expression that fails at run time yields no value.
{
    my $ip = fresh_ip();
    my $key = sl_key(identity => sl_identity('ip', $ip), policy => 'keys-exprerr');
    is(http_get('/keys/exprerr/', 'X-Forwarded-For' => $ip)->{status}, 200,
        'expr error: the request is answered');
    is(redis('ZCARD', $key), 1, 'expr error: the next source (ip) decides');
    my $log = Apache::Test::vars('t_logs') . '/error_log';
    open my $fh, '<', $log or die "$log: $!";
    my $seen = grep { /key expression '%\{file:\/nonexistent\/slidinglimit-keys\}' failed/ } <$fh>;
    close $fh;
    ok($seen >= 1, 'expr error: logged (debug) with the expression');
}

# SetEnv runs after this module (both in fixups): env: does not see it.
{
    my $ip = fresh_ip();
    http_get('/keys/setenv/', 'X-Forwarded-For' => $ip);
    is(redis('ZCARD', sl_key(identity => sl_identity('ip', $ip), policy => 'keys-setenv')),
        1, 'env: a SetEnv variable is not seen yet (documented), ip decides');
}

# Same-name headers: httpd joins them with ", " before any module runs, so
# header:NAME sees the joined value (a budget of its own, like any other
# value the client picks).
{
    my $a = 'dup-' . tag();
    my $key = sl_key(identity => sl_identity('header:x-keys-api', "$a, second"),
        policy => 'keys-chain');
    my $status = raw_request("GET /keys/chain/ HTTP/1.1\r\nHost: localhost\r\n"
          . "X-Keys-Api: $a\r\nX-Keys-Api: second\r\nConnection: close\r\n\r\n");
    is($status, 200, 'two same-name headers: answered');
    is(redis('ZCARD', $key), 1, '... in the budget of the joined value');
}
