#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The table of bench/run.sh's results, and (with a docs directory) the
# documents: docs/BENCHMARKS.md and docs/benchmarks.png.
#
#   report.sh --table RESULTS.tsv      print the Markdown tables
#   report.sh RESULTS.tsv DOCS_DIR     write BENCHMARKS.md and the plot
#   report.sh --section RESULTS.tsv DOCS_DIR
#                                      a run of selected rows: its tables
#                                      as a section of DOCS_DIR/BENCHMARKS.md,
#                                      in place of the previous one; the
#                                      rest of the file stays
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)

# RESULTS.tsv columns (bench/run.sh): name mpm conns description rps p50
# p99 total non2xx evalsha other-commands new-connections memory-delta keys
# store-errors deny-cache-hits ref-rps ref-p50 ref-p99 redis-usec-per-call
# httpd-cpu-us ref-httpd-cpu-us redis-cpu-us eval row-new-connections
# row-sentinel-connections row-requests low-p99 low-ref-p99 low-rps
# low-ref-rps module-instructions httpd-syscalls ref-httpd-syscalls
# redis-syscalls redis-cpu-us-per-call module-instructions-first
# low-p99-added ("-" where not measured); FAILED in
# column 5 when a configuration could not be measured. Beside it,
# scripts.tsv (bench/scripts.c): name description decisions wall-seconds
# redis-cpu-seconds refusals errors.
table() {
    awk -F'\t' '
    function f(x, d) { return sprintf("%." d "f", x) }
    {
        if ($5 == "FAILED") {
            printf "| %s | %s | %s | %s | failed | | | | | | | | |\n", $1, $4, $2, $3
            next
        }
        low = ($38 != "" && $38 != "-") ? f($38, 3) : "-"
        printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s%% |\n",
            $1, $4, $2, $3, f($5, 0), f($17, 0), f($5 / $17, 2), f($6, 3),
            f($7, 3), f($19, 3), f($7 - $19, 3), low, f(100 * $9 / $8, 1)
    }' "$1"
}

# The module's own cost per request: instructions in its hooks
# (callgrind), system calls of httpd against its reference's and of
# redis-server, and redis-server's CPU per script call.
modcost() {
    awk -F'\t' '
    function f(x, d) { return (x == "" || x == "-") ? "-" : sprintf("%." d "f", x) }
    $5 != "FAILED" {
        added = ($33 != "" && $33 != "-" && $34 != "-") ? sprintf("%+.2f", $33 - $34) : "-"
        printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, f($32, 0),
            f($37, 0), f($33, 2), f($34, 2), added, f($35, 2), f($36, 1)
    }' "$1"
}

modcost_header() {
    echo "| case | instructions per request in the module (callgrind), identity seen before | the same, an identity's first request | httpd system calls per request (-c${SL_BENCH_LOWCONNS:-4}) | reference's | added | redis-server system calls per request | redis-server CPU µs per decision (per script call) |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
}

# The module-free reference's requests/s, beside which every row was
# measured: the mean over the rows of each MPM and load.
references() {
    awk -F'\t' '
    $5 != "FAILED" && $1 !~ /-vs-tcp$/ {
        k = $2 " -c" $3; s[k] += $17; n[k]++
        if ($31 != "" && $31 != "-" && $3 != 4) { l = $2 " -c4"; s[l] += $31; n[l]++ }
    }
    END {
        out = ""
        for (k in s) out = out (out == "" ? "" : "; ") k " " sprintf("%.0f", s[k] / n[k]) " requests/s"
        if (out != "") print "The module-free reference (httpd alone, measured beside each row; mean over the rows): " out "."
    }' "$1"
}

# Redis's side alone: each script's decisions per second of Redis CPU.
scripts_table() { # scripts.tsv
    echo "| script | what it runs | decisions | decisions/s (wall) | redis-server CPU s | decisions per Redis CPU second | Redis CPU µs per decision | against its textbook script | against the textbook counter | refused, errors |"
    echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    awk -F'\t' '
    $5 > 0 { row[++n] = $0; per[$1] = $3 / $5 }
    END {
        for (i = 1; i <= n; i++) {
            split(row[i], c, "\t")
            p = per[c[1]]
            tb = c[1]; sub(/^sl_check-/, "textbook-", tb)
            own = (tb in per) ? sprintf("%.2f", p / per[tb]) : "-"
            vc = ("textbook-counter" in per) ? sprintf("%.2f", p / per["textbook-counter"]) : "-"
            printf "| %s | %s | %d | %.0f | %.2f | %.0f | %.2f | %s | %s | %d, %d |\n", c[1], c[2], c[3],
                c[3] / c[4], c[5], p, 1e6 / p, own, vc, c[6], c[7]
        }
    }' "$1"
}
modcost_text() {
    cat <<EOF
The module's own cost per request. Instructions: callgrind on one httpd
-X of the row's configuration (after the row's own httpd has stopped),
counting only the module's request hooks and its per-directory merge,
with everything they call (hiredis, APR, libc; user space only): first
one request of each client address of the row's pool (an identity's
first request: its SHA-1, or HMAC under a key secret, is made), then
${SL_BENCH_CGREQ:-2000} requests from one connection over the same addresses, each
already seen (the steady state of the throughput columns: the identity
comes from the child's memo). System calls: perf's raw_syscalls:sys_enter (strace -c where
perf cannot attach) over every thread of the row's httpd and, separately,
of its redis-server, for ${SL_BENCH_SYSREQ:-2000} requests at -c${SL_BENCH_LOWCONNS:-4}, twice, against
the same count on the row's reference, in ABBA order; the baseline row
shows how far two identical servers differ (how often the event MPM's
threads sleep and wake per request depends on timing).
redis-server's CPU per decision is its CPU over the measured slices
divided by the script calls in them (EVALSHA and EVAL; a deny-cache
answer makes none, a count= give-back is one more); in a row that makes
few calls (the floods) it is mostly redis-server's own periodic work.
EOF
}

scripts_text() {
    cat <<'EOF'
Redis's side of a decision alone (bench/scripts.c, the redis-scripts row):
on the private redis-server, with no httpd running, lua/sl_check.lua with
one limit (called as the module calls it: one key, a 12-byte member, the
limit's six arguments) beside the scripts a user would otherwise write: a
counter with one key per window (GET the current and the previous, the
weighted sum, INCR and EXPIRE; the window from the client's clock) and a
sliding log in a sorted set (ZREMRANGEBYSCORE, ZCARD, ZADD, EXPIRE). Each
runs by EVALSHA from 4 connections with 8 calls in flight each, over 10000
identities (keys of the module's shape), limits never reached, in ABBA
order over 2 rounds, each stretch after a FLUSHALL and a warm-up.
"Decisions per Redis CPU second" divides the decisions by redis-server's
CPU (INFO cpu, user and system) over the stretches: what one Redis core
gives each script, whatever the driver takes of the same cores. sl_check
does more per call than the textbook scripts: the store's own clock
(TIME), every limit's remaining and reset in its reply, blocks, costs, and
one script for every algorithm.
EOF
}

costs() {
    awk -F'\t' '
    function f(x, d) { return sprintf("%." d "f", x) }
    $5 != "FAILED" {
        redis = ($10 > 0 || $23 > 0.5) ? f($23, 1) : "-"
        usec = ($10 > 0 && $20 != "-") ? f($20, 2) : "-"
        perden = ($9 > 0) ? f($10 / $9, 5) : "-"
        bpi = ($14 > 0) ? f($13 / $14, 0) : "-"
        back = ($24 != "") ? f($24 / $8, 4) : "-"
        printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
            $1, f($21, 1), f($22, 1), f($21 - $22, 1), redis, usec,
            f($10 / $8, 4), perden, back, f($11 / $8, 4), $12, bpi, $15, $16
    }' "$1"
}

header() {
    echo "| case | configuration | MPM | conns | requests/s | reference requests/s | ratio | p50 ms | p99 ms | reference p99 ms | p99 added ms | p99 added at -c${SL_BENCH_LOWCONNS:-4} ms | refused |"
    echo "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
}

costs_header() {
    echo "| case | httpd CPU µs per request | reference httpd CPU µs | added httpd CPU µs | redis-server CPU µs per request | Redis µs per EVALSHA (commandstats) | EVALSHA per request | EVALSHA per refusal | give-backs (EVAL) per request | other Redis commands per request | new Redis connections | Redis bytes per identity | store errors | deny-cache answers |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
}

# The counter on each transport, against plain TCP (counter-redis) of the
# same run, each over its own reference; and the connections the store
# received during the whole row (warm-up included), next to the requests.
TRANSPORTS="counter-redis counter-redis-unix counter-tls counter-sentinel counter-cluster"
transports() {
    local base
    base=$(awk -F'\t' '$1 == "counter-redis" && $5 != "FAILED" && $17 > 0 { printf "%.2f", $5 / $17 }' "$1")
    echo "| case | store | requests/s | reference requests/s | ratio | against counter-redis | paired with plain TCP (its -vs-tcp row) | new connections to the store in the row | requests in the row |"
    echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    awk -F'\t' -v list=" $TRANSPORTS " -v base="$base" '
    function f(x, d) { return sprintf("%." d "f", x) }
    $5 != "FAILED" && $1 ~ /-vs-tcp$/ { n = $1; sub(/-vs-tcp$/, "", n); paired[n] = f($5 / $17, 2) }
    index(list, " " $1 " ") && $5 != "FAILED" { row[++rows] = $0 }
    END {
        for (i = 1; i <= rows; i++) {
            split(row[i], c, "\t")
            # As versus() does: the two ratios as shown, one over the other.
            vs = (base > 0) ? f(f(c[5] / c[17], 2) / base, 2) : "n/a"
            conns = (c[25] != "") ? c[25] : "-"
            if (c[26] != "" && c[26] != "-") conns = conns " (Sentinels " c[26] ")"
            store = c[4]; sub(/^[^,]*, /, "", store)
            printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c[1], store,
                f(c[5], 0), f(c[17], 0), f(c[5] / c[17], 2), vs,
                (c[1] in paired) ? paired[c[1]] : "-", conns, (c[27] != "") ? c[27] : "-"
        }
    }' "$1"
}
transports_text() {
    cat <<'EOF'
The counter on each way to reach Redis against plain TCP (counter-redis)
in the same run: each row over its own module-free reference, one ratio
over the other ("against counter-redis"); and paired directly, in the
-vs-tcp rows, whose reference is an httpd of counter-redis's
configuration (slices alternating, so that the machine's drift falls on
both sides: the steadier figure). counter-tls verifies the server's
certificate against the test CA; counter-sentinel asks one of three
Sentinels for the master, checks it with ROLE on a short-lived
connection, then keeps its own (so two connections to the master and one
to a Sentinel per httpd child). New connections are counted over the
whole row, warm-up included: a TLS handshake is one new connection, so a
handful for tens of thousands of requests means connections are reused.
EOF
}
has_transports() {
    awk -F'\t' -v list=" $TRANSPORTS " 'index(list, " " $1 " ") && $1 != "counter-redis" && $5 != "FAILED" { n++ } END { exit !n }' "$1"
}

# What each row adds to the common configuration, from the staged files
# (ports and the staging directory made generic).
configs() { # results stage
    local name f block
    echo "The common part (ServerRoot, Listen, modules, DocumentRoot, KeepAlive,"
    echo "mod_remoteip, MPM sizing) is the same for every row; what each row adds:"
    echo
    awk -F'\t' '{print $1}' "$1" | while read -r name; do
        f=$2/conf/$name.conf
        [ -f "$f" ] || continue
        block=$(sed -n '/^MaxConnectionsPerChild/,$p' "$f" | sed '1d' |
            sed -e "s#$2#\$STAGE#g" \
                -e 's#127\.0\.0\.1:[0-9][0-9]*#127.0.0.1:$PORT#g')
        echo "### $name"
        echo
        if [ -z "$block" ]; then
            echo "(nothing: httpd alone)"
        else
            echo '```apache'
            # t/135-doc-examples.t reads the marker: not one to paste.
            echo '# template: the harness fills in $STAGE and $PORT'
            printf '%s\n' "$block"
            echo '```'
        fi
        echo
    done
}

# scripts.tsv beside the results (bench/run.sh's redis-scripts row).
case ${1:-} in
--table | --section) SCRIPTS_TSV=$(dirname "${2:-.}")/scripts.tsv ;;
*) SCRIPTS_TSV=$(dirname "${1:-.}")/scripts.tsv ;;
esac
has_scripts() { [ -s "$SCRIPTS_TSV" ]; }

if [ "${1:-}" = --table ]; then
    references "$2"
    echo
    header
    table "$2"
    echo
    costs_header
    costs "$2"
    echo
    modcost_header
    modcost "$2"
    if has_transports "$2"; then
        echo
        transports "$2"
    fi
    if has_scripts; then
        echo
        scripts_table "$SCRIPTS_TSV"
    fi
    exit 0
fi

if [ "${1:-}" = --section ]; then
    RESULTS=$2
    MD=$3/BENCHMARKS.md
    STAGE=${SL_BENCH_STAGE:-}
    SECTION=$(mktemp)
    {
        echo "<!-- selected rows: begin -->"
        echo "## Selected rows, $(date -u '+%Y-%m-%d %H:%M UTC')"
        echo
        echo "A run of selected rows only (\`SL_BENCH_ONLY=\"$(cut -f1 "$RESULTS" | paste -sd' ')\"\`),"
        echo "mod_slidinglimit $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown),"
        echo "${SL_BENCH_SLICES:-4} slices of ${SL_BENCH_SLICE:-3} s per row, load average $(cut -d' ' -f1-3 /proc/loadavg)"
        echo "when the tables were written. ${SL_BENCH_NOTE:-}"
        echo "Its rows replace none of the full run's below; compare ratios within"
        echo "one run only."
        echo
        references "$RESULTS"
        echo
        header
        table "$RESULTS"
        echo
        costs_header
        costs "$RESULTS"
        echo
        modcost_text
        echo
        modcost_header
        modcost "$RESULTS"
        if has_scripts; then
            echo
            scripts_text
            echo
            scripts_table "$SCRIPTS_TSV"
        fi
        if has_transports "$RESULTS"; then
            echo
            transports_text
            echo
            transports "$RESULTS"
        fi
        if awk -F'\t' '$1 ~ /^(cost|count)-/ { f = 1 } END { exit !f }' "$RESULTS"; then
            echo
            echo "cost-counter-redis charges 3 units per request (\`cost=3\`); the"
            echo "count-counter rows set \`count=404\` on a page that answers 200, so every request is"
            echo "reserved when it is decided and given back after its response: with"
            echo "Redis a second round trip per request (lua/sl_give_back.lua, run by its"
            echo "hash: counted in the EVALSHA column, two per request)."
        fi
        if [ -n "$STAGE" ] && [ -d "$STAGE/conf" ]; then
            echo
            echo "<details><summary>Configurations of these rows</summary>"
            echo
            configs "$RESULTS" "$STAGE" | sed 's/^### /#### /'
            echo "</details>"
        fi
        echo "<!-- selected rows: end -->"
    } >"$SECTION"
    # In place of the previous section, or before "## Machine and versions".
    awk -v sec="$SECTION" '
        function put() { while ((getline l < sec) > 0) print l; print ""; done = 1 }
        /^<!-- selected rows: begin -->/ { skip = 1; if (!done) put(); next }
        skip { if (/^<!-- selected rows: end -->/) { skip = 0; drop = 1 } ; next }
        drop && /^$/ { drop = 0; next }
        { drop = 0 }
        /^## Machine and versions/ && !done { put() }
        { print }
    ' "$MD" >"$MD.new" && mv "$MD.new" "$MD"
    rm -f "$SECTION"
    echo "report: wrote the selected rows into $MD"
    exit 0
fi

RESULTS=$1
DOCS=$2
STAGE=${SL_BENCH_STAGE:-}
mkdir -p "$DOCS"
MD=$DOCS/BENCHMARKS.md
PNG=$DOCS/benchmarks.png

# Field c of case n.
get() { awk -F'\t' -v n="$1" -v c="$2" '$1 == n && $5 != "FAILED" {print $c}' "$RESULTS"; }
# A case's requests/s over its own reference's, measured alongside.
ratio() { # case
    awk -v a="$(get "$1" 5)" -v b="$(get "$1" 17)" 'BEGIN { if (a == "" || b == "" || b == 0) print "n/a"; else printf "%.2f", a / b }'
}
# One case's ratio over another's: same work, each against its reference.
versus() { # case other
    awk -v a="$(ratio "$1")" -v b="$(ratio "$2")" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.2f", a / b }'
}
verdict() { # value op target
    awk -v v="$1" -v op="$2" -v t="$3" 'BEGIN {
        if (v == "n/a" || v == "") { print "not measured"; exit }
        ok = (op == ">=") ? (v + 0 >= t + 0) : (v + 0 <= t + 0)
        print ok ? "met" : "missed" }'
}
per() { # case: EVALSHA per refusal
    awk -F'\t' -v n="$1" '$1 == n && $5 != "FAILED" { if ($9 > 0) printf "%.5f", $10 / $9; else printf "n/a"; found = 1 }
        END { if (!found) printf "n/a" }' "$RESULTS"
}
cpu() { # case: added httpd CPU and redis CPU per request
    awk -v a="$(get "$1" 21)" -v b="$(get "$1" 22)" -v r="$(get "$1" 23)" 'BEGIN { if (a == "") print "n/a"; else printf "%+.1f µs httpd, %.1f µs redis-server", a - b, r }'
}
rowconns() { # case: "N new connections for M requests"
    awk -F'\t' -v n="$1" '$1 == n && $5 != "FAILED" && $25 != "" {
        printf "%s new connections%s for %s requests", $25,
            ($26 != "" && $26 != "-") ? " (and " $26 " to the Sentinels)" : "", $27; found = 1 }
        END { if (!found) printf "connections not counted" }' "$RESULTS"
}
cpushare() { # case: the reference's httpd CPU per request over the case's
    awk -v a="$(get "$1" 21)" -v b="$(get "$1" 22)" 'BEGIN { if (a == "" || a == 0 || b == "") print "n/a"; else printf "%.2f", b / a }'
}
insn() { # case: instructions per request, identity seen before and first
    awk -v a="$(get "$1" 32)" -v b="$(get "$1" 37)" 'BEGIN { if (a == "" || a == "-") print "n/a"; else printf "%s, %s", a, (b == "" ? "-" : b) }'
}
script_vs() { # script: its decisions per Redis CPU second over the textbook counter's
    [ -s "$SCRIPTS_TSV" ] || { echo n/a; return; }
    awk -F'\t' -v n="$1" '$5 > 0 { per[$1] = $3 / $5 }
        END { if ((n in per) && ("textbook-counter" in per)) printf "%.2f", per[n] / per["textbook-counter"]; else print "n/a" }' "$SCRIPTS_TSV"
}
# Whether the machine is one the targets are for: a module-free httpd at
# 20,000 requests/s or more with keep-alive (the references' mean, event,
# at the rows' connections).
fastness() {
    awk -F'\t' -v c="${SL_BENCH_CONNS:-32}" '$5 != "FAILED" && $2 == "event" && $3 == c && $1 !~ /-vs-tcp$/ { s += $17; n++ }
        END { if (!n) exit
              m = s / n
              printf "The module-free reference served %.0f requests/s here (event, -c%s, mean over the rows): %s.\n", m, c,
                  (m >= 20000 ? "at least 20,000, a machine the targets are set for" : "below 20,000, a slower machine than the targets are set for, on which the kernel hides part of the module'"'"'s cost") }' "$RESULTS"
}
pkgver() { dpkg-query -W -f '${Version}' "$1" 2>/dev/null || echo "not installed"; }

# Before this script writes into docs/, which would make the tree dirty.
VERSION=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)
cr=$(ratio counter-redis)
cur=$(ratio counter-redis-unix)
lr=$(ratio log-redis)
gr=$(ratio gcra-redis)
crp=$(ratio counter-redis-prefork)
sr=$(ratio counter-shm)
slr=$(ratio log-shm)
srp=$(ratio counter-shm-prefork)
fr=$(ratio flood-counter-redis)
flr=$(ratio flood-log-redis)
fgr=$(ratio flood-gcra-redis)
fsr=$(ratio flood-counter-shm)
fp=$(per flood-counter-redis)
flp=$(per flood-log-redis)
fgp=$(per flood-gcra-redis)
fpp=$(per flood-counter-redis-prefork)
fgpp=$(per flood-gcra-redis-prefork)
ev=$(versus counter-shm evasive)
qs=$(versus counter-shm qos)
evr=$(versus counter-redis evasive)
qsr=$(versus counter-redis qos)
fev=$(versus flood-counter-shm flood-evasive)
fqs=$(versus flood-counter-shm flood-qos)
fevr=$(versus flood-counter-redis flood-evasive)
fqsr=$(versus flood-counter-redis flood-qos)
# The p99 a case adds at -c4: the median of the paired slices' differences.
lowadded() { # case
    awk -F'\t' -v n="$1" '$1 == n && $5 != "FAILED" && $38 != "" && $38 != "-" { printf "%.3f", $38; f = 1 }
        END { if (!f) printf "n/a" }' "$RESULTS"
}
# The -c4 rows where they ran, else the rows' own low-load slices.
a4=$(lowadded counter-redis-c4)
al4=$(lowadded log-redis-c4)
as4=$(lowadded counter-shm-c4)
aa4=$(lowadded counter-redis-allot-r64-c4)
ala4=$(lowadded log-redis-allot-r64-c4)
[ "$a4" = n/a ] && a4=$(lowadded counter-redis)
[ "$al4" = n/a ] && al4=$(lowadded log-redis)
[ "$as4" = n/a ] && as4=$(lowadded counter-shm)
[ "$aa4" = n/a ] && aa4=$(lowadded counter-redis-allot-r64)
[ "$ala4" = n/a ] && ala4=$(lowadded log-redis-allot-r64)
# Paired with plain TCP directly where that row ran, else one ratio over
# the other.
tls=$(ratio counter-tls-vs-tcp)
[ "$tls" = n/a ] && tls=$(versus counter-tls counter-redis)
snt=$(ratio counter-sentinel-vs-tcp)
[ "$snt" = n/a ] && snt=$(versus counter-sentinel counter-redis)
null=$(ratio baseline)
nullp=$(ratio baseline-prefork)
null4=$(ratio baseline-c4)
slices=${SL_BENCH_SLICES:-4}
slice=${SL_BENCH_SLICE:-3}

{
    cat <<EOF
# Benchmarks

Generated by \`make bench\` (bench/run.sh, bench/report.sh) on
$(date -u '+%Y-%m-%d %H:%M UTC'). Do not edit by hand: run \`make bench\` again.

$(references "$RESULTS")

## Machine and versions

- CPU: $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), $(nproc) cores
  (wrk, httpd and redis-server share them; nothing is pinned)
- Kernel: $(uname -sr); memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)
- Load average when the report was written: $(cut -d' ' -f1-3 /proc/loadavg)
- httpd: $(${SL_BENCH_HTTPD:-apache2} -v 2>/dev/null | sed -n 's/^Server version: //p'), event and prefork MPMs
- redis-server: $(redis-server --version | sed 's/ sha=.*//')
- wrk: $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2)
- hiredis: $(pkgver libhiredis0.14)
- mod_slidinglimit: $VERSION
- mod_evasive: $(pkgver libapache2-mod-evasive); mod_qos: $(pkgver libapache2-mod-qos)
  (loaded after \`LoadFile ${SL_BENCH_PCRE3:-libpcre.so.3}\`); ModSecurity:
  $(pkgver libapache2-mod-security2)

## Method

- One httpd per configuration, same binary, same base configuration:
  \`LogLevel warn\`, no access log, KeepAlive with unlimited requests per
  connection, mod_remoteip trusting 127.0.0.1 for \`X-Forwarded-For\`.
  Event MPM: 2 to 4 children of 25 threads. Prefork: 40 to 80 children.
- The request: \`GET /r/index.html\`, a 256-byte static file (the cheapest
  thing httpd serves, so the limiter's share shows).
- **Paired with a reference.** Two module-free httpds (one per MPM) run for
  the whole benchmark. Each configuration is measured in ${slices} slices of
  ${slice} s, each next to a slice of the reference of the same MPM and
  connection count, in ABBA order (reference then case, case then
  reference, ...), so that the machine's drift (other work, CPU frequency)
  falls on both alike. "ratio" is the case's requests/s over its
  reference's; p50 and p99 are medians over the slices; "p99 added" is the
  case's p99 over the reference's; "p99 added at -c${SL_BENCH_LOWCONNS:-4}" is the median, over
  the pairs of slices (a case's and its reference's next to it), of the
  case's p99 less the reference's. The rows named baseline are a
  module-free httpd measured the same way: how far apart two identical
  servers measure in this run (the noise floor).
- **CPU per request** comes from the kernel's accounting
  (\`/proc/PID/stat\` of the httpd parent, its children and the children it
  reaped; \`INFO cpu\` for redis-server) over the measured slices, divided by
  the requests served in them. It hardly depends on other work on the
  machine, so it is the steadiest figure here.
- **At low load** every row measured at ${SL_BENCH_CONNS:-32} connections also
  runs ${SL_BENCH_LOWSLICES:-1} slice(s) each side at ${SL_BENCH_LOWCONNS:-4} connections next to its
  reference ("p99 added at -c${SL_BENCH_LOWCONNS:-4}"): the latency a client waits
  more when the server is not saturated.
- **The module's own cost** (instructions, system calls) and Redis's side
  alone (bench/scripts.c): see those sections.
- wrk ${SL_BENCH_THREADS:-2} threads, ${SL_BENCH_CONNS:-32} connections
  (\`-c${SL_BENCH_LOWCONNS:-4}\` for the moderate-load rows), after
  ${SL_BENCH_WARMUP:-2} s of warm-up. The wrk script (bench/clients.lua)
  sends \`X-Forwarded-For\` from a pool of ${SL_BENCH_POOL:-4096} addresses
  (198.18.0.0/15), or one address for the flood rows; the references get
  the pool.
- Allowed path: limits that are never reached (1000000 per minute, or what
  the peer can express); every request is counted. Flood: one address far
  over a limit of 100 per minute (counter, log) or 100 per second (gcra,
  and mod_qos, see below).
- Redis: a private redis-server on a free loopback port (and a unix socket,
  for the row that says so), \`FLUSHALL\` before each configuration and
  \`CONFIG RESETSTAT\` after the warm-up. Calls come from \`INFO
  commandstats\`; the commands the script runs inside EVALSHA (TIME, GET,
  SET, ZADD, ...) are no round trips and are left out. "Other Redis
  commands" is everything a client sent besides EVALSHA (PING, SELECT,
  AUTH, SCRIPT ...): expected 0. New connections come from
  \`total_connections_received\` during the measured slices (the cost
  table) and during the whole row, from before its httpd starts to after
  its last slice, warm-up included (the transports table; the harness's
  own \`redis-cli\` connections taken off). Memory per
  identity is the growth of \`used_memory\` from before the warm-up to after
  the run, divided by \`DBSIZE\` (one key per identity here).
- TLS and Sentinel (t/servers-tls.sh starts both, as for t/60 and t/61):
  counter-tls reaches a TLS-only redis-server with \`rediss://\` and
  verifies its certificate against a test CA made for the run
  (\`SlidingLimitStoreTLSCA\`, \`SlidingLimitStoreTLSVerify on\`);
  counter-sentinel finds its master through three Sentinels
  (\`sentinel://\`). The set-up's two replicas are stopped before that row:
  it measures the way through the Sentinels, not replication. Each row has
  its own redis-server, and its Redis columns are that server's.

## Targets

$(fastness)

| target | measured | |
| --- | --- | --- |
| counter with Redis >= 0.80 of the reference (event, TCP) | $cr (unix socket $cur; gcra $gr; prefork $crp); httpd's CPU alone: $(cpushare counter-redis) | $(verdict "$cr" ">=" 0.80) |
| log with Redis >= 0.75 of the reference (event, TCP) | $lr; httpd's CPU alone: $(cpushare log-redis) | $(verdict "$lr" ">=" 0.75) |
| counter over TLS (rediss://, verified) >= 0.9 of plain TCP, connections reused | $tls (counter-tls: $(rowconns counter-tls)) | $(verdict "$tls" ">=" 0.9) |
| counter through Sentinel (master and 3 Sentinels) against plain TCP | $snt (counter-sentinel: $(rowconns counter-sentinel)) | |
| shm store >= 0.95 of the reference (counter, event) | $sr (log $slr; prefork $srp); httpd's CPU alone: $(cpushare counter-shm) | $(verdict "$sr" ">=" 0.95) |
| a refused single-key flood >= 1.0 of the reference (counter, Redis) | $fr (log $flr, gcra $fgr, shm $fsr) | $(verdict "$fr" ">=" 1.0) |
| <= 0.01 store calls per refused request (flood, counter 100/1m, event) | $fp (log $flp) | $(verdict "$fp" "<=" 0.01) |
| the same, gcra 100/1s (event) | $fgp | $(verdict "$fgp" "<=" 0.01) |
| the same under prefork (counter; gcra) | $fpp; $fgpp | $(verdict "$fpp" "<=" 0.01); $(verdict "$fgpp" "<=" 0.01) |
| p99 added <= 0.25 ms at -c${SL_BENCH_LOWCONNS:-4}, counter with Redis / log with Redis / shm | $a4 / $al4 / $as4 ms | $(verdict "$a4" "<=" 0.25) / $(verdict "$al4" "<=" 0.25) / $(verdict "$as4" "<=" 0.25) |
| the same with allotments (64 returning addresses), counter / log | $aa4 / $ala4 ms | $(verdict "$aa4" "<=" 0.25) / $(verdict "$ala4" "<=" 0.25) |
| module instructions per request <= 3,000 with shm (counter; identity seen before, its first request) | $(insn counter-shm) | $(verdict "$(get counter-shm 32)" "<=" 3000) |
| module instructions per request <= 8,000 with Redis (counter; log) | $(insn counter-redis); $(insn log-redis) | $(verdict "$(get counter-redis 32)" "<=" 8000); $(verdict "$(get log-redis 32)" "<=" 8000) |
| lua/sl_check.lua >= 0.67 of the textbook counter script's decisions per Redis CPU second (counter; log) | $(script_vs sl_check-counter); $(script_vs sl_check-log) | $(verdict "$(script_vs sl_check-counter)" ">=" 0.67) |
| at least as fast as mod_evasive on the same work (one server's own memory: the shm store; allowed path; flood) | $ev; $fev | $(verdict "$ev" ">=" 1); $(verdict "$fev" ">=" 1) |
| at least as fast as mod_qos on the same work (the shm store; allowed path; flood) | $qs; $fqs | $(verdict "$qs" ">=" 1); $(verdict "$fqs" ">=" 1) |
| the Redis store against them (shared by every server: more work; allowed path, flood) | mod_evasive $evr, $fevr; mod_qos $qsr, $fqsr | |
| noise floor: a module-free httpd against the reference (event; prefork; -c${SL_BENCH_LOWCONNS:-4}) | $null; $nullp; $null4 | |

Comparisons with a peer are one ratio over the other, each against its
own reference. CPU added per request: counter with Redis $(cpu counter-redis);
on a unix socket $(cpu counter-redis-unix); the shm store $(cpu counter-shm);
the counter flood $(cpu flood-counter-redis). "httpd's CPU alone" is the
reference's httpd CPU per request over the case's: the share of the
reference's throughput the web server would keep if redis-server (and
wrk) had cores of their own, as they do in production; here all three
share two cores, so redis-server's CPU per decision comes out of the
requests/s too.

## Results

$(references "$RESULTS")

EOF
    header
    table "$RESULTS"
    cat <<EOF

![throughput and p99 per configuration](benchmarks.png)

## Transports

EOF
    transports_text
    echo
    transports "$RESULTS"
    cat <<EOF

## Cost per request

EOF
    costs_header
    costs "$RESULTS"
    cat <<EOF

## The module's own cost

EOF
    modcost_text
    echo
    modcost_header
    modcost "$RESULTS"
    if has_scripts; then
        cat <<EOF

## Redis's side alone

EOF
        scripts_text
        echo
        scripts_table "$SCRIPTS_TSV"
    fi
    echo
    [ -f "$ROOT/bench/NOTES.md" ] && cat "$ROOT/bench/NOTES.md"
    if [ -n "$STAGE" ] && [ -d "$STAGE/conf" ]; then
        echo
        echo "## Configurations"
        echo
        configs "$RESULTS" "$STAGE"
        if [ -f "$STAGE/out/counter-redis.cmdstats" ]; then
            echo "### INFO commandstats after the counter-redis run"
            echo
            echo '```'
            tr -d '\r' <"$STAGE/out/counter-redis.cmdstats"
            echo '```'
        fi
    fi
} >"$MD"

# The plot: requests/s and p99 of every configuration, each next to its
# reference's, measured alongside.
DAT=$(mktemp)
awk -F'\t' '$5 != "FAILED" {printf "%d \"%s\" %s %s %s %s\n", NR - 1, $1, $5, $7, $17, $19}' "$RESULTS" >"$DAT"
gnuplot <<GP
set terminal pngcairo size 1500,950 font "DejaVu Sans,10"
set output "$PNG"
set multiplot layout 2,1 title noenhanced "mod_slidinglimit: $(nproc) cores shared by wrk, httpd and redis-server; wrk -t${SL_BENCH_THREADS:-2} -c${SL_BENCH_CONNS:-32} (rows ending in c4: -c${SL_BENCH_LOWCONNS:-4}); each case next to the module-free reference measured alongside"
set style fill solid 0.8 border -1
set boxwidth 0.38
set grid ytics
set key tmargin horizontal
set xtics rotate by -35 left nomirror font ",9"
set lmargin 10
set rmargin 6
set bmargin 8
set yrange [0:*]
set ylabel "requests/s"
plot "$DAT" using (\$1 - 0.2):3:xtic(2) with boxes lc rgb "#3a7bd5" title "case", \
     "" using (\$1 + 0.2):5 with boxes lc rgb "#b8c7dc" title "reference", \
     "" using (\$1 - 0.2):3:(sprintf("%.0f", \$3)) with labels offset 0,0.7 font ",7" notitle
set ylabel "p99 latency, ms (log scale)"
set logscale y
set yrange [0.1:*]
plot "$DAT" using (\$1 - 0.2):4:xtic(2) with boxes lc rgb "#d5573a" title "case", \
     "" using (\$1 + 0.2):6 with boxes lc rgb "#e6c2b8" title "reference", \
     "" using (\$1 - 0.2):4:(sprintf("%.2f", \$4)) with labels offset 0,0.7 font ",7" notitle
unset multiplot
GP
rm -f "$DAT"
echo "report: wrote $MD and $PNG"
