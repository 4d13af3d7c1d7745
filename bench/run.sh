#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# make bench: throughput and latency of httpd without the module, with the
# module on each store and algorithm, under a single-key flood, and with the
# peers an operator would pick instead (mod_evasive, mod_qos, ModSecurity IP
# collections), all on the same httpd, in one run.
#
# Everything runs on 127.0.0.1: a private redis-server and one httpd per
# configuration, each on a port found free, started and stopped here (by
# pid). The tree is staged in a world-readable temporary directory, because
# httpd started as root serves as "nobody". The table goes to
# docs/BENCHMARKS.md and the plot to docs/benchmarks.png.
#
# Knobs (environment):
#   SL_BENCH_SLICES    measured slices per configuration (4), each followed
#                      or preceded by one of the reference
#   SL_BENCH_SLICE     seconds per slice (3)
#   SL_BENCH_WARMUP    seconds of warm-up before each run (2)
#   SL_BENCH_ONLY      only these cases (space separated, whole names), for
#                      quick looks, e.g. "counter-redis counter-tls
#                      counter-sentinel"; the documents are then left
#                      alone unless SL_BENCH_WRITE=1, which writes the
#                      selected rows as a section of docs/BENCHMARKS.md
#                      (the full run's tables stay)
#   SL_BENCH_NOTE      a sentence for that section (how loaded the machine
#                      was, say)
#   SL_BENCH_KEEP=1    keep the staging directory (configs, logs, outputs)
#   SL_BENCH_LOWSLICES slices per side at 4 connections for the p99 added
#                      at low load, in rows measured at 32 (1)
#   SL_BENCH_CGREQ     requests under callgrind per configuration with the
#                      module, for its instructions per request (2000; 0:
#                      none)
#   SL_BENCH_SYSREQ    requests per side at 4 connections for the system
#                      calls per request, case and reference (2000; 0: none)
#   SL_BENCH_SYSCOUNT  perf or strace: what counts them (perf when it can
#                      attach)
#   SL_BENCH_SCRIPTS   seconds per script and round of the Redis-side row
#                      (redis-scripts: bench/scripts.c; 3; 0: none)
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SLICES=${SL_BENCH_SLICES:-4}
SLICE=${SL_BENCH_SLICE:-3}
WARMUP=${SL_BENCH_WARMUP:-2}
THREADS=2
CONNS=32
LOWCONNS=4
POOL=4096
LOWSLICES=${SL_BENCH_LOWSLICES:-1}
CGREQ=${SL_BENCH_CGREQ:-2000}
SYSREQ=${SL_BENCH_SYSREQ:-2000}
SCRIPTSECS=${SL_BENCH_SCRIPTS:-3}
ONLY=${SL_BENCH_ONLY:-}
WRITE=${SL_BENCH_WRITE:-$([ -z "$ONLY" ] && echo 1 || echo 0)}
MODS=/usr/lib/apache2/modules
HTTPD=$(command -v apache2 || command -v httpd || echo /usr/sbin/apache2)
[ -x "$HTTPD" ] || HTTPD=/usr/sbin/apache2
SO=$ROOT/.libs/mod_slidinglimit.so

for tool in wrk redis-server redis-cli curl gnuplot $([ "$CGREQ" -gt 0 ] && echo valgrind callgrind_annotate); do
    command -v "$tool" >/dev/null || { echo "bench: $tool is missing (make deps-bench)"; exit 1; }
done
[ -f "$SO" ] || { echo "bench: $SO is missing (make)"; exit 1; }

STAGE=$(mktemp -d "${TMPDIR:-/tmp}/slidinglimit-bench.XXXXXX")
chmod 755 "$STAGE"
mkdir -p "$STAGE/htdocs/r" "$STAGE/logs" "$STAGE/run" "$STAGE/data/modsec" \
    "$STAGE/data/evasive" "$STAGE/conf" "$STAGE/out" "$STAGE/redis" "$STAGE/cg"
cp "$SO" "$STAGE/mod_slidinglimit.so"
cp "$ROOT/bench/clients.lua" "$STAGE/clients.lua"
# A small static file: the cheapest thing httpd serves, so the limiter's
# share of the work shows. 256 bytes, about the size of the JSON refusal.
head -c 256 /dev/zero | tr '\0' 'x' >"$STAGE/htdocs/r/index.html"
chmod -R a+rX "$STAGE"
USERCONF=""
if [ "$(id -u)" -eq 0 ]; then
    USERCONF="User nobody
Group nogroup"
    chown -R nobody:nogroup "$STAGE/logs" "$STAGE/data" "$STAGE/run" "$STAGE/cg"
fi

REDIS_PID=
cleanup() {
    local run
    for run in "$STAGE"/run/*/; do
        [ -d "$run" ] && stop_httpd "${run%/}"
    done
    declare -F stop_cluster >/dev/null && stop_cluster
    declare -F sl_servers_tls_stop >/dev/null && sl_servers_tls_stop
    if [ -n "$REDIS_PID" ]; then
        kill "$REDIS_PID" 2>/dev/null
        wait "$REDIS_PID" 2>/dev/null
    fi
    if [ "${SL_BENCH_KEEP:-0}" = 1 ]; then
        echo "bench: kept $STAGE"
    else
        rm -rf "$STAGE"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

. "$(dirname "${BASH_SOURCE[0]}")/../tools/free-port.sh"
# The test CA, the TLS redis-server and the Sentinel set-up of t/60 and t/61.
. "$(dirname "${BASH_SOURCE[0]}")/../t/servers-tls.sh"

# Whether a row runs (SL_BENCH_ONLY: whole names only).
selected() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }

REDIS_PORT=$(free_port) || { echo "bench: no free port"; exit 1; }
# Also on a unix socket, for the row that compares the two transports.
# In a session of its own, as the servers that daemonize (httpd, and the
# cluster, TLS and Sentinel redis-servers) are: the kernel's autogroup
# scheduling shares the CPU between sessions first, and in this script's
# session, with wrk, it got less of it than they did (plain TCP measured
# slower than TLS). setsid does not fork here (no job control): $! stays
# redis-server.
setsid redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --unixsocket "$STAGE/redis/redis.sock" --unixsocketperm 777 \
    --dir "$STAGE/redis" --logfile "$STAGE/redis/redis.log" &
REDIS_PID=$!
rcli() { redis-cli -p "$REDIS_PORT" "$@"; }
for _ in $(seq 1 50); do
    rcli ping >/dev/null 2>&1 && break
    sleep 0.1
done
rcli ping >/dev/null || { echo "bench: redis-server did not start"; exit 1; }

# The Redis server a row's store uses, for this harness's own calls
# (FLUSHALL, INFO, CONFIG RESETSTAT): redis-cli's arguments for its data
# node, and the ports of its Sentinels when it has them. The private
# redis-server unless a row says otherwise.
SCLI=(-p "$REDIS_PORT")
SENTINELS=()
scli() { redis-cli "${SCLI[@]}" "$@"; }
conns_of() { # redis-cli args -> total_connections_received
    redis-cli "$@" info stats | tr -d '\r' |
        sed -n 's/^total_connections_received:\([0-9]*\).*/\1/p'
}
sentinel_conns() { # the sum over the row's Sentinels
    local p n s=0
    for p in "${SENTINELS[@]}"; do
        n=$(conns_of -p "$p")
        s=$((s + ${n:-0}))
    done
    echo "$s"
}

# A three-master Redis Cluster (no replicas: the row measures the client's
# routing, not replication) for the counter-cluster row, only when that
# row runs. Its nodes daemonize; cleanup stops them by pid file.
CLUSTER=
CLUSTER_DIR=$STAGE/cluster
start_cluster() {
    local ports=() p n
    while [ "${#ports[@]}" -lt 3 ]; do
        p=$(free_port 6000 4000) || return 1
        (exec 3<>"/dev/tcp/127.0.0.1/$((p + 10000))") 2>/dev/null && continue
        [[ " ${ports[*]} " == *" $p "* ]] && continue
        ports+=("$p")
    done
    for p in "${ports[@]}"; do
        mkdir -p "$CLUSTER_DIR/$p"
        redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes \
            --cluster-config-file nodes.conf --save '' --appendonly no \
            --daemonize yes --dir "$CLUSTER_DIR/$p" \
            --pidfile "$CLUSTER_DIR/$p/redis.pid" \
            --logfile "$CLUSTER_DIR/$p/redis.log" || return 1
    done
    for p in "${ports[@]}"; do
        for _ in $(seq 1 50); do
            redis-cli -p "$p" ping >/dev/null 2>&1 && break
            sleep 0.1
        done
    done
    redis-cli --cluster create $(printf '127.0.0.1:%s ' "${ports[@]}") \
        --cluster-replicas 0 --cluster-yes >"$CLUSTER_DIR/create.log" 2>&1 || return 1
    for _ in $(seq 1 100); do
        n=0
        for p in "${ports[@]}"; do
            redis-cli -p "$p" cluster info | grep -q '^cluster_state:ok' && n=$((n + 1))
        done
        [ "$n" -eq 3 ] && break
        sleep 0.1
    done
    [ "$n" -eq 3 ] || return 1
    CLUSTER=cluster://$(printf '127.0.0.1:%s,' "${ports[@]}")
    CLUSTER=${CLUSTER%,}
}
stop_cluster() {
    local f
    for f in "$CLUSTER_DIR"/*/redis.pid; do
        [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
    done
}

# A TLS-only redis-server with a certificate of the test CA, for the
# counter-tls row, which verifies it (SlidingLimitStoreTLSCA).
TLS_DIR=$STAGE/tls
TLS_PORT=
start_tls() {
    sl_tls_certs "$TLS_DIR" && sl_tls_redis_start TLS_PORT "$TLS_DIR" server no
}

# A master and three Sentinels for the counter-sentinel row.
# sl_sentinel_start starts two replicas too; they are stopped here, so
# that the row measures finding the master through the Sentinels and not
# replication, and so that a Sentinel slowed down by a loaded machine has
# no replica to fail over to in the middle of the row.
SENTINEL=
start_sentinel() {
    local f pid pids=() i
    sl_sentinel_start "$STAGE/sentinel" || return 1
    for f in "$SL_SENTINEL_DIR"/replica*/redis.pid; do
        pid=$(cat "$f") && kill "$pid" && pids+=("$pid")
    done
    # Not our children: wait for them to be gone (5 s each at most).
    for pid in "${pids[@]}"; do
        for i in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
    done
    SENTINEL=sentinel://127.0.0.1:${SL_SENTINEL_PORTS//,/,127.0.0.1:}/slmaster
}

# libpcre.so.3 for Debian's mod_qos, which needs its symbols loaded first.
PCRE3=$(dpkg -L libpcre3 2>/dev/null | grep -E '/libpcre\.so\.3$' | head -1)

# ---------------------------------------------------------------- configs

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The module with a limit that the allowed-path runs never reach, or (flood)
# one that a single client passes within the warm-up.
sl_conf() { # store algorithm requests window
    cat <<CONF
LoadModule slidinglimit_module $STAGE/mod_slidinglimit.so
SlidingLimitStore $1
SlidingLimitStoreTimeout 500ms 500ms
SlidingLimitKeyPrefix slbench
<Location /r>
    SlidingLimit $3 $4 name=bench algorithm=$2
</Location>
<Location /slidinglimit-status>
    SetHandler slidinglimit-status
    SlidingLimitStatusPage metrics
</Location>
CONF
}

# sl_conf with one more directive after the limit's line.
sl_conf_with() { # directive store algorithm requests window
    local line=$1
    shift
    sl_conf "$@" | sed "s|^    SlidingLimit .*|&\n    $line|"
}

# SlidingLimitAllotment auto on the same limit: admissions from units the
# store allots each child ahead (src/sl_allot.c).
allot_conf() { # store algorithm requests window
    sl_conf_with "SlidingLimitAllotment auto" "$@"
}

# SlidingLimitConcurrent: each request takes a lease at its decision and
# gives it back at its end, two store calls per request.
conc_conf() { # store in-flight
    sl_conf "$1" log 1 1s | sed "s|^    SlidingLimit .*|    SlidingLimitConcurrent $2 name=bench|"
}

# mod_evasive: per (address, page) and per address counts in a hash table
# of each child; answers 429 while an address is blocked.
evasive_conf() { # page-count site-count
    cat <<CONF
LoadModule evasive20_module $MODS/mod_evasive20.so
<IfModule mod_evasive20.c>
    DOSHashTableSize 65536
    DOSPageCount $1
    DOSPageInterval 60
    DOSSiteCount $2
    DOSSiteInterval 60
    DOSBlockingPeriod 60
    DOSHTTPResponseCode 429
    DOSLogDir $STAGE/data/evasive
</IfModule>
CONF
}

# mod_qos: QS_ClientEventLimitCount counts the requests that carry QS_Limit
# per client address (in its shared-memory client table) and refuses the
# address once the count within the period is reached.
qos_conf() { # count seconds [client-entries]
    cat <<CONF
LoadFile $PCRE3
LoadModule qos_module $MODS/mod_qos.so
QS_ClientEntries ${3:-8192}
# mod_qos reads the client address from the header itself, and only if
# mod_remoteip has not consumed it first.
RemoteIPHeader X-Bench-Unused
QS_ClientIpFromHeader X-Forwarded-For
SetEnvIf Request_URI ^/r/ QS_Limit=yes
QS_ClientEventLimitCount $1 $2
QS_ErrorResponseCode 429
CONF
}

# ModSecurity 2: a persistent IP collection (initcol) counting requests per
# address with an expiring variable; over the count, deny with 429.
modsec_conf() { # count seconds
    cat <<CONF
LoadModule unique_id_module $MODS/mod_unique_id.so
LoadModule security2_module $MODS/mod_security2.so
SecRuleEngine On
SecRequestBodyAccess Off
SecResponseBodyAccess Off
SecAuditEngine Off
SecDebugLogLevel 0
SecDataDir $STAGE/data/modsec
SecTmpDir $STAGE/data/modsec
SecAction "id:900001,phase:1,nolog,pass,initcol:ip=%{REMOTE_ADDR},setvar:ip.requests=+1,expirevar:ip.requests=$2"
SecRule IP:REQUESTS "@gt $1" "id:900002,phase:1,deny,status:429,nolog"
CONF
}

# ---------------------------------------------------------------- running

# An httpd is known by the directory of its pid file: $STAGE/run/<name>.
stop_httpd() { # rundir
    local pid
    pid=$(cat "$1/httpd.pid" 2>/dev/null)
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
    rm -f "$1/httpd.pid"
    # The children leave with the parent; give the port a moment.
    sleep 0.3
}

start_httpd() { # conf name rundir url
    local conf=$1 name=$2 run=$3 url=$4 code
    mkdir -p "$run"
    [ "$(id -u)" -eq 0 ] && chown nobody:nogroup "$run"
    rm -f "$run/httpd.pid"
    if ! "$HTTPD" -f "$conf" -k start 2>"$STAGE/out/$name.start"; then
        echo "bench: httpd did not start for $name:" >&2
        cat "$STAGE/out/$name.start" >&2
        return 1
    fi
    for _ in $(seq 1 100); do
        [ -s "$run/httpd.pid" ] && break
        sleep 0.05
    done
    for _ in $(seq 1 100); do
        code=$(curl -s -o /dev/null -w '%{http_code}' "$url" 2>/dev/null)
        [ "$code" != 000 ] && return 0
        sleep 0.05
    done
    echo "bench: httpd for $name does not answer" >&2
    return 1
}

# CPU time (clock ticks) of an httpd: the parent, its live children, and
# the children it has reaped (cutime/cstime).
TICK=$(getconf CLK_TCK)
httpd_cpu() { # rundir
    local pid
    pid=$(cat "$1/httpd.pid" 2>/dev/null)
    [ -n "$pid" ] || { echo 0; return; }
    {
        awk '{ print $14 + $15 + $16 + $17 }' "/proc/$pid/stat" 2>/dev/null
        for c in $(cat "/proc/$pid/task/$pid/children" 2>/dev/null); do
            awk '{ print $14 + $15 }' "/proc/$c/stat" 2>/dev/null
        done
    } | awk '{ s += $1 } END { print s + 0 }'
}

redis_cpu() { # seconds of CPU redis-server has used
    scli info cpu | tr -d '\r' |
        awk -F: '$1 == "used_cpu_sys" || $1 == "used_cpu_user" { s += $2 }
                 END { printf "%.6f", s }'
}

# wrk's latency as milliseconds.
to_ms() {
    awk -v v="$1" 'BEGIN {
        n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
        if (u == "us") n /= 1000; else if (u == "s") n *= 1000
        else if (u == "m") n *= 60000
        printf "%.3f", n }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

cmdstat() { # file command field -> value
    # The first field follows the colon, the others a comma.
    sed -n "s/^cmdstat_$2:\(.*,\)\{0,1\}$3=\([0-9.]*\).*/\2/p" "$1" | tr -d '\r' | head -1
}

# Commands that the script itself runs inside EVALSHA: counted by INFO
# commandstats, but they are no round trips.
SCRIPT_CMDS='time|get|set|del|zadd|zcard|zcount|zrange|zrem|zremrangebyscore|zscore|pexpire|pttl'
# Commands this harness sends to read the figures.
OWN_CMDS='info|config|dbsize|memory|randomkey|flushall|ping'

RESULTS=$STAGE/out/results.tsv
: >"$RESULTS"

# One wrk slice: SLICE seconds against url; appends "rps p50 p99 total
# non2xx cpu-ticks" to out.
slice() { # url pool conns rundir out
    local url=$1 pool=$2 conns=$3 run=$4 out=$5 c0 c1 w
    w=$(mktemp "$STAGE/out/wrk.XXXXXX")
    c0=$(httpd_cpu "$run")
    if [ "${SL_BENCH_PERF:-0}" = 1 ] && [ "${out##*.}" = case ]; then
        # Where the CPU goes, whole machine (root only): see bench/NOTES.md.
        perf record -q -a -g -F 499 -o "$out.perf.$(wc -l <"$out")" -- \
            wrk -t"$THREADS" -c"$conns" -d"${SLICE}s" --latency \
            -s "$STAGE/clients.lua" "$url" -- "$pool" >"$w" 2>/dev/null
    else
        wrk -t"$THREADS" -c"$conns" -d"${SLICE}s" --latency \
            -s "$STAGE/clients.lua" "$url" -- "$pool" >"$w" 2>&1
    fi
    c1=$(httpd_cpu "$run")
    printf '%s %s %s %s %s %s\n' \
        "$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' "$w")" \
        "$(to_ms "$(awk '$1 == "50%" {print $2}' "$w")")" \
        "$(to_ms "$(awk '$1 == "99%" {print $2}' "$w")")" \
        "$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' "$w")" \
        "$(sed -n 's/^ *Non-2xx or 3xx responses: *\([0-9]*\).*/\1/p' "$w" | grep . || echo 0)" \
        "$((c1 - c0))" >>"$out"
    cat "$w" >>"$out.wrk"
    rm -f "$w"
}

# The p99 a case adds: the median, over the slices taken in pairs (a case's
# slice and its reference's next to it, ABBA), of the case's p99 less the
# reference's. A tail moves with the machine's other work from one slice to
# the next; within a pair both sides meet the same.
p99_added() { # case-slices ref-slices
    paste -d' ' <(awk '{ print $3 }' "$1") <(awk '{ print $3 }' "$2") |
        awk 'NF == 2 { printf "%.3f\n", $1 - $2 }' | median
}

# Mean requests/s, median p50 and p99, sums of requests, refusals and CPU.
summary() { # slices-file -> rps p50 p99 total non2xx ticks
    printf '%s %s %s %s\n' \
        "$(awk '{ s += $1 } END { if (NR) printf "%.1f", s / NR }' "$1")" \
        "$(awk '{ print $2 }' "$1" | median)" \
        "$(awk '{ print $3 }' "$1" | median)" \
        "$(awk '{ t += $4; d += $5; c += $6 } END { print t + 0, d + 0, c + 0 }' "$1")"
}

# System calls per request over N requests at LOWCONNS: of the httpd in
# rundir (its parent and children, every thread), and of a redis-server
# when its pid is given (else "-"). perf counts raw_syscalls:sys_enter
# without stopping the threads; strace -c, the fallback where perf cannot
# attach, stops every thread at every call, which changes how the
# module's threads share round trips, so perf is preferred.
SYSCOUNT=${SL_BENCH_SYSCOUNT:-}
if [ "$SYSREQ" -gt 0 ] && [ -z "$SYSCOUNT" ]; then
    if perf stat -e raw_syscalls:sys_enter -x, -p $$ -- true >/dev/null 2>&1; then
        SYSCOUNT=perf
    elif command -v strace >/dev/null; then
        SYSCOUNT=strace
    fi
fi
count_start() { # out pids(comma separated): its pid in COUNTER
    if [ "$SYSCOUNT" = perf ]; then
        perf stat -e raw_syscalls:sys_enter -x, -o "$1" -p "$2" >/dev/null 2>&1 &
    else
        strace -f -c -qq -o "$1" $(printf -- '-p %s ' ${2//,/ }) >/dev/null 2>&1 &
    fi
    COUNTER=$!
}
count_end() { # pid out: the calls counted, in CALLS
    kill -INT "$1" 2>/dev/null
    wait "$1" 2>/dev/null
    if [ "$SYSCOUNT" = perf ]; then
        CALLS=$(awk -F, '$3 ~ /raw_syscalls:sys_enter/ { print $1 + 0; exit }' "$2")
    else
        CALLS=$(awk '$NF == "total" { print $4 + 0; exit }' "$2")
    fi
}
syscalls() { # rundir url pool out [redis-pid] -> "httpd-per-request redis-per-request"
    local pid pids hp rp=- h r sent
    pid=$(cat "$1/httpd.pid" 2>/dev/null)
    if [ -z "$SYSCOUNT" ] || [ -z "$pid" ]; then
        echo "- -"
        return
    fi
    pids=$pid$(printf ',%s' $(cat "/proc/$pid/task/$pid/children" 2>/dev/null))
    count_start "$4.httpd" "$pids"
    hp=$COUNTER
    if [ -n "${5:-}" ]; then
        count_start "$4.redis" "$5"
        rp=$COUNTER
    fi
    # Until the counters are attached (perf and strace say nothing then);
    # an idle httpd makes a few calls a second.
    sleep 0.3
    sent=$(wrk_count "$2" "$3" "$LOWCONNS" "$THREADS" "$SYSREQ" \
        "$STAGE/clients.lua" "$4.wrk")
    count_end "$hp" "$4.httpd"
    h=$CALLS
    if [ "$rp" != - ]; then
        count_end "$rp" "$4.redis"
        r=$CALLS
    fi
    awk -v h="$h" -v r="${r:-}" -v n="${sent:-0}" 'BEGIN {
        if (n == 0 || h == "") { print "- -"; exit }
        printf "%.2f %s\n", h / n, (r == "") ? "-" : sprintf("%.2f", r / n) }'
}

# The module's instructions per request (callgrind_count): one httpd -X of
# the row's configuration, after its own has stopped; "-" for the rows
# without the module. Rows of the same configuration and client pool (the
# -c4 and -vs-tcp rows) reuse the figure of the first.
declare -A CGDONE
instructions() { # name mpm pool block
    local name=$1 mpm=$2 pool=$3 block=$4 key dir run port as=()
    if [ "$CGREQ" -le 0 ] || [[ $block != *slidinglimit_module* ]]; then
        echo - -
        return
    fi
    key="$mpm|$pool|$block"
    if [ -n "${CGDONE[$key]:-}" ]; then
        echo "${CGDONE[$key]}"
        return
    fi
    dir=$STAGE/cg/$name
    run=$STAGE/run/$name-cg
    mkdir -p "$dir" "$run"
    cp "$STAGE/clients.lua" "$dir/"
    if [ "$(id -u)" -eq 0 ]; then
        chown -R nobody:nogroup "$dir" "$run"
        as=(runuser -u nobody --)
    fi
    port=$(free_port) || { echo - -; return; }
    # httpd -X as nobody already: no User and Group lines.
    { USERCONF='' conf_head "$mpm" "$name-cg" "$port" "$run"; conf_size "$mpm"
      printf '%s\n' "$block"; } >"$STAGE/conf/$name-cg.conf"
    CGDONE[$key]=$(callgrind_count "$STAGE/conf/$name-cg.conf" \
        "http://127.0.0.1:$port/r/index.html" "$pool" "$CGREQ" "$dir" "${as[@]}")
    rm -f "$run/httpd.pid"
    echo "${CGDONE[$key]}"
}

# run_case NAME MPM CONNS POOL DESCRIPTION CONFIG
#   POOL: identities, or "flood". The case runs in its own httpd; its
#   reference is the module-free httpd of the same MPM, which runs all
#   along (or the one REF names). SLICES times, a slice of the reference and one of the case
#   alternate (in ABBA order), so that drift in the machine's speed falls
#   on both alike; the ratio is taken between the two.
run_case() {
    local name=$1 mpm=$2 conns=$3 pool=$4 desc=$5 block=$6
    local conf=$STAGE/conf/$name.conf run=$STAGE/run/$name port url
    local refrun=$STAGE/run/${REF:-ref-$mpm} refurl
    local mem0 mem1 keys evalsha usec other newconn status calls hits errors
    local rc0 rc1 i case ref eval conn0 conn1 sconn0 sconn1 rowconn rowsconn
    local rowreq counted=0 lcase= lref= lp99= lrp99= lrps= lrrps= ladded= sys= rsys=
    local insn= hsys= rpid=
    # Whole names only: "counter-redis" must not select counter-redis-c4.
    selected "$name" || return 0
    port=$(free_port) || { echo "bench: no free port"; exit 1; }
    url=http://127.0.0.1:$port/r/index.html
    refurl=$(cat "$refrun/url")
    { conf_head "$mpm" "$name" "$port" "$run"; conf_size "$mpm"; printf '%s\n' "$block"; } >"$conf"
    printf '%-28s ' "$name"
    case $block in
    *"SlidingLimitStore redis"* | *"SlidingLimitStore unix:"* | \
        *"SlidingLimitStore sentinel"*) counted=1 ;;
    esac
    scli flushall >/dev/null
    # Connections to the store over the whole row, from before httpd
    # starts to after the last slice: each reading counts its own.
    conn0=$(conns_of "${SCLI[@]}")
    sconn0=$(sentinel_conns)
    if ! start_httpd "$conf" "$name" "$run" "$url"; then
        printf '%s\t%s\t%s\t%s\tFAILED\n' "$name" "$mpm" "$conns" "$desc" >>"$RESULTS"
        stop_httpd "$run"
        return 0
    fi
    mem0=$(scli info memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p')
    wrk -t"$THREADS" -c"$conns" -d"${WARMUP}s" -s "$STAGE/clients.lua" \
        "$url" -- "$pool" >"$STAGE/out/$name.warmup" 2>&1
    # CONFIG RESETSTAT zeroes total_connections_received: read it first.
    conn1=$(conns_of "${SCLI[@]}")
    scli config resetstat >/dev/null
    case=$STAGE/out/$name.case
    ref=$STAGE/out/$name.ref
    : >"$case"
    : >"$ref"
    rc0=$(redis_cpu)
    for i in $(seq 1 "$SLICES"); do
        # ABBA: reference first in odd slices, the case first in even ones.
        if [ $((i % 2)) -eq 1 ]; then
            slice "$refurl" "$POOL" "$conns" "$refrun" "$ref"
            slice "$url" "$pool" "$conns" "$run" "$case"
        else
            slice "$url" "$pool" "$conns" "$run" "$case"
            slice "$refurl" "$POOL" "$conns" "$refrun" "$ref"
        fi
    done
    rc1=$(redis_cpu)
    scli info commandstats >"$STAGE/out/$name.cmdstats"
    scli info stats >"$STAGE/out/$name.stats"
    sconn1=$(sentinel_conns)
    mem1=$(scli info memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p')
    keys=$(scli dbsize | tr -d '\r')
    status=$(curl -s "http://127.0.0.1:$port/slidinglimit-status")
    printf '%s\n' "$status" >"$STAGE/out/$name.status"
    # At low load (LOWCONNS), for the rows measured at another: the p99 a
    # client waits more, in LOWSLICES slices each side (ABBA).
    if [ "$conns" != "$LOWCONNS" ] && [ "$LOWSLICES" -gt 0 ]; then
        lcase=$STAGE/out/$name.lcase
        lref=$STAGE/out/$name.lref
        : >"$lcase"
        : >"$lref"
        for i in $(seq 1 "$LOWSLICES"); do
            if [ $((i % 2)) -eq 1 ]; then
                slice "$refurl" "$POOL" "$LOWCONNS" "$refrun" "$lref"
                slice "$url" "$pool" "$LOWCONNS" "$run" "$lcase"
            else
                slice "$url" "$pool" "$LOWCONNS" "$run" "$lcase"
                slice "$refurl" "$POOL" "$LOWCONNS" "$refrun" "$lref"
            fi
        done
    fi
    # System calls per request at LOWCONNS: the reference's, then the
    # case's and its redis-server's (the row's store, when it has one).
    rpid=
    [ "$counted" = 1 ] &&
        rpid=$(scli info server | tr -d '\r' | sed -n 's/^process_id:\([0-9]*\)$/\1/p')
    # In ABBA order, twice each: the count moves with the MPM's timing.
    local r1 r2 h1 h2 s1 s2
    read -r r1 _ <<<"$(syscalls "$refrun" "$refurl" "$POOL" "$STAGE/out/$name.sysref1")"
    read -r h1 s1 <<<"$(syscalls "$run" "$url" "$pool" "$STAGE/out/$name.sys1" $rpid)"
    read -r h2 s2 <<<"$(syscalls "$run" "$url" "$pool" "$STAGE/out/$name.sys2" $rpid)"
    read -r r2 _ <<<"$(syscalls "$refrun" "$refurl" "$POOL" "$STAGE/out/$name.sysref2")"
    read -r rsys hsys sys <<<"$(awk -v r1="$r1" -v r2="$r2" -v h1="$h1" -v h2="$h2" \
        -v s1="$s1" -v s2="$s2" 'function m(a, b) {
            return (a == "-" || b == "-") ? "-" : sprintf("%.2f", (a + b) / 2) }
        BEGIN { print m(r1, r2), m(h1, h2), m(s1, s2) }')"
    stop_httpd "$run"
    read -r insn insn1 <<<"$(instructions "$name" "$mpm" "$pool" "$block")"

    read -r crps cp50 cp99 ctotal cnon2xx cticks <<<"$(summary "$case")"
    read -r rrps rp50 rp99 rtotal _ rticks <<<"$(summary "$ref")"
    if [ "$conns" = "$LOWCONNS" ]; then
        lp99=$cp99 lrp99=$rp99 lrps=$crps lrrps=$rrps
        ladded=$(p99_added "$case" "$ref")
    elif [ -n "$lcase" ] && [ -s "$lcase" ]; then
        read -r lrps _ lp99 _ <<<"$(summary "$lcase")"
        read -r lrrps _ lrp99 _ <<<"$(summary "$lref")"
        ladded=$(p99_added "$lcase" "$lref")
    fi
    evalsha=$(cmdstat "$STAGE/out/$name.cmdstats" evalsha calls)
    evalsha=${evalsha:-0}
    # EVAL: none since the give-back of count= runs by its hash too (an EVAL
    # here is a script sent as text).
    eval=$(cmdstat "$STAGE/out/$name.cmdstats" eval calls)
    eval=${eval:-0}
    usec=$(cmdstat "$STAGE/out/$name.cmdstats" evalsha usec_per_call)
    other=$(tr -d '\r' <"$STAGE/out/$name.cmdstats" |
        sed -n 's/^cmdstat_\([^:]*\):calls=\([0-9]*\),.*/\1 \2/p' |
        grep -Ev "^($SCRIPT_CMDS|$OWN_CMDS|evalsha|eval)(\|[a-z]*)? " |
        awk '{s += $2} END {print s + 0}')
    newconn=$(sed -n 's/^total_connections_received:\([0-9]*\).*/\1/p' \
        "$STAGE/out/$name.stats" | tr -d '\r')
    # Our own redis-cli calls after the reset count as connections too:
    # two redis_cpu, INFO commandstats and INFO stats itself.
    newconn=$((${newconn:-4} - 4))
    # The whole row: before the reset, less the readings of mem0 and conn1;
    # after it, the slices' figure above. The Sentinels' less sconn1's.
    rowconn=-
    rowsconn=-
    if [ "$counted" = 1 ]; then
        rowconn=$((${conn1:-0} - ${conn0:-0} - 2 + newconn))
        [ "${#SENTINELS[@]}" -gt 0 ] &&
            rowsconn=$((sconn1 - sconn0 - ${#SENTINELS[@]}))
    fi
    rowreq=$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' "$STAGE/out/$name.warmup")
    rowreq=$((${rowreq:-0} + ${ctotal:-0}))
    calls=$(sed -n 's/^slidinglimit_store_calls_total \([0-9]*\).*/\1/p' <<<"$status")
    hits=$(sed -n 's/^slidinglimit_deny_cache_hits_total \([0-9]*\).*/\1/p' <<<"$status")
    errors=$(sed -n 's/^slidinglimit_store_errors_total \([0-9]*\).*/\1/p' <<<"$status")
    if [ -z "$crps" ] || [ -z "$ctotal" ] || [ "$ctotal" -eq 0 ] ||
        [ -z "$rtotal" ] || [ "$rtotal" -eq 0 ]; then
        echo "no result (see $case.wrk)"
        printf '%s\t%s\t%s\t%s\tFAILED\n' "$name" "$mpm" "$conns" "$desc" >>"$RESULTS"
        return 0
    fi
    # CPU per request in microseconds: httpd's for the case and for the
    # reference, redis-server's for the case (it idles during the
    # reference's slices).
    local hcpu rcpu scpu
    hcpu=$(awk -v t="$cticks" -v n="$ctotal" -v k="$TICK" 'BEGIN { printf "%.1f", 1e6 * t / k / n }')
    rcpu=$(awk -v t="$rticks" -v n="$rtotal" -v k="$TICK" 'BEGIN { printf "%.1f", 1e6 * t / k / n }')
    scpu=$(awk -v a="$rc0" -v b="$rc1" -v n="$ctotal" 'BEGIN { printf "%.1f", 1e6 * (b - a) / n }')
    # redis-server's CPU per decision: per script call (EVALSHA, and EVAL
    # were one sent as text), which a deny-cache answer does not make.
    local dcpu
    dcpu=$(awk -v a="$rc0" -v b="$rc1" -v n="$((evalsha + eval))" 'BEGIN { if (n > 0) printf "%.1f", 1e6 * (b - a) / n; else print "-" }')
    # name mpm conns desc rps p50 p99 total non2xx evalsha other newconn
    # memdelta keys errors hits ref-rps ref-p50 ref-p99 usec/call
    # httpd-cpu-us ref-httpd-cpu-us redis-cpu-us eval row-new-connections
    # row-sentinel-connections row-requests low-p99 low-ref-p99 low-rps
    # low-ref-rps module-instructions httpd-syscalls ref-httpd-syscalls
    # redis-syscalls redis-cpu-us-per-call module-instructions-first
    # low-p99-added
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
        "$name" "$mpm" "$conns" "$desc" "$crps" "$cp50" "$cp99" \
        "$ctotal" "$cnon2xx" "$evalsha" "$other" "$newconn" \
        "$((mem1 - mem0))" "$keys" "${errors:--}" "${hits:--}" \
        "$rrps" "$rp50" "$rp99" "${usec:--}" "$hcpu" "$rcpu" "$scpu" \
        "$eval" "$rowconn" "$rowsconn" "$rowreq" "${lp99:--}" "${lrp99:--}" \
        "${lrps:--}" "${lrrps:--}" "${insn:--}" "${hsys:--}" "${rsys:--}" \
        "${sys:--}" "$dcpu" "${insn1:--}" "${ladded:--}" >>"$RESULTS"
    printf '%8.0f req/s (ref %6.0f) %5.2f  p99 %6.3f ms (ref %6.3f)  refused %6.2f%%  EVALSHA/req %.4f  EVAL/req %.4f  httpd %s us/req (ref %s), redis %s' \
        "$crps" "$rrps" "$(awk -v a="$crps" -v b="$rrps" 'BEGIN {print a / b}')" \
        "$cp99" "$rp99" \
        "$(awk -v a="$cnon2xx" -v b="$ctotal" 'BEGIN {print 100 * a / b}')" \
        "$(awk -v a="$evalsha" -v b="$ctotal" 'BEGIN {print a / b}')" \
        "$(awk -v a="$eval" -v b="$ctotal" 'BEGIN {print a / b}')" \
        "$hcpu" "$rcpu" "$scpu"
    printf '\n%28s p99 at -c%s %s ms (ref %s; added %s, paired)  module %s instructions/req (first of an identity %s)  syscalls/req httpd %s (ref %s), redis %s  redis %s us/decision' \
        "" "$LOWCONNS" "${lp99:--}" "${lrp99:--}" "${ladded:--}" "${insn:--}" "${insn1:--}" "${hsys:--}" \
        "${rsys:--}" "${sys:--}" "$dcpu"
    if [ "$counted" = 1 ]; then
        printf '  new connections: %s%s for %s requests' "$rowconn" \
            "$([ "$rowsconn" != - ] && echo " (Sentinels $rowsconn)")" "$rowreq"
    fi
    echo
}

# The references: httpd without the module, one per MPM, up all along.
# With a name and a block: a reference with that configuration instead,
# for the rows that set REF to its name.
start_ref() { # mpm [name block]
    local name=${2:-ref-$1} port run
    run=$STAGE/run/$name
    port=$(free_port) || { echo "bench: no free port"; exit 1; }
    { conf_head "$1" "$name" "$port" "$run"; conf_size "$1"; printf '%s\n' "${3:-}"; } \
        >"$STAGE/conf/$name.conf"
    start_httpd "$STAGE/conf/$name.conf" "$name" "$run" \
        "http://127.0.0.1:$port/r/index.html" || exit 1
    echo "http://127.0.0.1:$port/r/index.html" >"$run/url"
    wrk -t"$THREADS" -c"$CONNS" -d"${WARMUP}s" -s "$STAGE/clients.lua" \
        "http://127.0.0.1:$port/r/index.html" -- "$POOL" >/dev/null 2>&1
}
REF=
REDIS=redis://127.0.0.1:$REDIS_PORT
REDIS_UNIX=unix:$STAGE/redis/redis.sock
HIGH=1000000
FLOOD=100

START=$(date +%s)
echo "bench: httpd $("$HTTPD" -v | sed -n 's/^Server version: //p'), redis on $REDIS_PORT"
echo "bench: wrk -t$THREADS -c$CONNS --latency, $SLICES slices of ${SLICE}s against the reference and as many of the case, after ${WARMUP}s of warm-up; $POOL client addresses"
start_ref event
start_ref prefork

# The reference against itself: how far apart two identical servers
# measure in this run.
run_case baseline event $CONNS $POOL \
    "no module (static file)" ""
run_case log-redis event $CONNS $POOL \
    "SlidingLimit $HIGH 1m algorithm=log, Redis" \
    "$(sl_conf "$REDIS" log $HIGH 1m)"
run_case counter-redis event $CONNS $POOL \
    "SlidingLimit $HIGH 1m algorithm=counter, Redis" \
    "$(sl_conf "$REDIS" counter $HIGH 1m)"
# The same counter over TLS and through Sentinel, each on its own
# redis-server; their new-connections figures are that server's (and the
# Sentinels'). The -vs-tcp rows measure them against the counter on plain
# TCP (a reference httpd of counter-redis's configuration) instead of the
# module-free httpd.
if selected counter-tls-vs-tcp || selected counter-sentinel-vs-tcp; then
    start_ref event ref-tcp "$(sl_conf "$REDIS" counter $HIGH 1m)"
fi
if selected counter-tls || selected counter-tls-vs-tcp; then
    start_tls || echo "bench: the TLS redis-server did not start"
fi
if [ -n "$TLS_PORT" ]; then
    SCLI=(--tls --cacert "$TLS_DIR/ca.pem" -p "$TLS_PORT")
    run_case counter-tls event $CONNS $POOL \
        "SlidingLimit $HIGH 1m algorithm=counter, Redis over TLS (rediss://, verified)" \
        "$(sl_conf "rediss://127.0.0.1:$TLS_PORT" counter $HIGH 1m)
SlidingLimitStoreTLSCA $TLS_DIR/ca.pem
SlidingLimitStoreTLSVerify on"
    # The same against the counter on plain TCP directly: that httpd is
    # this row's reference, so both sides of the ratio meet the same drift.
    REF=ref-tcp run_case counter-tls-vs-tcp event $CONNS $POOL \
        "the counter-tls row, its reference the counter on plain TCP (counter-redis's configuration)" \
        "$(sl_conf "rediss://127.0.0.1:$TLS_PORT" counter $HIGH 1m)
SlidingLimitStoreTLSCA $TLS_DIR/ca.pem
SlidingLimitStoreTLSVerify on"
    SCLI=(-p "$REDIS_PORT")
fi
if selected counter-sentinel || selected counter-sentinel-vs-tcp; then
    start_sentinel || echo "bench: the Sentinel set-up did not start"
fi
if [ -n "$SENTINEL" ]; then
    SCLI=(-p "$SL_SENTINEL_MASTER_PORT")
    IFS=, read -ra SENTINELS <<<"$SL_SENTINEL_PORTS"
    run_case counter-sentinel event $CONNS $POOL \
        "SlidingLimit $HIGH 1m algorithm=counter, Redis master found through 3 Sentinels" \
        "$(sl_conf "$SENTINEL" counter $HIGH 1m)"
    REF=ref-tcp run_case counter-sentinel-vs-tcp event $CONNS $POOL \
        "the counter-sentinel row, its reference the counter on plain TCP (counter-redis's configuration)" \
        "$(sl_conf "$SENTINEL" counter $HIGH 1m)"
    SCLI=(-p "$REDIS_PORT")
    SENTINELS=()
fi
if selected counter-cluster; then
    start_cluster || echo "bench: the cluster did not start"
fi
# The Redis columns of this row (EVALSHA/req, Redis CPU) are the single
# Redis's: they read 0 here.
[ -n "$CLUSTER" ] && run_case counter-cluster event $CONNS $POOL \
    "SlidingLimit $HIGH 1m algorithm=counter, Redis Cluster of 3 masters" \
    "$(sl_conf "$CLUSTER" counter $HIGH 1m)"
run_case counter-redis-unix event $CONNS $POOL \
    "SlidingLimit $HIGH 1m algorithm=counter, Redis on a unix socket" \
    "$(sl_conf "$REDIS_UNIX" counter $HIGH 1m)"
run_case gcra-redis event $CONNS $POOL \
    "SlidingLimit $HIGH 1m algorithm=gcra, Redis" \
    "$(sl_conf "$REDIS" gcra $HIGH 1m)"
run_case counter-shm event $CONNS $POOL \
    "SlidingLimit $HIGH 1m algorithm=counter, shm" \
    "$(sl_conf shm counter $HIGH 1m)"
# The same without the quota headers (about 750 of the module's
# instructions per request): what that many instructions are worth in
# httpd's CPU per request, beside counter-shm in the same run.
run_case counter-shm-noheaders event $CONNS $POOL \
    "SlidingLimit $HIGH 1m algorithm=counter, shm, SlidingLimitHeaders off" \
    "$(sl_conf_with "SlidingLimitHeaders off" shm counter $HIGH 1m)"
# cost= and count= (the options ride on the algorithm argument): a cost of
# 3, and count=404 on a page that answers 200, so every request is
# reserved in the access checker and given back after its response.
run_case cost-counter-redis event $CONNS $POOL \
    "SlidingLimit $HIGH 1m algorithm=counter cost=3, Redis" \
    "$(sl_conf "$REDIS" "counter cost=3" $HIGH 1m)"
# SlidingLimit expr: (the quota from a variable SetEnvIf sets, as a map of
# plans would): the expression read per request and the quota headers
# written per request, next to the literal counter-redis row.
run_case expr-counter-redis event $CONNS $POOL \
    "SlidingLimit expr:%{reqenv:SLQ} 1m algorithm=counter (SetEnvIf sets $HIGH), Redis" \
    "$(sl_conf "$REDIS" "counter quota-default=1" "expr:%{reqenv:SLQ}" 1m)
SetEnvIf Request_URI ^/r SLQ=$HIGH"
run_case count-counter-redis event $CONNS $POOL \
    "SlidingLimit $HIGH 1m algorithm=counter count=404 (every request given back), Redis" \
    "$(sl_conf "$REDIS" "counter count=404" $HIGH 1m)"
run_case count-counter-shm event $CONNS $POOL \
    "SlidingLimit $HIGH 1m algorithm=counter count=404 (every request given back), shm" \
    "$(sl_conf shm "counter count=404" $HIGH 1m)"
# delay=: on the allowed path nothing waits (the limit is never reached):
# what the option costs a request it does not hold. Under a flood of one
# address, gcra at 100/s with delay=100ms: a request over the rate waits
# for its slot, up to SlidingLimitDelayMax (a quarter of ThreadsPerChild),
# and the rest are refused at once.
run_case delay-counter-redis event $CONNS $POOL \
    "SlidingLimit $HIGH 1m algorithm=counter delay=1s, Redis" \
    "$(sl_conf "$REDIS" "counter delay=1s" $HIGH 1m)"
run_case flood-gcra-delay-redis event $CONNS flood \
    "one address, SlidingLimit $FLOOD 1s algorithm=gcra delay=100ms, Redis" \
    "$(sl_conf "$REDIS" "gcra delay=100ms" $FLOOD 1s)"
# cost=after:: the admission's check, then one charge call per request
# after its response (the 256-byte file at cost-unit=64 costs 4).
run_case after-counter-redis event $CONNS $POOL \
    "SlidingLimit $HIGH 1m algorithm=counter cost=after:bytes cost-unit=64 (a charge after every response), Redis" \
    "$(sl_conf "$REDIS" "counter cost=after:bytes cost-unit=64" $HIGH 1m)"
run_case after-counter-shm event $CONNS $POOL \
    "SlidingLimit $HIGH 1m algorithm=counter cost=after:bytes cost-unit=64 (a charge after every response), shm" \
    "$(sl_conf shm "counter cost=after:bytes cost-unit=64" $HIGH 1m)"
run_case log-shm event $CONNS $POOL \
    "SlidingLimit $HIGH 1m algorithm=log, shm" \
    "$(sl_conf shm log $HIGH 1m)"
run_case concurrent-redis event $CONNS $POOL \
    "SlidingLimitConcurrent $HIGH (a lease taken and given back per request), Redis" \
    "$(conc_conf "$REDIS" $HIGH)"
run_case concurrent-shm event $CONNS $POOL \
    "SlidingLimitConcurrent $HIGH (a lease taken and given back per request), shm" \
    "$(conc_conf shm $HIGH)"
run_case evasive event $CONNS $POOL \
    "mod_evasive, 10^8/60s per page and address (it sees one address)" \
    "$(evasive_conf 100000000 100000000)"
run_case qos event $CONNS $POOL \
    "mod_qos QS_ClientEventLimitCount 30000 60" \
    "$(qos_conf 30000 60 8192)"
run_case qos-default-entries event $CONNS $POOL \
    "mod_qos as above, QS_ClientEntries at its default (50000)" \
    "$(qos_conf 30000 60 50000)"
run_case modsec event $CONNS $POOL \
    "ModSecurity ip collection, > $HIGH/60s denied" \
    "$(modsec_conf $HIGH 60)"

run_case flood-counter-redis event $CONNS flood \
    "one address, SlidingLimit $FLOOD 1m algorithm=counter, Redis" \
    "$(sl_conf "$REDIS" counter $FLOOD 1m)"
run_case flood-log-redis event $CONNS flood \
    "one address, SlidingLimit $FLOOD 1m algorithm=log, Redis" \
    "$(sl_conf "$REDIS" log $FLOOD 1m)"
run_case flood-gcra-redis event $CONNS flood \
    "one address, SlidingLimit $FLOOD 1s algorithm=gcra, Redis" \
    "$(sl_conf "$REDIS" gcra $FLOOD 1s)"
run_case flood-counter-shm event $CONNS flood \
    "one address, SlidingLimit $FLOOD 1m algorithm=counter, shm" \
    "$(sl_conf shm counter $FLOOD 1m)"
run_case flood-evasive event $CONNS flood \
    "one address, mod_evasive $FLOOD/60s per page" \
    "$(evasive_conf $FLOOD $((2 * FLOOD)))"
run_case flood-qos event $CONNS flood \
    "one address, mod_qos QS_ClientEventLimitCount $FLOOD 1" \
    "$(qos_conf $FLOOD 1)"
run_case flood-modsec event $CONNS flood \
    "one address, ModSecurity > $FLOOD/60s denied" \
    "$(modsec_conf $FLOOD 60)"

run_case baseline-prefork prefork $CONNS $POOL \
    "no module (static file)" ""
run_case counter-redis-prefork prefork $CONNS $POOL \
    "SlidingLimit $HIGH 1m algorithm=counter, Redis" \
    "$(sl_conf "$REDIS" counter $HIGH 1m)"
run_case counter-shm-prefork prefork $CONNS $POOL \
    "SlidingLimit $HIGH 1m algorithm=counter, shm" \
    "$(sl_conf shm counter $HIGH 1m)"
run_case flood-counter-redis-prefork prefork $CONNS flood \
    "one address, SlidingLimit $FLOOD 1m algorithm=counter, Redis" \
    "$(sl_conf "$REDIS" counter $FLOOD 1m)"
run_case flood-gcra-redis-prefork prefork $CONNS flood \
    "one address, SlidingLimit $FLOOD 1s algorithm=gcra, Redis" \
    "$(sl_conf "$REDIS" gcra $FLOOD 1s)"

# SlidingLimitAllotment auto: store calls per admitted request (EVALSHA/req:
# every request is admitted), beside the rows without it above and here;
# RETURNING client addresses return often enough (a few per second each
# per child) for a grant to fill, the pool's 4096 seldom do.
RETURNING=64
run_case counter-redis-allot event $CONNS $POOL \
    "SlidingLimit $HIGH 1m algorithm=counter, Redis, SlidingLimitAllotment auto" \
    "$(allot_conf "$REDIS" counter $HIGH 1m)"
run_case log-redis-allot event $CONNS $POOL \
    "SlidingLimit $HIGH 1m algorithm=log, Redis, SlidingLimitAllotment auto" \
    "$(allot_conf "$REDIS" log $HIGH 1m)"
run_case gcra-redis-allot event $CONNS $POOL \
    "SlidingLimit $HIGH 1m algorithm=gcra, Redis, SlidingLimitAllotment auto" \
    "$(allot_conf "$REDIS" gcra $HIGH 1m)"
run_case log-redis-r$RETURNING event $CONNS $RETURNING \
    "$RETURNING addresses, SlidingLimit $HIGH 1m algorithm=log, Redis" \
    "$(sl_conf "$REDIS" log $HIGH 1m)"
run_case counter-redis-r$RETURNING event $CONNS $RETURNING \
    "$RETURNING addresses, SlidingLimit $HIGH 1m algorithm=counter, Redis" \
    "$(sl_conf "$REDIS" counter $HIGH 1m)"
run_case counter-redis-allot-r$RETURNING event $CONNS $RETURNING \
    "$RETURNING addresses, SlidingLimit $HIGH 1m algorithm=counter, Redis, SlidingLimitAllotment auto" \
    "$(allot_conf "$REDIS" counter $HIGH 1m)"
run_case log-redis-allot-r$RETURNING event $CONNS $RETURNING \
    "$RETURNING addresses, SlidingLimit $HIGH 1m algorithm=log, Redis, SlidingLimitAllotment auto" \
    "$(allot_conf "$REDIS" log $HIGH 1m)"
run_case gcra-redis-allot-r$RETURNING event $CONNS $RETURNING \
    "$RETURNING addresses, SlidingLimit $HIGH 1m algorithm=gcra, Redis, SlidingLimitAllotment auto" \
    "$(allot_conf "$REDIS" gcra $HIGH 1m)"
run_case log-shm-r$RETURNING event $CONNS $RETURNING \
    "$RETURNING addresses, SlidingLimit $HIGH 1m algorithm=log, shm" \
    "$(sl_conf shm log $HIGH 1m)"
# Allotments are per child: prefork's 40 children each take their own
# grants of the same keys, where event's 2 share theirs among threads. The
# difference is what one table shared by the children would save.
run_case counter-redis-r$RETURNING-prefork prefork $CONNS $RETURNING \
    "$RETURNING addresses, SlidingLimit $HIGH 1m algorithm=counter, Redis" \
    "$(sl_conf "$REDIS" counter $HIGH 1m)"
run_case counter-redis-allot-r$RETURNING-prefork prefork $CONNS $RETURNING \
    "$RETURNING addresses, SlidingLimit $HIGH 1m algorithm=counter, Redis, SlidingLimitAllotment auto" \
    "$(allot_conf "$REDIS" counter $HIGH 1m)"

run_case baseline-c4 event $LOWCONNS $POOL \
    "no module (static file)" ""
run_case counter-redis-c4 event $LOWCONNS $POOL \
    "SlidingLimit $HIGH 1m algorithm=counter, Redis" \
    "$(sl_conf "$REDIS" counter $HIGH 1m)"
run_case log-redis-c4 event $LOWCONNS $POOL \
    "SlidingLimit $HIGH 1m algorithm=log, Redis" \
    "$(sl_conf "$REDIS" log $HIGH 1m)"
run_case counter-shm-c4 event $LOWCONNS $POOL \
    "SlidingLimit $HIGH 1m algorithm=counter, shm" \
    "$(sl_conf shm counter $HIGH 1m)"
# With allotments, where they are used: returning addresses.
run_case counter-redis-allot-r$RETURNING-c4 event $LOWCONNS $RETURNING \
    "$RETURNING addresses, SlidingLimit $HIGH 1m algorithm=counter, Redis, SlidingLimitAllotment auto" \
    "$(allot_conf "$REDIS" counter $HIGH 1m)"
run_case log-redis-allot-r$RETURNING-c4 event $LOWCONNS $RETURNING \
    "$RETURNING addresses, SlidingLimit $HIGH 1m algorithm=log, Redis, SlidingLimitAllotment auto" \
    "$(allot_conf "$REDIS" log $HIGH 1m)"

# Redis's side alone (bench/scripts.c): lua/sl_check.lua beside the
# counter and the log a user would write, by EVALSHA from 4 connections of
# 8 calls in flight each, over 10000 identities, on the private
# redis-server (no httpd runs now): decisions per second of Redis CPU.
SCRIPTS_OUT=$STAGE/out/scripts.tsv
if selected redis-scripts && [ "$SCRIPTSECS" != 0 ]; then
    printf '%-28s ' redis-scripts
    if make -s -C "$ROOT" bench/results/scripts >"$STAGE/out/scripts.build" 2>&1; then
        scli flushall >/dev/null
        # The script as the module runs it (tools/embed-lua.sh --text).
        mkdir -p "$STAGE/lua"
        (cd "$ROOT" && sh tools/embed-lua.sh --text lua/sl_check.lua sl_script_check) \
            >"$STAGE/lua/sl_check.lua"
        "$ROOT/bench/results/scripts" "$STAGE/lua" "$REDIS_PORT" "$SCRIPTSECS" \
            4 8 10000 2 >"$SCRIPTS_OUT" 2>"$STAGE/out/scripts.err" ||
            echo "bench: bench/scripts.c reported refusals or errors: $(head -3 "$STAGE/out/scripts.err")"
        awk -F'\t' '{ printf "%s%s %.0f", (NR > 1) ? ", " : "", $1, ($5 > 0) ? $3 / $5 : 0 }
            END { print " decisions per Redis CPU second" }' "$SCRIPTS_OUT"
    else
        echo "bench/scripts.c did not build (see $STAGE/out/scripts.build)"
    fi
fi

echo "bench: $(($(date +%s) - START)) s"
cp "$RESULTS" "$STAGE/out/keep.tsv"
export SL_BENCH_STAGE=$STAGE SL_BENCH_SLICES=$SLICES SL_BENCH_SLICE=$SLICE \
    SL_BENCH_WARMUP=$WARMUP SL_BENCH_THREADS=$THREADS SL_BENCH_CONNS=$CONNS \
    SL_BENCH_LOWCONNS=$LOWCONNS SL_BENCH_POOL=$POOL SL_BENCH_HTTPD=$HTTPD \
    SL_BENCH_PCRE3=$PCRE3 SL_BENCH_LOWSLICES=$LOWSLICES SL_BENCH_CGREQ=$CGREQ \
    SL_BENCH_SYSREQ=$SYSREQ
if [ "$WRITE" = 1 ] && [ -n "$ONLY" ]; then
    bash "$ROOT/bench/report.sh" --table "$RESULTS"
    bash "$ROOT/bench/report.sh" --section "$RESULTS" "$ROOT/docs"
elif [ "$WRITE" = 1 ]; then
    bash "$ROOT/bench/report.sh" "$RESULTS" "$ROOT/docs"
else
    bash "$ROOT/bench/report.sh" --table "$RESULTS"
fi
