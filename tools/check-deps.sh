#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make check's first step: whether this machine has what building the
# module, the unit tests and the Apache::Test suite need. Installs nothing:
# names each missing piece with the Debian package (or command) that
# provides it and exits 1; exits 0 when nothing is missing.
#
#   sh tools/check-deps.sh [APXS]
ROOT=$(cd "$(dirname "$0")/.." && pwd)
APXS=${1:-apxs}
missing=""
pkgs=""

need() {
    # need WHAT PACKAGE: WHAT is missing, PACKAGE provides it.
    missing="$missing
  $1 (Debian: $2)"
    case " $pkgs " in *" $2 "*) ;; *) pkgs="$pkgs $2" ;; esac
}

have() { command -v "$1" >/dev/null 2>&1; }

have cc || need "a C compiler (cc)" build-essential
have make || need make build-essential
if have "$APXS"; then
    incdir=$("$APXS" -q INCLUDEDIR 2>/dev/null)
    [ -f "$incdir/httpd.h" ] || need "httpd's headers (httpd.h)" apache2-dev
else
    need "apxs" apache2-dev
fi
have apr-1-config || need "apr-1-config" libapr1-dev
have apu-1-config || need "apu-1-config" libaprutil1-dev
# The headers, asked of the compiler where it looks for them.
header() {
    printf '#include <%s>\n' "$1" | cc -E -x c - >/dev/null 2>&1
}
header hiredis/hiredis.h || need "hiredis' headers (hiredis/hiredis.h)" libhiredis-dev
header openssl/ssl.h || need "OpenSSL's headers (openssl/ssl.h)" libssl-dev
# What t/run starts and drives.
have apache2 || [ -x /usr/sbin/apache2 ] || need "httpd (apache2)" apache2
have redis-server || need "redis-server" redis-server
have redis-cli || need "redis-cli" redis-tools
have perl || need perl perl
perl -MApache::Test -e 1 2>/dev/null || need "Apache::Test (perl)" libapache2-mod-perl2
perl -MLWP::UserAgent -e 1 2>/dev/null || need "LWP::UserAgent (perl)" libwww-perl
have curl || need curl curl
have faketime || need faketime faketime
have openssl || need "openssl" openssl
have node || need "Node.js (t/sf's header parser)" nodejs

if [ -n "$missing" ]; then
    echo "check: missing:$missing" >&2
    echo "check: as root: apt-get install -y$pkgs   (or: make deps)" >&2
fi
# The suite's structured-field parser (make sf: npm ci into t/sf, from the
# lock file). Not fetched here: make check downloads nothing.
if [ ! -f "$ROOT/t/sf/node_modules/.sl/parse.cjs" ]; then
    echo "check: missing: t/sf/node_modules/.sl/parse.cjs (run: make sf)" >&2
    missing="$missing sf"
fi
[ -z "$missing" ]
