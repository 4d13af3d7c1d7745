# SPDX-License-Identifier: Apache-2.0
package SL::Keys;

# Helpers of the key and configuration tests (t/20-*.t .. t/29-*.t): Basic
# credentials, raw requests (for bytes HTTP::Tiny refuses to send), the
# policy id of a section's unnamed limit (for SL::Test::sl_key), and
# "apache2 -t" on a generated config.

use strict;
use warnings;

use Digest::SHA qw(sha1 hmac_sha1);
use Exporter qw(import);
use File::Temp qw(tempdir);
use IO::Socket::INET;
use MIME::Base64 qw(encode_base64);
use SL::Test;

our @EXPORT = qw(basic tag raw_request policy_unnamed keyed_identity keyed_policy
  httpd_bin httpd_check top_dir slurp shape_ok tls_certs);

my $tags = 0;

# A string no other run of the suite has used.
sub tag { $tags++; return sprintf('%d-%d-%d', $$, time, $tags) }

sub basic { return 'Basic ' . encode_base64("$_[0]:$_[1]", '') }

# raw_request($bytes [, $base_url]): sends $bytes as they are to the main
# server (or the server at $base_url); returns the status code (0 when the
# server closed without an answer).
sub raw_request {
    my ($bytes, $base) = @_;
    my ($host, $port) = ($base // server_url()) =~ m{^http://([^:/]+):(\d+)};
    my $s = IO::Socket::INET->new(PeerAddr => $host, PeerPort => $port,
        Timeout => 10) or die "connect: $!";
    binmode $s;
    print $s $bytes;
    my $line = <$s> // '';
    close $s;
    return $line =~ m{^HTTP/1\.\d (\d{3})} ? $1 : 0;
}

# The policy id of an unnamed "SlidingLimit REQUESTS WINDOW" line: its
# enclosing sections (outermost first, as written) and its own values.
sub policy_unnamed {
    my ($section, $requests, $window_us, $burst) = @_;
    my $basis = "s\n$section\n$requests\n$window_us\n" . ($burst // 0);
    return encode_base64(substr(sha1($basis), 0, 12), '');
}

# The identity under SlidingLimitKeySecret $file: HMAC-SHA1 of the source
# tag, a NUL and the value, keyed with the file's content less the CR and LF
# at its end; the first 12 bytes in base64, as sl_identity (SL::Test) unkeyed.
sub keyed_identity {
    my ($file, $source, $value) = @_;
    open my $in, '<:raw', $file or die "$file: $!";
    my $secret = do { local $/; <$in> };
    close $in;
    $secret =~ s/[\r\n]+\z//;
    return encode_base64(substr(hmac_sha1("$source\0$value", $secret), 0, 12), '');
}

# The policy's part of a store key under SlidingLimitKeySecret $file: the
# policy id ($id: SL::Test::sl_policy_named, policy_unnamed) keyed as an
# identity of source "policy".
sub keyed_policy {
    my ($file, $id) = @_;
    return keyed_identity($file, 'policy', $id);
}

# The fixed shape of every store key: prefix, a 16-character hash tag, a
# 16-character policy id and the algorithm; then a block's .b, or an
# allotment's .a (its epoch) with a grant's 12-byte id (its record).
sub shape_ok { return $_[0] =~ m{\Asltest:\{[A-Za-z0-9+/]{16}\}[A-Za-z0-9+/]{16}\.(?:[lcg](?:\.b|\.a(?:.{12})?)?|d)\z}s }

sub top_dir {
    require Apache::Test;
    my $t = Apache::Test::vars('serverroot');
    return "$t/..";
}

# A file's whole content.
sub slurp {
    my ($f) = @_;
    open my $fh, '<', $f or die "$f: $!";
    local $/;
    return scalar <$fh>;
}

sub httpd_bin {
    require Apache::Test;
    return Apache::Test::vars('httpd');
}

# Runs "httpd -t" on a minimal config: the suite's LoadModule lines, our
# module, and $body. Returns (exit code, output).
sub httpd_check {
    my ($body) = @_;
    my $top = top_dir();
    my $dir = tempdir(CLEANUP => 1, TMPDIR => 1);
    my $mpm = $ENV{SL_TEST_MPM} || 'event';
    open my $in, '<', "$top/t/setup/httpd-$mpm.conf" or die "setup: $!";
    my @load = grep {/^\s*LoadModule\s/} <$in>;
    close $in;
    open my $out, '>', "$dir/httpd.conf" or die "conf: $!";
    print $out "ServerRoot $dir\nServerName localhost\n",
      "DefaultRuntimeDir $dir\nPidFile $dir/httpd.pid\n",
      "ErrorLog $dir/error_log\nListen 127.0.0.1:1\n", @load,
      "LoadModule slidinglimit_module $top/.libs/mod_slidinglimit.so\n",
      $body, "\n";
    close $out;
    my $bin = httpd_bin();
    my $output = `'$bin' -t -d '$dir' -f '$dir/httpd.conf' 2>&1`;
    return ($? >> 8, $output);
}

# The suite's test CA and certificates (t/servers-tls.sh): made once by
# t/run, or here when a test runs on its own.
sub tls_certs {
    return $ENV{SL_TEST_TLS_CERTS} if $ENV{SL_TEST_TLS_CERTS};
    my $top = top_dir();
    my $dir = tempdir(CLEANUP => 1, TMPDIR => 1);
    system('bash', '-c', '. "$1/t/servers-tls.sh" && sl_tls_certs "$2"',
        'certs', $top, $dir) == 0 or die "cannot make the test certificates";
    return $ENV{SL_TEST_TLS_CERTS} = $dir;
}

1;
