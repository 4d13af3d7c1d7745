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

# conf_size MPM: the benchmarks' children and threads.
conf_size() { # mpm
    if [ "$1" = event ]; then
        cat <<CONF
StartServers 2
ServerLimit 4
ThreadsPerChild 25
MinSpareThreads 25
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
