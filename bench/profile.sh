#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Instructions per request in httpd with the module, counted by callgrind on
# one httpd process (-X), against a private redis-server, all on 127.0.0.1.
#
#   bash bench/profile.sh [STORE] [ALGORITHM] [REQUESTS]
#     STORE      redis (default), shm or none (httpd without the module)
#     ALGORITHM  log, counter (default) or gcra
#     REQUESTS   requests sent after a warm-up (default 2000)
#   SL_PROFILE_LIMIT the limit's requests per minute (default 1000000;
#                    100 with SL_PROFILE_POOL=flood measures refusals)
#   SL_PROFILE_HEADERS the section's SlidingLimitHeaders (default the
#                    module's, ietf x-ratelimit; off: the decision without
#                    the quota headers)
#   SL_PROFILE_POOL  client identities the requests come from (default
#                    4096: most requests are an identity's first); with
#                    SL_PROFILE_SEEN=1 each has sent one request before
#                    the counted ones (counters zeroed between): the
#                    steady state of clients that come back
#
# Run it without timeout(1): httpd -X under timeout's process group ends the
# whole run. Prints the callgrind summary by function (inclusive) and the total per
# request; the raw output stays in the printed directory.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
STORE=${1:-redis}
ALG=${2:-counter}
N=${3:-2000}
MODS=/usr/lib/apache2/modules
HTTPD=$(command -v apache2 || echo /usr/sbin/apache2)
command -v valgrind >/dev/null || { echo "profile: valgrind is missing (make deps-bench)"; exit 1; }
command -v wrk >/dev/null || { echo "profile: wrk is missing (make deps-bench)"; exit 1; }

STAGE=$(mktemp -d "${TMPDIR:-/tmp}/slidinglimit-profile.XXXXXX")
chmod 755 "$STAGE"
mkdir -p "$STAGE/htdocs/r" "$STAGE/logs" "$STAGE/run" "$STAGE/redis" "$STAGE/cg"
cp "$ROOT/.libs/mod_slidinglimit.so" "$STAGE/"
cp "$ROOT/bench/clients.lua" "$STAGE/"
head -c 256 /dev/zero | tr '\0' 'x' >"$STAGE/htdocs/r/index.html"
chmod -R a+rX "$STAGE"
# As root, the single process runs as "nobody" from the start: callgrind
# writes its output after httpd has given up root.
AS=""
if [ "$(id -u)" -eq 0 ]; then
    AS="runuser -u nobody --"
    chown -R nobody:nogroup "$STAGE/logs" "$STAGE/run" "$STAGE/cg"
fi

. "$(dirname "${BASH_SOURCE[0]}")/../tools/free-port.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

HTTPD_PID=
REDIS_PID=
cleanup() {
    [ -n "$HTTPD_PID" ] && kill "$HTTPD_PID" 2>/dev/null && wait "$HTTPD_PID" 2>/dev/null
    [ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null && wait "$REDIS_PID" 2>/dev/null
}
trap cleanup EXIT

REDIS_PORT=$(free_port)
HTTP_PORT=$(free_port)
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$STAGE/redis" --logfile "$STAGE/redis/redis.log" &
REDIS_PID=$!
for _ in $(seq 1 50); do
    redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break
    sleep 0.1
done

case $STORE in
redis) SLSTORE="redis://127.0.0.1:$REDIS_PORT" ;;
shm) SLSTORE=shm ;;
none) SLSTORE= ;;
*) echo "profile: store is redis, shm or none"; exit 1 ;;
esac
MODCONF=""
if [ -n "$SLSTORE" ]; then
    MODCONF="LoadModule slidinglimit_module $STAGE/mod_slidinglimit.so
SlidingLimitStore $SLSTORE
SlidingLimitStoreTimeout 1s 1s
<Location /r>
    SlidingLimit ${SL_PROFILE_LIMIT:-1000000} 1m name=bench algorithm=$ALG
    SlidingLimitHeaders ${SL_PROFILE_HEADERS:-ietf x-ratelimit}
</Location>"
fi
# The benchmarks' base configuration; httpd -X already runs as nobody.
USERCONF=""
{ conf_head event profile "$HTTP_PORT" "$STAGE/run"; conf_size event; printf '%s\n' "$MODCONF"; } \
    >"$STAGE/httpd.conf"

# Only the module's hooks (lib.sh's SL_HOOKS, and what they call) are
# counted: the module's whole request path, nothing of httpd's own work.
TOGGLES=()
for h in $SL_HOOKS; do TOGGLES+=("--toggle-collect=$h"); done
[ -z "$SLSTORE" ] && TOGGLES=(--toggle-collect=ap_process_async_request)
setsid $AS valgrind --tool=callgrind --callgrind-out-file="$STAGE/cg/callgrind.out" \
    --collect-atstart=no "${TOGGLES[@]}" \
    "$HTTPD" -X -f "$STAGE/httpd.conf" >"$STAGE/valgrind.log" 2>&1 &
HTTPD_PID=$!
URL=http://127.0.0.1:$HTTP_PORT/r/index.html
for _ in $(seq 1 300); do
    curl -s -o /dev/null "$URL" && break
    sleep 0.1
done
POOL=${SL_PROFILE_POOL:-4096}
if [ "${SL_PROFILE_SEEN:-0}" = 1 ]; then
    wrk_count "$URL" "$POOL" 1 1 "$POOL" "$STAGE/clients.lua" "$STAGE/warm.out" >/dev/null
    # valgrind itself (Debian's is valgrind.bin), not the runuser above it;
    # callgrind_control without a pid would act on every callgrind run.
    vg=$(pgrep -f "^[^ ]*valgrind[.a-z]* .*callgrind-out-file=$STAGE/cg/" | head -1)
    [ -n "$vg" ] || { echo "profile: valgrind's pid not found"; exit 1; }
    $AS callgrind_control -z "$vg" >/dev/null
fi
sent=$(wrk_count "$URL" "$POOL" 1 1 "$N" "$STAGE/clients.lua" "$STAGE/wrk.out")
kill "$HTTPD_PID" 2>/dev/null
wait "$HTTPD_PID" 2>/dev/null
HTTPD_PID=
sent=$((${sent:-0} + 1))
out=$STAGE/cg/callgrind.out
total=$(callgrind_annotate "$out" 2>/dev/null | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,)
echo "profile: store=$STORE algorithm=$ALG requests=$sent in ${TOGGLES[*]#--toggle-collect=}:" \
    "$((${total:-0} / sent)) instructions per request"
callgrind_annotate --inclusive=yes "$out" 2>/dev/null | sed -n '/^ *Ir/,$p' | head -40
echo "profile: output in $STAGE"
