#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The file map (docs/DEVELOPMENT.md, "## File map") names every file under
# src/ and lua/, and only files that exist. Run by make unit.
#
#   sh tests/filemap.sh [MAP [ROOT]]
#
# Without arguments it checks the tree, then checks itself: a copy of the
# map with a file left out, and one naming a file that does not exist,
# must both fail.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=${2:-$(cd "$HERE/.." && pwd)}
MAP=${1:-$ROOT/docs/DEVELOPMENT.md}

# check MAP ROOT: prints what disagrees, fails when anything does.
check() {
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/sl-filemap.XXXXXX") || return 2
    # The names the map's section gives, in backquotes.
    sed -n '/^## File map/,/^## /p' "$1" |
        grep -o '`[^`]*`' | tr -d '`' |
        grep -E '^(mod_slidinglimit\.c|(src|lua)/[^ ]+)$' | sort -u >"$tmp/map"
    # The files there are, less what the build makes (objects, their
    # dependencies, src/sl_scripts.h from lua/).
    (cd "$2" && find src lua -type f ! -path '*/.*' \
        ! -name '*.lo' ! -name '*.slo' ! -name '*.o' ! -name '*.d' \
        ! -path src/sl_scripts.h; echo mod_slidinglimit.c) | sort -u >"$tmp/tree"
    status=0
    for f in $(comm -13 "$tmp/map" "$tmp/tree"); do
        echo "filemap: $f is not in the file map ($1)"
        status=1
    done
    for f in $(comm -23 "$tmp/map" "$tmp/tree"); do
        case "$f" in src/sl_scripts.h) continue ;; esac
        echo "filemap: the file map names $f, which does not exist"
        status=1
    done
    rm -rf "$tmp"
    return $status
}

if [ $# -gt 0 ]; then
    check "$MAP" "$ROOT"
    exit $?
fi

check "$MAP" "$ROOT" || { echo "filemap: FAILED"; exit 1; }

# The check must see both kinds of drift.
self=$(mktemp -d "${TMPDIR:-/tmp}/sl-filemap-self.XXXXXX") || exit 1
trap 'rm -rf "$self"' EXIT
grep -v '`src/sl_wire.c`' "$MAP" >"$self/left-out.md"
sed 's/`src\/sl_wire.c`/`src\/sl_wire.c`, `src\/sl_gone.c`/' "$MAP" >"$self/stale.md"
for case in left-out stale; do
    if check "$self/$case.md" "$ROOT" >/dev/null; then
        echo "filemap: FAILED: a map with a file $case passed"
        exit 1
    fi
done
echo "filemap: every file under src/ and lua/ is in the map, and the map names only files that exist"
