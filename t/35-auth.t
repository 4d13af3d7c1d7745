# SPDX-License-Identifier: Apache-2.0
# A store that refuses our password: the fail modes apply, the log says the
# store failed and why, and no credential (right or wrong) is ever logged.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Fault;

plan tests => 10;

my $store = quotemeta store_display();
my $re = qr/mod_slidinglimit: store $store failed \(authentication refused\)/;
my $before = () = error_log_lines($re);

my @st = map {
    my $r = http_get({ vhost => 'sl_badauth' }, '/f/closed/a', 'X-Forwarded-For' => fresh_ip());
    $r->{status};
} 1 .. 3;
ok t_cmp("@st", '503 503 503', 'wrong password, fail-closed: 503');
my $r = http_get({ vhost => 'sl_badauth' }, '/f/nofb/a', 'X-Forwarded-For' => fresh_ip());
ok t_cmp("$r->{status} $r->{headers}{'x-sl-result'}", '200 failed-open',
    'wrong password, fail-open: passes');
my $after = () = error_log_lines($re);
ok t_cmp($after - $before, 1, 'one line says the store refused the password');

# No password for a store that needs one: Redis answers a long command
# before AUTH with "Protocol error: unauthenticated multibulk length" (or
# NOAUTH); the log must say that the store wants a password.
my $hint = qr/mod_slidinglimit: store .*requires authentication: give the password/;
my $hints = () = error_log_lines($hint);
my @np = map {
    http_get({ vhost => 'sl_nopass' }, '/f/closed/a', 'X-Forwarded-For' => fresh_ip())->{status};
} 1 .. 2;
ok t_cmp("@np", '503 503', 'no password, fail-closed: 503');
my $hinted = () = error_log_lines($hint);
ok($hinted > $hints, 'the log says the store requires authentication')
    or diag(join '', error_log_lines(qr/sl_nopass|store .* failed/));

# The right password on the same redis works meanwhile.
$r = http_get({ vhost => 'sl_fault_patient' }, '/f/closed/a', 'X-Forwarded-For' => fresh_ip());
ok t_cmp("$r->{status} $r->{headers}{'x-sl-result'}", '200 allowed',
    'right password: decided by Redis');

for my $secret ($ENV{SL_TEST_FAULT_REDIS_PASSWORD}, $ENV{SL_TEST_FAULT_WRONG_PASSWORD}) {
    my @l = error_log_lines(qr/\Q$secret\E/);
    ok t_cmp(scalar(@l), 0, 'a password in the store URL is not in the error log');
}
my @any = error_log_lines(qr/redis:\/\/:[^*]/);
ok t_cmp(scalar(@any), 0, 'no store URL with credentials in the error log');
my @acc = do {
    open my $fh, '<', Apache::Test::vars('t_logs') . '/sl_access.log' or die $!;
    grep { /\Q$ENV{SL_TEST_FAULT_REDIS_PASSWORD}\E|\Q$ENV{SL_TEST_FAULT_WRONG_PASSWORD}\E/ } <$fh>;
};
ok t_cmp(scalar(@acc), 0, 'nor in the access log');
