# SPDX-License-Identifier: Apache-2.0
# key=SOURCE: the reference's example (docs/REFERENCE.md, SlidingLimit,
# key=), pasted as written: four lines on one <Location>, by address,
# by account (form:log), distinct names per address and site-wide (none),
# each enforced on its own, with the suite's Redis and with the shm store:
#  - one address, one account: the 6th failure refused by the address line;
#    forged X-Forwarded-For entries before the proxy's own change nothing;
#  - one account from 11 addresses: the 11th refused by the account line,
#    also when the name comes in another case, with spaces, or last of two
#    fields (the application takes the last); the first of two is not it;
#  - one address, 4 names: the 4th refused by the names line;
#  - a POST without the field counts by its address on the account line; a
#    body over 64 KiB shares one budget of unread bodies;
#  - the status handler reaches each line by its own source (form:log=,
#    ip=, none=-), each under its own store key (Redis), and a reset frees
#    exactly that line's budget; a source no line has is a 400 naming the
#    lines' keys;
#  - the site-wide line refuses the request after its 200th failure from
#    anyone, and its reset (none=-) lets the next in.
# Runs under each MPM
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use HTTP::Tiny;
use JSON::PP qw(decode_json);
use URI::Escape qw(uri_escape);
use SL::Test;
use SL::Docs;
use SL::Httpd;
use SL::Keys qw(tag top_dir);

plan tests => 2 + 2 * 27;

my ($block) = grep { $_->{file} eq 'docs/REFERENCE.md' && $_->{text} =~ /key=none/ }
  SL::Docs::blocks(top_dir());
ok($block, 'the reference has the key= example') or BAIL_OUT('no key= example');
like($block->{text}, qr/key=ip.*key=form:log.*key=none.*distinct=form:log key=ip/s,
    '... four lines, each with its own key');

my $t = SL::Httpd::_tdir();
my $extra = <<"EOT" . $block->{text} . <<'EOT2';
Alias /login "$t/htdocs/wp-login.php"
EOT
<Location /key-status>
    SetHandler slidinglimit-status
    SlidingLimitStatusPage reset
    SlidingLimit off
    Require ip 127.0.0.1 ::1
</Location>
EOT2

my $ua = HTTP::Tiny->new(timeout => 20, max_redirect => 0, keep_alive => 1);

sub post {
    my ($h, $xff, $body) = @_;
    return $ua->request('POST', $h->url . '/login',
        {   headers => { 'X-Forwarded-For' => $xff, 'Content-Type' => 'application/x-www-form-urlencoded' },
            content => $body });
}
sub statuses { join ' ', map { $_->{status} } @_ }
sub policy { ($_[0]{headers}{ratelimit} // '') =~ /^"([^"]+)"/ ? $1 : '-' }
sub ask {
    my ($h, $method, $query) = @_;
    my %opt = $method eq 'POST' ? (headers => { 'X-SlidingLimit-Reset' => 1 }) : ();
    my $res = $ua->request($method, $h->url . "/key-status?path=/login&method=POST&$query", \%opt);
    return ($res->{status}, eval { decode_json($res->{content}) } // {});
}
sub used {
    my ($j, $name) = @_;
    my ($l) = grep { $_->{name} eq $name } @{ $j->{limits} || [] };
    return $l ? $l->{used} : 'absent';
}

sub run_store {
    my ($label, %start) = @_;
    my $redis = !$start{store};
    my $h = SL::Httpd->start(name => "k160-$label-" . ($ENV{SL_TEST_MPM} || 'event'), extra => $extra, %start);

    # By address.
    my $a   = fresh_ip();
    my $acc = 'acc-' . tag();
    my @r = map { post($h, $a, "log=$acc&pwd=wrong$_") } 1 .. 6;
    is(statuses(@r), '200 200 200 200 200 429', "$label: one address, one account: the 6th refused");
    is(policy($r[-1]), 'login-ip', "$label: ... by the address line");
    my $ra = $r[-1]{headers}{'retry-after'} // -1;
    ok($ra > 0 && $ra <= 900, "$label: ... Retry-After $ra within its 15 minutes");

    my $b = fresh_ip();
    @r = map { post($h, fresh_ip() . ", $b", "log=x$_-" . tag() . '&pwd=w') } 1 .. 2;
    @r = (@r, map { post($h, "203.0.113.$_, $b", "log=$acc&pwd=w") } 1 .. 4);
    is(statuses(@r), '200 200 200 200 200 429',
        "$label: forged X-Forwarded-For entries before the proxy's: one address, the 6th refused");

    # By account, from many addresses.
    my $c = 'carol-' . tag();
    @r = map { post($h, fresh_ip(), "log=$c&pwd=wrong") } 1 .. 11;
    is(statuses(@r), join(' ', ('200') x 10, '429'), "$label: one account from 11 addresses: the 11th refused");
    is(policy($r[-1]), 'login-account', "$label: ... by the account line");
    is(post($h, fresh_ip(), 'log=' . uri_escape("  \U$c\E ") . '&pwd=w')->{status}, 429,
        "$label: ... the account in capitals with spaces too");
    is(post($h, fresh_ip(), "log=decoy-x&log=$c&pwd=w")->{status}, 429,
        "$label: ... and as the last of two fields (the one the application reads)");
    is(post($h, fresh_ip(), "log=$c&log=decoy-" . tag() . '&pwd=w')->{status}, 200,
        "$label: the first of two fields is not the account the application reads");
    is(post($h, fresh_ip(), 'log=dave-' . tag() . '&pwd=w')->{status}, 200, "$label: another account is not refused");

    # Distinct names per address.
    my $n = fresh_ip();
    my @names = map { "name$_-" . tag() } 1 .. 4;
    @r = map { post($h, $n, "log=$_&pwd=w") } @names;
    is(statuses(@r), '200 200 200 429', "$label: one address, 4 account names: the 4th refused");
    is(policy($r[-1]), 'login-names', "$label: ... by the names line");
    is(join(' ', map { $_->{status} } post($h, $n, "log=$names[0]&log=$names[3]&pwd=w"),
            post($h, $n, "log=$names[3]&log=$names[0]&pwd=w")), '429 200',
        "$label: ... a new name last of two fields refused, a known one last passes");

    # No field: the address; a body too large to read: the unread budget.
    my $d = fresh_ip();
    @r = map { post($h, $d, "pwd=wrong$_") } 1 .. 3;
    is(statuses(@r), '200 200 200', "$label: three POSTs without the field");
    my ($st, $j) = ask($h, 'GET', "ip=$d");
    ok($st == 200 && used($j, 'login-ip') == 3 && used($j, 'login-account') == 3 && used($j, 'login-names') == 1
          && used($j, 'login-site') eq 'absent',
        "$label: ... ip= shows them on the address line and the account line's address (3, 3, one name), not the site's")
      or diag(explain $j);
    my $pad = 'x' x 70000;
    @r = map { post($h, fresh_ip(), "log=$c&pwd=w&pad=$pad") } 1 .. 11;
    is(statuses(@r), join(' ', ('200') x 10, '429'),
        "$label: a locked account padded past 64 KiB: one shared budget of unread bodies, the 11th refused");

    # The status handler: each line by its own source.
    ($st, $j) = ask($h, 'GET', "form:log=$c");
    ok($st == 200 && used($j, 'login-account') == 10 && used($j, 'login-ip') eq 'absent',
        "$label: form:log= shows the account line only ($st)") or diag(explain $j);
    if ($redis) {
        my $key = sl_key(identity => sl_identity('form:log', $c), policy => 'login-account');
        my ($l) = grep { $_->{name} eq 'login-account' } @{ $j->{limits} || [] };
        ok(($l->{key} // '') eq $key && redis('EXISTS', $key) == 1, "$label: ... under its own store key");
    }
    else {
        pass("$label: (the store key is checked with Redis)");
    }
    ($st, $j) = ask($h, 'POST', "form:log=$c&name=login-account");
    is($st, 200, "$label: reset form:log= name=login-account");
    is(post($h, fresh_ip(), "log=$c&pwd=w")->{status}, 200, "$label: ... the account logs in again");
    is(post($h, $a, "log=$acc&pwd=w")->{status}, 429, "$label: ... the address line's refusal stands");
    ($st, $j) = ask($h, 'POST', "ip=$a");
    is(post($h, $a, "log=$acc&pwd=w")->{status}, 200, "$label: reset ip= frees the address");
    ($st, $j) = ask($h, 'GET', 'header:X-User=x');
    ok($st == 400 && ($j->{error} // '') =~ /login-account key=form:log/, "$label: an unknown source: 400 naming the lines' keys")
      or diag(explain $j);

    # Site-wide: 200 failures from anyone.
    ($st, $j) = ask($h, 'GET', 'none=-');
    my $u = used($j, 'login-site');
    ok($st == 200 && $u =~ /^\d+$/ && $u > 30 && (scalar @{ $j->{limits} }) == 1,
        "$label: none=- shows the site line alone, $u used by everything above") or diag(explain $j);
    if ($redis) {
        ok(redis('EXISTS', sl_key(identity => sl_identity('none', '-'), policy => 'login-site')) == 1,
            "$label: ... under the shared bucket's key");
    }
    else {
        pass("$label: (the store key is checked with Redis)");
    }
    @r = map { post($h, fresh_ip(), "log=s$_-" . tag() . '&pwd=w') } 1 .. (200 - $u);
    my @bad = grep { $_->{status} != 200 } @r;
    my $last = post($h, fresh_ip(), 'log=late-' . tag() . '&pwd=w');
    ok(!@bad && $last->{status} == 429 && policy($last) eq 'login-site',
        "$label: the site line: the 200th failure passes, the next is refused, by anyone ("
          . scalar(@bad) . ' refused early, then ' . $last->{status} . ' ' . policy($last) . ')');
    ask($h, 'POST', 'none=-&name=login-site');
    is(post($h, fresh_ip(), 'log=after-' . tag() . '&pwd=w')->{status}, 200, "$label: reset none=- lets the next in");
    $h->stop;
}

run_store('redis');
run_store('shm', store => 'shm');
