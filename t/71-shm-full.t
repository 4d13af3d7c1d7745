# SPDX-License-Identifier: Apache-2.0
# A full shm store (issue 14, item 3): a client whose sliding logs outgrow
# the store is refused, never admitted because space ran out, and filling
# the store never evicts another client's exhausted budget (which would
# give it its quota back).
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use HTTP::Tiny;
use SL::Test;
use SL::Httpd;

plan tests => 6;

my $h  = SL::Httpd->start(conf => ['shmfull.inc'], store => 'shm', name => "shmfull-$$");
my $ua = HTTP::Tiny->new(keep_alive => 1, timeout => 10);
my $get = sub {
    my ($path, $ip) = @_;
    return $ua->get($h->url . $path, { headers => { 'X-Forwarded-For' => $ip } });
};

# The victim uses up its 5 an hour.
my $victim = fresh_ip();
my @st = map { $get->('/basic/', $victim)->{status} } 1 .. 6;
ok t_cmp("@st", '200 200 200 200 200 429', 'the victim used up its budget');

# The attacker's logs grow by ten timestamps a request: the store (about
# 1000 slots of 7 timestamps) holds some 700 requests of them at most.
my $attacker = fresh_ip();
my ($admitted, $first) = (0, 0);
for (1 .. 2000) {
    my $s = $get->('/fault.html', $attacker)->{status};
    if ($s != 200) {
        $first = $s;
        last;
    }
    $admitted++;
}
t_debug("the attacker had $admitted requests admitted, then $first");
ok t_cmp($first, 429, 'a client whose logs outgrow the store is refused');
ok($admitted > 300 && $admitted < 800,
    "after about a store's worth of timestamps ($admitted requests)");
my %after;
$after{ $get->('/fault.html', $attacker)->{status} }++ for 1 .. 20;
ok t_cmp(join(' ', %after), '429 20', 'and stays refused, never failed open');

my $r = $get->('/basic/', $victim);
ok t_cmp($r->{status}, 429, 'the victim was not evicted: still refused');
ok t_cmp($r->{headers}{'ratelimit'} // $r->{headers}{'x-ratelimit-remaining'} // '',
    qr/(?:^|r=)0\b/, 'with nothing remaining');
$h->stop;
