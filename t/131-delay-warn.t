# SPDX-License-Identifier: Apache-2.0
# delay= where nothing can wait gets one warning under httpd -t and at
# start-up, naming the line's file, line and section and where the 0 comes
# from: SlidingLimitDelayMax 0 set in the section or around it, or, unset,
# the default of an MPM without threads (prefork). A section (or one around
# it) that sets SlidingLimitDelayMax above 0 gets none, and under a
# threaded MPM an unset one gets none.
# Runs under each MPM: the default depends on it.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Keys;
use SL::Httpd;
use SL::Test;
use HTTP::Tiny;
use Time::HiRes ();

plan tests => 10;

my $mpm = $ENV{SL_TEST_MPM} || 'event';
my $threaded = $mpm ne 'prefork';

my $conf = <<'EOT';
<Location /d1>
    SlidingLimit 2 1m name=d1 delay=2s
</Location>
<Location /d2>
    SlidingLimitDelayMax 0
    SlidingLimit 2 1m name=d2 delay=2s
</Location>
<Location /d3>
    SlidingLimitDelayMax 2
    SlidingLimit 2 1m name=d3 delay=2s
</Location>
<Location /d4>
    SlidingLimitDelayMax 3
    <If "%{REQUEST_METHOD} == 'POST'">
        SlidingLimit 2 1m name=d4 delay=2s
    </If>
</Location>
<Location /d5>
    SlidingLimit 2 1m name=d5
</Location>
EOT

my ($rc, $out) = httpd_check($conf);
ok t_cmp($rc, 0, "$mpm: -t passes (a warning, not an error)");
my @w = $out =~ /^.*delay= holds no request here.*$/mg;
ok t_cmp(scalar(@w), $threaded ? 1 : 2, "$mpm: -t: one warning per line that cannot wait");
ok t_cmp(join("\n", @w), qr{SlidingLimit 2 1m name=d2 delay=2s \(\S+httpd\.conf:\d+, in <Location /d2>\).*SlidingLimitDelayMax is 0 \(\S+httpd\.conf:\d+\)},
    "$mpm: d2: the line, its place, and the SlidingLimitDelayMax 0 that governs it");
if ($threaded) {
    ok(!grep(/name=d1/, @w), "$mpm: d1: the threaded default holds requests, no warning");
}
else {
    ok t_cmp(join("\n", @w), qr{name=d1 delay=2s \(\S+:\d+, in <Location /d1>\).*the default of an MPM without threads, such as prefork},
        "$mpm: d1: the prefork default, said so");
}
ok(!grep(/name=d[345]/, @w), "$mpm: d3, d4 (its <Location>'s SlidingLimitDelayMax 3), d5: no warning");

# At start-up, in the error log, once per line.
my $h = SL::Httpd->start(name => "dw-$$", extra => $conf);
my $log = $h->error_log;
my @s = $log =~ /^.*delay= holds no request here.*$/mg;
ok t_cmp(scalar(@s), $threaded ? 1 : 2, "$mpm: start-up: the same warnings, once each");
ok t_cmp($s[0] // '', qr/\[slidinglimit:warn\]/, "$mpm: logged as the module's warning");

# What the warning says is what happens: under a 0 the refusal is at once.
my $ua = HTTP::Tiny->new(timeout => 10);
require HTTP::Tiny;
my $t0 = Time::HiRes::time();
my @st = map { $ua->get($h->url . '/d2', { headers => { 'X-Forwarded-For' => '198.51.100.7' } })->{status} } 1 .. 3;
ok t_cmp("@st", qr/^\S+ \S+ 429$/, "$mpm: d2: the third refused");
ok(Time::HiRes::time() - $t0 < 1.5, "$mpm: d2: at once, not after a wait of up to 2 s");
$h->stop;
ok(1, 'stopped');
