# The shm store's state file is written at a stop as a temporary
# "slidinglimit-shm.state.new" beside it, then renamed. The parent writes
# it with the server's privileges (root), in a runtime directory that may
# not be root's alone: a symbolic link planted at the temporary path is
# never followed (the file it points to stays as it was), the state is not
# written, and the error log says why; a stale regular file left there by
# a stop that died is replaced. At a start, a state file that is no
# regular file (a FIFO would hold the start for ever) is removed unread.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Httpd;
use POSIX ();

plan tests => 9;

my $name = "shm-state-link-$$";
my $extra = <<"EOT";
AliasMatch ^/sk/ "${\ SL::Httpd::_tdir()}/htdocs/fault.html"
<Location /sk/count>
    SlidingLimit 5 1h name=sk-count
</Location>
EOT
my %a = (name => $name, store => 'shm', extra => $extra);
my $ip = fresh_ip();
my $get = sub { http_get($_[0]->url . '/sk/count/a', 'X-Forwarded-For' => $ip) };

my $h = SL::Httpd->start(%a);
ok t_cmp($get->($h)->{status}, 200, 'a request leaves a budget in the shm store');
my $state = $h->dir . '/run/slidinglimit-shm.state';
my $victim = $h->dir . '/victim';
open my $fh, '>', $victim or die "$victim: $!";
print $fh "precious\n";
close $fh;
symlink $victim, "$state.new" or die "symlink: $!";
$h->stop;

open $fh, '<', $victim or die "$victim: $!";
my $content = do { local $/; <$fh> };
close $fh;
ok($content eq "precious\n", 'the file the link points to is unchanged');
ok(-l "$state.new", 'the link is left for the administrator to look at');
ok(!-e $state, 'no state file was written');
like($h->error_log, qr/slidinglimit-shm\.state\.new is a symbolic link, not followed; the shm store state \(\d+ budgets\) is not written/,
    'the error log says why');

# A stale regular file (a stop that died while writing): replaced.
unlink "$state.new";
$h = SL::Httpd->start(%a);
$get->($h);
open $fh, '>', "$state.new" or die "$state.new: $!";
print $fh "stale\n";
close $fh;
$h->stop;
ok(-s $state && !-e "$state.new", 'a stale temporary file is replaced and the state written');
$h = SL::Httpd->start(%a);
ok t_cmp($get->($h)->{headers}{'x-ratelimit-remaining'}, 3, 'and read back at the next start (5 - 2)');
$h->stop;

# A FIFO at the state file's path: the start neither hangs nor reads it.
unlink $state;
POSIX::mkfifo($state, 0600) or die "mkfifo: $!";
$h = SL::Httpd->start(%a);
like($h->error_log, qr/slidinglimit-shm\.state is not a regular file \(a symbolic link is not followed\); removed, the shm store starts empty/,
    'a FIFO at the state path: the start goes on, with a log line');
ok(!-e $state, '... and it is removed');
$h->stop;
