# A lease renewal that arrives after its lease expired (issue 36, item 2):
# every child of a shm-store httpd is stopped (SIGSTOP) for longer than
# the lease while three requests hold their places, then resumed. The
# leases are gone, as they must be, and nothing else is: the renewals and
# give-backs of the expired leases write into no other budget, so the
# same client's rate limit (2 of 3 spent before) and another client's
# three leases on another section are what they were. The same on Redis;
# there the expired leases' key is gone with its TTL, so lua/sl_renew.lua
# is also called directly on a key that another lease keeps alive: an
# expired lease's renewal must not bring it back.
# Runs under each MPM: the renewer is a thread of each child, prefork too.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use Time::HiRes qw(time sleep);
use SL::Test;
use SL::Algo;
use SL::Httpd;
use SL::Hold;

plan tests => 2 * 8 + 4;

my $conc = SL::Httpd::_tdir() . '/htdocs/conc/';
my $extra = <<"EOT";
Alias /lr-lease/ "$conc"
Alias /lr-other/ "$conc"
AliasMatch ^/lr-keep/ "${\ SL::Httpd::_tdir()}/htdocs/fault.html"
<Location /lr-lease/>
    SetHandler cgi-script
    Options +ExecCGI
    SlidingLimitConcurrent 3 lease=3s name=lr-lease
</Location>
<Location /lr-other/>
    SetHandler cgi-script
    Options +ExecCGI
    SlidingLimitConcurrent 3 lease=1h name=lr-other
</Location>
<Location /lr-keep/>
    SlidingLimit 3 1m name=lr-keep
</Location>
EOT

for my $store (qw(shm redis)) {
    my $h = SL::Httpd->start(name => "late-renew-$store-$$", extra => $extra,
        $store eq 'shm' ? (store => 'shm') : ());
    my $url = $h->url;
    my $ip = fresh_ip();
    my $bystander = fresh_ip();
    my $keep = sub { http_get("$url/lr-keep/", 'X-Forwarded-For' => $ip)->{status} };

    my @k = map { $keep->() } 1 .. 2;
    ok t_cmp("@k", '200 200', "$store: two of the rate limit's 3 spent");
    # Another client's three on a long lease: full.
    my @o = map { hold("$url/lr-other/hold.cgi", $bystander) } 1 .. 3;
    my @l = map { hold("$url/lr-lease/hold.cgi", $ip) } 1 .. 3;
    wait_until(sub { !grep { !hold_peek($_) } @o, @l }, 20);
    ok t_cmp(join(' ', map { hold_peek($_) } @o, @l), '200 200 200 200 200 200',
        "$store: three leases held on each section");

    # Longer than the lease (3 s): every lease of /lr-lease/ expires unrenewed,
    # and each child's renewer finds them due at once when it resumes.
    my @children = grep {/^\d+$/} split /\s+/, `pgrep -P ${\ $h->pid}`;
    kill 'STOP', @children;
    sleep 4.5;
    kill 'CONT', @children;
    # The renewals and give-backs of the expired leases, under way.
    sleep 1.5;
    my $probe = hold("$url/lr-lease/hold.cgi", $ip, quick => 1);
    ok t_cmp(hold_status($probe), 200, "$store: the expired leases hold no place");
    # Renewals of the held requests' expired leases, again and again.
    sleep 2;
    @k = map { $keep->() } 1 .. 4;
    ok t_cmp("@k", '200 429 429 429',
        "$store: the same client's rate limit still has 1 of 3 left");
    ok t_cmp(hold_status(hold("$url/lr-other/hold.cgi", $bystander, quick => 1)), 429,
        "$store: another client's three leases are still held");

    # The held requests end: their give-backs name leases that are gone.
    open_gate($_) for @l;
    ok t_cmp(join(' ', map { hold_status($_) } @l), '200 200 200',
        "$store: the expired leases' requests end with their 200");
    ok t_cmp(hold_status(hold("$url/lr-other/hold.cgi", $bystander, quick => 1)), 429,
        "$store: and give nothing of another client's back");
    open_gate($_) for @o;
    hold_status($_) for @o;
    ok(!($h->error_log =~ /inconsistent/), "$store: the store was never emptied")
      or diag($h->error_log);
    $h->stop;
}

# lua/sl_renew.lua on a key with an expired lease beside a live one (the
# live one keeps the key): the expired one is not renewed, the live one is.
{
    my $script = script_text('sl_renew');
    my $key = sl_key(ip => fresh_ip(), policy => 'lr-direct', alg => 'n');
    my $t = redis('TIME');
    my $now = $t->[0] * 1e6 + $t->[1];
    my $old = sprintf('%d', $now - 5e6);
    redis('ZADD', $key, $old, '1*old', sprintf('%d', $now), '1*live');
    redis('PEXPIRE', $key, 60000);
    my $r = redis('EVAL', $script, 1, $key, 'old', 3000000);
    ok t_cmp("@$r", '0', 'redis: a renewal 5 s into a 3 s lease renews nothing');
    ok t_cmp(redis('ZSCORE', $key, '1*old'), $old, 'redis: the expired lease keeps its old score');
    $r = redis('EVAL', $script, 1, $key, 'live', 3000000);
    ok t_cmp("@$r", '1', 'redis: a live lease is renewed');
    ok(redis('ZSCORE', $key, '1*live') > $now, 'redis: with a later score');
    redis('DEL', $key);
}
