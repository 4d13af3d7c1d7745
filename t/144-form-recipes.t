# SPDX-License-Identifier: Apache-2.0
# README "Form logins by account": its WordPress and Basic recipes, taken
# from the README by their markers and pasted as written into a server's
# configuration (the Basic one with the suite's password file for
# /etc/apache2/private.htpasswd, nothing else changed). A copy that drifts
# from the README cannot pass: there is no copy.
#  - WordPress (a program answering as wp-login.php does): wrong passwords
#    for one account from six addresses: 200 five times, then 429; the
#    right password is a 302 and given back; the form's GET never counts;
#    one address trying six account names: the sixth refused (its key=ip
#    lines), and a POST without the field counts by its address;
#  - Basic: wrong passwords for alice from six addresses: 401 five times,
#    then 429; another account is untouched.
# Runs under each MPM
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use HTTP::Tiny;
use SL::Test;
use SL::Httpd;
use SL::Keys qw(basic tag top_dir slurp);

plan tests => 15;

my $readme = slurp(top_dir() . '/README.md');
sub recipe {
    my ($name) = @_;
    my ($block) = $readme =~ /^<!-- recipe: \Q$name\E .*?-->\n\n```apache\n(.*?)^```$/ms;
    return $block // '';
}
my $wp    = recipe('wordpress');
my $basic = recipe('basic');
like($wp, qr{key=form:log}, 'the WordPress recipe is in the README') or diag($wp);
like($basic, qr{AuthUserFile /etc/apache2/private.htpasswd}, 'the Basic recipe is in the README') or diag($basic);

my $t = SL::Httpd::_tdir();
(my $basic_here = $basic) =~ s{/etc/apache2/private\.htpasswd}{$t/conf/keys.htpasswd};
my $h = SL::Httpd->start(extra => <<"EOT" . $wp . $basic_here);
Alias /wordpress "$t/htdocs/form/wp"
Alias /private "$t/htdocs/form/private"
<Directory "$t/htdocs/form/wp">
    Options +ExecCGI
    AddHandler cgi-script .php
</Directory>
EOT

# One kept-alive connection: a right password's reservation is given back
# after its response (log_transaction), which httpd does before it reads
# the next request of the connection, so the wrong ones after it find its
# unit back (SL::After).
my $ua = HTTP::Tiny->new(timeout => 10, max_redirect => 0, keep_alive => 1);
sub login {
    my ($account, $pwd, $ip) = @_;
    return $ua->request('POST', $h->url . '/wordpress/wp-login.php',
        {   headers => { 'X-Forwarded-For' => $ip // fresh_ip(),
                'Content-Type' => 'application/x-www-form-urlencoded' },
            content => "log=$account&pwd=$pwd&wp-submit=Log+In&redirect_to=%2Fwp-admin%2F&testcookie=1"
        });
}

{
    my $admin = 'admin-' . tag();
    is(login($admin, "right-$admin")->{status}, 302, 'WordPress: the right password: 302');
    my @st = map { login($admin, 'wrong' . $_)->{status} } 1 .. 6;
    is("@st", '200 200 200 200 200 429',
        'WordPress: wrong passwords for one account from six addresses: the 6th refused');
    my $res = login(uc($admin), "right-$admin");
    is($res->{status}, 429, '... the account (in any case) is refused, the right password too');
    like($res->{headers}{'retry-after'} // '', qr/^\d+$/, '... with Retry-After');
    is(login('other-' . tag(), 'wrong')->{status}, 200, '... another account is not');
    my @get = map { $ua->request('GET', $h->url . '/wordpress/wp-login.php',
        { headers => { 'X-Forwarded-For' => fresh_ip() } })->{status} } 1 .. 6;
    is("@get", '200 200 200 200 200 200', '... the form\'s GET never counts');
}

{
    my $ip = fresh_ip();
    my @st = map { login("name$_-" . tag(), 'wrong', $ip)->{status} } 1 .. 6;
    is("@st", '200 200 200 200 200 429', 'WordPress: one address, six account names: the 6th refused');
    is(login('other-' . tag(), 'wrong')->{status}, 200, '... another address is not');
    my $bare = fresh_ip();
    @st = map {
        $ua->request('POST', $h->url . '/wordpress/wp-login.php',
            {   headers => { 'X-Forwarded-For' => $bare, 'Content-Type' => 'application/x-www-form-urlencoded' },
                content => "pwd=wrong$_" })->{status}
    } 1 .. 6;
    is("@st", '200 200 200 200 200 429', 'WordPress: POSTs without log count by their address: the 6th refused');
}

sub private {
    my ($user, $pwd) = @_;
    return $ua->request('GET', $h->url . '/private/',
        { headers => { 'X-Forwarded-For' => fresh_ip(), Authorization => basic($user, $pwd) } })->{status};
}
{
    is(private('alice', 'alice-pw'), 200, 'Basic: the right password: 200');
    my @st = map { private('alice', 'wrong') } 1 .. 6;
    is("@st", '401 401 401 401 401 429', 'Basic: wrong passwords for alice from six addresses: the 6th refused');
    is(private('alice', 'alice-pw'), 429, '... alice refused, the right password too');
    is(private('bob', 'wrong'), 401, '... bob is not');
}
$h->stop;
