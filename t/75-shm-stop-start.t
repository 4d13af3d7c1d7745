# SPDX-License-Identifier: Apache-2.0
# "service apache2 restart" is a stop and a start: the shm store's budgets
# and blocks outlive it (written to the runtime directory at the stop, read
# back at the start), and a state file of another size or a damaged one is
# discarded with a log line, never read.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Httpd;

plan tests => 10;

my $name = "shm-stop-start-$$";
my $extra = <<"EOT";
AliasMatch ^/ss/ "${\ SL::Httpd::_tdir()}/htdocs/fault.html"
<Location /ss/block>
    SlidingLimit 2 1h name=ss-block block=1h
</Location>
<Location /ss/count>
    SlidingLimit 5 1h name=ss-count
</Location>
EOT
my %a = (name => $name, store => 'shm', extra => $extra);
my $ip = fresh_ip();
my $other = fresh_ip();
my $get = sub {
    my ($h, $path, $who) = @_;
    return http_get($h->url . $path, 'X-Forwarded-For' => $who // $ip);
};

my $h = SL::Httpd->start(%a);
my @st = map { $get->($h, '/ss/block/a')->{status} } 1 .. 3;
ok t_cmp("@st", '200 200 429', 'the third request is refused and starts a block');
$get->($h, '/ss/count/a') for 1 .. 3;
$h->stop;
my $state = $h->dir . '/run/slidinglimit-shm.state';
ok(-s $state, 'the stop wrote the state file');

$h = SL::Httpd->start(%a);
ok(!-e $state, 'the start read it and removed it');
my $r = $get->($h, '/ss/block/a');
ok t_cmp($r->{status}, 429, 'the block outlived the stop and start');
ok t_cmp($get->($h, '/ss/block/a', $other)->{status}, 200,
    'another client is not blocked');
$r = $get->($h, '/ss/count/a');
ok t_cmp($r->{headers}{'x-ratelimit-remaining'}, 1,
    'the count outlived it too (5 - 3 - 1 = 1 left)');

# A damaged file: discarded, the store starts empty.
$h->stop;
ok(-s $state, 'written again at the second stop');
{
    open my $fh, '+<', $state or die "$state: $!";
    binmode $fh;
    seek $fh, (-s $state) - 100, 0;
    print $fh "\0" x 50;
    close $fh;
}
$h = SL::Httpd->start(%a);
like($h->error_log, qr/slidinglimit-shm\.state: damaged; the shm store starts empty/,
    'a damaged file is discarded with a log line');
ok t_cmp($get->($h, '/ss/block/a')->{status}, 200, 'and nothing of it was read');

# Another SlidingLimitShmSize: not read.
$get->($h, '/ss/block/a') for 1 .. 3;
$h->stop;
$h = SL::Httpd->start(%a, extra => "SlidingLimitShmSize 4M\n$extra");
like($h->error_log, qr/written for another SlidingLimitShmSize; the shm store starts empty/,
    'a file of another size is discarded with a log line');
$h->stop;
