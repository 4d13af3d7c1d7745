# SPDX-License-Identifier: Apache-2.0
# The Grafana dashboard (contrib/grafana/slidinglimit.json) and the alert
# rules (contrib/prometheus/slidinglimit-rules.yml) ask only for series the
# status page serves: every metric name in every query, and every result=
# a query matches, is on a live page, read after the test caused the
# events whose series appear only then (decisions of a policy, which list
# every result, and a block started under each store). Also: the
# dashboard imports with a Prometheus data-source input; promtool accepts
# the rules and the page; the rules' unit test passes (each alert fires on
# the series meant to raise it, not on its neighbours); and
# slidinglimit_blocks_total counts each block once, when it starts.
use strict;
use warnings;

use Apache::Test qw(-withtestmore);
use Apache::TestUtil;
use JSON::PP;
use MIME::Base64 ();
use SL::Test;
use SL::Keys;

plan tests => 28;

my $top = top_dir();

sub page {
    my $r = http_get({ vhost => 'sl_dash' }, '/dash-status');
    die "status page: $r->{status}\n" unless $r->{status} == 200;
    return $r->{content};
}

# name{labels} value -> { 'name{labels}' => value }, and the sample names.
sub samples {
    my ($text) = @_;
    my (%v, %names);
    for (split /\n/, $text) {
        next if /^#/ || !/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/;
        $v{ $1 . ($2 // '') } = $3;
        $names{$1} = 1;
    }
    return (\%v, \%names);
}

# The metric names a PromQL expression selects: identifiers outside
# strings, label matchers, ranges and grouping lists that are neither
# functions, keywords nor numbers.
my %kw = map { $_ => 1 } qw(by without on ignoring group_left group_right
  bool and or unless offset sum min max avg count stddev stdvar topk
  bottomk quantile count_values group inf nan);
sub metric_names {
    my ($e) = @_;
    $e =~ s/"(?:[^"\\]|\\.)*"//g;
    $e =~ s/\{[^}]*\}//g;
    $e =~ s/\[[^\]]*\]//g;
    $e =~ s/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)//g;
    my @n;
    while ($e =~ /(?<![\w\$.])([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()/g) {
        push @n, $1 unless $kw{ lc $1 };
    }
    return @n;
}

# Every "expr" in the dashboard (panels, nested rows), and the variables'
# label_values() queries.
my $dash = decode_json(slurp("$top/contrib/grafana/slidinglimit.json"));
my (@dexpr, @ds, @vars);
my $walk;
$walk = sub {
    my ($n) = @_;
    if (ref $n eq 'HASH') {
        push @dexpr, $n->{expr} if defined $n->{expr} && !ref $n->{expr};
        push @ds, $n->{datasource} if ref $n->{datasource} eq 'HASH';
        $walk->($_) for values %$n;
    }
    elsif (ref $n eq 'ARRAY') {
        $walk->($_) for @$n;
    }
};
$walk->($dash->{panels});
for my $v (@{ $dash->{templating}{list} }) {
    my $q = ref $v->{query} ? $v->{query}{query} : $v->{query};
    push @vars, $1 if $q =~ /^label_values\((.*),\s*\w+\)$/;
    $walk->($v);
}

# Each rule's expr (a YAML block scalar or a one-line value).
my (@rexpr, $cur, $ind);
for (split /\n/, slurp("$top/contrib/prometheus/slidinglimit-rules.yml")) {
    if (defined $cur) {
        if (/^(\s*)\S/ && length($1) > $ind) { $cur .= " $_"; next }
        push @rexpr, $cur;
        undef $cur;
    }
    if (/^(\s*)(?:- )?expr:\s*(.*)$/) {
        my ($i, $v) = (length $1, $2);
        if ($v =~ /^[>|]-?$/) { ($cur, $ind) = ('', $i) } else { push @rexpr, $v }
    }
}
push @rexpr, $cur if defined $cur;

ok(@dexpr >= 15, scalar(@dexpr) . ' queries in the dashboard');
is(scalar(@rexpr), 6, '6 alert rules with an expr');

# The dashboard imports: one Prometheus input, used by every panel and query.
my @in = @{ $dash->{__inputs} // [] };
ok(@in == 1 && $in[0]{name} eq 'DS_PROMETHEUS' && $in[0]{type} eq 'datasource'
      && $in[0]{pluginId} eq 'prometheus', 'one ${DS_PROMETHEUS} input for a Prometheus data source');
ok(@ds && !grep({ ($_->{uid} // '') ne '${DS_PROMETHEUS}' || $_->{type} ne 'prometheus' } @ds),
    scalar(@ds) . ' data-source references, all ${DS_PROMETHEUS}');
my %ids;
$ids{ $_->{id} }++ for @{ $dash->{panels} };
ok(!grep({ $_ > 1 } values %ids), 'panel ids are unique');

# What the brief of the dashboard asks for is there.
my $all = join "\n", @dexpr;
like($all, qr/histogram_quantile\(0\.5,.*slidinglimit_store_latency_seconds_bucket/,
    'store latency p50 from the histogram');
like($all, qr/histogram_quantile\(0\.99,.*slidinglimit_store_latency_seconds_bucket/, '... and p99');
my %used = map { $_ => 1 } map { metric_names($_) } @dexpr, @vars;
ok(!grep({ !$used{$_} } qw(slidinglimit_decisions_total slidinglimit_store_errors_total
    slidinglimit_breaker_open slidinglimit_local_fallback_total
    slidinglimit_deny_cache_hits_total slidinglimit_blocks_total)),
    'decisions, store errors, breaker, local fallback, deny-cache answers, blocks started');

# The events: a decision of each result the queries match, blocks started
# under the Redis store and the embedded one.
my ($before) = samples(page());
my %got;
for my $vhost (qw(sl_dash sl_dash_shm)) {
    my $ip = fresh_ip();
    $got{$vhost} = join ' ', map {
        http_get({ vhost => $vhost }, '/dash/block.html', 'X-Forwarded-For' => $ip)->{status}
    } 1 .. 3;
}
# A failed login, for the count= outcomes.
my $login = http_get({ vhost => 'sl_dash' }, '/dash/login.html', 'X-Forwarded-For' => fresh_ip(),
    Authorization => 'Basic ' . MIME::Base64::encode_base64('alice:wrong', ''))->{status};
ok t_cmp($got{sl_dash}, '200 429 429', 'redis: admitted, refused (the block starts), refused');
ok t_cmp($got{sl_dash_shm}, '200 429 429', 'shm: the same');
# A count= outcome is recorded when the request is logged, after the client
# has its answer: the page is read again until it shows (or 10 s pass).
my $C = 'slidinglimit_counted_total{policy="dash-login",outcome="counted"}';
my ($text, $after, $names);
wait_until(sub {
    $text = page();
    ($after, $names) = samples($text);
    ($after->{$C} // 0) - ($before->{$C} // 0) >= 1;
}, 10);
my $B = 'slidinglimit_blocks_total';
ok t_cmp(($after->{$C} // 0) - ($before->{$C} // 0), 1, "the failed login ($login) is counted");
my @unlabelled = grep { /^slidinglimit_(?:breaker_open|store_[a-z_]+)(?:\{(?![^}]*store=)[^}]*\})?$/ } keys %$after;
ok(!@unlabelled && grep({ /^slidinglimit_breaker_open\{store="/ } keys %$after),
    'every store series has its store= label') or diag("@unlabelled");
ok t_cmp(($after->{$B} // 0) - ($before->{$B} // 0), 2,
    'two blocks started, counted once each (not again for the refusals inside them)');

my %want;
for my $e (@dexpr, @rexpr, @vars) {
    $want{$_}{$e} = 1 for metric_names($e);
}
my @missing = grep { !$names->{$_} } sort keys %want;
ok(!@missing, scalar(keys %want) . ' metric names used, all on the status page')
    or diag("not on the page: @missing");
my @dmiss = grep { !$names->{$_} } map { metric_names($_) } @dexpr, @vars;
ok(!@dmiss, 'every dashboard query') or diag("@dmiss");
my @rmiss = grep { !$names->{$_} } map { metric_names($_) } @rexpr;
ok(!@rmiss, 'every alert rule') or diag("@rmiss");
# The rules' unit test feeds series of the page's names too.
my @tseries = slurp("$top/contrib/prometheus/slidinglimit-rules.test.yml")
  =~ /^\s*- series: '([a-zA-Z_:][a-zA-Z0-9_:]*)/mg;
my @tmiss = grep { !$names->{$_} } @tseries;
ok(@tseries >= 10 && !@tmiss, scalar(@tseries) . " input series of the rules' unit test, all named as on the page")
    or diag("@tmiss");

# result="..." in a query matches a result the page reports.
my %results = map { /result="([^"]+)"/ ? ($1 => 1) : () } keys %$after;
my %rwant = map { /result="([^"]+)"/g } @dexpr, @rexpr;
my @rbad = grep { !$results{$_} } sort keys %rwant;
ok(!@rbad && keys %rwant >= 3, 'result= values (' . join(' ', sort keys %rwant) . ') are the page\'s')
    or diag("unknown: @rbad");
ok($results{'failed-closed'} && $results{denied}, 'the page lists every result of a policy, at 0 too');

# The extractor finds names (so the checks above are not vacuous) and
# flags one the page does not serve.
is(join(' ', metric_names('sum by (le) (rate(slidinglimit_x_bucket{a="b"}[5m])) / foo_total')),
    'slidinglimit_x_bucket foo_total', 'metric_names reads selectors, not functions or labels');
ok(!$names->{slidinglimit_decision_total}, 'a misspelt name is not on the page');

# promtool: the rules, and the live page's exposition format.
my $promtool = `command -v promtool 2>/dev/null`;
chomp $promtool;
SKIP: {
    skip 'promtool is not installed (Debian: prometheus)', 7 unless $promtool;
    my $out = `'$promtool' check rules '$top/contrib/prometheus/slidinglimit-rules.yml' 2>&1`;
    is($?, 0, 'promtool check rules') or diag($out);
    like($out, qr/SUCCESS: 6 rules found/, '... 6 rules');
    # Each alert fires on the series meant to raise it, not on others.
    $out = `cd '$top/contrib/prometheus' && '$promtool' test rules slidinglimit-rules.test.yml 2>&1`;
    is($?, 0, 'promtool test rules: every alert fires where it should') or diag($out);
    like($out, qr/SUCCESS/, '... SUCCESS');
    # The dashboard's queries parse as PromQL once Grafana's variables are
    # replaced as Grafana does: promtool parses each as a recording rule.
    my $rules = "$top/t/logs/dash-queries.yml";
    open my $rf, '>', $rules or die "$rules: $!";
    print $rf "groups:\n  - name: dashboard\n    rules:\n";
    for my $i (0 .. $#dexpr) {
        (my $q = $dexpr[$i]) =~ s/\$__rate_interval/5m/g;
        $q =~ s/\$(?:instance|policy)\b/.*/g;
        $q =~ s/'/''/g;
        print $rf "      - record: dashboard_query_$i\n        expr: '$q'\n";
    }
    close $rf;
    $out = `'$promtool' check rules '$rules' 2>&1`;
    ok($? == 0 && $out =~ /SUCCESS: ${\ scalar @dexpr} rules found/,
        'every dashboard query parses as PromQL') or diag($out);
    my $tmp = "$top/t/logs/dash-status.txt";
    open my $fh, '>', $tmp or die "$tmp: $!";
    print $fh $text;
    close $fh;
    $out = `'$promtool' check metrics < '$tmp' 2>&1`;
    is($?, 0, 'promtool check metrics on the live page') or diag($out);
    is($out, '', '... with nothing to say');
}
