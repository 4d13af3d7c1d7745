#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The Debian package inside a throwaway Debian root (make test-package runs
# it through tools/compat/run.sh, which makes the root and enters it through
# an overlay: SL_IN_ROOT=1): builds it (make deb), installs it with
# apt-get, enables it with a2enmod, checks the configuration, starts the
# root's apache2 (/usr/sbin/apache2 with /etc/apache2) on a free port of
# 127.0.0.1 with a limited location, and purges it: nothing of the package
# may be left and /etc/apache2 must be as before. It refuses to run on a
# host's own system: an operator running the tests on a real server must
# not find its web server's packages and configuration changed. Needs
# root; TAP output and "N passed, M failed".
#
# Inside the root the system is still left as it was found, also when a
# step fails: /etc/apache2 and /var/lib/apache2 (a2enmod's records) are
# copied first and put back at the end if they differ; files of a "make
# install" (not the package's) are moved aside for the run and back after
# it. SL_PACKAGE_DEB=FILE uses that .deb instead of building one.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PKG=libapache2-mod-slidinglimit
CONFDIR=/etc/apache2
STATEDIR=/var/lib/apache2
# What a "make install" puts where the package does.
OURS="/usr/lib/apache2/modules/mod_slidinglimit.so
$CONFDIR/mods-available/slidinglimit.load
$CONFDIR/mods-available/slidinglimit.conf
$CONFDIR/mods-enabled/slidinglimit.load
$CONFDIR/mods-enabled/slidinglimit.conf
/usr/bin/slidinglimit-client"

if [ "${SL_IN_ROOT:-}" != 1 ]; then
    echo "1..0 # SKIP installs a package into the system: runs only inside a throwaway Debian root (make test-package)"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "1..0 # SKIP installs a package into the system: needs root"
    exit 0
fi
if dpkg-query -W -f='${Status}' "$PKG" 2>/dev/null | grep -q 'ok installed'; then
    echo "Bail out! $PKG is installed already; this test would purge it (apt-get purge $PKG first)"
    exit 1
fi

n=0
failed=0
ok() { # ok CONDITION-STATUS DESCRIPTION
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then
        echo "ok $n - $2"
    else
        echo "not ok $n - $2"
        failed=$((failed + 1))
    fi
}
note() { sed 's/^/# /'; }

T=$(mktemp -d /tmp/sl-package.XXXXXX)
chmod 755 "$T"
cp -a "$CONFDIR" "$T/etc-before"
cp -a "$STATEDIR" "$T/state-before"
mkdir -p "$T/aside"
httpd_pid=

restore() {
    set +e
    if [ -n "$httpd_pid" ] && kill -0 "$httpd_pid" 2>/dev/null; then
        kill -TERM "$httpd_pid"
        for _ in $(seq 1 50); do kill -0 "$httpd_pid" 2>/dev/null || break; sleep 0.1; done
    fi
    if dpkg-query -W -f='${Status}' "$PKG" 2>/dev/null | grep -q 'ok installed\|config-files\|half'; then
        DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "$PKG" >/dev/null 2>&1 ||
            dpkg --purge --force-all "$PKG" >/dev/null 2>&1
    fi
    for d in "$CONFDIR:$T/etc-before" "$STATEDIR:$T/state-before"; do
        if ! diff -r --no-dereference "${d#*:}" "${d%%:*}" >/dev/null 2>&1; then
            echo "# restoring ${d%%:*}"
            rm -rf "${d%%:*}" && cp -a "${d#*:}" "${d%%:*}"
        fi
    done
    # What "make install" had put outside /etc/apache2.
    for f in $OURS; do
        case $f in "$CONFDIR"/*) continue ;; esac
        [ -e "$T/aside$f" ] && mv "$T/aside$f" "$f"
    done
    rm -rf "$T"
}
trap restore EXIT
trap 'exit 2' INT TERM

# Files of a "make install" would be taken over by the package and then
# removed by the purge: moved aside, and put back by restore().
for f in $OURS; do
    if [ -e "$f" ] || [ -L "$f" ]; then
        echo "# moving aside for the run: $f (not the package's)"
        mkdir -p "$T/aside$(dirname "$f")"
        mv "$f" "$T/aside$f"
    fi
done
# a2enmod's records of such a module: the run starts from a module never
# installed (the purge forgets every record, apache2-maintscript-helper's
# and the admin's).
for f in "$STATEDIR"/module/*/slidinglimit; do
    [ -e "$f" ] || continue
    echo "# moving aside for the run: $f"
    mkdir -p "$T/aside$(dirname "$f")"
    mv "$f" "$T/aside$f"
done
# The state the purge must come back to.
cp -a "$CONFDIR" "$T/etc-start"
cp -a "$STATEDIR" "$T/state-start"

# --- the package
deb=${SL_PACKAGE_DEB:-}
if [ -z "$deb" ]; then
    make -C "$ROOT" deb >"$T/build.log" 2>&1
    rc=$?
    ok $rc "make deb builds the package (lintian: no error)"
    [ $rc -eq 0 ] || tail -30 "$T/build.log" | note
    version=$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -S Version)
    deb=$ROOT/build/${PKG}_${version}_$(dpkg --print-architecture).deb
    grep -E '^[WI]: ' "$T/build.log" | note
fi
[ -f "$deb" ]
ok $? "the package is $deb"
[ -f "$deb" ] || exit 1
deb=$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")

# --- install
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$deb" >"$T/apt.log" 2>&1
rc=$?
ok $rc "apt-get install ./$(basename "$deb")"
[ $rc -eq 0 ] || tail -20 "$T/apt.log" | note
dpkg -L "$PKG" >"$T/files" 2>/dev/null
for f in /usr/lib/apache2/modules/mod_slidinglimit.so \
    "$CONFDIR/mods-available/slidinglimit.load" \
    "$CONFDIR/mods-available/slidinglimit.conf" \
    /usr/bin/slidinglimit-client \
    /usr/share/man/man1/slidinglimit-client.1.gz \
    /usr/share/man/man5/mod_slidinglimit.5.gz \
    "/usr/share/doc/$PKG/README.md.gz" \
    "/usr/share/doc/$PKG/examples/slidinglimit.json" \
    "/usr/share/doc/$PKG/examples/slidinglimit-rules.yml"; do
    grep -qx "$f" "$T/files" && [ -e "$f" ]
    ok $? "installs $f"
done
cmp -s "$CONFDIR/mods-available/slidinglimit.conf" "$ROOT/conf/slidinglimit.conf"
ok $? "the .conf is the reference configuration, every setting commented out"
man -w slidinglimit-client >/dev/null 2>&1 && man -w 5 mod_slidinglimit >/dev/null 2>&1
ok $? "man slidinglimit-client, man 5 mod_slidinglimit"

# Debian's module packages enable themselves (apache2-maintscript-helper);
# the shipped configuration sets no limit, checked below.
[ -L "$CONFDIR/mods-enabled/slidinglimit.load" ]
ok $? "the postinst enabled the module"
a2enmod slidinglimit >"$T/a2enmod.log" 2>&1
ok $? "a2enmod slidinglimit"
note <"$T/a2enmod.log"
apache2ctl configtest >"$T/configtest.log" 2>&1
rc=$?
ok $rc "apache2ctl configtest with the module enabled"
[ $rc -eq 0 ] || note <"$T/configtest.log"
apache2ctl -M 2>/dev/null | grep -q 'slidinglimit_module'
ok $? "apache2ctl -M lists slidinglimit_module"

# --- the system's apache2 on a free port: Debian's apache2.conf with its
# mods-enabled, conf-enabled and sites-enabled, but Listen on 127.0.0.1
# instead of ports.conf, and its run, lock and log files here.
. "$ROOT/tools/free-port.sh"
port=$(free_port)
mkdir -p "$T/htdocs/limited" "$T/htdocs/open" "$T/run" "$T/lock" "$T/log"
chown www-data "$T/lock" 2>/dev/null
echo open >"$T/htdocs/open/index.html"
echo limited >"$T/htdocs/limited/index.html"
sed "s|^\s*Include ports.conf|Listen 127.0.0.1:$port|" "$CONFDIR/apache2.conf" >"$T/apache2.conf"
cat >>"$T/apache2.conf" <<EOF
<VirtualHost 127.0.0.1:$port>
    ServerName package-test.invalid
    DocumentRoot $T/htdocs
    <Directory $T/htdocs>
        Require all granted
    </Directory>
    <Location /limited>
        SlidingLimit 3 60s name=package-test
    </Location>
    <Location /slidinglimit-status>
        SetHandler slidinglimit-status
        SlidingLimitStatusPage inspect
        SlidingLimit off
        Require ip 127.0.0.1
    </Location>
</VirtualHost>
EOF
grep -q "^Listen 127.0.0.1:$port" "$T/apache2.conf"
ok $? "the test's apache2.conf listens on 127.0.0.1:$port only"
(
    set +u
    . "$CONFDIR/envvars"
    export APACHE_RUN_DIR=$T/run APACHE_PID_FILE=$T/run/apache2.pid \
        APACHE_LOCK_DIR=$T/lock APACHE_LOG_DIR=$T/log
    exec /usr/sbin/apache2 -d "$CONFDIR" -f "$T/apache2.conf" -k start
) >"$T/start.log" 2>&1
rc=$?
for _ in $(seq 1 100); do
    [ -s "$T/run/apache2.pid" ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done
httpd_pid=$(cat "$T/run/apache2.pid" 2>/dev/null)
[ $rc -eq 0 ] && [ -n "$httpd_pid" ]
ok $? "/usr/sbin/apache2 -d $CONFDIR started on port $port"
[ -n "$httpd_pid" ] || { note <"$T/start.log"; cat "$T/log/error.log" 2>/dev/null | tail -20 | note; }

get() { # get PATH -> "STATUS" and the headers in $T/headers
    curl -s -o /dev/null -D "$T/headers" -w '%{http_code}' "http://127.0.0.1:$port$1"
}
open_st=$(for _ in 1 2 3 4 5 6; do get /open/; echo -n ' '; done)
[ "$open_st" = "200 200 200 200 200 200 " ] && ! grep -qi '^ratelimit' "$T/headers"
ok $? "no limit where none is configured: $open_st, no quota headers"
lim_st=$(for _ in 1 2 3 4 5; do get /limited/; echo -n ' '; done)
[ "$lim_st" = "200 200 200 429 429 " ]
ok $? "SlidingLimit 3 60s: $lim_st"
grep -qi '^retry-after: [0-9]' "$T/headers" && grep -qi '^ratelimit-policy: "package-test";q=3;w=60' "$T/headers"
ok $? "the 429 has Retry-After and RateLimit-Policy"
metrics=$(curl -s "http://127.0.0.1:$port/slidinglimit-status")
echo "$metrics" | grep -qx 'slidinglimit_decisions_total{result="denied",policy="package-test"} 2'
ok $? "the status page counts the two refusals"
show=$(slidinglimit-client "http://127.0.0.1:$port/slidinglimit-status" show path=/limited/ ip=127.0.0.1 2>&1)
echo "$show" | grep -q '"used":3'
rc=$?
ok $rc "slidinglimit-client show: the budget holds 3"
[ $rc -eq 0 ] || echo "$show" | note

kill -TERM "$httpd_pid" 2>/dev/null
for _ in $(seq 1 100); do kill -0 "$httpd_pid" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$httpd_pid" 2>/dev/null
ok $? "apache2 stopped"
httpd_pid=

# --- purge: nothing of the package is left
DEBIAN_FRONTEND=noninteractive apt-get purge -y -q "$PKG" >"$T/purge.log" 2>&1
rc=$?
ok $rc "apt-get purge $PKG"
[ $rc -eq 0 ] || tail -20 "$T/purge.log" | note
left=
while read -r f; do
    [ "$f" = /. ] && continue
    if [ -d "$f" ] && [ ! -L "$f" ]; then
        # A directory stays only when another package owns it.
        dpkg -S "$f" >/dev/null 2>&1 || left="$left $f"
    elif [ -e "$f" ] || [ -L "$f" ]; then
        left="$left $f"
    fi
done <"$T/files"
[ -z "$left" ] && [ -s "$T/files" ]
ok $? "no file of the package's $(wc -l <"$T/files") paths is left${left:+:$left}"
! ls "$CONFDIR"/mods-enabled/slidinglimit.* >/dev/null 2>&1
ok $? "no slidinglimit link in mods-enabled"
apache2ctl configtest >"$T/configtest.log" 2>&1
rc=$?
ok $rc "apache2ctl configtest after the purge"
[ $rc -eq 0 ] || note <"$T/configtest.log"
diff -r --no-dereference "$T/etc-start" "$CONFDIR" >"$T/diff" 2>&1
rc=$?
ok $rc "$CONFDIR is as before"
note <"$T/diff"
# apache2-maintscript-helper makes its record directories as it needs them
# (module/disabled_by_maint on removal) and leaves them, empty: apache2's,
# not the package's.
diff -r --no-dereference "$T/state-start" "$STATEDIR" >"$T/diff" 2>&1
while IFS= read -r line; do
    case $line in
    "Only in $STATEDIR"*": "*)
        d=${line#Only in }
        d=${d%%: *}/${d#*: }
        if [ -d "$d" ] && [ -z "$(ls -A "$d")" ]; then
            echo "left by apache2-maintscript-helper, empty: $d" >>"$T/diff-notes"
            continue
        fi
        ;;
    esac
    echo "$line"
done <"$T/diff" >"$T/diff-rest"
[ ! -s "$T/diff-rest" ]
ok $? "$STATEDIR (a2enmod's records) is as before"
note <"$T/diff-rest"
[ -f "$T/diff-notes" ] && note <"$T/diff-notes"

echo "1..$n"
echo "$((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
