# SPDX-License-Identifier: Apache-2.0
# Sourced by t/run and tests/transport/run.sh: a test CA and certificates
# made with the openssl command, a TLS redis-server, and a Sentinel set-up
# (a master, two replicas, three Sentinels) on loopback. Every server is
# started daemonized with a pid file under its directory, and
# sl_servers_tls_stop stops all of them.
#
#   sl_tls_certs DIR          ca.pem, other-ca.pem and {server,expired,
#                             wronghost,client}.{pem,key} in DIR
#   sl_tls_redis_start VAR DIR CERT AUTH [ARGS...]
#                             a TLS-only redis-server in DIR/redis-CERT-AUTH
#                             (tls-auth-clients AUTH: no, optional, yes),
#                             serving DIR/CERT.pem; its port in VAR
#   sl_sentinel_start DIR [DATA_PASSWORD [SENTINEL_PASSWORD]]
#                             master, replicas, Sentinels (master name
#                             slmaster); sets SL_SENTINEL_MASTER_PORT,
#                             SL_SENTINEL_PORTS (comma separated),
#                             SL_SENTINEL_REPLICA_PORTS, SL_SENTINEL_DIR
#                             ($DIR/master/redis.conf restarts the master)
#   sl_acl_setuser PASSWORD PREFIX REDIS-CLI-ARGS...
#                             creates the reference's least-privilege ACL user
#                             (ratelimit) on that server, the line taken
#                             from docs/REFERENCE.md as written there
#   sl_tls_servers_up CERTS DIR   the servers of t/51 and t/52 (see there)
#   sl_servers_tls_stop       stops everything the functions above started
#
# Needs free_port (tools/free-port.sh) in the caller.

SL_TLS_PIDFILES=()
SL_TLS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Waits for a pid file and a PING answer: redis-cli ARGS... ping.
sl_wait_redis() {
    local i
    for i in $(seq 1 100); do
        redis-cli "$@" ping 2>/dev/null | grep -q PONG && return 0
        sleep 0.1
    done
    echo "redis-server ($*) did not start" >&2
    return 1
}

# One leaf certificate signed by the CA in DIR: NAME SUBJECT SAN [faketime
# offset for an expired one].
sl_tls_leaf() {
    local dir=$1 name=$2 cn=$3 san=$4 ext=$dir/$2.ext
    printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' \
        "$san" >"$ext"
    openssl req -new -newkey rsa:2048 -nodes -subj "/CN=$cn" \
        -keyout "$dir/$name.key" -out "$dir/$name.csr" 2>/dev/null || return 1
    if [ -n "${5:-}" ]; then
        faketime -f "$5" openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.pem" \
            -CAkey "$dir/ca.key" -CAcreateserial -days 1 -extfile "$ext" \
            -out "$dir/$name.pem" 2>/dev/null || return 1
    else
        openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.pem" \
            -CAkey "$dir/ca.key" -CAcreateserial -days 30 -extfile "$ext" \
            -out "$dir/$name.pem" 2>/dev/null || return 1
    fi
    rm -f "$dir/$name.csr" "$ext"
}

sl_tls_certs() {
    local dir=$1
    mkdir -p "$dir"
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=sl test CA" \
        -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null || return 1
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 \
        -subj "/CN=sl other CA" -keyout "$dir/other-ca.key" \
        -out "$dir/other-ca.pem" 2>/dev/null || return 1
    sl_tls_leaf "$dir" server localhost 'DNS:localhost,IP:127.0.0.1' &&
        sl_tls_leaf "$dir" wronghost wrong.example 'DNS:wrong.example' &&
        sl_tls_leaf "$dir" expired localhost 'DNS:localhost,IP:127.0.0.1' \
            '-3d' &&
        sl_tls_leaf "$dir" client sl-client 'DNS:sl-client' || return 1
    # Readable by the user the suite runs as, never by others.
    chmod 600 "$dir"/*.key
}

sl_tls_redis_start() {
    local var=$1 certs=$2 cert=$3 auth=$4 dir port
    shift 4
    dir=$certs/redis-$cert-$auth
    mkdir -p "$dir"
    port=$(free_port 10000 10000) || return 1
    redis-server --port 0 --tls-port "$port" --bind 127.0.0.1 \
        --tls-cert-file "$certs/$cert.pem" --tls-key-file "$certs/$cert.key" \
        --tls-ca-cert-file "$certs/ca.pem" --tls-auth-clients "$auth" \
        --save '' --appendonly no --daemonize yes --dir "$dir" \
        --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" "$@" ||
        return 1
    SL_TLS_PIDFILES+=("$dir/redis.pid")
    if [ "$cert" != expired ]; then
        # --cacert with the suite's own CA: every redis-cli with TLS (6.0
        # on) has it, where --insecure is new in 6.2.
        sl_wait_redis --tls --cacert "$certs/ca.pem" --cert "$certs/client.pem" \
            --key "$certs/client.key" -p "$port" >/dev/null || return 1
    elif redis-cli --insecure --version >/dev/null 2>&1; then
        sl_wait_redis --tls --insecure --cert "$certs/client.pem" \
            --key "$certs/client.key" -p "$port" >/dev/null || return 1
    else
        # Before 6.2 no redis-cli talks to a server whose certificate has
        # expired: the server's own word that it listens is all there is.
        sl_wait_redis_log "$dir/redis.log" || return 1
    fi
    printf -v "$var" '%s' "$port"
}

# Waits for a redis-server's log to say it accepts connections (every
# version says "Ready to accept connections").
sl_wait_redis_log() {
    local i
    for i in $(seq 1 100); do
        grep -q 'Ready to accept connections' "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "redis-server ($1) did not start" >&2
    return 1
}

# A replica or master for the Sentinel set-up: DIR NAME PORT PASSWORD
# [replicaof]. Every node has the password, as masterauth too: after a
# failover any of them may be the master.
sl_sentinel_node() {
    local dir=$1/$2 port=$3 pw=$4
    mkdir -p "$dir"
    cat >"$dir/redis.conf" <<CONF
port $port
bind 127.0.0.1
save ""
appendonly no
daemonize yes
dir $dir
pidfile $dir/redis.pid
logfile $dir/redis.log
${pw:+requirepass $pw}
${pw:+masterauth $pw}
${5:+replicaof 127.0.0.1 $5}
CONF
    redis-server "$dir/redis.conf" || return 1
    SL_TLS_PIDFILES+=("$dir/redis.pid")
    REDISCLI_AUTH=$pw sl_wait_redis -p "$port"
}

sl_sentinel_start() {
    local dir=$1 dpw=${2:-} spw=${3:-} mp r1 r2 sp i ports= peerpw=${3:-}
    mkdir -p "$dir"
    # "sentinel sentinel-pass" is new in Redis 6.2; before, a Sentinel
    # gives the other Sentinels its own requirepass, the same here.
    case $(redis-server --version) in
    *" v="[0-5].* | *" v=6.0."*) peerpw= ;;
    esac
    mp=$(free_port 10000 10000) && r1=$(free_port 10000 10000) &&
        r2=$(free_port 10000 10000) || return 1
    sl_sentinel_node "$dir" master "$mp" "$dpw" &&
        sl_sentinel_node "$dir" replica1 "$r1" "$dpw" "$mp" &&
        sl_sentinel_node "$dir" replica2 "$r2" "$dpw" "$mp" || return 1
    for i in 1 2 3; do
        sp=$(free_port 10000 10000) || return 1
        mkdir -p "$dir/sentinel$i"
        # Each Sentinel rewrites its own file.
        cat >"$dir/sentinel$i/sentinel.conf" <<CONF
port $sp
bind 127.0.0.1
daemonize yes
dir $dir/sentinel$i
pidfile $dir/sentinel$i/sentinel.pid
logfile $dir/sentinel$i/sentinel.log
sentinel monitor slmaster 127.0.0.1 $mp 2
sentinel down-after-milliseconds slmaster 1000
sentinel failover-timeout slmaster 3000
sentinel parallel-syncs slmaster 2
${dpw:+sentinel auth-pass slmaster $dpw}
${spw:+requirepass $spw}
${peerpw:+sentinel sentinel-pass $peerpw}
CONF
        redis-server "$dir/sentinel$i/sentinel.conf" --sentinel || return 1
        SL_TLS_PIDFILES+=("$dir/sentinel$i/sentinel.pid")
        REDISCLI_AUTH=$spw sl_wait_redis -p "$sp" || return 1
        ports=${ports:+$ports,}$sp
    done
    export SL_SENTINEL_MASTER_PORT=$mp SL_SENTINEL_PORTS=$ports
    export SL_SENTINEL_REPLICA_PORTS=$r1,$r2 SL_SENTINEL_DIR=$dir
}

sl_acl_setuser() {
    local pw=$1 prefix=$2 line words ver
    shift 2
    line=$(sed -n 's/^    \(ACL SETUSER ratelimit .*\)$/\1/p' \
        "$SL_TLS_ROOT/docs/REFERENCE.md" | head -1)
    [ -n "$line" ] || { echo "docs/REFERENCE.md has no ACL SETUSER line" >&2; return 1; }
    line=${line//>PASSWORD/>$pw}
    line=${line//\~sl:\*/\~$prefix:*}
    read -ra words <<<"$line"
    # Channel permissions (resetchannels) are new in Redis 6.2: before, as
    # the README says, the line is the same without that word.
    ver=$(redis-cli "$@" info server | tr -d '\r' | sed -n 's/^redis_version://p')
    case $ver in
    [0-5].* | 6.0.*) read -ra words <<<"${line/ resetchannels/}" ;;
    esac
    redis-cli "$@" "${words[@]}" | grep -q '^OK$'
}

# Everything t/60-tls.t and t/61-sentinel.t use, exported for them: TLS
# redis-servers with a good, an expired and a wrong-host certificate and
# one that wants client certificates (the README's ACL user on the good
# one), and the Sentinel set-up with passwords.
sl_tls_servers_up() {
    local certs=$1 dir=$2
    sl_tls_redis_start SL_TEST_TLS_PORT "$certs" server optional &&
        sl_tls_redis_start SL_TEST_TLS_EXPIRED_PORT "$certs" expired no &&
        sl_tls_redis_start SL_TEST_TLS_WRONGHOST_PORT "$certs" wronghost no &&
        sl_tls_redis_start SL_TEST_TLS_CLIENT_PORT "$certs" server yes || return 1
    export SL_TEST_TLS_PORT SL_TEST_TLS_EXPIRED_PORT SL_TEST_TLS_WRONGHOST_PORT \
        SL_TEST_TLS_CLIENT_PORT
    export SL_TEST_TLS_ACL_PASSWORD=acl$RANDOM$RANDOM
    sl_acl_setuser "$SL_TEST_TLS_ACL_PASSWORD" sltest --tls \
        --cacert "$certs/ca.pem" -p "$SL_TEST_TLS_PORT" || return 1
    export SL_TEST_SENTINEL_DATA_PASSWORD=data$RANDOM$RANDOM
    export SL_TEST_SENTINEL_PASSWORD=snt$RANDOM$RANDOM
    sl_sentinel_start "$dir" "$SL_TEST_SENTINEL_DATA_PASSWORD" \
        "$SL_TEST_SENTINEL_PASSWORD"
}

sl_servers_tls_stop() {
    local f pid= pids=() i
    for f in "${SL_TLS_PIDFILES[@]}"; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        kill -CONT "$pid" 2>/dev/null
        kill "$pid" 2>/dev/null && pids+=("$pid")
    done
    SL_TLS_PIDFILES=()
    # They are not our children: wait for them to be gone (5 s at most).
    for i in $(seq 1 50); do
        for pid in "${pids[@]}"; do
            kill -0 "$pid" 2>/dev/null && break
            pid=
        done
        [ -z "$pid" ] && break
        sleep 0.1
    done
}
