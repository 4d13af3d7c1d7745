# SPDX-License-Identifier: Apache-2.0
# The status handler's look at a distinct= limit (what a new value would
# find) and its reset, on Redis and on shm: three names used, two remain;
# after the reset five new names pass again.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use HTTP::Tiny;
use JSON::PP qw(decode_json);
use SL::Test;
use SL::Httpd;

plan tests => 2 * 4;

my $status = <<'EOT';
<Location /d153-status>
    SetHandler slidinglimit-status
    SlidingLimitStatusPage reset
    SlidingLimit off
    Require ip 127.0.0.1 ::1
</Location>
EOT

sub ask {
    my ($h, $method, $query) = @_;
    my $res = HTTP::Tiny->new(timeout => 10)->request($method, $h->url . "/d153-status?$query",
        { headers => $method eq 'POST' ? { 'X-SlidingLimit-Reset' => 1 } : {} });
    my $j = eval { decode_json($res->{content}) } // {};
    return (grep { $_->{name} eq 'd150-acct' } @{ $j->{limits} || [] })[0] // {};
}

for my $store (qw(redis shm)) {
    my $h = SL::Httpd->start(conf => ['distinct.conf'], name => "d153-$store-$$", extra => $status,
        ($store eq 'shm' ? (store => 'shm') : ()));
    my $ip = fresh_ip();
    my $get = sub { http_get($h->url . '/distinct/acct/', 'X-Forwarded-For' => $ip, 'X-Account' => $_[0])->{status} };
    $get->($_) for qw(a b c);
    my $l = ask($h, 'GET', "path=/distinct/acct/&ip=$ip");
    ok t_cmp(join(' ', map { $_ // '-' } @$l{qw(algorithm requests remaining)}), 'distinct 5 2',
        "$store: the look shows 2 of 5 names left");
    ok($l->{reset} >= 55 && $l->{reset} <= 60, "$store: ... more when the oldest leaves ($l->{reset} s)");
    ask($h, 'POST', "path=/distinct/acct/&ip=$ip");
    ok t_cmp(join(' ', map { $get->("n$_") } 1 .. 6), '200 200 200 200 200 429',
        "$store: after the reset five new names pass, the sixth is refused");
    ok t_cmp(ask($h, 'GET', "path=/distinct/acct/&ip=$ip")->{remaining}, 0, "$store: the look shows none left");
    $h->stop;
}
