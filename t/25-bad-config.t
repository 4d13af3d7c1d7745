# SPDX-License-Identifier: Apache-2.0
# Every bad value is refused at start-up: "httpd -t" on a minimal generated
# configuration fails with a message naming the directive and the bad token.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use SL::Keys;
use File::Temp qw(tempdir);

# Secret files: 15 bytes (with a line end that is not counted), empty, a
# directory, and 16 bytes that pass.
my $dir = tempdir(CLEANUP => 1, TMPDIR => 1);
my ($short, $empty, $good16) = map {"$dir/$_"} qw(short empty good16);
for ([ $short, "0123456789abcde\n" ], [ $empty, '' ], [ $good16, "0123456789abcdef\n" ]) {
    open my $f, '>', $_->[0] or die "$_->[0]: $!";
    print $f $_->[1];
    close $f;
    chmod 0600, $_->[0];
}

my $certs = tls_certs();
# A file this user cannot read (root reads everything: then a missing one).
my $unreadable = "$certs/unreadable.pem";
unlink $unreadable;    # left by the run under the previous MPM
system('cp', "$certs/ca.pem", $unreadable);
chmod 0, $unreadable;
$unreadable = '/nonexistent/unreadable.pem' if $> == 0;

# [ configuration, directive named, token named (undef: none to name) ]
my @bad = (
    # SlidingLimit
    [ 'SlidingLimit 10 1m colour=red',            'SlidingLimit', 'colour=red' ],
    [ 'SlidingLimit 10 1m name=a colour',         'SlidingLimit', 'colour' ],
    [ 'SlidingLimit 0 1m',                        'SlidingLimit', "'0'" ],
    [ 'SlidingLimit -5 1m',                       'SlidingLimit', "'-5'" ],
    [ 'SlidingLimit ten 1m',                      'SlidingLimit', "'ten'" ],
    [ 'SlidingLimit 10.5 1m',                     'SlidingLimit', "'10.5'" ],
    [ 'SlidingLimit 100000001 1m',                'SlidingLimit', "'100000001'" ],
    [ 'SlidingLimit 10',                          'SlidingLimit', "'10'" ],
    [ 'SlidingLimit',                             'SlidingLimit', undef ],
    [ 'SlidingLimit 10 0s',                       'SlidingLimit', "'0s'" ],
    [ 'SlidingLimit 10 -1m',                      'SlidingLimit', "'-1m'" ],
    [ 'SlidingLimit 10 1w',                       'SlidingLimit', "'1w'" ],
    [ 'SlidingLimit 10 1.5m',                     'SlidingLimit', "'1.5m'" ],
    [ 'SlidingLimit 10 m',                        'SlidingLimit', "'m'" ],
    [ 'SlidingLimit 10 400d',                     'SlidingLimit', "'400d'" ],
    [ 'SlidingLimit 10 1m algorithm=fast',        'SlidingLimit', "'fast'" ],
    [ 'SlidingLimit 10 1m algorithm=',            'SlidingLimit', "''" ],
    [ 'SlidingLimit 10 1m burst=5',               'SlidingLimit', 'burst=5' ],
    [ 'SlidingLimit 10 1m algorithm=log burst=5', 'SlidingLimit', 'burst=5' ],
    [ "SlidingLimitAlgorithm gcra\nSlidingLimit 10 1m burst=5",
                                                  'SlidingLimit', 'burst=5' ],
    [ 'SlidingLimit 10 1m algorithm=gcra burst=0', 'SlidingLimit', "'0'" ],
    [ 'SlidingLimit 10 1m algorithm=gcra burst=x', 'SlidingLimit', "'x'" ],
    # GCRA tolerance (burst x WINDOW / REQUESTS) above 366 days
    [ 'SlidingLimit 1 366d algorithm=gcra burst=100000000',
                                                  'SlidingLimit', 'burst=100000000' ],
    [ 'SlidingLimit 1 1d algorithm=gcra burst=367', 'SlidingLimit', 'burst=367' ],
    [ 'SlidingLimit 10 1m name=',                 'SlidingLimit', 'name=' ],
    [ 'SlidingLimit 10 1m name=a{b}',             'SlidingLimit', 'name=a{b}' ],
    [ 'SlidingLimit 10 1m "name=a b"',            'SlidingLimit', 'name=a b' ],
    [ "SlidingLimit 10 1m name=x\nSlidingLimit 20 1h name=x",
                                                  'SlidingLimit', "'x'" ],
    [ "SlidingLimit 10 1m\nSlidingLimit 10 1m",   'SlidingLimit', "'10-per-1m'" ],
    [ "<Location /x>\nSlidingLimit 10 1m\nSlidingLimit off\n</Location>",
                                                  'SlidingLimit', "'off'" ],
    [ "<Location /x>\nSlidingLimit off\nSlidingLimit 10 1m\n</Location>",
                                                  'SlidingLimit', "'10 1m'" ],
    [ "<Location /a>\nSlidingLimit 10 1m name=k\n</Location>\n"
          . "<Location /b>\nSlidingLimit 20 1m name=k\n</Location>",
                                                  'SlidingLimit', "'k'" ],
    [ "<Location /a>\nSlidingLimit 10 1m name=k\n</Location>\n"
          . "<VirtualHost 127.0.0.1:1>\nSlidingLimit 10 1m name=k algorithm=gcra\n</VirtualHost>",
                                                  'SlidingLimit', "'k'" ],
    [ 'SlidingLimit of',                          'SlidingLimit', "'of'" ],
    [ 'SlidingLimit offf',                        'SlidingLimit', "'offf'" ],
    [ 'SlidingLimit off 10',                      'SlidingLimit', "'off'" ],
    [ 'SlidingLimit 10 1m cost=0',                'SlidingLimit', "'0'" ],
    [ 'SlidingLimit 10 1m cost=11',               'SlidingLimit', 'cost=11' ],
    [ 'SlidingLimit 10 1m cost=1k',               'SlidingLimit', "'1k'" ],
    [ 'SlidingLimit 10 1m algorithm=gcra burst=2 cost=3',
                                                  'SlidingLimit', 'cost=3' ],
    [ 'SlidingLimit 10 1m cost=expr:',            'SlidingLimit', 'cost=expr:' ],
    [ 'SlidingLimit 10 1m "cost=expr:%{HTTP:X"',  'SlidingLimit', "'cost=expr:%{HTTP:X'" ],
    [ 'SlidingLimit 10 1m "cost=expr:%{nosuchfunc:x}"',
                                                  'SlidingLimit', "'cost=expr:%{nosuchfunc:x}'" ],
    [ 'SlidingLimit 10 1m cost=3 cost-unit=1024', 'SlidingLimit', 'cost-unit=1024' ],
    [ 'SlidingLimit 10 1m cost=expr:%{HTTP:X} cost-unit=0',
                                                  'SlidingLimit', "'0'" ],
    [ 'SlidingLimit 10 1m cost=expr:%{HTTP:X} cost-unit=1k',
                                                  'SlidingLimit', "'1k'" ],
    [ 'SlidingLimit 10 1m block=0',               'SlidingLimit', "'0'" ],
    [ 'SlidingLimit 10 1m block=forever',         'SlidingLimit', "'forever'" ],
    [ 'SlidingLimit 10 1m block=400d',            'SlidingLimit', "'400d'" ],
    [ 'SlidingLimit 10 1m count=',                'SlidingLimit', 'count=' ],
    [ 'SlidingLimit 10 1m count=200,',            'SlidingLimit', 'count=200,' ],
    [ 'SlidingLimit 10 1m count=4xx',             'SlidingLimit', "'4xx'" ],
    [ 'SlidingLimit 10 1m count=600',             'SlidingLimit', "'600'" ],
    [ 'SlidingLimit 10 1m count=401,401',         'SlidingLimit', '401' ],

    # SlidingLimitKey
    [ 'SlidingLimitKey ip cookie',                'SlidingLimitKey', "'cookie'" ],
    [ 'SlidingLimitKey IP4',                      'SlidingLimitKey', "'IP4'" ],
    [ 'SlidingLimitKey header:',                  'SlidingLimitKey', "'header:'" ],
    [ 'SlidingLimitKey header:X(Y)',              'SlidingLimitKey', "'header:X(Y)'" ],
    [ 'SlidingLimitKey "header:X Y"',             'SlidingLimitKey', "'header:X Y'" ],
    [ 'SlidingLimitKey header:X:Y',               'SlidingLimitKey', "'header:X:Y'" ],
    [ 'SlidingLimitKey header:{X}',               'SlidingLimitKey', "'header:{X}'" ],
    [ 'SlidingLimitKey env:',                     'SlidingLimitKey', "'env:'" ],
    [ 'SlidingLimitKey "env:A B"',                'SlidingLimitKey', "'env:A B'" ],
    [ 'SlidingLimitKey expr:',                    'SlidingLimitKey', "'expr:'" ],
    [ 'SlidingLimitKey "expr:%{HTTP:X"',          'SlidingLimitKey', "'expr:%{HTTP:X'" ],
    [ 'SlidingLimitKey "expr:%{nosuchfunc:x}"',   'SlidingLimitKey', "'expr:%{nosuchfunc:x}'" ],
    [ 'SlidingLimitKey',                          'SlidingLimitKey', undef ],

    # SlidingLimitAlgorithm, FailMode, on/off directives, Headers, Status
    [ 'SlidingLimitAlgorithm fast',               'SlidingLimitAlgorithm', "'fast'" ],
    [ 'SlidingLimitAlgorithm sliding-log',        'SlidingLimitAlgorithm', "'sliding-log'" ],
    [ 'SlidingLimitFailMode opened',              'SlidingLimitFailMode', "'opened'" ],
    [ 'SlidingLimitFailMode close',               'SlidingLimitFailMode', "'close'" ],
    [ 'SlidingLimitLocalFallback yes',            'SlidingLimitLocalFallback', "'yes'" ],
    [ 'SlidingLimitLocalFallback onn',            'SlidingLimitLocalFallback', "'onn'" ],
    [ 'SlidingLimitDryRun 1',                     'SlidingLimitDryRun', "'1'" ],
    [ 'SlidingLimitDryRun of',                    'SlidingLimitDryRun', "'of'" ],
    [ 'SlidingLimitStatusPage on',                'SlidingLimitStatusPage', "'on'" ],
    [ 'SlidingLimitStatusPage metrics,inspect',   'SlidingLimitStatusPage', "'metrics,inspect'" ],
    [ 'SlidingLimitStatusPage',                   'SlidingLimitStatusPage', undef ],
    [ 'SlidingLimitHeaders ietf xratelimit',      'SlidingLimitHeaders', "'xratelimit'" ],
    [ 'SlidingLimitHeaders off ietf',             'SlidingLimitHeaders', "'off'" ],
    [ 'SlidingLimitHeaders draft3',               'SlidingLimitHeaders', "'draft3'" ],
    [ 'SlidingLimitStatus 200',                   'SlidingLimitStatus', "'200'" ],
    [ 'SlidingLimitStatus 399',                   'SlidingLimitStatus', "'399'" ],
    [ 'SlidingLimitStatus 600',                   'SlidingLimitStatus', "'600'" ],
    [ 'SlidingLimitStatus 429x',                  'SlidingLimitStatus', "'429x'" ],
    [ 'SlidingLimitStatus Too-Many',              'SlidingLimitStatus', "'Too-Many'" ],
    # A status httpd has no status line for would be sent as 500.
    [ 'SlidingLimitStatus 460',                   'SlidingLimitStatus', "'460'" ],
    [ 'SlidingLimitFailStatus 599',               'SlidingLimitFailStatus', "'599'" ],
    # 451 has one from httpd 2.4.23 on.
    (have_min_apache_version('2.4.23') ? ()
      : [ 'SlidingLimitStatus 451',               'SlidingLimitStatus', "'451'" ]),
    [ 'SlidingLimitFailStatus 200',               'SlidingLimitFailStatus', "'200'" ],
    [ 'SlidingLimitFailStatus 600',               'SlidingLimitFailStatus', "'600'" ],
    [ 'SlidingLimitFailStatus 503x',              'SlidingLimitFailStatus', "'503x'" ],
    [ 'SlidingLimitFailStatus',                   'SlidingLimitFailStatus', undef ],

    # SlidingLimitIPv6Prefix
    [ 'SlidingLimitIPv6Prefix 0',                 'SlidingLimitIPv6Prefix', "'0'" ],
    [ 'SlidingLimitIPv6Prefix 129',               'SlidingLimitIPv6Prefix', "'129'" ],
    [ 'SlidingLimitIPv6Prefix /64',               'SlidingLimitIPv6Prefix', "'/64'" ],
    [ 'SlidingLimitIPv6Prefix -1',                'SlidingLimitIPv6Prefix', "'-1'" ],

    # SlidingLimitStore
    [ 'SlidingLimitStore http://127.0.0.1:6379',  'SlidingLimitStore', "'http://127.0.0.1:6379'" ],
    [ 'SlidingLimitStore redis://',               'SlidingLimitStore', "'redis://'" ],
    [ 'SlidingLimitStore redis://host:99999',     'SlidingLimitStore', "'99999'" ],
    [ 'SlidingLimitStore redis://host:0',         'SlidingLimitStore', "'0'" ],
    [ 'SlidingLimitStore redis://host:abc',       'SlidingLimitStore', "'abc'" ],
    [ 'SlidingLimitStore redis://host/x',         'SlidingLimitStore', "'x'" ],
    [ 'SlidingLimitStore redis://host/0/1',       'SlidingLimitStore', "'0/1'" ],
    [ 'SlidingLimitStore redis://[::1',           'SlidingLimitStore', "'[::1'" ],
    [ 'SlidingLimitStore unix:redis.sock',        'SlidingLimitStore', "'unix:redis.sock'" ],
    [ 'SlidingLimitStore unix:/run/r.sock?database=1', 'SlidingLimitStore', "'?database=1'" ],
    [ 'SlidingLimitStore unix:/run/r.sock?db=x',  'SlidingLimitStore', "'x'" ],
    [ 'SlidingLimitStore cluster://',             'SlidingLimitStore', "'cluster://'" ],
    [ 'SlidingLimitStore cluster://a:1,b:x',      'SlidingLimitStore', "'x'" ],
    [ 'SlidingLimitStore shared',                 'SlidingLimitStore', "'shared'" ],
    [ 'SlidingLimitStore sentinel://s1:26379',    'SlidingLimitStore', 'MASTERNAME' ],
    [ 'SlidingLimitStore sentinel://s1:26379/',   'SlidingLimitStore', 'MASTERNAME' ],
    [ 'SlidingLimitStore sentinels://s1/m/x',     'SlidingLimitStore', "'x'" ],
    [ 'SlidingLimitStore clusters://a:1/2',       'SlidingLimitStore', "'2'" ],
    [ 'SlidingLimitStore rediss://h:7x',          'SlidingLimitStore', "'7x'" ],

    # SlidingLimitSentinelAuth, SlidingLimitStoreTLS*
    [ 'SlidingLimitSentinelAuth',                 'SlidingLimitSentinelAuth', undef ],
    [ 'SlidingLimitSentinelAuth ""',              'SlidingLimitSentinelAuth', 'PASSWORD' ],
    [ 'SlidingLimitSentinelAuth a b c',           'SlidingLimitSentinelAuth', undef ],
    [ 'SlidingLimitStoreTLSVerify maybe',         'SlidingLimitStoreTLSVerify', "'maybe'" ],
    [ 'SlidingLimitStoreTLSCA /nonexistent/ca.pem', 'SlidingLimitStoreTLSCA', '/nonexistent/ca.pem' ],
    [ "SlidingLimitStoreTLSCA $certs/client.key", 'SlidingLimitStoreTLSCA', "$certs/client.key" ],
    [ "SlidingLimitStoreTLSCA $unreadable",       'SlidingLimitStoreTLSCA', $unreadable ],
    [ 'SlidingLimitStoreTLSCert /nonexistent/c.pem /nonexistent/c.key',
                                                  'SlidingLimitStoreTLSCert', '/nonexistent/c.pem' ],
    [ "SlidingLimitStoreTLSCert $certs/client.pem /nonexistent/c.key",
                                                  'SlidingLimitStoreTLSCert', '/nonexistent/c.key' ],
    [ "SlidingLimitStoreTLSCert $certs/client.pem $certs/server.key",
                                                  'SlidingLimitStoreTLSCert', "$certs/server.key" ],
    [ "SlidingLimitStoreTLSCert $certs/client.pem $unreadable",
                                                  'SlidingLimitStoreTLSCert', $unreadable ],
    [ "SlidingLimitStoreTLSCert $certs/client.pem",
                                                  'SlidingLimitStoreTLSCert', "$certs/client.pem" ],

    # SlidingLimitStoreTimeout
    [ 'SlidingLimitStoreTimeout 0ms',             'SlidingLimitStoreTimeout', "'0ms'" ],
    [ 'SlidingLimitStoreTimeout fast',            'SlidingLimitStoreTimeout', "'fast'" ],
    [ 'SlidingLimitStoreTimeout 100ms 0',         'SlidingLimitStoreTimeout', "'0'" ],
    [ 'SlidingLimitStoreTimeout 100ms -5ms',      'SlidingLimitStoreTimeout', "'-5ms'" ],
    [ 'SlidingLimitStoreTimeout 100ms 5x',        'SlidingLimitStoreTimeout', "'5x'" ],
    [ 'SlidingLimitStoreTimeout 2m',              'SlidingLimitStoreTimeout', "'2m'" ],
    [ 'SlidingLimitStoreTimeout 100ms 61s',       'SlidingLimitStoreTimeout', "'61s'" ],
    [ 'SlidingLimitStoreTimeout 1s 1s 1s',        'SlidingLimitStoreTimeout', undef ],

    # SlidingLimitKeyPrefix
    [ 'SlidingLimitKeyPrefix a{b',                'SlidingLimitKeyPrefix', "'a{b'" ],
    [ 'SlidingLimitKeyPrefix a}b',                'SlidingLimitKeyPrefix', "'a}b'" ],
    [ 'SlidingLimitKeyPrefix "a b"',              'SlidingLimitKeyPrefix', "'a b'" ],
    [ 'SlidingLimitKeyPrefix ""',                 'SlidingLimitKeyPrefix', undef ],
    [ 'SlidingLimitKeyPrefix ' . ('p' x 65),      'SlidingLimitKeyPrefix', "'" . ('p' x 65) . "'" ],

    # SlidingLimitKeySecret
    [ 'SlidingLimitKeySecret /nonexistent/sl.secret', 'SlidingLimitKeySecret', "'/nonexistent/sl.secret'" ],
    [ "SlidingLimitKeySecret $short",             'SlidingLimitKeySecret', "'$short' holds 15 bytes" ],
    [ "SlidingLimitKeySecret $empty",             'SlidingLimitKeySecret', "'$empty' holds 0 bytes" ],
    [ "SlidingLimitKeySecret $dir",               'SlidingLimitKeySecret', "'$dir' is not a regular file" ],
    [ "<Location /x>\nSlidingLimitKeySecret $good16\n</Location>", 'SlidingLimitKeySecret', undef ],

    # SlidingLimitShmSize
    [ 'SlidingLimitShmSize 10K',                  'SlidingLimitShmSize', "'10K'" ],
    [ 'SlidingLimitShmSize lots',                 'SlidingLimitShmSize', "'lots'" ],
    [ 'SlidingLimitShmSize 5G',                   'SlidingLimitShmSize', "'5G'" ],

    # Server-only directives in a directory context
    [ "<Location /x>\nSlidingLimitStore shm\n</Location>",          'SlidingLimitStore', undef ],
    [ "<Location /x>\nSlidingLimitStoreTimeout 1s\n</Location>",    'SlidingLimitStoreTimeout', undef ],
    [ "<Location /x>\nSlidingLimitKeyPrefix x\n</Location>",        'SlidingLimitKeyPrefix', undef ],
    [ "<Directory /tmp>\nSlidingLimitShmSize 8M\n</Directory>",     'SlidingLimitShmSize', undef ],
    [ "<If \"true\">\nSlidingLimitStore shm\n</If>",                'SlidingLimitStore', undef ],
    [ "<Location /x>\nSlidingLimitStoreTLSVerify off\n</Location>", 'SlidingLimitStoreTLSVerify', undef ],
    [ "<Location /x>\nSlidingLimitStoreTLSCA $certs/ca.pem\n</Location>", 'SlidingLimitStoreTLSCA', undef ],
    [ "<Location /x>\nSlidingLimitSentinelAuth pw\n</Location>",     'SlidingLimitSentinelAuth', undef ],
    [ "<VirtualHost 127.0.0.1:1>\nSlidingLimitShmSize 8M\n</VirtualHost>",
                                                  'SlidingLimitShmSize', undef ],
);

# A configuration using every directive with good values must pass, or the
# refusals above would prove nothing.
my $good = <<'CONF';
SlidingLimitStore redis://user:p%40ss@127.0.0.1:6379/2
SlidingLimitSentinelAuth sentinel-user s3ntinel
SlidingLimitStoreTLSCA @CERTS@/ca.pem
SlidingLimitStoreTLSCert @CERTS@/client.pem @CERTS@/client.key
SlidingLimitStoreTLSVerify on
<VirtualHost 127.0.0.1:1>
    SlidingLimitStore sentinels://app:pw@127.0.0.1:26379,127.0.0.1:26380/mymaster/1
    SlidingLimitSentinelAuth s3ntinel
    SlidingLimitStoreTLSCA @CERTS@
    SlidingLimitStoreTLSCert @CERTS@/client.pem
    SlidingLimitStoreTLSVerify off
</VirtualHost>
<VirtualHost 127.0.0.1:1>
    SlidingLimitStore clusters://app:pw@127.0.0.1:7000,127.0.0.1:7001
</VirtualHost>
<VirtualHost 127.0.0.1:1>
    SlidingLimitStore unix:app:pw@/run/redis.sock?db=3
</VirtualHost>
SlidingLimitStoreTimeout 100ms 50ms
SlidingLimitKeyPrefix sl-prod
SlidingLimitShmSize 16M
SlidingLimitKeySecret GOOD16
SlidingLimitAlgorithm counter
<Location /api>
    SlidingLimit 100 1m name=api
    SlidingLimit 1000 1h algorithm=gcra burst=50
    SlidingLimit 5 15m name=login count=401,403 block=10m
    SlidingLimit 10 1s name=upload cost=3
    SlidingLimit 1000 1m name=upload-kib "cost=expr:%{HTTP:Content-Length}" cost-unit=1024
    SlidingLimitKey header:X-Api-Key user "expr:%{HTTP:X-Tenant}-%{REQUEST_METHOD}" env:TENANT ip
    SlidingLimitIPv6Prefix 56
    SlidingLimitFailMode closed
    SlidingLimitLocalFallback off
    SlidingLimitHeaders ietf draft03 x-ratelimit
    SlidingLimitStatus 503
    SlidingLimitFailStatus 504
    SlidingLimitDryRun on
    <If "-R '10.0.0.0/8'">
        SlidingLimit off
    </If>
</Location>
<Location /api/v2>
    SlidingLimit 100 1m name=api
</Location>
<Location /none>
    SlidingLimitHeaders off
    SlidingLimit 1 500ms algorithm=log
    SlidingLimit 2 30 algorithm=counter
</Location>
CONF
$good =~ s/GOOD16/$good16/;

$good =~ s/\@CERTS\@/$certs/g;
# The client certificate in one file with its key.
system("cat '$certs/client.pem' '$certs/client.key' > '$certs/client-both.pem'");
$good =~ s{\Q$certs\E/client.pem\n}{$certs/client-both.pem\n};

# Store URLs with a password: refused or not, no output shows it.
my $pw = 'Hunter2' . tag();
my @secret = (
    [ "SlidingLimitStore redis://app:$pw\@127.0.0.1:99999", "'99999'" ],
    [ "SlidingLimitStore rediss://$pw\@h/x",                 "'x'" ],
    [ "SlidingLimitStore cluster://app:$pw\@a:1,b:x",        "'x'" ],
    [ "SlidingLimitStore sentinel://app:$pw\@s1:26379",      'MASTERNAME' ],
    [ "SlidingLimitStore unix:app:$pw\@relative.sock",       '***@relative.sock' ],
    [ "SlidingLimitStore unix:app:$pw\@/r.sock?database=1",  "'?database=1'" ],
    [ "SlidingLimitStore memcached://app:$pw\@h",            "'memcached://***\@h'" ],
    [ "SlidingLimitStore redis://app:$pw\@[::1",             "'[::1'" ],
);


# One name, one budget: sections that share a name but whose algorithm
# default differs (set before or after the line, or inherited from the
# virtual host) are refused, naming the name and both places.
my @split = (
    "<Location /a>\nSlidingLimitAlgorithm gcra\nSlidingLimit 10 1m name=k\n</Location>\n"
      . "<Location /b>\nSlidingLimit 10 1m name=k\n</Location>",
    "<Location /a>\nSlidingLimit 10 1m name=k\nSlidingLimitAlgorithm counter\n</Location>\n"
      . "<Location /b>\nSlidingLimit 10 1m name=k\n</Location>",
    "<VirtualHost 127.0.0.1:1>\nSlidingLimitAlgorithm gcra\n<Location /a>\n"
      . "SlidingLimit 10 1m name=k\n</Location>\n</VirtualHost>\n"
      . "<Location /b>\nSlidingLimit 10 1m name=k\n</Location>",
    "<Location /a>\nSlidingLimit 10 1m name=k\n</Location>\n"
      . "<Location /b>\nSlidingLimitAlgorithm gcra\n<If \"true\">\n"
      . "SlidingLimit 10 1m name=k\n</If>\n</Location>",
);
# ... while the same default reached in different ways is one budget.
my $same = "SlidingLimitAlgorithm counter\n"
  . "<Location /a>\nSlidingLimit 10 1m name=k\n</Location>\n"
  . "<Location /b>\nSlidingLimitAlgorithm counter\nSlidingLimit 10 1m name=k\n</Location>\n"
  . "<Location /c>\nSlidingLimitAlgorithm log\nSlidingLimit 10 1m name=k algorithm=counter\n</Location>\n"
  . "<VirtualHost 127.0.0.1:1>\n<Location /d>\nSlidingLimit 10 1m name=k\n</Location>\n</VirtualHost>";

plan tests => 2 + @bad + @split + 1 + 2 * @secret + 1;

for my $conf (@split) {
    my ($rc, $out) = httpd_check($conf);
    (my $one = $conf) =~ s/\n/ | /g;
    my @places = $out =~ /httpd\.conf:(\d+)/g;
    ok($rc != 0 && $out =~ /SlidingLimit/ && $out =~ /'k'/ && @places >= 2
          && $places[0] != $places[1] && $out !~ /Syntax OK/,
        "refused, naming both places: $one") or diag("rc=$rc\n$out");
}
{
    my ($rc, $out) = httpd_check($same);
    is($rc, 0, 'one name with the same algorithm default everywhere passes')
      or diag($out);
}

my ($rc, $out) = httpd_check($good);
is($rc, 0, 'every directive with good values passes httpd -t') or diag($out);
like($out, qr/Syntax OK/, '... Syntax OK');

for my $case (@bad) {
    my ($conf, $directive, $token) = @$case;
    my ($rc, $out) = httpd_check($conf);
    (my $one = $conf) =~ s/\n/ | /g;
    my $named_d = $out =~ /\Q$directive\E/;
    my $named_t = !defined $token || $out =~ /\Q$token\E/;
    ok($rc != 0 && $named_d && $named_t && $out !~ /Syntax OK/,
        "refused: $one" . (defined $token ? "  [$token]" : ''))
        or diag("rc=$rc\n$out");
    note($out) if $ENV{SL_TEST_SHOW};
}

for my $case (@secret) {
    my ($conf, $token) = @$case;
    my ($rc, $out) = httpd_check($conf);
    (my $shown = $conf) =~ s/\Q$pw\E/***/g;
    ok($rc != 0 && $out =~ /SlidingLimitStore/ && $out =~ /\Q$token\E/,
        "refused: $shown  [$token]") or diag("rc=$rc\n$out");
    unlike($out, qr/Hunter2/, "... without the password");
}
{
    my $ok = "SlidingLimitStore redis://app:$pw\@127.0.0.1:6379\n"
        . "SlidingLimitSentinelAuth sentinel $pw\nSlidingLimitDryRun maybe";
    my ($rc, $out) = httpd_check($ok);
    unlike($out, qr/Hunter2/, 'a good store URL and Sentinel password are never shown');
}
