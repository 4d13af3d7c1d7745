# SPDX-License-Identifier: Apache-2.0
# A changed SlidingLimitStore is another store: after "apachectl graceful"
# it is tried at once and its failure is logged as news, even while the old
# store's breaker was open; the same store across a restart stays one
# outage, logged once.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Httpd;

plan tests => 7;

# Two ports nobody listens on: each refuses every connection.
my $dead1 = SL::Test::free_port(10000, 10000);
my $dead2 = $dead1 + 1;
$dead2++ while $dead2 < 20000 && !_free($dead2);
my $redis = $ENV{SL_TEST_REDIS_PORT};

sub _free {
    my ($port) = @_;
    return !IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Timeout => 1);
}
use IO::Socket::INET;

my $h = SL::Httpd->start(
    name  => "store-change-$$",
    store => "redis://127.0.0.1:$dead1",
    extra => <<"EOT");
AliasMatch ^/chg/ "${\ SL::Httpd::_tdir()}/htdocs/fault.html"
<Location /chg/>
    SlidingLimit 100 1m name=store-change
    SlidingLimitFailMode closed
</Location>
EOT

my $failed = sub {
    my ($port) = @_;
    return () = $h->error_log =~
      /store redis:\/\/127\.0\.0\.1:$port\/0 failed .*applying the fail mode/g;
};

my @st = map { http_get($h->url . '/chg/a', 'X-Forwarded-For' => fresh_ip())->{status} } 1 .. 3;
ok t_cmp("@st", '503 503 503', 'a store that refuses: fail-closed 503');
ok t_cmp($failed->($dead1), 1, 'its outage is logged once');

# The same store across a graceful restart: the same outage.
$h->graceful;
http_get($h->url . '/chg/a', 'X-Forwarded-For' => fresh_ip());
ok t_cmp($failed->($dead1), 1, 'the same store after a graceful restart: not logged again');

# Another store, down too: news of its own.
$h->graceful(store => "redis://127.0.0.1:$dead2");
my $r = http_get($h->url . '/chg/a', 'X-Forwarded-For' => fresh_ip());
ok t_cmp($r->{status}, 503, 'the new store refuses too: 503');
ok t_cmp($failed->($dead2), 1, 'the new store\'s failure is logged')
  or diag($h->error_log);

# The store fixed: the first request after the restart is decided by it.
$h->graceful(store => "redis://127.0.0.1:$redis");
$r = http_get($h->url . '/chg/a', 'X-Forwarded-For' => fresh_ip());
ok t_cmp($r->{status}, 200, 'a working store: the first request passes');
ok t_cmp($r->{headers}{'ratelimit-policy'} // '', '"store-change";q=100;w=60',
    'decided by the store, with its headers');
