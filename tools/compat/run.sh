#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The compatibility matrix (make compat): the module built against each
# legacy httpd and hiredis (tools/compat/build.sh builds them once into the
# cache), and a part of the suite run against each combination and against
# each Redis and Valkey; one table at the end, a row per combination, a
# column per check, each cell passed, failed or n/a, and the closing line
# "N passed, N failed" (cells).
#
#   tools/compat/run.sh             every row
#   tools/compat/run.sh ROW...      the rows named (see ROWS below)
#   SL_COMPAT_ROWS="ROW..."         the same from make (make compat-ci)
#
# Each row builds in its own copy of the checkout under CACHE/work/ROW with
# make APXS=... HIREDIS=... (the pieces' prefixes), and runs t/run there
# with SL_APXS and SL_REDIS_SERVER; its logs stay in CACHE/results/.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${SL_COMPAT_CACHE:-/var/tmp/slidinglimit-compat}
export SL_COMPAT_CACHE=$CACHE
mkdir -p "$CACHE/results"

# A row: name, httpd, hiredis, redis, then the check groups it runs.
# "system" is Debian's (httpd 2.4.71 on APR 1.7.2, hiredis 0.14.1 or what
# libhiredis-dev is, redis-server 7.0). The core checks run against every
# module build; the store checks against every Redis and Valkey.
ROWS=(
    "rhel7|httpd-2.4.6|hiredis-0.12.1|redis-3.2.13|core prefork"
    "h246-hiredis013|httpd-2.4.6|hiredis-0.13.3|system|core"
    "h246-hiredis12|httpd-2.4.6|hiredis-1.2.0|system|core"
    "ubuntu1804|httpd-2.4.29|hiredis-0.13.3|redis-5.0.14|core prefork"
    "h2429-hiredis12|httpd-2.4.29|hiredis-1.2.0|system|core"
    "debian10|httpd-2.4.38|hiredis-1.2.0|redis-6.2.16|core prefork"
    "h2438-hiredis012|httpd-2.4.38|hiredis-0.12.1|system|core"
    "redis-3.2|system|system|redis-3.2.13|store"
    "redis-5.0|system|system|redis-5.0.14|store"
    "redis-6.2|system|system|redis-6.2.16|store"
    "valkey-8.0|system|system|valkey-8.0.1|store"
)

# The checks: a column each, the test files that make it.
COLUMNS=(limit exact algorithms headers failmode flush graceful tiers config
    shm prefork pipeline denycache prereq cluster tls sentinel)
declare -A FILES=(
    [limit]="t/01-limit.t t/03-subrequests.t t/20-key-sources.t"
    [exact]="t/10-two-servers.t t/12-window-edge.t"
    [algorithms]="t/13-two-limits.t t/16-algorithm-default.t t/17-script-vs-c.t"
    [headers]="t/40-headers-ietf.t t/41-headers-legacy.t t/42-retry-after.t"
    [failmode]="t/31-stop.t t/80-fail-status.t"
    [flush]="t/02-script-flush.t t/33-flush.t"
    [graceful]="t/37-graceful.t"
    [tiers]="t/21-users-tiers.t t/45-logs-backends.t"
    [config]="t/25-bad-config.t"
    [shm]="t/30-shm-burst.t t/71-shm-full.t"
    [prefork]="t/01-limit.t t/10-two-servers.t t/30-shm-burst.t t/37-graceful.t"
    [pipeline]="t/18-pipeline-burst.t"
    [denycache]="t/49-deny-cache.t"
    [prereq]="t/84-prerequisites.t"
    [cluster]="t/50-cluster.t"
    [tls]="t/60-tls.t"
    [sentinel]="t/61-sentinel.t"
)
declare -A SETS=(
    [core]="limit exact algorithms headers failmode flush graceful tiers config shm"
    [prefork]="prefork"
    [store]="limit exact flush failmode pipeline denycache prereq cluster tls sentinel"
)

declare -A CELL
NOTES=()
ROWNAMES=()

prefix() { # PIECE -> its prefix, or empty for system
    [ "$1" = system ] && return 0
    echo "$CACHE/$1"
}

# The version of Redis a row uses, for the checks that need a newer one.
redis_major() {
    local bin=$1
    "$bin" --version | sed -n 's/.* v=\([0-9]*\)\..*/\1/p'
}

# ok / skipped / failed of one file in one t/run console log.
file_result() {
    local log=$1 file=$2 line
    line=$(grep -E "^${file//./\\.} \.+ ?(ok|skipped)" "$log" | tail -1)
    case $line in
    *" ok" | *"ok") echo ok ;;
    *skipped*) echo "skipped:${line#*skipped: }" ;;
    *) echo failed ;;
    esac
}

run_row() {
    local spec=$1 name httpd hiredis redis groups g c f
    IFS='|' read -r name httpd hiredis redis groups <<<"$spec"
    ROWNAMES+=("$name")
    local want=() pieces=()
    for g in $groups; do want+=(${SETS[$g]}); done
    for c in "${want[@]}"; do CELL[$name,$c]=failed; done

    [ "$httpd" != system ] && pieces+=("$httpd")
    [ "$hiredis" != system ] && pieces+=("$hiredis")
    [ "$redis" != system ] && pieces+=("$redis")
    echo "=== compat $name: httpd ${httpd#httpd-}, hiredis ${hiredis#hiredis-}, $redis"
    if ! bash "$ROOT/tools/compat/build.sh" "${pieces[@]}"; then
        CELL[$name,build]=failed
        return
    fi

    local work=$CACHE/work/$name res=$CACHE/results
    local apxs= hi= srv=redis-server
    [ "$httpd" != system ] && apxs=$CACHE/$httpd/bin/apxs
    [ "$hiredis" != system ] && hi=$CACHE/$hiredis
    [ "$redis" != system ] && srv=$CACHE/$redis/bin/redis-server
    srv=$(command -v "$srv")
    mkdir -p "$res"
    rm -rf "$work" && mkdir -p "$work"
    tar -C "$ROOT" --exclude=.git --exclude=./t/logs --exclude=./.libs \
        --exclude='*.lo' --exclude='*.slo' --exclude='*.la' -cf - . |
        tar -C "$work" -xf -
    if nice -n 10 make -C "$work" -j2 ${apxs:+APXS="$apxs"} ${hi:+HIREDIS="$hi"} \
        >"$res/$name-build.log" 2>&1 &&
        ! grep -q 'warning:' "$res/$name-build.log"; then
        CELL[$name,build]=passed
    else
        CELL[$name,build]=failed
        echo "compat $name: the module did not build cleanly ($res/$name-build.log):"
        grep -E 'warning:|error:' "$res/$name-build.log" | head -n 10
        return
    fi

    # What a row's Redis cannot run is n/a, with the reason, and left out
    # of the run (t/run would not start the TLS servers at all).
    local major files=() mpm_files=() skipnote
    major=$(redis_major "$srv")
    for c in "${want[@]}"; do
        skipnote=
        case $c in
        tls)
            [ "$major" -lt 6 ] && skipnote="TLS and ACL users came with Redis 6"
            ;;
        sentinel)
            [ "$major" -lt 6 ] &&
                skipnote="the suite's Sentinels have a password of their own (sentinel-pass, Redis 6.2) and start with its TLS servers"
            ;;
        esac
        if [ -n "$skipnote" ]; then
            CELL[$name,$c]=n/a
            NOTES+=("$name $c: n/a: $skipnote")
            continue
        fi
        if [ "$c" = prefork ]; then
            mpm_files+=(${FILES[$c]})
        else
            files+=(${FILES[$c]})
        fi
    done

    local mpm log list
    for mpm in event prefork; do
        if [ "$mpm" = event ]; then list="${files[*]}"; else list="${mpm_files[*]}"; fi
        [ -n "$list" ] || continue
        log=$res/$name-$mpm.log
        echo "--- $name under $mpm: $list"
        env ${apxs:+SL_APXS="$apxs"} SL_REDIS_SERVER="$srv" SL_TEST_MPMS=$mpm \
            SL_TEST_FILES="$list" bash "$work/t/run" >"$log" 2>&1
        grep -E '^t/.*\.t \.+|^[0-9]+ passed, [0-9]+ failed' "$log"
        for c in "${want[@]}"; do
            [ "${CELL[$name,$c]}" = n/a ] && continue
            if [ "$mpm" = prefork ] && [ "$c" != prefork ]; then continue; fi
            if [ "$mpm" = event ] && [ "$c" = prefork ]; then continue; fi
            local ok=0 bad=0 skip=0 r
            for f in ${FILES[$c]}; do
                r=$(file_result "$log" "$f")
                case $r in
                ok) ok=$((ok + 1)) ;;
                skipped:*) skip=$((skip + 1)); NOTES+=("$name $c: $f skipped: ${r#skipped:}") ;;
                *) bad=$((bad + 1)) ;;
                esac
            done
            if [ "$bad" -gt 0 ]; then CELL[$name,$c]=failed
            elif [ "$ok" -gt 0 ]; then CELL[$name,$c]=passed
            else CELL[$name,$c]=n/a
            fi
        done
    done
}

selected=("$@")
[ ${#selected[@]} -eq 0 ] && [ -n "${SL_COMPAT_ROWS:-}" ] && read -ra selected <<<"$SL_COMPAT_ROWS"
for spec in "${ROWS[@]}"; do
    name=${spec%%|*}
    if [ ${#selected[@]} -gt 0 ] && [[ " ${selected[*]} " != *" $name "* ]]; then
        continue
    fi
    run_row "$spec"
done

# The matrix.
passed=0
failed=0
{
    printf '%-18s %-7s' row build
    for c in "${COLUMNS[@]}"; do printf ' %-10s' "$c"; done
    printf '\n'
    for name in "${ROWNAMES[@]}"; do
        printf '%-18s %-7s' "$name" "${CELL[$name,build]:-failed}"
        for c in build "${COLUMNS[@]}"; do
            v=${CELL[$name,$c]:-n/a}
            [ "$c" = build ] && v=${CELL[$name,build]:-failed}
            case $v in passed) passed=$((passed + 1)) ;; failed) failed=$((failed + 1)) ;; esac
            [ "$c" = build ] && continue
            printf ' %-10s' "$v"
        done
        printf '\n'
    done
} >"$CACHE/results/matrix.txt.tmp" 2>/dev/null || true
echo "=== compatibility matrix"
for spec in "${ROWS[@]}"; do
    IFS='|' read -r name httpd hiredis redis groups <<<"$spec"
    [[ " ${ROWNAMES[*]} " == *" $name "* ]] &&
        echo "  $name: httpd ${httpd#httpd-}, hiredis ${hiredis#hiredis-}, ${redis}"
done
cat "$CACHE/results/matrix.txt.tmp"
mv "$CACHE/results/matrix.txt.tmp" "$CACHE/results/matrix.txt"
for n in "${NOTES[@]}"; do echo "  $n"; done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
