# SPDX-License-Identifier: Apache-2.0
# SlidingLimitDelayMax: with a cap of 1 and one request of the child
# held by delay=, a second that could wait is refused at once (429,
# Retry-After), and the server keeps answering other locations while the
# first waits; the first is admitted after its wait. One child (a second
# httpd), so that both requests meet the same child's count; threaded
# MPMs only (under prefork a child holds one request, waiting or not).
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Time::HiRes qw(time);
use SL::Test;
use SL::Httpd;

if (($ENV{SL_TEST_MPM} // 'event') eq 'prefork') {
    plan skip_all => 'a per-child cap of waiting threads: threaded MPMs';
}
plan tests => 9;

my $h = SL::Httpd->start(children => 1, extra => <<'EOT');
<Location /delay/>
    SlidingLimit 1 4s name=delay-cap delay=5s
    SlidingLimitDelayMax 1
    Header always set X-SL-Delay "%{SLIDINGLIMIT_DELAY}e"
</Location>
<Location /delay/other.html>
    SlidingLimit off
</Location>
<Location /delay-status>
    SetHandler slidinglimit-status
    SlidingLimitStatusPage metrics
    SlidingLimit off
</Location>
EOT

sub get {
    my ($path, $ip) = @_;
    my $t0 = time;
    my $r  = http_get($h->url . $path, $ip ? ('X-Forwarded-For' => $ip) : ());
    $r->{took}  = time - $t0;
    $r->{start} = $t0;
    return $r;
}

sub metric {
    my ($name) = @_;
    my $page = get('/delay-status')->{content} // '';
    return $page =~ /^\Q$name\E (\S+)$/m ? $1 : -1;
}

my $full = metric('slidinglimit_delay_full_total');
my ($a, $b) = (fresh_ip(), fresh_ip());
my $first = get('/delay/wait.html', $a);

# The waiter: A's second request, held about 4s.
my $waiter = SL::Test::workers(1, sub {
    my $r = get('/delay/wait.html', $a);
    return { status => $r->{status}, endms => int(1000 * ($r->{start} + $r->{took})) };
});
my $waiting = wait_until(sub { metric('slidinglimit_delay_waiting') == 1 }, 3);
ok($first->{status} == 200 && $waiting, 'the first waiter is waiting (slidinglimit_delay_waiting 1)');

# B is over its rate too, but the child's one waiting slot is taken.
my $b1 = get('/delay/wait.html', $b);
my $b2 = get('/delay/wait.html', $b);
ok t_cmp("$b1->{status} $b2->{status}", '200 429', 'a second that could wait is refused');
ok($b2->{took} < 1 && ($b2->{headers}{'retry-after'} // '') =~ /^[34]$/,
    sprintf('... at once (%.3fs) with Retry-After %s', $b2->{took}, $b2->{headers}{'retry-after'} // '-'));
ok(metric('slidinglimit_delay_full_total') >= $full + 1, '... counted in slidinglimit_delay_full_total');

# Another location answers while the waiter still waits.
my $o = get('/delay/other.html');
my $still = metric('slidinglimit_delay_waiting');
ok($o->{status} == 200 && $o->{took} < 1, sprintf('another location answers promptly (%d, %.3fs)', $o->{status}, $o->{took}));
ok t_cmp($still, 1, '... before the waiter finished');

my $w = $waiter->();
ok t_cmp($w->{status}, 200, 'the waiter is admitted');
ok($w->{endms} / 1000 >= $first->{start} + 3.99,
    sprintf('... no earlier than 4s after the first (%.3fs)', $w->{endms} / 1000 - $first->{start}));
ok t_cmp(metric('slidinglimit_delay_waiting'), 0, 'then nothing waits');
