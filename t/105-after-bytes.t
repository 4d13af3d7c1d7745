# SPDX-License-Identifier: Apache-2.0
# cost=after:bytes, under the Redis store (the main server) and the shm
# store (sl_shm), for every algorithm: a request is admitted for one unit
# and charged the bytes of its body after the response (cost-unit=100: a
# 1000-byte file costs 10), so the next request sees 100 - 10 - 1 left.
# The quota headers of a response describe its admission (the charge comes
# after them). A 100-byte file costs 1: the admission's unit, nothing more.
# A denied request is charged nothing; a DirectoryIndex target is charged
# once, by the bytes the client got, and so is an ErrorDocument's page.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::After;

plan tests => 2 * 9 + 1;

# Every request over one kept-alive connection per server (SL::After):
# the look after a response sees its charge.
sub get     { af_get(@_) }
sub settled { my ($o, $path, $ip, $name) = @_; return af_used($o, $path, $ip, $name) }
sub used    { af_used(@_) }

for my $vhost (undef, 'sl_shm') {
    my $store = $vhost ? 'shm' : 'redis';
    my $o     = { $vhost ? (vhost => $vhost) : () };
    my $rem   = sub { $_[0]->{headers}{'x-ratelimit-remaining'} // '-' };

    for my $alg (qw(log counter gcra)) {
        my $ip = fresh_ip();
        my (@r, @u);
        for ([ '1000.txt', 10 ], [ '1000.txt', 20 ], [ '100.txt', 21 ], [ '100.txt', 22 ]) {
            my ($f, $want) = @$_;
            push @r, get($o, "/af/bytes-$alg/$f", 'X-Forwarded-For' => $ip);
            push @u, settled($o, "/af/bytes-$alg/$f", $ip, "af-bytes-$alg", $want);
        }
        my $got = join ' ', map { "$_->{status}/" . $rem->($_) } @r;
        ok t_cmp("$got used @u", '200/99 200/89 200/79 200/78 used 10 20 21 22',
            "$store $alg: 1000 bytes cost 10 (charged after), 100 bytes 1");
    }

    # The headers of a response are its admission's: the first 1000-byte
    # response said 99, and its body length is what was charged.
    my $ip = fresh_ip();
    my $r1 = get($o, '/af/bytes-log/1000.txt', 'X-Forwarded-For' => $ip);
    ok t_cmp(length($r1->{content}) . ' ' . $rem->($r1), '1000 99',
        "$store: the response's own headers describe its admission");

    # combo: a plain limit of 2 and a bytes one; the third request is
    # refused by the plain one and charges nothing (all or nothing).
    $ip = fresh_ip();
    my @c;
    for my $want (10, 20, 20) {
        push @c, get($o, '/af/combo/1000.txt', 'X-Forwarded-For' => $ip);
        settled($o, '/af/combo/1000.txt', $ip, 'af-combo-bytes', $want);
    }
    ok t_cmp(join(' ', map { $_->{status} } @c), '200 200 429', "$store: combo: the plain limit refuses the third");
    ok t_cmp(used($o, '/af/combo/1000.txt', $ip, 'af-combo-bytes'), 20, "$store: combo: the bytes limit holds the two admitted responses (2 x 10), nothing of the refusal");

    # A directory's index (a fast redirect): charged once, 10 units.
    $ip = fresh_ip();
    my @d;
    for my $want (10, 20) {
        push @d, get($o, '/af/dir/', 'X-Forwarded-For' => $ip);
        settled($o, '/af/dir/', $ip, 'af-dir', $want);
    }
    ok t_cmp(join(' ', map { $_->{status} . '/' . length($_->{content}) . '/' . $rem->($_) } @d),
        '200/1000/99 200/1000/89', "$store: a DirectoryIndex target is charged once");

    # An ErrorDocument: one decision, one charge, by the page sent.
    $ip = fresh_ip();
    my $e = get($o, '/af/bytes-ed/missing', 'X-Forwarded-For' => $ip);
    ok t_cmp($e->{status} . '/' . length($e->{content}) . ' used ' . used($o, '/af/bytes-ed/1000.txt', $ip, 'af-bytes-ed'),
        '404/1000 used 10', "$store: an ErrorDocument's page is charged once");

    # The metrics count the charges.
    my $m = get($o, '/af-status')->{content} // '';
    ok $m =~ /^slidinglimit_charges_total\{outcome="charged"\} [1-9]\d*$/m,
      "$store: slidinglimit_charges_total counts the charges";
}

# The charge runs by its hash like the decision: after SCRIPT FLUSH the
# script is loaded again (the decision's NOSCRIPT reloads only its own).
{
    my $ip = fresh_ip();
    get({}, '/af/bytes-log/100.txt', 'X-Forwarded-For' => $ip);
    redis('SCRIPT', 'FLUSH');
    get({}, '/af/bytes-log/1000.txt', 'X-Forwarded-For' => $ip);
    ok t_cmp(used({}, '/af/bytes-log/1000.txt', $ip, 'af-bytes-log'), 11,
        'redis: after SCRIPT FLUSH the charge is made (1 + 10)');
}
