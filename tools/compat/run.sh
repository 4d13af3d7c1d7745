#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The tested stacks (make compat): Debian roots made with mmdebstrap from
# Debian's registry (tools/compat/root.sh: cached, reused, entered through
# a throwaway overlay), the module built in each from a copy of the
# checkout, and a part of the suite, the unit tests and the Debian package's
# test run there against that release's httpd, APR, hiredis, Node.js and
# Redis or Valkey. One table at the end, a row per stack, a column per
# check, each cell passed, failed or n/a, and the closing line
# "N passed, N failed" (cells).
#
#   tools/compat/run.sh             every row
#   tools/compat/run.sh ROW...      the rows named (see ROWS below)
#   SL_COMPAT_ROWS="ROW..."         the same from make (make compat-ci)
#   SL_COMPAT_GROUPS="GROUP..."     only these groups of each row (make
#                                   test-package: package)
#
# Logs stay in CACHE/results/ (CACHE: SL_COMPAT_CACHE, default
# /var/tmp/slidinglimit-compat). Needs root (mmdebstrap, mount, chroot).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tools/compat/root.sh"
export SL_COMPAT_CACHE=$CACHE
RES=$CACHE/results
mkdir -p "$RES"

if [ "$(id -u)" -ne 0 ]; then
    echo "compat: needs root (mmdebstrap, mount and chroot make and enter the Debian roots)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi

# A row: name, Debian root (root.sh), the store's server binary inside it,
# the groups of checks it runs. "suite" is the whole suite under the event
# MPM and the files that say "# Runs under each MPM" under prefork.
ROWS=(
    "debian13|trixie|/usr/bin/redis-server|unit suite package"
    "debian13-valkey|trixie|/usr/bin/valkey-server|store"
    "debian12-valkey|bookworm|/usr/bin/valkey-server|store package"
    "debian11|bullseye|/usr/bin/redis-server|unit suite package"
)

# The checks: a column each, the test files that make it.
COLUMNS=(build unit limit exact algorithms headers failmode flush graceful tiers
    config shm prefork pipeline denycache prereq cluster tls sentinel rest package)
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
    [unit]="unit"
    [suite]="limit exact algorithms headers failmode flush graceful tiers config shm prefork pipeline denycache prereq cluster tls sentinel rest"
    [store]="limit exact flush failmode pipeline denycache prereq cluster tls sentinel"
    [package]="package"
)
# "rest": every other file of the suite, in a row that runs it whole.
rest_files() {
    local f c known=" "
    for c in "${!FILES[@]}"; do known+="${FILES[$c]} "; done
    for f in "$ROOT"/t/*.t; do
        f=t/${f##*/}
        [[ "$known" == *" $f "* ]] || echo "$f"
    done
}
FILES[rest]=$(rest_files | tr '\n' ' ')

declare -A CELL
NOTES=()
ROWNAMES=()
declare -A ROWINFO

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

# The cell of column C from the files of LOG.
cell_from_log() {
    local name=$1 c=$2 log=$3 f r ok=0 bad=0
    for f in ${FILES[$c]}; do
        r=$(file_result "$log" "$f")
        case $r in
        ok) ok=$((ok + 1)) ;;
        skipped:*) NOTES+=("$name $c: $f skipped: ${r#skipped:}") ;;
        *) bad=$((bad + 1)); NOTES+=("$name $c: $f failed") ;;
        esac
    done
    if [ "$bad" -gt 0 ]; then CELL[$name,$c]=failed
    elif [ "$ok" -gt 0 ]; then CELL[$name,$c]=passed
    else CELL[$name,$c]=n/a
    fi
}

RUNDIR=
on_exit() {
    [ -n "$RUNDIR" ] && root_down "$RUNDIR"
    RUNDIR=
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

run_row() {
    local spec=$1 name rootname srv groups g c want=() only=${SL_COMPAT_GROUPS:-}
    IFS='|' read -r name rootname srv groups <<<"$spec"
    if [ -n "$only" ]; then
        local keep=
        for g in $groups; do [[ " $only " == *" $g "* ]] && keep="$keep $g"; done
        groups=$keep
        [ -n "$groups" ] || return 0
    fi
    ROWNAMES+=("$name")
    want=(build)
    for g in $groups; do want+=(${SETS[$g]}); done
    for c in "${want[@]}"; do CELL[$name,$c]=failed; done
    echo "=== compat $name: Debian $rootname root, $(basename "$srv"), checks: $groups"

    if ! root_ensure "$rootname"; then
        NOTES+=("$name: the Debian $rootname root could not be made")
        return
    fi
    RUNDIR=$CACHE/run/$name.$$
    root_down "$RUNDIR"
    if ! root_up "$rootname" "$RUNDIR"; then
        NOTES+=("$name: the root could not be mounted")
        RUNDIR=
        return
    fi
    local M=$RUNDIR/merged
    mkdir -p "$M/src"
    # The tree as a clone has it: what the host built (test binaries linked
    # against the host's hiredis, objects, node_modules) stays out, so the
    # root builds everything against its own libraries. A file deleted but
    # not yet committed is skipped with tar's warning.
    if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        (cd "$ROOT" && git ls-files -z -co --exclude-standard |
            tar --null --no-recursion --ignore-failed-read -cf - -T -) | tar -C "$M/src" -xf -
    else
        tar -C "$ROOT" --exclude=.git --exclude=./t/logs --exclude=./.libs --exclude=./build \
            --exclude=./t/sf/node_modules --exclude='*.lo' --exclude='*.slo' --exclude='*.la' \
            --exclude='*.o' -cf - . | tar -C "$M/src" -xf -
        root_run "$RUNDIR" "cd /src && make clean" >/dev/null 2>&1
    fi
    ROWINFO[$name]=$(root_run "$RUNDIR" "dpkg-query -W -f='\${Package} \${Version}, ' \
        apache2 libapr1 libapr1t64 libhiredis-dev nodejs 2>/dev/null; $srv --version" 2>/dev/null)

    if root_run "$RUNDIR" "cd /src && make -j2" >"$RES/$name-build.log" 2>&1 &&
        ! grep -q 'warning:' "$RES/$name-build.log"; then
        CELL[$name,build]=passed
    else
        echo "compat $name: the module did not build cleanly ($RES/$name-build.log):"
        grep -E 'warning:|error:' "$RES/$name-build.log" | head -n 10
        on_exit
        return
    fi

    local mpm log
    for g in $groups; do
        case $g in
        unit)
            log=$RES/$name-unit.log
            echo "--- $name: make unit"
            if root_run "$RUNDIR" "cd /src && make unit" >"$log" 2>&1; then
                CELL[$name,unit]=passed
            else
                NOTES+=("$name unit: $(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1) ($log)")
            fi
            grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1
            ;;
        suite | store)
            root_run "$RUNDIR" "cd /src && make sf" >"$RES/$name-sf.log" 2>&1 ||
                NOTES+=("$name: make sf failed ($RES/$name-sf.log)")
            local files=
            if [ "$g" = store ]; then
                for c in ${SETS[store]}; do files="$files ${FILES[$c]}"; done
            fi
            for mpm in event prefork; do
                [ "$g" = store ] && [ "$mpm" = prefork ] && continue
                log=$RES/$name-$mpm.log
                echo "--- $name under $mpm${files:+: $files}"
                if [ "$mpm" = prefork ]; then
                    # The whole suite ran under event: prefork runs the
                    # files that say "# Runs under each MPM".
                    files=$(cd "$ROOT" && grep -l '^# Runs under each MPM' t/*.t | tr '\n' ' ')
                fi
                root_run "$RUNDIR" "cd /src && SL_REDIS_SERVER=$srv SL_TEST_MPMS=$mpm \
                    ${files:+SL_TEST_FILES='$files'} bash t/run" >"$log" 2>&1
                grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1
                # What failed, on the console: a CI run keeps only that.
                sed -n '/^=== what failed/,$p' "$log" | head -n 60
                if [ "$mpm" = prefork ]; then
                    FILES[prefork]=$files
                    cell_from_log "$name" prefork "$log"
                    continue
                fi
                for c in ${SETS[$g]}; do
                    [ "$c" = prefork ] && continue
                    cell_from_log "$name" "$c" "$log"
                done
            done
            ;;
        package)
            log=$RES/$name-package.log
            echo "--- $name: the Debian package, built, installed, used and purged in the root"
            root_run "$RUNDIR" "cd /src && bash t/package.sh" >"$log" 2>&1
            grep -E '^not ok|^[0-9]+ passed, [0-9]+ failed' "$log"
            if grep -qE '^[0-9]+ passed, 0 failed' "$log"; then
                CELL[$name,package]=passed
            else
                NOTES+=("$name package: see $log")
            fi
            ;;
        esac
    done
    on_exit
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
    printf '%-16s' row
    for c in "${COLUMNS[@]}"; do printf ' %-7s' "${c:0:7}"; done
    printf '\n'
    for name in "${ROWNAMES[@]}"; do
        printf '%-16s' "$name"
        for c in "${COLUMNS[@]}"; do
            v=${CELL[$name,$c]:-n/a}
            case $v in passed) passed=$((passed + 1)) ;; failed) failed=$((failed + 1)) ;; esac
            printf ' %-7s' "$v"
        done
        printf '\n'
    done
} >"$RES/matrix.txt"
echo "=== tested stacks"
for name in "${ROWNAMES[@]}"; do
    echo "  $name: ${ROWINFO[$name]:-}"
done
cat "$RES/matrix.txt"
for n in "${NOTES[@]}"; do echo "  $n"; done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
