#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Turns a Lua script into a C string constant, so the module never reads a
# file at run time: embed-lua.sh FILE NAME > header. With --text first, the
# script's text as the module runs it (what the tests load into Redis,
# t/lib/SL/Algo.pm's script_text). NAME is sl_script_X;
# the text is, in this order, the argument layout of script X from
# src/sl_script_layout.h (SL_X_ARGV_HEAD and SL_X_ARGV_PER as the Lua
# locals ARGV_HEAD and ARGV_PER, any other number SL_X_NAME as the local
# NAME), lua/sl_prelude.lua and FILE: one script,
# run atomically and named by the SHA-1 of all of it.
set -eu
text=
if [ "$1" = --text ]; then
    text=1
    shift
fi
file=$1
name=$2
dir=$(dirname "$0")/..
upper=$(echo "${name#sl_script_}" | tr a-z A-Z)
layout=$(sed -n "s/^#define SL_${upper}_\\([A-Z_]*\\) *\\([0-9][0-9]*\\)\$/local \\1 = \\2/p" \
    "$dir/src/sl_script_layout.h")
case $layout in
*ARGV_HEAD*ARGV_PER*) ;;
*) echo "embed-lua.sh: no SL_${upper}_ARGV_HEAD and _PER in src/sl_script_layout.h" >&2
   exit 1 ;;
esac
script() {
    echo "-- Generated: src/sl_script_layout.h, lua/sl_prelude.lua, then $file."
    echo "$layout"
    cat "$dir/lua/sl_prelude.lua" "$file"
}
if [ -n "$text" ]; then
    script
    exit 0
fi
echo "/* Generated from $file by tools/embed-lua.sh; do not edit. */"
echo "static const char $name[] ="
script | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$/\\n"/'
echo "    ;"
