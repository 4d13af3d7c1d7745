# A full shm store never evicts a budget that holds leases of requests in
# flight (issue 36, item 1): one client holds its 2 places of
# SlidingLimitConcurrent 2, then requests from 3000 other addresses to
# another limited location overflow the smallest store (64K, about 1000
# slots), so that idle budgets are evicted; the client's two requests
# still count, and a third is refused until one of them ends.
# Runs under each MPM: children or threads share the table in shared memory.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use HTTP::Tiny;
use Time::HiRes qw(sleep);
use SL::Test;
use SL::Httpd;
use SL::Hold;

plan tests => 9;

my $t = SL::Httpd::_tdir();
my $h = SL::Httpd->start(name => "shm-evict-$$", store => 'shm', extra => <<"EOT");
SlidingLimitShmSize 64K
Alias /ev-lease/ "$t/htdocs/conc/"
AliasMatch ^/ev-flood/ "$t/htdocs/fault.html"
<Location /ev-lease/>
    SetHandler cgi-script
    Options +ExecCGI
    SlidingLimitConcurrent 2 lease=60s name=ev-lease
</Location>
<Location /ev-flood/>
    SlidingLimit 100 1h name=ev-flood algorithm=counter
</Location>
EOT
my $url = $h->url;
my $ip  = fresh_ip();

my @in = map { hold("$url/ev-lease/hold.cgi", $ip) } 1 .. 2;
wait_until(sub { !grep { !hold_peek($_) } @in }, 20);
ok t_cmp(join(' ', map { hold_peek($_) } @in), '200 200', 'two requests in flight');
ok t_cmp(hold_status(hold("$url/ev-lease/hold.cgi", $ip, quick => 1)), 429,
    'a third is refused');
# Past the refusal's wait (1 s, kept to the next whole second): from here
# only the leases in flight keep the budget from eviction.
sleep 2.1;

my $ua = HTTP::Tiny->new(keep_alive => 1, timeout => 10);
my $flood = sub {
    my ($n) = @_;
    return $ua->get("$url/ev-flood/",
        { headers => { 'X-Forwarded-For' => sprintf('172.16.%d.%d', $n / 250, $n % 250 + 1) } });
};
my %st;
$st{ $flood->($_)->{status} }++ for 0 .. 2999;
ok t_cmp(join(' ', %st), '200 3000', '3000 other addresses admitted');
# The first of them was evicted to make room: it starts afresh.
ok t_cmp($flood->(0)->{headers}{'x-ratelimit-remaining'}, 99,
    'the store overflowed: idle budgets were evicted');

my @more = map { hold("$url/ev-lease/hold.cgi", $ip, quick => 1) } 1 .. 2;
ok t_cmp(join(' ', map { hold_status($_) } @more), '429 429',
    'the two in flight still count: more are refused');

open_gate($in[0]);
ok t_cmp(hold_status($in[0]), 200, 'one ends');
my $next = hold("$url/ev-lease/hold.cgi", $ip);
wait_until(sub { hold_peek($next) }, 20);
ok t_cmp(hold_peek($next), 200, 'one more is admitted in its place');
ok t_cmp(hold_status(hold("$url/ev-lease/hold.cgi", $ip, quick => 1)), 429,
    'and not two: the other is still in flight');
open_gate($_) for $next, $in[1];
ok t_cmp(join(' ', map { hold_status($_) } $next, $in[1]), '200 200', 'both end');
$h->stop;
