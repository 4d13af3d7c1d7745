# SPDX-License-Identifier: Apache-2.0
# SlidingLimitStorePassword file:PATH | env:NAME, and SlidingLimitSentinelAuth
# with the same forms: the store's password never appears in the
# configuration, so neither mod_info nor "httpd -t -D DUMP_CONFIG" shows
# it, and the store still authenticates with it (the password Redis of the
# failure tests; a user of its ACL). A missing, empty or unreadable source
# is refused at start-up, naming it.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use SL::Test;
use SL::Keys;
use SL::Httpd;

plan tests => 17;

my $fport = $ENV{SL_TEST_FAULT_REDIS_PORT} or die "SL_TEST_FAULT_REDIS_PORT unset\n";
my $fpw   = $ENV{SL_TEST_FAULT_REDIS_PASSWORD};
my $user  = 'sl-pw-' . tag();
my $upw   = 'upw' . join('', map { int rand 10 } 1 .. 12);
redis({ port => $fport, password => $fpw }, 'ACL', 'SETUSER', $user, 'on', ">$upw", '~*', '+@all');
END { eval { redis({ port => $fport, password => $fpw }, 'ACL', 'DELUSER', $user) } }

my $dir = tempdir(CLEANUP => 1, TMPDIR => 1);
sub put {
    my ($name, $text) = @_;
    open my $f, '>', "$dir/$name" or die "$dir/$name: $!";
    print $f $text;
    close $f;
    chmod 0600, "$dir/$name";
    return "$dir/$name";
}
my $pwfile  = put('pw', "$fpw\n");
my $upwfile = put('upw', "$upw\r\n");
my $wrong   = put('wrong', "not-$fpw\n");
$ENV{SL_TEST_STORE_PW} = $fpw;

my $h = SL::Httpd->start(name => 'store-pw', extra => <<"EOT");
LoadModule info_module /usr/lib/apache2/modules/mod_info.so
<Location /server-info>
    SetHandler server-info
</Location>
Header always set X-SL-Result "%{SLIDINGLIMIT_RESULT}e"
<Location /basic>
    SlidingLimit 100 60s name=store-pw
</Location>
<VirtualHost *>
    ServerName file.pw.test
    SlidingLimitStore redis://127.0.0.1:$fport
    SlidingLimitStorePassword file:$pwfile
</VirtualHost>
<VirtualHost *>
    ServerName env.pw.test
    SlidingLimitStorePassword env:SL_TEST_STORE_PW
    SlidingLimitStore redis://127.0.0.1:$fport
</VirtualHost>
<VirtualHost *>
    ServerName user.pw.test
    SlidingLimitStore redis://$user\@127.0.0.1:$fport
    SlidingLimitStorePassword file:$upwfile
</VirtualHost>
<VirtualHost *>
    ServerName wrong.pw.test
    SlidingLimitStore redis://127.0.0.1:$fport
    SlidingLimitStorePassword file:$wrong
</VirtualHost>
<VirtualHost *>
    ServerName sentinel.pw.test
    SlidingLimitStore sentinel://127.0.0.1:1/mymaster
    SlidingLimitStorePassword env:SL_TEST_STORE_PW
    SlidingLimitSentinelAuth sl-sentinel file:$pwfile
</VirtualHost>
EOT

sub result {
    my ($host) = @_;
    my $ip = fresh_ip();
    my ($port) = $h->url =~ /:(\d+)$/;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Timeout => 10)
      or die "connect: $!";
    print $s "GET /basic/ HTTP/1.0\r\nHost: $host\r\nX-Forwarded-For: $ip\r\n\r\n";
    my $head = '';
    while (my $l = <$s>) { last if $l =~ /^\r?\n\z/; $head .= $l }
    close $s;
    my ($st) = $head =~ m{^HTTP/1\.\d (\d{3})};
    my ($res) = $head =~ /^X-SL-Result: (\S+)/mi;
    return ("$st " . ($res // '-'), $ip);
}

my ($r, $ip) = result('file.pw.test');
is($r, '200 allowed', 'file: the store authenticates with the password from the file');
is(redis({ port => $fport, password => $fpw }, 'EXISTS', sl_key(ip => $ip, policy => 'store-pw')), 1,
    '... and the budget is in that store');
is((result('env.pw.test'))[0], '200 allowed', 'env: with the password from the environment');
is((result('user.pw.test'))[0], '200 allowed', 'redis://USER@host: the ACL user with the file\'s password');
is((result('wrong.pw.test'))[0], '200 failed-open', 'a wrong password in the file: refused by the store');

my $bin = httpd_bin();
my $dump = `'$bin' -t -D DUMP_CONFIG -d '${\ $h->dir}' -f '${\ $h->dir}/httpd.conf' 2>&1`;
like($dump, qr/SlidingLimitStorePassword file:/, 'DUMP_CONFIG shows the directives');
unlike($dump, qr/\Q$fpw\E/, '... never the store\'s password');
unlike($dump, qr/\Q$upw\E/, '... nor the ACL user\'s');
my $info = http_get($h->url . '/server-info?config')->{content} // '';
like($info, qr/SlidingLimitStorePassword/, 'mod_info shows the directives');
unlike($info, qr/\Q$fpw\E|\Q$upw\E/, '... never a password');
unlike($h->error_log, qr/\Q$fpw\E|\Q$upw\E/, 'nor does the error log');

# Refused at start-up, naming the directive and the source.
my $empty = put('empty', "\n");
for my $bad (
    [ "SlidingLimitStorePassword file:$dir/missing", qr/SlidingLimitStorePassword: cannot read '\Q$dir\E\/missing'/ ],
    [ "SlidingLimitStorePassword file:$empty", qr/SlidingLimitStorePassword: 'file:\Q$empty\E': the file is empty/ ],
    [ 'SlidingLimitStorePassword env:SL_TEST_NO_SUCH_VARIABLE', qr/SlidingLimitStorePassword: 'env:SL_TEST_NO_SUCH_VARIABLE': the variable is not set/ ],
    [ 'SlidingLimitStorePassword hunter2', qr/SlidingLimitStorePassword: 'hunter2' is neither file:PATH nor env:NAME/ ],
    [ "SlidingLimitStore redis://u:pw\@127.0.0.1\nSlidingLimitStorePassword file:$pwfile", qr/SlidingLimitStorePassword: the store redis:\/\/\*\*\*\@127\.0\.0\.1:6379\S* already holds a password/ ],
    [ "SlidingLimitStore sentinel://127.0.0.1:1/m\nSlidingLimitSentinelAuth file:$dir/missing", qr/SlidingLimitSentinelAuth: cannot read '\Q$dir\E\/missing'/ ],
  ) {
    my ($rc, $out) = httpd_check($bad->[0]);
    ok($rc != 0 && $out =~ $bad->[1], "refused: $bad->[0]") or diag($out);
}

$h->stop;
