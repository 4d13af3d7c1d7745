# SPDX-License-Identifier: Apache-2.0
package SL::Wire;

# Helpers of the wire tests (t/4x-*.t): structured fields read with a real
# RFC 8941 parser (t/sf/parse.js, the npm package structured-headers), the
# true wait of a sliding log computed from Redis, the suite's access log and
# the status page.

use strict;
use warnings;

use Exporter qw(import);
use JSON::PP ();
use POSIX ();
use SL::Test;
use SL::Algo qw(store_now);

our @EXPORT = qw(sf_parse sf_list_by_name http_get_timed log_expiry wait_range
  wire_log test_id metrics metric store_calls_slower took decisions
  decided_more);

sub _sf_dir {
    require Apache::Test;
    my $d = Apache::Test::vars('t_dir') . '/sf';
    die "$d/parse.js not found\n" unless -f "$d/parse.js";
    return $d;
}

# sf_parse('list', @field_lines) -> { canonical => ..., members => [...] }
# (see t/sf/parse.js); undef with the parser's message in $@ if it does not
# parse.
sub sf_parse {
    my ($kind, @lines) = @_;
    my $dir = _sf_dir();
    die "t/sf/node_modules/.sl/parse.cjs is missing: run 'make sf'\n"
      unless -f "$dir/node_modules/.sl/parse.cjs";
    my $pid = open(my $fh, '-|') // die "fork: $!";
    if (!$pid) {
        open(STDERR, '>&', \*STDOUT);
        exec('node', "$dir/node_modules/.sl/parse.cjs", $kind, @lines) or POSIX::_exit(127);
    }
    local $/;
    my $out = <$fh>;
    close $fh;
    if ($?) {
        $@ = $out;
        return undef;
    }
    return JSON::PP::decode_json($out);
}

# { NAME => { params }, ... } of a parsed list whose members are strings.
sub sf_list_by_name {
    my ($parsed) = @_;
    return { map { $_->{value} => $_->{params} } @{ $parsed->{members} } };
}

# http_get_timed($path, %headers) -> ($response, $t0, $t1): the request and
# the store's clock (microseconds) just before and just after it, so that
# the decision's store time lies between $t0 and $t1 however slow the
# host.
sub http_get_timed {
    my $t0  = store_now();
    my $res = http_get(@_);
    return ($res, $t0, store_now());
}

# When the oldest entry of a sliding log leaves its window: store
# microseconds. For a log that holds its limit, or one entry, this is when
# the next request fits (what t and Retry-After count down to).
sub log_expiry {
    my ($key, $window) = @_;
    my $oldest = redis('ZRANGE', $key, 0, 0, 'WITHSCORES');
    return undef unless @$oldest;
    return $oldest->[1] + $window * 1e6;
}

# The whole seconds a decision made between store times $t0 and $t1 gives
# for a wait until store time $E: (lo, hi), rounded up as the module does.
sub wait_range {
    my ($E, $t0, $t1) = @_;
    return (POSIX::ceil(($E - $t1) / 1e6), POSIX::ceil(($E - $t0) / 1e6));
}

my $seq = 0;
sub test_id { sprintf('%s-%d-%d-%d', $_[0] // 'wire', $$, time, ++$seq) }

# Lines of the wire access log (t/conf/sl.d/wire.conf) for one test id, as
# hashes: id seq status method uri result policy remaining pid us, in the order
# of the requests when they were tagged "ID.1", "ID.2", ...
# httpd writes a request's log line after the client has its response, so
# the file is read until it holds the $want lines of the requests sent
# (10 s at most), then once more a moment later: a line too many fails too.
sub wire_log {
    my ($id, $want) = @_;
    my $lines = [];
    for (1 .. 100) {
        $lines = _wire_log_once($id);
        last if @$lines >= $want;
        select(undef, undef, undef, 0.1);
    }
    select(undef, undef, undef, 0.1);
    return _wire_log_once($id);
}

sub _wire_log_once {
    my ($id) = @_;
    require Apache::Test;
    my $file = Apache::Test::vars('t_logs') . '/wire_access.log';
    open(my $fh, '<', $file) or return [];
    my @lines;
    while (my $l = <$fh>) {
        chomp $l;
        my ($lid, $status, $method, $uri, @kv) = split / /, $l;
        next unless defined $lid && $lid =~ /^\Q$id\E(?:\.(\d+))?$/;
        my %h = (id => $lid, seq => $1 // 0, status => $status, method => $method,
            uri => $uri);
        for (@kv) { my ($k, $v) = split /=/, $_, 2; $h{$k} = $v }
        push @lines, \%h;
    }
    # Requests sent one after another may be logged out of order (each line
    # is written after its answer): "ID.N" puts them back in order.
    return [ sort { $a->{seq} <=> $b->{seq} } @lines ];
}

# The status page parsed: { 'name{labels}' => value } plus the raw text.
# Every sample line must follow the Prometheus text format.
sub metrics {
    my $res = http_get('/wire-status');
    die "status page: $res->{status}\n" unless $res->{status} == 200;
    my %m;
    for my $l (split /\n/, $res->{content}) {
        next if $l =~ /^# (HELP|TYPE) /;
        $l =~ /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})? (\S+)$/
          or die "not a Prometheus sample line: '$l'\n";
        my ($name, $labels, $v) = ($1, $2 // '', $3);
        my %lab = $labels =~ /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
        my $k = $name . '{' . join(',', map {"$_=$lab{$_}"} sort keys %lab) . '}';
        $m{$k} += $v;
        # The store series also under their name without the store label:
        # the whole server's figure, summed over its stores.
        if (exists $lab{store}) {
            delete $lab{store};
            $m{ $name . '{' . join(',', map {"$_=$lab{$_}"} sort keys %lab) . '}' } += $v;
        }
    }
    return \%m;
}

# metric($m, 'slidinglimit_decisions_total', result => 'denied', policy => 'x')
sub metric {
    my ($m, $name, %lab) = @_;
    my $k = $name . '{' . join(',', map {"$_=$lab{$_}"} sort keys %lab) . '}';
    return $m->{$k} // 0;
}

# took($id, @seq) -> the seconds httpd took for the requests tagged
# "$id.SEQ" (us= of the wire log, which the failure tests' virtual hosts
# inherit), in the order asked, once all requests up to the highest SEQ
# are logged (one missing counts as endless): what a request cost in the
# server, without the share of a loaded host that its client's clock would
# add.
sub took {
    my ($id, @seq) = @_;
    my ($last) = sort { $b <=> $a } @seq;
    my %s = map { $_->{seq} => $_->{us} / 1e6 } @{ wire_log($id, $last) };
    return map { $s{$_} // 9e9 } @seq;
}

# decisions($policy, $result) -> how many requests of the policy the server
# has decided so far with that result (the status page, whose counters
# outlive graceful restarts); undef while it does not answer.
sub decisions {
    my ($policy, $result) = @_;
    my $m = eval { metrics() } or return undef;
    return metric($m, 'slidinglimit_decisions_total', result => $result, policy => $policy);
}

# decided_more($policy, $result, $n) -> 1 once the server has decided $n
# more such requests than when it was called (30 s at most), else 0: a
# phase of a test under load lasts until requests were decided in it.
sub decided_more {
    my ($policy, $result, $n) = @_;
    my $from;
    SL::Test::wait_until(sub { defined($from = decisions($policy, $result)) }, 30) or return 0;
    return SL::Test::wait_until(sub { (decisions($policy, $result) // -1) >= $from + $n }, 30);
}

# Of the store calls between two readings of the status page, how many
# took longer than $le seconds (a bound of its histogram), as the module
# timed them: a queued call's wait and its round trip, not the time a
# loaded host takes to carry the request to the module and the answer back.
sub store_calls_slower {
    my ($m0, $m1, $le) = @_;
    my $H = 'slidinglimit_store_latency_seconds';
    my $d = sub { metric($m1, @_) - metric($m0, @_) };
    return $d->("${H}_count") - $d->("${H}_bucket", le => $le);
}

1;
