# SPDX-License-Identifier: Apache-2.0
# The status page tells count= outcomes apart: a failed login (the listed
# 401) is slidinglimit_counted_total{outcome="counted"}, a good one
# outcome="given-back", while both decisions stay result="allowed" (the
# SLIDINGLIMIT_RESULT values are fixed). Two unnamed limits with the same
# values in two sections get two policy labels, "3-per-...@/cm/a" and
# "@/cm/b"; their RateLimit-Policy header stays the plain name.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Wire;
use SL::Keys;
use SL::After;

plan tests => 8;

# A count= outcome is counted after the response (log_transaction): the
# logins and the requests after them go over one kept-alive connection,
# on which httpd counts each before it reads the next (SL::After), so the
# page read after them has the logins' outcomes.
my $m0 = metrics();
my $ip = fresh_ip();
my $bad  = af_get({}, '/cm/login', 'X-Forwarded-For' => $ip, Authorization => basic('alice', 'wrong'));
my $good = af_get({}, '/cm/login', 'X-Forwarded-For' => $ip, Authorization => basic('alice', 'alice-pw'));
ok t_cmp("$bad->{status} $good->{status}", '401 200', 'a failed login, then a good one');
my $a = af_get({}, '/cm/a', 'X-Forwarded-For' => $ip);
af_get({}, '/cm/b', 'X-Forwarded-For' => $ip) for 1 .. 2;
my $m1 = metrics();
my $d = sub {
    my ($name, %lab) = @_;
    return metric($m1, $name, %lab) - metric($m0, $name, %lab);
};
ok t_cmp($d->('slidinglimit_counted_total', policy => 'cm-login', outcome => 'counted'), 1,
    'counted_total{outcome="counted"}: the failed login');
ok t_cmp($d->('slidinglimit_counted_total', policy => 'cm-login', outcome => 'given-back'), 1,
    'counted_total{outcome="given-back"}: the good one');
ok t_cmp($d->('slidinglimit_decisions_total', policy => 'cm-login', result => 'allowed'), 2,
    '... both decisions allowed');

my ($la) = grep { /^slidinglimit_decisions_total\{.*policy=3-per-[^,}]*\@\/cm\/a[,}]/ } keys %$m1;
my ($lb) = grep { /^slidinglimit_decisions_total\{.*policy=3-per-[^,}]*\@\/cm\/b[,}]/ } keys %$m1;
ok($la && $lb, 'two unnamed "3 1m" limits: two labels (' . ($la // '-') . ', ' . ($lb // '-') . ')');
my ($pa) = ($la // '') =~ /policy=([^,}]*)/;
my ($pb) = ($lb // '') =~ /policy=([^,}]*)/;
ok t_cmp($d->('slidinglimit_decisions_total', policy => $pa // '-', result => 'allowed'), 1, '/cm/a: its one decision');
ok t_cmp($d->('slidinglimit_decisions_total', policy => $pb // '-', result => 'allowed'), 2, '/cm/b: its two');
my $hdr = $a->{headers}{'ratelimit-policy'} // '';
ok($hdr =~ /3-per-/ && $hdr !~ /\@/, "RateLimit-Policy keeps the plain name ($hdr)");
