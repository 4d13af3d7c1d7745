# SPDX-License-Identifier: Apache-2.0
# count=: only the listed final statuses count, exactly under concurrency,
# where httpd itself checks the password (mod_auth_basic answers 401 before
# fixups), under the Redis store and the embedded one. A request is
# reserved at the decision and given back after its response when its
# status is not listed: successful logins never use up the budget, 50
# concurrent wrong passwords against count=401 5 let at most 5 through to
# their 401, and keyed by user the attempted name (as sent, hashed) with
# the address is the budget (user:any-address: the name whatever the
# address).
# Runs under each MPM: reservations given back under concurrency, by
# children or threads.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Fault;
use SL::Keys qw(basic);
use SL::After;

plan tests => 2 * 8 + 1;

for my $vhost (qw(sl_fault sl_shm)) {
    my $store = $vhost eq 'sl_shm' ? 'shm' : 'redis';
    my $ip    = fresh_ip();
    # A good login is given back after its response (log_transaction), and
    # the next requests count on it: one kept-alive connection, on which
    # httpd gives it back before it reads the next request (SL::After).
    my $get   = sub {
        my ($path, $user, $pw, $from) = @_;
        return af_get({ vhost => $vhost }, $path, 'X-Forwarded-For' => $from // $ip,
            Authorization => basic($user, $pw))->{status};
    };

    my @ok = map { $get->('/f/login/a', 'alice', 'alice-pw') } 1 .. 8;
    ok t_cmp("@ok", join(' ', (200) x 8), "$store: 8 good logins on a count=401 limit of 5: none counts");
    if ($store eq 'redis') {
        # The give-back runs by its hash like the decision: after SCRIPT
        # FLUSH it is loaded again, or the reservations stay taken.
        fault_redis('SCRIPT', 'FLUSH');
        my @again = map { $get->('/f/login/a', 'alice', 'alice-pw') } 1 .. 8;
        ok t_cmp("@again", join(' ', (200) x 8), "$store: after SCRIPT FLUSH, 8 more good logins: none counts");
    }
    my @bad = map { $get->('/f/login/a', 'alice', 'wrong') } 1 .. 6;
    ok t_cmp("@bad", '401 401 401 401 401 429', "$store: 5 failures counted, the 6th refused");
    ok t_cmp($get->('/f/login/a', 'alice', 'alice-pw'), 429, "$store: ... also with the right password");

    # 50 at once, each its own connection: at most 5 reach their 401.
    my $url = server_url($vhost) . '/f/login/b';
    my $got = burst($url, total => 50, workers => 10,
        headers => { 'X-Forwarded-For' => fresh_ip(), Authorization => basic('bob', 'wrong') });
    my ($f, $r) = ($got->{401} // 0, $got->{429} // 0);
    ok($f >= 1 && $f <= 5 && $f + $r == 50, "$store: 50 concurrent wrong passwords: $f failures let through, $r refused");

    # Keyed by the attempted user and the address: carol's failures from
    # one address lock out that address, not carol.
    my $from = fresh_ip();
    my @u = map { $get->('/f/loginuser/a', 'carol', 'wrong', $from) } 1 .. 6;
    ok t_cmp("@u", '401 401 401 401 401 429', "$store: key user: carol's failures from one address, the 6th refused");
    ok t_cmp($get->('/f/loginuser/a', 'carol', 'carol-pw', fresh_ip()), 200, "$store: ... carol from another address is not");
    ok t_cmp($get->('/f/loginuser/a', 'alice', 'alice-pw', $from), 200, "$store: ... nor alice from that address");

    # user:any-address: the name alone, whatever the address.
    @u = map { $get->('/f/loginany/a', 'dave', 'wrong', fresh_ip()) } 1 .. 6;
    ok t_cmp("@u", '401 401 401 401 401 429', "$store: key user:any-address: dave's failures from 6 addresses, the 6th refused");
}
