#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The size rules of the source tree: no function over 80 lines, no file in
# src/ over 900 lines. Prints every function and file over its bound and
# exits 1 when there is one.
#
#   bash tools/sizes.sh [FUNCTION_MAX] [FILE_MAX]
#
# How it counts. A file's size is its line count (wc -l). A function is
# what the httpd style (.clang-format) makes of one: its signature starts
# in column 0 with an identifier and holds a '(', its body opens with '{'
# alone in column 0 and closes with '}' alone in column 0. Its length runs
# from the signature's first line to the closing brace, both included, so
# a multi-line signature counts in full. Prototypes (ending in ';'),
# struct and table initialisers ('= {') and macros are not functions.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FMAX=${1:-80}
SMAX=${2:-900}
cd "$ROOT" || exit 2
over=0

for f in mod_slidinglimit.c src/*.c; do
    n=$(wc -l <"$f")
    if [[ $f == src/* ]] && [ "$n" -gt "$SMAX" ]; then
        echo "file $f: $n lines (at most $SMAX)"
        over=1
    fi
done

long=$(awk -v max="$FMAX" '
    FNR == 1 { sig = 0; inbody = 0 }
    !inbody && /^[A-Za-z_].*\(/ && !/;[ \t]*$/ && !/=/ && !/^#/ {
        sig = FNR; name = $0; sub(/\(.*/, "", name);
        n = split(name, w, /[ \t*]+/); name = w[n]; next
    }
    !inbody && sig && /^\{/ { inbody = 1; next }
    !inbody && sig && /;[ \t]*$/ && !/^[ \t]/ { sig = 0; next }
    inbody && /^\}/ {
        len = FNR - sig + 1;
        if (len > max) printf "function %s:%d %s: %d lines (at most %d)\n", FILENAME, sig, name, len, max;
        inbody = 0; sig = 0
    }
' mod_slidinglimit.c src/*.c)
if [ -n "$long" ]; then
    echo "$long"
    over=1
fi
[ "$over" -eq 0 ] && echo "sizes: every function at most $FMAX lines, every src/ file at most $SMAX"
exit "$over"
