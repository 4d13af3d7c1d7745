#!/bin/bash
# Measures what mod_slidinglimit's keys cost in Redis: starts a private
# redis-server on a free loopback port, loads keys through the real script
# (lua/sl_check.lua, EVALSHA, keys and members shaped as the module makes
# them), and prints used_memory deltas from INFO memory.
#
#   bash tools/redis-memory.sh        (about a minute; needs redis-server)
#
# Figures for docs/OPERATIONS.md. Nothing outside the private server is
# touched; it is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=$((30000 + RANDOM % 20000))
DIR=$(mktemp -d)
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$DIR" --logfile "$DIR/redis.log" &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DIR"' EXIT
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
cli() { redis-cli -p "$PORT" "$@"; }
SHA=$(cli SCRIPT LOAD "$(cat lua/sl_check.lua)")
echo "redis $(cli INFO server | sed -n 's/^redis_version:\(.*\)\r$/\1/p'), script $SHA"
echo "zset-max-listpack-entries $(cli CONFIG GET zset-max-listpack-entries | tail -1)"

used() { cli INFO memory | sed -n 's/^used_memory:\([0-9]*\)\r$/\1/p'; }

# load ALG IDENTITIES REQUESTS_EACH LIMIT WINDOW_US
load() {
    perl -e '
        my ($sha, $alg, $ids, $each, $limit, $win) = @ARGV;
        my @b64 = ("A".."Z", "a".."z", 0..9, "+", "/");
        sub rnd { join "", map { $b64[rand 64] } 1 .. $_[0] }
        my $pol = rnd(8);
        my $n = 0;
        for my $i (1 .. $ids) {
            my $key = "sl:{" . rnd(16) . "}$pol.$alg";
            for my $j (1 .. $each) {
                my $member = pack("a8N", rnd(8), ++$n);   # 12 bytes, as the module
                my @a = ("EVALSHA", $sha, 1, $key, $member, $alg, $limit, $win, $limit);
                print "*" . @a . "\r\n", map { "\$" . length($_) . "\r\n$_\r\n" } @a;
            }
        }' "$SHA" "$@" | cli --pipe > "$DIR/pipe.out" 2>&1
    grep -q "errors: 0," "$DIR/pipe.out" || { echo "load failed:"; tail -3 "$DIR/pipe.out"; exit 1; }
}

measure() { # LABEL ALG IDENTITIES EACH LIMIT WINDOW_US
    local label=$1; shift
    cli FLUSHALL >/dev/null
    local before after keys entries
    before=$(used)
    load "$@"
    after=$(used)
    keys=$(cli DBSIZE)
    entries=$(($2 * $3))
    printf '%-34s keys=%-6s used=%9s B  per key=%6s B  per request=%5s B\n' \
        "$label" "$keys" "$((after - before))" "$(((after - before) / keys))" \
        "$(((after - before) / entries))"
}

measure "log, 1 entry per identity" l 20000 1 1000 3600000000
measure "log, 10 entries per identity" l 5000 10 1000 3600000000
measure "log, 100 entries per identity" l 500 100 1000 3600000000
measure "log, 1000 entries (skiplist)" l 50 1000 1000 3600000000
measure "counter, per identity" c 20000 1 1000 3600000000
measure "gcra, per identity" g 20000 1 1000 3600000000

# Script time, as SLOWLOG sees it (microseconds), for one more request on a
# key that already holds N entries: the work grows with the entries trimmed
# and the log's size (ZREMRANGEBYSCORE, ZRANGE).
echo "script time per call (SLOWLOG, microseconds; median of 200 calls):"
for n in 1 100 1000 10000; do
    cli FLUSHALL >/dev/null
    load l 1 "$n" 100000000 3600000000
    key=$(cli --scan --pattern 'sl:*' | head -1)
    cli CONFIG SET slowlog-log-slower-than 0 >/dev/null
    cli SLOWLOG RESET >/dev/null
    for i in $(seq 200); do
        echo "EVALSHA $SHA 1 $key probe-$i l 100000000 3600000000 100000000"
    done | cli >/dev/null
    med=$(cli --no-raw SLOWLOG GET 200 | perl -ne '
        if (/^\d+\) 1\) \(integer\)/) { push @d, $dur if $eval; $eval = 0 }
        $dur = $1 if /^\s+3\) \(integer\) (\d+)/;
        $eval = 1 if /4\) 1\) "EVALSHA"/;
        END { push @d, $dur if $eval; @d = sort { $a <=> $b } @d;
              print $d[$#d / 2] // "?" }')
    printf '  log of %-6s entries: %s us\n' "$n" "$med"
    cli CONFIG SET slowlog-log-slower-than 10000 >/dev/null
done
