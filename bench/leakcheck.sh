#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Leak check, deterministic: one child (by default prefork: one thread), so
# that every event below goes through the same process, and its private memory
# (RssAnon) and open fds are read from /proc between rounds. A leak on a
# path grows with the number of times the path runs; a high-water mark
# (allocator free lists, a buffer that grew once) does not.
#
#   bash bench/leakcheck.sh                # ~2 minutes
#   LEAK_MPM=event bash bench/leakcheck.sh
#
# Paths: SCRIPT FLUSH then a request (NOSCRIPT, SCRIPT LOAD pipelined with
# the retry), CLIENT KILL then a request (a stale pooled connection, the
# retry on a new one), and Redis stopped and started again (breaker open,
# local fallback, probe, recovery).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODULE=$ROOT/.libs/mod_slidinglimit.so
ROUNDS=${LEAK_ROUNDS:-3}
# prefork (one thread: the same code path in the same thread every time) or
# event/worker (one child of 16 threads: each thread's allocator and malloc
# arena reaches its own high-water mark, then the figure must level off).
MPM=${LEAK_MPM:-prefork}
[ -f "$MODULE" ] || { echo "build first: make"; exit 2; }
for tool in redis-server redis-cli apache2 curl; do
    command -v "$tool" >/dev/null || { echo "missing $tool"; exit 2; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/slidinglimit-leak.XXXXXX")
chmod 755 "$WORK"
cleanup() {
    [ -f "$WORK/httpd.pid" ] && apache2 -f "$WORK/httpd.conf" -k stop 2>/dev/null
    redis_stop "$WORK"
    sleep 0.5
    rm -rf "$WORK"
}
trap cleanup EXIT

STAGE=$WORK
MODS=/usr/lib/apache2/modules
. "$ROOT/bench/lib.sh"
USERCONF=$(user_conf)
RP=$(free_port) || exit 1
HP=$(free_port) || exit 1

mkdir -p "$WORK/htdocs" "$WORK/logs"
echo ok >"$WORK/htdocs/index.html"
{
    conf_head "$MPM" leak "$HP" "$WORK"
    cat <<CONF
LogLevel warn slidinglimit:notice
LoadModule slidinglimit_module $MODULE
StartServers 1
<IfModule mpm_prefork_module>
    MinSpareServers 1
    MaxSpareServers 1
    MaxRequestWorkers 1
</IfModule>
<IfModule !mpm_prefork_module>
    ServerLimit 1
    ThreadsPerChild 16
    MaxRequestWorkers 16
    MinSpareThreads 1
    MaxSpareThreads 16
</IfModule>
MaxConnectionsPerChild 0
SlidingLimitStore redis://127.0.0.1:$RP
<Location />
    SlidingLimit 1000000 1s algorithm=counter
</Location>
CONF
} >"$WORK/httpd.conf"

redis_start "$RP" "$WORK" || exit 1
apache2 -f "$WORK/httpd.conf" -k start || exit 1
for _ in $(seq 1 50); do [ -s "$WORK/httpd.pid" ] && break; sleep 0.1; done
sleep 0.5
PARENT=$(cat "$WORK/httpd.pid")
CHILD=$(pgrep -P "$PARENT" | head -1)
get() { curl -s -o /dev/null "http://127.0.0.1:$HP/"; }
report() {
    printf '%-40s RssAnon %6s kB  fds %3s  child %s\n' "$1" \
        "$(awk '/^RssAnon:/ {print $2}' "/proc/$CHILD/status")" \
        "$(ls "/proc/$CHILD/fd" | wc -l)" "$(pgrep -P "$PARENT" | head -1)"
}

for _ in $(seq 1 200); do get; done
report "warm (200 requests)"
for r in $(seq 1 "$ROUNDS"); do
    for _ in $(seq 1 500); do redis-cli -p "$RP" script flush >/dev/null; get; done
    report "SCRIPT FLUSH + request x $((r * 500))"
done
for r in $(seq 1 "$ROUNDS"); do
    for _ in $(seq 1 200); do redis-cli -p "$RP" client kill type normal >/dev/null; get; done
    report "CLIENT KILL + request x $((r * 200))"
done
for r in $(seq 1 "$ROUNDS"); do
    for _ in $(seq 1 20); do
        redis_stop "$WORK"
        for _ in 1 2 3 4 5; do get; done
        redis_start "$RP" "$WORK" || exit 1
        sleep 0.1
        for _ in 1 2 3 4 5; do get; done
    done
    report "Redis stopped and started x $((r * 20))"
done
ERRLOG=$WORK/logs/error-leak.log
echo "module lines in the error log: $(grep -c 'mod_slidinglimit' "$ERRLOG")" \
    "(store failed: $(grep -c 'failed (' "$ERRLOG")," \
    "answering again: $(grep -c 'answering again' "$ERRLOG"))"
