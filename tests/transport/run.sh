#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Builds tests/transport/sl_transport_test and runs it against redis-servers
# started here: plain (TCP and a unix socket) and TLS with the suite's
# certificates (t/servers-tls.sh); then the bounded name resolution, in a
# user and network namespace whose resolver never answers, when this
# machine allows one; then Sentinel discovery and a failover against a
# master, two replicas and three Sentinels. Everything started here stops
# on exit.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$ROOT/tools/free-port.sh"
. "$ROOT/t/servers-tls.sh"

APR_INC="$(apr-1-config --cppflags --includes)"
APR_LIBS="$(apr-1-config --link-ld --libs)"
# shellcheck disable=SC2086
cc -std=gnu99 -g -O2 -Wall -Wextra -I"$ROOT/src" $APR_INC \
    -o "$HERE/sl_transport_test" "$HERE/sl_transport_test.c" \
    "$ROOT/src/sl_transport.c" "$ROOT/src/sl_socket.c" "$ROOT/src/sl_sentinel.c" \
    "$ROOT/src/sl_url.c" "$ROOT/src/sl_ident.c" "$ROOT/src/sl_limit.c" $APR_LIBS $(apu-1-config --link-ld --libs) -lhiredis -lssl -lcrypto -lm -pthread ||
    exit 1

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sl-transport.XXXXXX")
cleanup() {
    sl_servers_tls_stop
    if [ -n "${SL_T_KEEP:-}" ]; then
        echo "kept $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT

export SL_T_CERTS=$WORK/certs
sl_tls_certs "$SL_T_CERTS" || { echo "cannot make the test certificates"; exit 1; }

mkdir -p "$WORK/plain"
SL_T_PLAIN_PORT=$(free_port 10000 10000) || exit 1
export SL_T_PLAIN_PORT SL_T_UNIX=$WORK/plain/redis.sock
redis-server --port "$SL_T_PLAIN_PORT" --bind 127.0.0.1 \
    --unixsocket "$SL_T_UNIX" --save '' --appendonly no --daemonize yes \
    --dir "$WORK/plain" --pidfile "$WORK/plain/redis.pid" \
    --logfile "$WORK/plain/redis.log" || exit 1
SL_TLS_PIDFILES+=("$WORK/plain/redis.pid")
sl_wait_redis -p "$SL_T_PLAIN_PORT" >/dev/null || exit 1
SL_T_CLOSED_PORT=$(free_port 10000 10000) || exit 1
export SL_T_CLOSED_PORT

# The suite's TLS servers (the README's ACL user on the good one) and
# Sentinel set-up.
sl_tls_servers_up "$SL_T_CERTS" "$WORK/sentinel" ||
    { echo "cannot start the TLS and Sentinel servers"; exit 1; }
export SL_T_TLS_PORT=$SL_TEST_TLS_PORT SL_T_TLS_EXPIRED_PORT=$SL_TEST_TLS_EXPIRED_PORT \
    SL_T_TLS_WRONGHOST_PORT=$SL_TEST_TLS_WRONGHOST_PORT \
    SL_T_TLS_CLIENT_PORT=$SL_TEST_TLS_CLIENT_PORT \
    SL_T_ACL_PASSWORD=$SL_TEST_TLS_ACL_PASSWORD \
    SL_T_DATA_PASSWORD=$SL_TEST_SENTINEL_DATA_PASSWORD \
    SL_T_SENTINEL_PASSWORD=$SL_TEST_SENTINEL_PASSWORD

"$HERE/sl_transport_test" || exit 1

printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"$WORK/resolv.conf"
if unshare -rnm true 2>/dev/null; then
    unshare -rnm sh -c "ip link set lo up && mount --bind '$WORK/resolv.conf' \
        /etc/resolv.conf && exec '$HERE/sl_transport_test' dns" || exit 1
else
    echo "sl_transport (dns): skipped, no user namespace on this machine"
fi

# The Sentinel set-up: the test kills the master and follows the failover.
"$HERE/sl_transport_test" sentinel || exit 1
