# SPDX-License-Identifier: Apache-2.0
# What the benchmark scripts share (bench/run.sh, bench/profile.sh,
# bench/soak.sh, bench/leakcheck.sh): the base httpd configuration, so that
# their figures describe the same server, a private redis-server, and free
# ports. conf_head uses STAGE, MODS and USERCONF (user_conf's lines when
# started as root, else empty).

. "$(dirname "${BASH_SOURCE[0]}")/../tools/free-port.sh"

# User/Group lines for an httpd started as root, which then serves as
# nobody; nothing otherwise.
user_conf() {
    [ "$(id -u)" -eq 0 ] && printf 'User nobody\nGroup nogroup\n'
    return 0
}

# redis_start PORT DIR: a daemonized redis-server on 127.0.0.1:PORT, no
# persistence, its pid file and log in DIR; returns once it answers.
redis_start() {
    local port=$1 dir=$2
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
        --daemonize yes --pidfile "$dir/redis.pid" --dir "$dir" \
        --logfile "$dir/redis.log"
    for _ in $(seq 1 100); do
        redis-cli -p "$port" ping >/dev/null 2>&1 && return 0
        sleep 0.05
    done
    echo "redis did not start on $port" >&2
    return 1
}

# redis_stop DIR: stops the redis-server redis_start started there, and
# waits until it is gone.
redis_stop() {
    local pid
    pid=$(cat "$1/redis.pid" 2>/dev/null) || return 0
    kill "$pid" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.05; done
}

# conf_head MPM NAME PORT RUNDIR: everything but the sizing (conf_size) and
# what a configuration adds.
conf_head() { # mpm name port rundir
    local mpm=$1 name=$2 port=$3 run=$4
    cat <<CONF
ServerRoot $STAGE
ServerName 127.0.0.1
Listen 127.0.0.1:$port
PidFile $run/httpd.pid
DefaultRuntimeDir $run
ErrorLog $STAGE/logs/error-$name.log
LogLevel warn
$USERCONF
LoadModule mpm_${mpm}_module $MODS/mod_mpm_${mpm}.so
LoadModule authz_core_module $MODS/mod_authz_core.so
LoadModule mime_module $MODS/mod_mime.so
LoadModule remoteip_module $MODS/mod_remoteip.so
LoadModule setenvif_module $MODS/mod_setenvif.so
TypesConfig /etc/mime.types
DocumentRoot $STAGE/htdocs
<Directory $STAGE/htdocs>
    Require all granted
</Directory>
KeepAlive On
MaxKeepAliveRequests 0
KeepAliveTimeout 30
# The clients are told apart by X-Forwarded-For from a trusted proxy.
RemoteIPHeader X-Forwarded-For
RemoteIPInternalProxy 127.0.0.1
CONF
}

# conf_size MPM: the benchmarks' children and threads. Under event, two
# children of 50 threads from start to end, none spawned or stopped by the
# load: a third child spawned partway through one case and not another
# made two runs of the same server differ more than the module does.
conf_size() { # mpm
    if [ "$1" = event ]; then
        cat <<CONF
StartServers 2
ServerLimit 2
ThreadsPerChild 50
MinSpareThreads 1
MaxSpareThreads 100
MaxRequestWorkers 100
MaxConnectionsPerChild 0
CONF
    else
        cat <<CONF
StartServers 40
ServerLimit 80
MinSpareServers 40
MaxSpareServers 80
MaxRequestWorkers 80
MaxConnectionsPerChild 0
CONF
    fi
}

# wrk_count URL POOL CONNS THREADS N LUA OUT: N requests (about: each of
# THREADS threads stops after N / THREADS responses) with bench/clients.lua
# (LUA), wrk's summary in OUT. wrk's main thread sleeps its whole -d
# whatever its threads do, so each thread marks its end in a file and wrk
# is interrupted once all have (on SIGINT it prints its summary).
wrk_count() { # url pool conns threads n lua out
    local url=$1 pool=$2 conns=$3 threads=$4 n=$5 lua=$6 out=$7 pid
    local mark=$out.done script=$out.lua
    : >"$mark"
    cat >"$script" <<LUA
local left = $(((n + threads - 1) / threads))
$(sed -n '/^local reqs/,$p' "$lua")
function response()
    left = left - 1
    if left == 0 then
        local f = io.open("$mark", "a")
        f:write("done\n")
        f:close()
        wrk.thread:stop()
    end
end
LUA
    wrk -t"$threads" -c"$conns" -d600s -s "$script" "$url" -- "$pool" >"$out" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        [ "$(wc -l <"$mark")" -ge "$threads" ] && break
        sleep 0.05
    done
    kill -INT "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    rm -f "$mark" "$script"
    sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' "$out"
}

# The module's request hooks (mod_slidinglimit.c's sl_register_hooks: keep
# the two in step) and its per-request configuration merge: what callgrind
# counts as the module's work. None of them runs inside another for a
# plain request, which matters: a --toggle-collect function entered while
# collecting turns it off.
SL_HOOKS="sl_access sl_inspect_lookup_end sl_fixups sl_fixups_target
sl_log_transaction sl_status_handler sl_merge_dir_conf"

# callgrind_count CONF URL POOL N DIR AS...: instructions per request in
# the module's hooks of one httpd -X under callgrind, as two figures: for
# N requests of identities that each sent one before (the steady state a
# throughput row measures: SlidingLimitKey's identities come from the
# child's memo), then for those first requests, one per identity of the
# pool (each a SHA-1 or HMAC, the memo's miss); "- -" when nothing was
# counted. The two are callgrind's dump at the end of the first pass and
# its final part. AS: the command prefix that runs it (runuser -u nobody
# -- as root: the output is written after httpd has given up root, and
# callgrind_control must be the same user).
callgrind_count() { # conf url pool n dir as...
    local conf=$1 url=$2 pool=$3 n=$4 dir=$5 pid sent first total ftotal
    local toggles=() h vg
    shift 5
    for h in $SL_HOOKS; do toggles+=("--toggle-collect=$h"); done
    rm -f "$dir/callgrind.out" "$dir/callgrind.out".*
    setsid "$@" valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.out" \
        --collect-atstart=no "${toggles[@]}" \
        "$HTTPD" -X -f "$conf" >"$dir/valgrind.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 600); do
        curl -s -o /dev/null -H 'X-Forwarded-For: 198.18.0.1' "$url" && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    # Each identity of the pool once (bench/clients.lua walks the pool in
    # order from where it starts), then callgrind's first part.
    first=$([ "$pool" = flood ] && echo 1 || echo "$pool")
    first=$(wrk_count "$url" "$pool" 1 1 "$first" "$dir/clients.lua" "$dir/wrk-first.out")
    # valgrind itself (Debian's is valgrind.bin), not the runuser above it;
    # callgrind_control without a pid would act on every callgrind run.
    vg=$(pgrep -f "^[^ ]*valgrind[.a-z]* .*callgrind-out-file=$dir/callgrind.out" | head -1)
    [ -n "$vg" ] && "$@" callgrind_control --dump "$vg" >/dev/null 2>&1
    sent=$(wrk_count "$url" "$pool" 1 1 "$n" "$dir/clients.lua" "$dir/wrk.out")
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    total=$(callgrind_annotate "$dir/callgrind.out" 2>/dev/null |
        sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,)
    ftotal=$(callgrind_annotate "$dir/callgrind.out.1" 2>/dev/null |
        sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,)
    # Nothing counted: no request, or none of SL_HOOKS ran (renamed).
    if [ -z "$sent" ] || [ "$sent" -eq 0 ] || [ "${total:-0}" -eq 0 ]; then
        echo - -
        return
    fi
    # The first part holds the warming request too; a flood's one
    # identity has no first requests to speak of.
    if [ "$pool" = flood ] || [ -z "$first" ] || [ "${ftotal:-0}" -eq 0 ]; then
        echo "$((total / sent)) -"
    else
        echo "$((total / sent)) $((ftotal / (first + 1)))"
    fi
}
