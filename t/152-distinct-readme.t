# SPDX-License-Identifier: Apache-2.0
# The reference's distinct= example, pasted as written (its password file made
# the suite's): from one address five account names are tried and get
# their 401, the sixth name is refused before authentication, a name
# already tried still reaches it, and a real user from another address
# logs in.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use SL::Test;
use SL::Httpd;
use SL::Keys;

plan tests => 6;

require SL::Docs;
my @blocks = map { $_->{text} }
  # key='s example (t/160) has a distinct= line too.
  grep { $_->{text} =~ /distinct=/ && $_->{text} !~ /key=/ && $_->{file} eq 'docs/REFERENCE.md' }
  SL::Docs::blocks(top_dir());
ok t_cmp(scalar(@blocks), 1, 'one example block of distinct= (without key=) in the reference');
my $t = SL::Httpd::_tdir();
(my $conf = $blocks[0] // '') =~ s{/etc/apache2/members\.htpasswd}{$t/conf/keys.htpasswd};
note $conf;

my $h = SL::Httpd->start(extra => qq{Alias /members "$t/htdocs/fault.html"\n} . $conf);
my $get = sub {
    my ($ip, $user, $pw) = @_;
    return http_get($h->url . '/members', 'X-Forwarded-For' => $ip,
        Authorization => basic($user, $pw))->{status};
};
my $ip = fresh_ip();
ok t_cmp(join(' ', map { $get->($ip, "name$_", 'guess') } 1 .. 5), '401 401 401 401 401',
    'five names from one address reach authentication');
ok t_cmp($get->($ip, 'name6', 'guess'), 429, 'the sixth name is refused');
ok t_cmp($get->($ip, 'name3', 'guess2'), 401, 'a name already tried still reaches authentication');
ok t_cmp($get->($ip, 'alice', 'alice-pw'), 429, 'from that address even a real name is a sixth');
ok t_cmp($get->(fresh_ip(), 'alice', 'alice-pw'), 200, 'alice logs in from her own address');
$h->stop;
