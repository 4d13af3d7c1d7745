# SPDX-License-Identifier: Apache-2.0
# SlidingLimitConcurrent's bad values are refused at start-up ("httpd -t"),
# each naming the directive and the token; good lines pass, in every place
# SlidingLimit is allowed, and in .htaccess the limit applies. And the
# script's 'n' and the shm store's C (src/sl_algo.c) answer alike, to the
# microsecond, through bench/accuracy_replay as t/17-script-vs-c.t does for
# the rates.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Algo;
use SL::Keys;
use Time::HiRes qw(sleep);

my @bad = (
    [ 'SlidingLimitConcurrent',                        undef ],
    [ 'SlidingLimitConcurrent 0',                      "'0'" ],
    [ 'SlidingLimitConcurrent -3',                     "'-3'" ],
    [ 'SlidingLimitConcurrent two',                    "'two'" ],
    [ 'SlidingLimitConcurrent 100000001',              "'100000001'" ],
    [ 'SlidingLimitConcurrent 2 lease=500ms',          'lease=500ms' ],
    [ 'SlidingLimitConcurrent 2 lease=2h',             'lease=2h' ],
    [ 'SlidingLimitConcurrent 2 lease=soon',           "'soon'" ],
    [ 'SlidingLimitConcurrent 2 colour=red',           'colour=red' ],
    [ 'SlidingLimitConcurrent 2 cost=2',               'cost=2' ],
    [ 'SlidingLimitConcurrent 2 name=a{b}',            'name=a{b}' ],
    [ "SlidingLimit off\nSlidingLimitConcurrent 2",    "'2'" ],
    [ "SlidingLimitConcurrent 2 name=c\nSlidingLimitConcurrent 3 name=c", "'c'" ],
    # One name, one budget: N in flight is not a rate.
    [ "<Location /a>\nSlidingLimit 2 60s name=k\n</Location>\n"
        . "<Location /b>\nSlidingLimitConcurrent 2 name=k lease=60s\n</Location>", "'k'" ],
);
my $good = "SlidingLimitConcurrent 4\n"
  . "<Location /api>\nSlidingLimit 100 1m name=api\nSlidingLimitConcurrent 2 name=api-inflight lease=10s\n"
  . "<If \"%{HTTP:X-Tier} == 'gold'\">\nSlidingLimitConcurrent 8 name=api-gold lease=1h\n</If>\n</Location>\n"
  . "<Directory /tmp>\nSlidingLimitConcurrent 1 lease=1s\n</Directory>\n"
  . "<VirtualHost 127.0.0.1:1>\nSlidingLimitConcurrent 3 name=vh\n</VirtualHost>";

plan tests => @bad + 4 + 3;

for my $case (@bad) {
    my ($conf, $token) = @$case;
    my ($rc, $out) = httpd_check($conf);
    (my $one = $conf) =~ s/\n/ | /g;
    ok($rc != 0 && $out =~ /SlidingLimitConcurrent|SlidingLimit:/
          && (!defined $token || index($out, $token) >= 0) && $out !~ /Syntax OK/,
        "refused, naming " . ($token // 'the directive') . ": $one") or diag("rc=$rc\n$out");
}
my ($rc, $out) = httpd_check($good);
is($rc, 0, 'good lines in every place pass httpd -t') or diag($out);
like($out, qr/Syntax OK/, '... Syntax OK');

# In .htaccess (AllowOverride Limit), as SlidingLimit: the limit applies.
my $r = http_get('/htaccess/conc/index.html', 'X-Forwarded-For' => fresh_ip());
ok t_cmp($r->{status}, 200, '.htaccess: a request under its SlidingLimitConcurrent');
ok t_cmp($r->{headers}{'ratelimit-policy'}, '"hta-conc";q=1;qu="concurrent-requests"', '.htaccess: ... its policy');

# The script's 'n' against sl_algo.c: leases of 1.5 s taken in a quick
# sequence, so that refusals see the oldest lease far from its expiry (a
# wait capped at 1 s) and near it (the true, shorter wait).
my $root = Apache::Test::vars('serverroot') . '/..';
my $bin  = "$root/bench/results/accuracy-replay";
my $build = `make -s -C '$root' bench/results/accuracy-replay 2>&1`;
ok(!$? && -x $bin, 'bench/accuracy_replay.c builds') or diag($build);
my $script = script_text('sl_check');
my $rc = redis_connect();
my $sha = $rc->('SCRIPT', 'LOAD', $script);
srand(103);
my (@lines, %seen);
for my $i (0 .. 1) {
    my ($n, $lease) = $i ? (5, 1_200_000) : (3, 1_500_000);
    my $key = "sltest:{xcheck-n-$$-$i}.n";
    $rc->('DEL', $key);
    for my $j (1 .. 120) {
        my $x = $rc->('EVALSHA', $sha, 1, $key, "m$j", 'n', $n, $lease, $n, 1, 0);
        my $now = $x->[0] * 1_000_000 + $x->[1];
        push @lines, join(' ', "k$i", 'n', $n, $lease, $n, 1, 0, $now, @$x[ 3 .. 5 ]);
        $seen{ $x->[2] ? 'admitted' : $x->[5] == 1_000_000 ? 'capped' : 'near' }++;
        sleep(rand(0.04));
    }
    $rc->('DEL', $key);
}
ok($seen{admitted} && $seen{capped} && $seen{near},
    join(', ', map {"$_ $seen{$_}"} sort keys %seen) . ': admissions, capped and shorter waits');
my $trace = "$root/t/xcheck-n-$$.txt";
open my $out, '>', $trace or die "$trace: $!";
print $out "$_\n" for @lines;
close $out;
my $res = `'$bin' < '$trace' 2>&1`;
t_debug($res);
ok t_cmp($res, qr/^\d+ calls, 0 mismatches$/m, "sl_algo.c gives the script's answers for 'n'");
unlink $trace;
