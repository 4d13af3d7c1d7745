#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# make demo / make demo-stop: a private redis-server and httpd on 127.0.0.1
# with the example configuration, and a burst that goes from 200 to 429.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEMO=${TMPDIR:-/tmp}/slidinglimit-demo-$(id -u)
MODS=/usr/lib/apache2/modules

stop() {
    if [ -f "$DEMO/httpd.pid" ]; then
        kill "$(cat "$DEMO/httpd.pid")" 2>/dev/null || true
    fi
    if [ -f "$DEMO/redis.pid" ]; then
        kill "$(cat "$DEMO/redis.pid")" 2>/dev/null || true
    fi
    for _ in $(seq 1 50); do
        if ! { [ -f "$DEMO/httpd.pid" ] && kill -0 "$(cat "$DEMO/httpd.pid")" 2>/dev/null; } &&
            ! { [ -f "$DEMO/redis.pid" ] && kill -0 "$(cat "$DEMO/redis.pid")" 2>/dev/null; }; then
            break
        fi
        sleep 0.1
    done
    rm -rf "$DEMO"
}

. "$(dirname "${BASH_SOURCE[0]}")/../tools/free-port.sh"

if [ "${1:-start}" = stop ]; then
    stop
    echo "demo stopped"
    exit 0
fi

stop
# A world-readable copy: started as root, httpd serves as "nobody", which
# may not read a checkout under /root.
mkdir -p "$DEMO/htdocs/api" "$DEMO/logs"
chmod 755 "$DEMO" "$DEMO/htdocs" "$DEMO/htdocs/api"
cp "$ROOT/.libs/mod_slidinglimit.so" "$DEMO/"
echo '{"hello":"world"}' > "$DEMO/htdocs/api/index.json"
chmod 644 "$DEMO/htdocs/api/index.json"
REDIS_PORT=$(free_port)
HTTP_PORT=$(free_port)

redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize yes --pidfile "$DEMO/redis.pid" --logfile "$DEMO/redis.log" \
    --dir "$DEMO" >/dev/null
user=""
if [ "$(id -u)" -eq 0 ]; then
    user="User nobody
Group nogroup"
    chown nobody "$DEMO/logs"
fi
cat > "$DEMO/httpd.conf" <<CONF
ServerRoot $DEMO
ServerName 127.0.0.1
Listen 127.0.0.1:$HTTP_PORT
PidFile $DEMO/httpd.pid
ErrorLog $DEMO/logs/error.log
LogLevel warn
$user
LoadModule mpm_event_module $MODS/mod_mpm_event.so
LoadModule authz_core_module $MODS/mod_authz_core.so
LoadModule mime_module $MODS/mod_mime.so
LoadModule dir_module $MODS/mod_dir.so
LoadModule slidinglimit_module $DEMO/mod_slidinglimit.so
TypesConfig /etc/mime.types
DirectoryIndex index.json
DocumentRoot $DEMO/htdocs
LogFormat "%h \"%r\" %>s %{SLIDINGLIMIT_RESULT}e remaining=%{SLIDINGLIMIT_REMAINING}e" demo
CustomLog $DEMO/logs/access.log demo
<Directory $DEMO/htdocs>
    Require all granted
</Directory>

# The limiter: five requests per ten seconds per client address, counted
# in a shared Redis.
SlidingLimitStore redis://127.0.0.1:$REDIS_PORT
<Location /api>
    SlidingLimit 5 10s name=api
</Location>
CONF
/usr/sbin/apache2 -f "$DEMO/httpd.conf" -k start
for _ in $(seq 1 50); do
    curl -s -o /dev/null "http://127.0.0.1:$HTTP_PORT/" && break
    sleep 0.1
done

echo "redis-server on 127.0.0.1:$REDIS_PORT, httpd on 127.0.0.1:$HTTP_PORT"
echo "<Location /api> SlidingLimit 5 10s name=api"
echo
for i in 1 2 3 4 5 6 7; do
    out=$(curl -s -D - -o "$DEMO/body" "http://127.0.0.1:$HTTP_PORT/api/")
    status=$(printf '%s' "$out" | head -1 | tr -d '\r')
    printf 'request %d: %s\n' "$i" "$status"
    printf '%s\n' "$out" | grep -iE '^(ratelimit|x-ratelimit|retry-after)' |
        tr -d '\r' | sed 's/^/    /'
    case "$status" in *429*) echo "    body: $(cat "$DEMO/body")" ;; esac
done
echo
echo "access log ($DEMO/logs/access.log):"
sed 's/^/    /' "$DEMO/logs/access.log"
echo
echo "Still running for you to try: curl -i http://127.0.0.1:$HTTP_PORT/api/"
echo "Stop everything with: make demo-stop"
