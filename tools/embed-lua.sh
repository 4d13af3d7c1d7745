#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Turns a Lua script into a C string constant, so the module never reads a
# file at run time: embed-lua.sh FILE NAME > header.
set -eu
file=$1
name=$2
echo "/* Generated from $file by tools/embed-lua.sh; do not edit. */"
echo "static const char $name[] ="
sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$/\\n"/' "$file"
echo "    ;"
