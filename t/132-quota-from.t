# SPDX-License-Identifier: Apache-2.0
# Where inspect says a quota comes from when it cannot evaluate it: an API
# key's quota set by a server-level RewriteRule (E=API_QUOTA:600) from the
# key, read by SlidingLimit "expr:%{reqenv:API_QUOTA}". The client's
# requests get 600; a query without the key header gets no quota from the
# expression, so the status handler shows quota-default= with
# "quota_from":"request", the expression and a note naming with:, never
# "quota-default" as if the client had it. With with:X-Api-Key=k600 the
# look-up runs the server's rule and says 600, "expr".
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use HTTP::Tiny;
use JSON::PP qw(decode_json);
use SL::Test;
use SL::Httpd;

plan tests => 8;

my $h = SL::Httpd->start(name => "qf-$$", extra => <<'EOT');
<IfModule !rewrite_module>
    LoadModule rewrite_module /usr/lib/apache2/modules/mod_rewrite.so
</IfModule>
RewriteEngine On
RewriteCond %{HTTP:X-Api-Key} =k600
RewriteRule ^ - [E=API_QUOTA:600]
<Location /qf-status>
    SetHandler slidinglimit-status
    SlidingLimitStatusPage inspect
    SlidingLimit off
    Require ip 127.0.0.1 ::1
</Location>
<Location /ir/login.html>
    SlidingLimit "expr:%{reqenv:API_QUOTA}" 1m name=qf-api quota-default=60
</Location>
<Location /ir/user.html>
    SlidingLimit "expr:%{HTTP:X-Q}" 1m name=qf-hdr quota-default=60
</Location>
EOT

my $ua = HTTP::Tiny->new(timeout => 10);
my $ip = fresh_ip();
my $r = $ua->get($h->url . '/ir/login.html', { headers => { 'X-Forwarded-For' => $ip, 'X-Api-Key' => 'k600' } });
ok t_cmp($r->{headers}{'x-ratelimit-limit'}, 600, 'the key k600 gets 600 from the RewriteRule');

my $res = $ua->get($h->url . "/qf-status?path=/ir/login.html&ip=$ip");
my $l = (eval { decode_json($res->{content}) } // {})->{limits}[0] // {};
ok t_cmp($l->{quota_from} // '', 'request', 'inspect: quota_from says the request decides');
ok t_cmp($l->{quota_expr} // '', '%{reqenv:API_QUOTA}', '... and names the expression');
ok t_cmp($l->{quota_note} // '', qr/client's requests decide.*with:NAME=VALUE/, '... and says why, and how to give the header');
ok t_cmp($l->{quota}, 60, '... the quota shown is quota-default=');

$res = $ua->get($h->url . "/qf-status?path=/ir/login.html&ip=$ip&with:X-Api-Key=k600");
$l = (eval { decode_json($res->{content}) } // {})->{limits}[0] // {};
ok t_cmp("$l->{quota} $l->{quota_from}", '600 expr', 'with:X-Api-Key=k600: the server rule runs on the look-up: 600, expr');
$res = $ua->get($h->url . "/qf-status?path=/ir/user.html&ip=$ip&with:X-Q=7");
$l = (eval { decode_json($res->{content}) } // {})->{limits}[0] // {};
ok t_cmp("$l->{quota} $l->{quota_from}", '7 expr', 'a header given with with: evaluates: expr');
ok t_cmp($l->{quota_expr} // '', '%{HTTP:X-Q}', '... named');
