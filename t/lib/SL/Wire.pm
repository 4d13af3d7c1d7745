package SL::Wire;

# Helpers of the wire tests (t/4x-*.t): structured fields read with a real
# RFC 8941 parser (t/sf/parse.js, the npm package structured-headers), the
# true wait of a sliding log computed from Redis, the suite's access log and
# the status page.

use strict;
use warnings;

use Exporter qw(import);
use HTTP::Tiny;
use JSON::PP ();
use POSIX ();
use SL::Test;

our @EXPORT = qw(sf_parse sf_list_by_name true_wait_log wire_log test_id
  metrics metric http_req);

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
    die "t/sf/node_modules is missing: run 'make sf'\n"
      unless -d "$dir/node_modules/structured-headers";
    my $pid = open(my $fh, '-|') // die "fork: $!";
    if (!$pid) {
        open(STDERR, '>&', \*STDOUT);
        exec('node', "$dir/parse.js", $kind, @lines) or POSIX::_exit(127);
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

# Seconds until the oldest entry of a sliding log leaves its window, by
# Redis' clock (the store's time, as the module uses).
sub true_wait_log {
    my ($key, $window) = @_;
    my $oldest = redis('ZRANGE', $key, 0, 0, 'WITHSCORES');
    return undef unless @$oldest;
    my $now = redis('TIME');
    return ($oldest->[1] + $window * 1e6 - ($now->[0] * 1e6 + $now->[1])) / 1e6;
}

my $seq = 0;
sub test_id { sprintf('%s-%d-%d-%d', $_[0] // 'wire', $$, time, ++$seq) }

# Lines of the wire access log (t/conf/sl.d/wire.conf) for one test id, as
# hashes: id status method uri result policy remaining.
# httpd writes a request's log line after the client has its response, so
# the file is read until it holds the id and stops growing (3 s at most).
sub wire_log {
    my ($id) = @_;
    my ($last, $lines) = (-1, []);
    for (1 .. 30) {
        $lines = _wire_log_once($id);
        last if @$lines && @$lines == $last;
        $last = @$lines;
        select(undef, undef, undef, 0.1);
    }
    return $lines;
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
        next unless defined $lid && $lid eq $id;
        my %h = (id => $lid, status => $status, method => $method, uri => $uri);
        for (@kv) { my ($k, $v) = split /=/, $_, 2; $h{$k} = $v }
        push @lines, \%h;
    }
    return \@lines;
}

# http_req(METHOD, PATH, %headers) -> HTTP::Tiny response
sub http_req {
    my ($method, $path, %h) = @_;
    my $ua = HTTP::Tiny->new(timeout => 10, max_redirect => 0);
    return $ua->request($method, SL::Test::server_url() . $path,
        { headers => \%h });
}

# The status page parsed: { 'name{labels}' => value } plus the raw text.
# Every sample line must follow the Prometheus text format.
sub metrics {
    my $res = http_req('GET', '/wire-status');
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
    }
    return \%m;
}

# metric($m, 'slidinglimit_decisions_total', result => 'denied', policy => 'x')
sub metric {
    my ($m, $name, %lab) = @_;
    my $k = $name . '{' . join(',', map {"$_=$lab{$_}"} sort keys %lab) . '}';
    return $m->{$k} // 0;
}

1;
