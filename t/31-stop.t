# SPDX-License-Identifier: Apache-2.0
# The store goes away (SIGTERM) and comes back: fail-open passes (and its
# local fallback still limits), fail-closed answers 503, nothing waits long,
# the error log gets one line each way, and Redis decides again promptly.
# On the virtual host with generous timeouts (1 s connect, 2 s command): a
# stopped server refuses connections at once, so nothing waits for a
# timeout there either, and a slow answer on a loaded host is never taken
# for the outage.
# Runs under each MPM: the failure path, pipelined or direct.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use JSON::PP qw(decode_json);
use Time::HiRes qw(time sleep);
use SL::Test;
use SL::Fault;
use SL::Wire;

plan tests => 26;

my $store = quotemeta store_display();
my $down_re = qr/mod_slidinglimit: store $store failed \(/;
my $up_re   = qr/mod_slidinglimit: store $store is answering again/;
my $down0 = () = error_log_lines($down_re);
my $up0   = () = error_log_lines($up_re);

# Paths unique to this run: the access log outlives a run of the suite.
my $tag = sprintf '%d-%d', $$, time;
my $ip = fresh_ip();
my $res = http_get({ vhost => 'sl_fault_patient' }, '/f/open/a', 'X-Forwarded-For' => $ip);
ok t_cmp($res->{status}, 200, 'store up: admitted');
ok t_cmp($res->{headers}{'x-sl-result'}, 'allowed', 'store up: allowed');

fault_stop();

# Fail open without the fallback: every request passes, marked failed-open.
# How long each took is httpd's measure (SL::Wire's took).
my $id = test_id('stop');
my (@st, @rs);
for my $k (1 .. 6) {
    my $r = http_get({ vhost => 'sl_fault_patient' }, '/f/nofb/x', 'X-Forwarded-For' => $ip,
        'X-Test-Id' => "$id.$k");
    push @st, $r->{status};
    push @rs, $r->{headers}{'x-sl-result'} // '';
}
my ($max) = sort { $b <=> $a } took($id, 1 .. 6);
ok t_cmp("@st", '200 200 200 200 200 200', 'fail-open, no fallback: all pass');
ok t_cmp("@rs", join(' ', ('failed-open') x 6), 'marked failed-open');
ok($max < 1, "each request under 1 s (the connect timeout) while the store is down (max $max s)");

# Fail open with the local fallback: the same limit, from shared memory.
my $ip2 = fresh_ip();
@st = @rs = ();
for (1 .. 5) {
    my $r = http_get({ vhost => 'sl_fault_patient' }, "/f/open/y$tag", 'X-Forwarded-For' => $ip2);
    push @st, $r->{status};
    push @rs, $r->{headers}{'x-sl-result'} // '';
}
ok t_cmp("@st", '200 200 200 429 429', 'local fallback admits 3 of 3/60s, then refuses');
ok t_cmp("@rs[0..2]", 'failed-open failed-open failed-open', 'admitted ones are failed-open');
# The access log is written after the response: wait for the lines.
sub access_lines {
    my ($re, $want) = @_;
    my @l;
    wait_until(sub {
        open my $fh, '<', Apache::Test::vars('t_logs') . '/sl_access.log' or die $!;
        @l = grep { /$re/ } <$fh>;
        @l >= $want;
    }, 10);
    return scalar @l;
}
ok t_cmp(access_lines(qr{ 429 /f/open/y$tag sl=denied }, 2), 2,
    'the refused ones are logged as denied');

# Fail closed: 503, Retry-After, the JSON shape with SERVICE_UNAVAILABLE.
my $r = http_get({ vhost => 'sl_fault_patient' }, "/f/closed/z$tag", 'X-Forwarded-For' => fresh_ip(),
    'X-Test-Id' => "$id.7");
my ($t) = took($id, 7);
ok t_cmp($r->{status}, 503, 'fail-closed: 503');
my $ra = $r->{headers}{'retry-after'} // '';
ok($ra =~ /^\d+$/ && $ra >= 1 && $ra <= 2, "Retry-After '$ra' (the next probe, at most 2 s)");
ok t_cmp($r->{headers}{'content-type'}, qr{^application/json}, 'JSON body');
my $body = eval { decode_json($r->{content}) } // {};
ok t_cmp($body->{error}{code}, 'SERVICE_UNAVAILABLE', 'code SERVICE_UNAVAILABLE');
ok t_cmp($body->{error}{retry_after_seconds}, $ra, 'body agrees with Retry-After');
ok($t < 1, "fail-closed answer under 1 s ($t s)");
ok t_cmp(access_lines(qr{ 503 /f/closed/z$tag sl=failed-closed }, 1), 1,
    'logged as failed-closed');

# A few seconds of outage: still one line in the error log.
for (1 .. 10) {
    http_get({ vhost => 'sl_fault_patient' }, '/f/wide/w', 'X-Forwarded-For' => fresh_ip());
    sleep 0.2;
}
my $down1 = () = error_log_lines($down_re);
ok t_cmp($down1 - $down0, 1, 'one error log line for the outage');

# The store comes back: Redis decides again within a few seconds.
fault_start();
my $t0 = time;
my $back = wait_until(sub {
    my $x = http_get({ vhost => 'sl_fault_patient' }, '/f/wide/w', 'X-Forwarded-For' => fresh_ip());
    ($x->{headers}{'x-sl-result'} // '') eq 'allowed';
}, 10);
my $took = time - $t0;
ok($back, sprintf('decided by Redis again %.2f s after it returned', $took));
my $up1 = () = error_log_lines($up_re);
ok t_cmp($up1 - $up0, 1, 'one error log line for the recovery');

my $ip3 = fresh_ip();
@st = map { http_get({ vhost => 'sl_fault_patient' }, '/f/open/v', 'X-Forwarded-For' => $ip3)->{status} } 1 .. 4;
ok t_cmp("@st", '200 200 200 429', 'the limit holds from Redis again');
my $key = sl_key(ip => $ip3, policy => 'fopen', prefix => 'slfault');
ok t_cmp(fault_redis('ZCARD', $key), 3, 'the admissions are in Redis');
$r = http_get({ vhost => 'sl_fault_patient' }, '/f/closed/v', 'X-Forwarded-For' => fresh_ip());
ok t_cmp($r->{status}, 200, 'fail-closed location admits again');
ok t_cmp($r->{headers}{'x-sl-result'}, 'allowed', 'as allowed');
my $down2 = () = error_log_lines($down_re);
ok t_cmp($down2 - $down0, 1, 'no further failure line after the recovery');

# The main server's store was never affected by this virtual host's outage.
$r = SL::Test::http_get('/basic/', 'X-Forwarded-For' => fresh_ip());
ok t_cmp($r->{status}, 200, 'main server still admits');
my @main = error_log_lines(qr/mod_slidinglimit: store redis:\/\/127\.0\.0\.1:$ENV{SL_TEST_REDIS_PORT}\/0 failed/);
ok t_cmp(scalar(@main), 0, "the main server's store never failed");

# Credentials never reach the error log.
my @secret = error_log_lines(qr/\Q$ENV{SL_TEST_FAULT_REDIS_PASSWORD}\E/);
ok t_cmp(scalar(@secret), 0, 'the password is not in the error log');
