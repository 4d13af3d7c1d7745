# SPDX-License-Identifier: Apache-2.0
# One name, one budget, one limit: every use of a name= must agree on what
# the store does with the budget (quota, window, burst, algorithm, block=,
# count=), or whichever section ran last would decide; a disagreement is
# refused at start-up with the other use's file and line. cost= is what a
# request through that section costs, and may differ.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use SL::Keys;

plan tests => 15;

# [ configuration, what the message must say ]
my @bad = (
    [ "<Location /a>\nSlidingLimit 5 15m name=login block=1h\n</Location>\n"
          . "<Location /b>\nSlidingLimit 5 15m name=login\n</Location>",
      qr/name 'login' is already a different limit at \S*httpd\.conf:\d+ \(5 per 15m, block=1h\); this use has no block=/s ],
    [ "<Location /a>\nSlidingLimit 5 15m name=login\n</Location>\n"
          . "<Location /b>\nSlidingLimit 5 15m name=login block=1h\n</Location>",
      qr/name 'login' is already a different limit at \S*httpd\.conf:\d+ \(5 per 15m\); this use has block=1h/s ],
    [ "<Location /a>\nSlidingLimit 5 15m name=login block=1h\n</Location>\n"
          . "<VirtualHost 127.0.0.1:1>\n<Location /b>\nSlidingLimit 5 15m name=login block=10m\n</Location>\n</VirtualHost>",
      qr/name 'login' is already a different limit at \S*httpd\.conf:\d+ \(5 per 15m, block=1h\); this use has block=10m/s ],
    [ "<Location /a>\nSlidingLimit 5 15m name=login count=401\n</Location>\n"
          . "<Location /b>\nSlidingLimit 5 15m name=login\n</Location>",
      qr/name 'login' is already a different limit at \S*httpd\.conf:\d+ \(5 per 15m, count=401\); this use has no count=/s ],
    [ "<Location /a>\nSlidingLimit 5 15m name=login count=401,403\n</Location>\n"
          . "<Location /b>\nSlidingLimit 5 15m name=login count=403,401,500\n</Location>",
      qr/name 'login' is already a different limit at \S*httpd\.conf:\d+ \(5 per 15m, count=401,403\); this use has count=403,401,500/s ],
    [ "<Location /a>\nSlidingLimit 10 1m name=k\n</Location>\n"
          . "<Location /b>\nSlidingLimit 20 1m name=k\n</Location>",
      qr/name 'k' is already a different limit at \S*httpd\.conf:\d+ \(10 per 1m\); this use is 20 per 1m/s ],
);
for my $b (@bad) {
    my ($rc, $out) = httpd_check($b->[0]);
    (my $what = $b->[0]) =~ s/\n/ /g;
    ok($rc != 0, "refused: $what");
    like($out, $b->[1], '... the message names the limit and the other use');
}

# The same limit in other words, and a cost of its own per section: one
# budget, accepted.
for my $good (
    "<Location /a>\nSlidingLimit 5 15m name=login block=1h count=401,403\n</Location>\n"
      . "<Location /b>\nSlidingLimit 5 900s name=login count=403,401 block=60m\n</Location>",
    "<Location /a>\nSlidingLimit 10 1m name=api\n</Location>\n"
      . "<Location /b>\nSlidingLimit 10 1m name=api cost=5\n</Location>",
    "<Location /a>\nSlidingLimit 10 1m name=api\n</Location>\n"
      . "<Location /b>\nSlidingLimit 10 1m name=api cost=expr:%{HTTP:X-N}\n</Location>",
  ) {
    my ($rc, $out) = httpd_check($good);
    (my $what = $good) =~ s/\n/ /g;
    ok($rc == 0, "accepted: $what") or diag($out);
}
