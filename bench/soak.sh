#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Soak: a bounded run of many requests (wrk on 127.0.0.1) against httpd with
# mod_slidinglimit and a private redis-server that is restarted (twice) and
# flushed of its scripts in the middle. Every few seconds it samples, from
# /proc, each httpd child's resident memory and open file descriptors, and
# Redis' connected clients, then says whether memory stayed flat and no
# descriptor leaked.
#
#   bash bench/soak.sh                 # 90 s, event MPM
#   SOAK_SECONDS=60 SOAK_MPM=prefork bash bench/soak.sh
#
# Environment: SOAK_SECONDS (60..600, default 90), SOAK_MPM (event, worker,
# prefork), SOAK_CONNECTIONS (wrk connections, default 32), SOAK_RESTARTS
# (Redis restarts, each followed by a SCRIPT FLUSH, default 2), SOAK_OUT
# (the report file, default bench/results/soak-<mpm>.txt).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SECONDS_TOTAL=${SOAK_SECONDS:-90}
MPM=${SOAK_MPM:-event}
CONNS=${SOAK_CONNECTIONS:-32}
RESTARTS=${SOAK_RESTARTS:-2}
OUT=${SOAK_OUT:-$ROOT/bench/results/soak-$MPM.txt}
SAMPLE=5
MODULE=$ROOT/.libs/mod_slidinglimit.so

[ "$SECONDS_TOTAL" -ge 60 ] && [ "$SECONDS_TOTAL" -le 600 ] ||
    { echo "SOAK_SECONDS must be 60..600"; exit 2; }
for tool in wrk redis-server redis-cli apache2; do
    command -v "$tool" >/dev/null || { echo "missing $tool (make deps-bench)"; exit 2; }
done
[ -f "$MODULE" ] || { echo "build first: make"; exit 2; }
mkdir -p "$(dirname "$OUT")"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/slidinglimit-soak.XXXXXX")
chmod 755 "$WORK"
REDIS_PID=
HTTPD_PID=
WRK_PID=
cleanup() {
    [ -n "$WRK_PID" ] && kill "$WRK_PID" 2>/dev/null
    if [ -n "$HTTPD_PID" ]; then
        kill -TERM "$HTTPD_PID" 2>/dev/null
        for _ in $(seq 1 50); do kill -0 "$HTTPD_PID" 2>/dev/null || break; sleep 0.1; done
    fi
    redis_stop "$WORK"
    rm -rf "$WORK"
}
trap cleanup EXIT

STAGE=$WORK
MODS=/usr/lib/apache2/modules
. "$ROOT/bench/lib.sh"
USERCONF=$(user_conf)

REDIS_PORT=$(free_port) || exit 1
HTTP_PORT=$(free_port) || exit 1
ERRLOG=$WORK/logs/error-soak.log

mkdir -p "$WORK/htdocs" "$WORK/logs"
echo ok >"$WORK/htdocs/index.html"
{
    conf_head "$MPM" soak "$HTTP_PORT" "$WORK"
    cat <<CONF
LogLevel warn slidinglimit:notice
LoadModule slidinglimit_module $MODULE
# A fixed set of children for the whole run (no spawning or reaping), so
# that each child's figures can be followed from start to end.
<IfModule mpm_prefork_module>
    StartServers 40
    MinSpareServers 40
    MaxSpareServers 64
    ServerLimit 64
    MaxRequestWorkers 64
</IfModule>
<IfModule !mpm_prefork_module>
    StartServers 2
    ServerLimit 2
    ThreadsPerChild 32
    MaxRequestWorkers 64
    MinSpareThreads 32
    MaxSpareThreads 64
</IfModule>
MaxConnectionsPerChild 0
SlidingLimitStore redis://127.0.0.1:$REDIS_PORT
SlidingLimitStoreTimeout 100ms 50ms
<Location />
    # Room for most requests, refusals for the busiest addresses; the
    # counter keeps Redis' memory flat too.
    SlidingLimit 50 1s algorithm=counter
    SlidingLimitFailMode open
</Location>
CONF
} >"$WORK/httpd.conf"

# 5000 client addresses, so that requests reach Redis (not only the deny
# cache) and some are refused.
cat >"$WORK/soak.lua" <<'LUA'
math.randomseed(os.time())
request = function()
    local ip = string.format("10.9.%d.%d", math.random(0, 19), math.random(1, 250))
    return wrk.format("GET", "/index.html", { ["X-Forwarded-For"] = ip })
end
done = function(summary, latency, requests)
    io.write(string.format("wrk: %d requests, %d socket errors (connect %d, read %d, write %d, timeout %d), non-2xx/3xx %d\n",
        summary.requests, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
        summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.timeout, summary.errors.status))
    io.write(string.format("wrk: latency p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
        latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end
LUA

redis_start "$REDIS_PORT" "$WORK" || exit 1
apache2 -f "$WORK/httpd.conf" -k start || { cat "$ERRLOG"; exit 1; }
for _ in $(seq 1 50); do [ -s "$WORK/httpd.pid" ] && break; sleep 0.1; done
HTTPD_PID=$(cat "$WORK/httpd.pid")

children() {
    local p
    for p in /proc/[0-9]*; do
        [ "$(awk '{print $4}' "$p/stat" 2>/dev/null)" = "$HTTPD_PID" ] && echo "${p#/proc/}"
    done
}

# One line per sample: elapsed, event, children, then over all children:
# RssAnon (private memory: heap, stacks; what a leak grows), VmRSS (also
# counts the pages of the shared segments a child has touched, which grows
# once when the local fallback first writes to the shm store), open fds
# total and max per child, and Redis' connected clients.
sample() {
    local t=$1 ev=$2 n=0 anon=0 rss=0 fds=0 fmax=0 pid a r f clients
    for pid in $(children); do
        a=$(awk '/^RssAnon:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
        r=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
        f=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
        [ -n "$a" ] && [ -n "$r" ] || continue
        n=$((n + 1)); anon=$((anon + a)); rss=$((rss + r)); fds=$((fds + f))
        echo "$t $pid $a $f" >>"$WORK/per-child"
        [ "$f" -gt "$fmax" ] && fmax=$f
    done
    clients=$(redis-cli -p "$REDIS_PORT" info clients 2>/dev/null |
        sed -n 's/^connected_clients:\([0-9]*\).*/\1/p')
    printf '%6s  %-14s %4d %10d %9d %8d %7d %8s\n' "$t" "$ev" "$n" "$anon" "$rss" \
        "$fds" "$fmax" "${clients:--}"
}

{
    echo "# mod_slidinglimit soak: $MPM MPM, ${SECONDS_TOTAL}s, wrk -c $CONNS -t 2, $RESTARTS redis restarts, each followed by a SCRIPT FLUSH"
    echo "# $(date -u '+%Y-%m-%dT%H:%M:%SZ') $(apache2 -v | head -1)"
    printf '%6s  %-14s %4s %10s %9s %8s %7s %8s\n' "t(s)" event children anon_kB rss_kB fds fds_max redis_cl
} | tee "$OUT"

# Warm-up, so that every child has its pooled connections, then an idle
# sample to compare the end with.
wrk -t 2 -c "$CONNS" -d 3s -s "$WORK/soak.lua" "http://127.0.0.1:$HTTP_PORT/" >/dev/null 2>&1
sleep 1
sample -1 idle-warm | tee -a "$OUT"
wrk -t 2 -c "$CONNS" -d "${SECONDS_TOTAL}s" -s "$WORK/soak.lua" \
    "http://127.0.0.1:$HTTP_PORT/" >"$WORK/wrk.out" 2>&1 &
WRK_PID=$!

start=$(date +%s)
# 2 x RESTARTS events evenly spaced: a restart, then a SCRIPT FLUSH, ...
nev=$((2 * RESTARTS))
step=$((SECONDS_TOTAL / (nev + 1)))
k=1
next_sample=0
while kill -0 "$WRK_PID" 2>/dev/null; do
    now=$(( $(date +%s) - start ))
    ev=load
    if [ "$k" -le "$nev" ] && [ "$now" -ge $((k * step)) ]; then
        if [ $((k % 2)) -eq 1 ]; then
            redis_stop "$WORK"; sleep 2; redis_start "$REDIS_PORT" "$WORK" || exit 1
            ev=redis-restart
        else
            redis-cli -p "$REDIS_PORT" script flush >/dev/null; ev=script-flush
        fi
        k=$((k + 1))
    fi
    if [ "$now" -ge "$next_sample" ] || [ "$ev" != load ]; then
        sample "$now" "$ev" | tee -a "$OUT"
        next_sample=$((now + SAMPLE))
    fi
    sleep 0.5
done
wait "$WRK_PID" 2>/dev/null
WRK_PID=
sleep 1
sample "$(( $(date +%s) - start ))" idle | tee -a "$OUT"

{
    # Flat: each child's private memory and fds at the end of the load
    # against its own figures after warm-up (the sample before the first
    # restart), for the children alive at both.
    # A leak grows with every event; a high-water mark (allocators that
    # keep their peak, a few more pooled connections) stops growing. So
    # compare the first half of the events with the second.
    base=$(awk -v t="$step" '$1 < t { b = $1 } END { print b }' "$WORK/per-child")
    mid=$(awk -v t=$(( (RESTARTS + 1) * step - step / 2 )) '$1 < t { b = $1 } END { print b }' "$WORK/per-child")
    last=$(awk '{ print $1 }' "$WORK/per-child" | sort -n | uniq | tail -2 | head -1)
    awk -v base="$base" -v mid="$mid" -v last="$last" '
        $1 == base { a0[$2] = $3; f0[$2] = $4 }
        $1 == mid { am[$2] = $3; fm[$2] = $4 }
        $1 == last { a1[$2] = $3; f1[$2] = $4 }
        END {
            for (p in a0) if ((p in a1) && (p in am)) {
                n++
                d1 = am[p] - a0[p]; d2 = a1[p] - am[p]; df = f1[p] - f0[p]
                s1 += d1; s2 += d2; sf += df
                if (n == 1 || d1 > m1) m1 = d1
                if (n == 1 || d2 > m2) m2 = d2
                if (n == 1 || df > mf) mf = df
            }
            printf "children followed through the run: %d (samples t=%ss, %ss, %ss)\n", n, base, mid, last
            printf "private memory (RssAnon) per child, first half of the events: mean %+.1f kB, max %+d kB\n", s1 / n, m1
            printf "private memory (RssAnon) per child, second half of the events: mean %+.1f kB, max %+d kB\n", s2 / n, m2
            printf "open fds per child, start to end: mean %+.2f, max %+d\n", sf / n, mf
        }' "$WORK/per-child"
    # Idle before and after, for the children alive at both: a child keeps
    # at most one pooled Redis connection per thread (after a Redis restart
    # a child that serves nothing more still holds its dead one until its
    # next request), so no child may gain more fds than it has threads.
    threads=32
    [ "$MPM" = prefork ] && threads=1
    c0=$(awk '$2 == "idle-warm" { print $8 }' "$OUT")
    c1=$(awk '$2 == "idle" { print $8 }' "$OUT")
    awk -v c0="$c0" -v c1="$c1" -v threads="$threads" -v last="$(awk '{ print $1 }' "$WORK/per-child" | sort -n | tail -1)" '
        $1 == -1 { f0[$2] = $4; a0[$2] = $3 }
        $1 == last { f1[$2] = $4; a1[$2] = $3 }
        END {
            for (p in f0) if (p in f1) {
                n++; d = f1[p] - f0[p]; df += d; da += a1[p] - a0[p]
                if (n == 1 || d > mf) mf = d
            }
            printf "idle before and after the load, %d children alive at both: fds %+d (at most %+d in one child), RssAnon %+d kB; Redis clients %d -> %d\n", n, df, mf, da, c0, c1
            printf "verdict: file descriptors %s\n", (mf <= threads) ? "no leak (no child gained more than one pooled connection per thread)" : "LEAKED?"
            printf "memory: see the per-child growth above; threaded MPMs add per-thread high-water marks as more threads take each path (bench/leakcheck.sh tells a leak from them)\n"
        }' "$WORK/per-child"
    grep -E '^wrk:|Requests/sec' "$WORK/wrk.out"
    echo "error log lines from the module: $(grep -c 'mod_slidinglimit' "$ERRLOG")"
    grep 'mod_slidinglimit' "$ERRLOG" | sed 's/^/  /' | cut -c1-200
} >"$WORK/summary"
tee -a "$OUT" <"$WORK/summary"
