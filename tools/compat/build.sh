#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Builds the legacy stacks of the compatibility matrix (tools/compat/run.sh)
# from the tarballs in ../shared/compat/, each once into its own prefix
# under the cache folder, and reuses them on the next run: a prefix counts
# only once its .done stamp is written, so an interrupted build starts again.
#
#   tools/compat/build.sh PIECE...    apr-1.4.8 apr-util httpd-2.4.6
#                                     httpd-2.4.29 httpd-2.4.38
#                                     hiredis-0.12.1 hiredis-0.13.3
#                                     hiredis-1.2.0 redis-3.2.13
#                                     redis-5.0.14 redis-6.2.16 valkey-8.0.1
#
# SL_COMPAT_SRC    the tarballs (default: ../shared/compat from the checkout)
# SL_COMPAT_CACHE  the prefixes (default: /var/tmp/slidinglimit-compat)
#
# Each build runs under nice with make -j2; its log is CACHE/log/PIECE.log
# and its wall time in seconds CACHE/PIECE/.seconds.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shared/ lies beside the clone (CI), or beside the folder of worktrees.
SRC=${SL_COMPAT_SRC:-$ROOT/../shared/compat}
[ -d "$SRC" ] || [ -n "${SL_COMPAT_SRC:-}" ] || SRC=$ROOT/../../shared/compat
CACHE=${SL_COMPAT_CACHE:-/var/tmp/slidinglimit-compat}
MAKE_J=(nice -n 10 make -j2)
mkdir -p "$CACHE/src" "$CACHE/log"
SRC=$(cd "$SRC" && pwd)

# APR-util: httpd 2.4 needs it, and no tarball of it is among the sources.
# RHEL 7 runs 1.5.2 on APR 1.4.8; Debian's source package (1.6.3, which
# still builds on APR 1.4) is the one the package registry reaches, and the
# system's libaprutil cannot be used: it is linked against APR 1.7.
APU_VERSION=1.6.3

# What the suite loads (t/setup/*.conf), shared, and what Debian's httpd
# has built in (unixd, log_config, logio, version), built in. mod_ssl is
# left out: the suite does not use it, and httpd 2.4.6's does not build
# with OpenSSL 3.
HTTPD_MODULES="authz_core authz_host authz_user authn_core authn_file auth_basic \
alias dir mime env setenvif headers status remoteip rewrite include negotiation \
cgid cgi"

unpack() { # NAME: a fresh tree in CACHE/src/NAME from NAME.tar.gz
    rm -rf "$CACHE/src/$1"
    tar -C "$CACHE/src" -xzf "$SRC/$1.tar.gz"
}

build_apr() { # apr-1.4.8
    unpack "$1"
    cd "$CACHE/src/$1"
    # APR 1.4's build/gen-build.py is Python 2; the one APR 1.7 installs
    # (libapr1-dev) reads the same build.conf under Python 3.
    cp /usr/share/apr-1.0/build/gen-build.py build/gen-build.py
    ./buildconf
    nice -n 10 ./configure --prefix="$CACHE/$1"
    "${MAKE_J[@]}"
    make install
}

build_apr_util() {
    local tree=$CACHE/src/apr-util apt=$CACHE/apt
    local opts=(-o "Dir::Etc::SourceList=$apt/sources.list"
        -o Dir::Etc::SourceParts=/nonexistent -o "Dir::State::Lists=$apt/lists")
    rm -rf "$tree"
    # A sources list of its own: the system's apt configuration is left
    # as it is (it has no deb-src line).
    if ! ls "$apt"/dl/apr-util_${APU_VERSION}.orig.tar.bz2 >/dev/null 2>&1; then
        mkdir -p "$apt/lists/partial" "$apt/dl"
        echo 'deb-src http://deb.debian.org/debian bookworm main' >"$apt/sources.list"
        apt-get "${opts[@]}" update
        (cd "$apt/dl" && apt-get "${opts[@]}" source --download-only apr-util)
    fi
    mkdir -p "$tree"
    tar -C "$tree" --strip-components=1 -xf "$apt"/dl/apr-util_${APU_VERSION}.orig.tar.bz2
    cd "$tree"
    nice -n 10 ./configure --prefix="$CACHE/apr-util" \
        --with-apr="$CACHE/apr-1.4.8" --with-expat=/usr --without-ldap \
        --without-sqlite3 --without-pgsql --without-mysql --without-odbc \
        --without-berkeley-db --without-gdbm --without-crypto
    "${MAKE_J[@]}"
    make install
}

# httpd 2.4.6 on APR 1.4.8 and that APR-util (RHEL 7). 2.4.29 and 2.4.38 on
# the system's APR 1.7 and APR-util 1.6: their event MPM needs APR's
# skiplist (APR 1.5), and the distributions that run them ship APR 1.6
# (Ubuntu 18.04) and 1.6.5 (Debian 10).
build_httpd() { # httpd-2.4.x
    local apr=$CACHE/apr-1.4.8/bin/apr-1-config apu=$CACHE/apr-util/bin/apu-1-config
    if [ "$1" != httpd-2.4.6 ]; then
        apr=$(command -v apr-1-config) apu=$(command -v apu-1-config)
    fi
    unpack "$1"
    cd "$CACHE/src/$1"
    # buildconf takes APR's m4 files from a source tree.
    ./buildconf --with-apr="$CACHE/src/apr-1.4.8" \
        --with-apr-util="$CACHE/src/apr-util" >/dev/null
    nice -n 10 ./configure --prefix="$CACHE/$1" \
        --with-apr="$apr" --with-apr-util="$apu" \
        --with-pcre=/usr/bin/pcre-config \
        --enable-so --enable-modules=few --disable-ssl \
        --enable-mods-static="unixd log_config logio version" \
        --enable-mods-shared="$HTTPD_MODULES" \
        --enable-mpms-shared="prefork worker event"
    "${MAKE_J[@]}"
    make install
}

build_hiredis() { # hiredis-x.y.z
    unpack "$1"
    cd "$CACHE/src/$1"
    # LIBRARY_PATH on the command line: hiredis' Makefile would take the
    # environment's (the compiler's search path) as its install folder.
    "${MAKE_J[@]}" PREFIX="$CACHE/$1" LIBRARY_PATH=lib
    make install PREFIX="$CACHE/$1" LIBRARY_PATH=lib
}

build_redis() { # redis-x.y.z, valkey-x.y.z: the binaries only
    local tls=()
    unpack "$1"
    cd "$CACHE/src/$1"
    # TLS came with Redis 6 (t/60 and t/61 need it).
    case $1 in redis-[6-9].* | valkey-*) tls=(BUILD_TLS=yes) ;; esac
    "${MAKE_J[@]}" MALLOC=libc "${tls[@]}"
    make install PREFIX="$CACHE/$1"
}

deps_for() {
    case $1 in
    apr-util) echo apr-1.4.8 ;;
    httpd-*) echo apr-1.4.8 apr-util ;; # buildconf takes their trees
    esac
}

stamp_of() {
    case $1 in
    httpd-*) echo "$HTTPD_MODULES" ;;
    *) ;;
    esac
}

build_one() {
    local piece=$1 start dep
    # An httpd's stamp names its modules: one built before the suite
    # loaded another module is built again.
    [ -f "$CACHE/$piece/.done" ] &&
        [ "$(cat "$CACHE/$piece/.done")" = "$(stamp_of "$piece")" ] && return 0
    for dep in $(deps_for "$piece"); do build_one "$dep"; done
    echo "compat: building $piece (log: $CACHE/log/$piece.log)"
    rm -rf "${CACHE:?}/$piece"
    start=$(date +%s)
    # In the background and waited for: a subshell whose status is tested
    # (|| or if) would run with set -e off and go on past a failed step.
    case $piece in
    apr-1.*) build_apr "$piece" ;;
    apr-util) build_apr_util ;;
    httpd-*) build_httpd "$piece" ;;
    hiredis-*) build_hiredis "$piece" ;;
    redis-* | valkey-*) build_redis "$piece" ;;
    *) echo "compat: unknown piece $piece"; exit 1 ;;
    esac >"$CACHE/log/$piece.log" 2>&1 &
    if ! wait $!; then
        echo "compat: $piece failed to build; last lines of its log:" >&2
        tail -n 30 "$CACHE/log/$piece.log" >&2
        return 1
    fi
    echo $(($(date +%s) - start)) >"$CACHE/$piece/.seconds"
    stamp_of "$piece" >"$CACHE/$piece/.done"
    echo "compat: built $piece in $(cat "$CACHE/$piece/.seconds") s"
}

for piece in "$@"; do build_one "$piece"; done
