#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Bytes per identity (counter, gcra) and per admitted request (log) in
# Redis, measured with INFO memory (used_memory before and after) on a
# private redis-server, with the real script (lua/sl_check.lua) where the
# layout is the one in use, and with the same state written directly for
# the counter layouts compared against it (the same state: the current
# window's count and the previous one's, with the same TTL).
#
#   bash bench/memory.sh [IDENTITIES]     (default 10000; make memory)
#
# Keys have the module's shape: sltest:{16 base64 chars}8 base64 chars.X
# (prefix sltest, a 12-byte identity hash, a 6-byte policy id). Log members
# are 12 random bytes, as the module sends them. Deterministic (seeded);
# bounded: at most 2 x IDENTITIES script calls per scenario, maxmemory 1 GB.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
IDS=${1:-10000}
DIR=$(mktemp -d "${TMPDIR:-/tmp}/sl-memory.XXXXXX")
PID=
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$DIR"
}
trap cleanup EXIT

. "$ROOT/tools/free-port.sh"
PORT=$(free_port) || { echo "no free port" >&2; exit 1; }
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$DIR" --logfile "$DIR/redis.log" --maxmemory 1gb \
    --maxmemory-policy noeviction &
PID=$!
R="redis-cli -p $PORT"
for _ in $(seq 1 50); do $R ping >/dev/null 2>&1 && break; sleep 0.1; done
# The script as the module runs it (tools/embed-lua.sh puts the layout
# and lua/sl_prelude.lua before it).
SHA=$($R script load "$(cd "$ROOT" && sh tools/embed-lua.sh --text lua/sl_check.lua sl_script_check)")

used() { $R info memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p'; }

# gen MODE N PER: RESP commands on stdout (perl, seeded).
gen() {
    perl -e '
        use strict; use MIME::Base64;
        my ($mode, $n, $per, $sha) = @ARGV;
        srand(42);
        sub rb { join "", map { chr(int(rand(256))) } 1 .. $_[0] }
        sub b64 { my $s = encode_base64($_[0], ""); $s }
        sub cmd { my $c = "*" . @_ . "\r\n"; $c .= "\$" . length($_) . "\r\n$_\r\n" for @_; print $c }
        my $pol = b64(rb(6));
        my $idx = int(time() / 60);
        for my $i (1 .. $n) {
            my $k = "sltest:{" . b64(rb(12)) . "}" . $pol;
            for my $j (1 .. $per) {
                if ($mode eq "log") {
                    cmd("EVALSHA", $sha, 1, "$k.l", rb(12), "l", 1000000, 3600000000, 1000000, 1, 0);
                } elsif ($mode eq "counter") {
                    cmd("EVALSHA", $sha, 1, "$k.c", rb(12), "c", 100, 60000000, 100, 1, 0);
                } elsif ($mode eq "gcra") {
                    cmd("EVALSHA", $sha, 1, "$k.g", rb(12), "g", 100, 60000000, 100, 1, 0);
                } elsif ($mode eq "gcra-frac") {
                    cmd("EVALSHA", $sha, 1, "$k.g", rb(12), "g", 7, 1000000, 7, 1, 0);
                } elsif ($mode eq "counter-hash") {
                    cmd("HSET", "$k.c", "i", $idx, "c", 1, "p", 0);
                    cmd("PEXPIRE", "$k.c", 120000);
                } elsif ($mode eq "counter-2keys") {
                    cmd("SET", "$k.c:" . $idx, 1, "PX", 120000);
                    cmd("SET", "$k.c:" . ($idx - 1), 7, "PX", 60000);
                } elsif ($mode eq "counter-string") {
                    cmd("SET", "$k.c", "$idx:1:7", "PX", 120000);
                }
            }
        }' "$1" "$2" "$3" "$SHA"
}

measure() {
    local label=$1 mode=$2 n=$3 per=$4 unit=$5
    $R flushall >/dev/null
    local before after
    before=$(used)
    gen "$mode" "$n" "$per" | $R --pipe >/dev/null
    after=$(used)
    awk -v l="$label" -v d=$((after - before)) -v n="$n" -v per="$per" -v u="$unit" \
        'BEGIN { c = (u == "request") ? n * per : n;
                 printf "%-56s %7d %-10s %7.1f bytes/%s\n", l, c, (u == "identity" ? "identities" : u "s"), d / c, u }'
}

echo "redis $($R info server | sed -n 's/^redis_version:\(.*\)\r$/\1/p'), $IDS identities"
# A first round that is not reported: one-off allocations (the script's
# first run, dictionary growth) stay out of the figures.
measure "warm-up" counter "$IDS" 1 identity >/dev/null
echo "--- counter (one admitted request per identity)"
measure "counter: integer TPPPPPPPPPCCCCCCCCC (sl_check.lua)" counter "$IDS" 1 identity
measure "counter: string idx:cur:prev" counter-string "$IDS" 1 identity
measure "counter: hash {i,c,p}" counter-hash "$IDS" 1 identity
measure "counter: one key per window (cur + prev)" counter-2keys "$IDS" 1 identity
echo "--- gcra"
measure "gcra: 100/60s, whole-microsecond TAT (sl_check.lua)" gcra "$IDS" 1 identity
measure "gcra: 7/1s, fractional TAT (sl_check.lua)" gcra-frac "$IDS" 1 identity
echo "--- sliding log (sl_check.lua)"
measure "log: 1 entry per identity" log "$IDS" 1 identity
measure "log: 10 entries per identity" log $((IDS / 10)) 10 request
measure "log: 100 entries per identity" log $((IDS / 100)) 100 request
measure "log: 1000 entries (skiplist)" log $((IDS / 200 > 0 ? IDS / 200 : 1)) 1000 request

# Script time, as SLOWLOG sees it (microseconds), for one more request on a
# key that already holds N log entries: the work grows with the entries
# trimmed and the log's size (ZREMRANGEBYSCORE, ZRANGE).
echo "--- script time per call (SLOWLOG, microseconds; median of 200 calls)"
for n in 1 100 1000 10000; do
    $R flushall >/dev/null
    gen log 1 "$n" | $R --pipe >/dev/null
    key=$($R --scan --pattern 'sltest:*' | head -1)
    # Redis 7 logs the script's own commands too: room for all of them.
    $R config set slowlog-log-slower-than 0 slowlog-max-len 2000 >/dev/null
    $R slowlog reset >/dev/null
    for i in $(seq 200); do
        echo "EVALSHA $SHA 1 $key probe-$i l 100000000 3600000000 100000000 1 0"
    done | $R >/dev/null
    med=$($R --no-raw slowlog get 2000 | perl -ne '
        if (/^\d+\) 1\) \(integer\)/) { push @d, $dur if $eval; $eval = 0 }
        $dur = $1 if /^\s+3\) \(integer\) (\d+)/;
        $eval = 1 if /4\)\s+1\) "EVALSHA"/;
        END { push @d, $dur if $eval; @d = sort { $a <=> $b } @d;
              print $d[$#d / 2] // "?" }')
    printf '  log of %-6s entries: %s us\n' "$n" "$med"
    $R config set slowlog-log-slower-than 10000 >/dev/null
done
