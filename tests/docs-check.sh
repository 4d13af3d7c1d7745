#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# docs/REFERENCE.md is the one reference of the directives; the manual page
# (man/mod_slidinglimit.5) and the commented configuration
# (conf/slidinglimit.conf) are checked against it: every directive the
# module registers has a "### NAME" section in the reference, an entry in
# the manual page and a line in the configuration, each of the reference's
# directive sections is one the module registers, and every option
# (NAME=) of SlidingLimit and SlidingLimitConcurrent that the reference's
# synopses name is in the manual page and in the help strings, and the
# other way round; a default a help string states is the reference's. Prints each
# disagreement; exit status 1 when there is one. Run by make unit.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
REF=docs/REFERENCE.md MAN=man/mod_slidinglimit.5 CONF=conf/slidinglimit.conf
fail=0
bad() { echo "docs-check: $*" >&2; fail=1; }

registered=$(perl -0ne 'print "$1\n" while /AP_INIT_\w+\(\s*"(\w+)"/g' src/*.c | sort -u)
[ -n "$registered" ] || bad "no directive found in src/*.c"
for d in $registered; do
    grep -qx "### $d" "$REF" || bad "$d: no '### $d' section in $REF"
    grep -qE "^\.B[RI]? $d( |$)" "$MAN" || bad "$d: no entry in $MAN"
    grep -qE "^\s*#?( {4})*$d\s" "$CONF" || bad "$d: not shown in $CONF"
done
for d in $(grep -oE '^### SlidingLimit[A-Za-z0-9]*$' "$REF" | cut -c5-); do
    grep -qx "$d" <<<"$registered" || bad "$d: a section of $REF, but the module registers no such directive"
done
for d in $(grep -oE '^\.B[RI]? SlidingLimit[A-Za-z0-9]*' "$MAN" | awk '{print $2}' | sort -u); do
    grep -qx "$d" <<<"$registered" || bad "$d: an entry of $MAN, but the module registers no such directive"
done

# The options of the two limit directives: the reference's synopses (the
# indented lines right under their headings), the manual page's entries.
ref_opts=$(awk '/^### SlidingLimit(Concurrent)?$/ {s=1; next}
    s && /^    / {print; next} s && NF {s=0}' "$REF" |
    grep -oE '[a-z][a-z-]*=' | sort -u)
man_opts=$(sed -n '/^\.BI SlidingLimit " REQUESTS/,/^\.BI SlidingLimitConcurrent/p' "$MAN" |
    sed 's/\\(dq//g; s/\\f[BIRP]//g; s/\\//g' | grep -E '^\.(B|BI|BR|IP|TP)|^\.BI|quota-default=' |
    grep -oE '(^|[ "(\[])[a-z][a-z-]*=' | grep -oE '[a-z][a-z-]*=' | sort -u)
man_opts=$(printf '%s\n%s\n' "$man_opts" "$(grep -E '^\.BI SlidingLimitConcurrent' "$MAN" |
    sed 's/\\f[BIRP]//g' | grep -oE '[a-z][a-z-]*=')" | grep . | sort -u)
[ -n "$ref_opts" ] || bad "no option found in $REF's synopses"
for o in $ref_opts; do
    grep -qx "$o" <<<"$man_opts" || bad "option $o: in $REF's synopsis, not in $MAN"
done
for o in $man_opts; do
    grep -qx "$o" <<<"$ref_opts" || bad "option $o: in $MAN, not in $REF's synopses"
done
# The help strings (what httpd prints for a misused directive): the
# options they name are the reference's, and a default they state is the
# one the reference's synopsis states (its first word).
# A help string may be built from sl_limit.h's rows (SL_LIMIT_HELP,
# SL_ALG_HELP_NAMES): such a macro is read as the C preprocessor expands it.
expand=
for m in $(grep -ohE '\bSL_[A-Z_]*HELP[A-Z_]*\b' src/*.c | sort -u); do
    e=$(printf '#include "sl_limit.h"\n%s\n' "$m" |
        ${CC:-cc} -E -P -Isrc $(apr-1-config --includes 2>/dev/null) - 2>/dev/null | tail -1)
    case "$e" in
    \"*) expand="$expand$m"$'\t'"$e"$'\n' ;;
    *) bad "$m: a help string's macro the preprocessor does not expand to a string" ;;
    esac
done
help=$(HELP_MACROS="$expand" perl -0ne 'BEGIN { for (split /\n/, $ENV{HELP_MACROS}) {
        my ($m, $e) = split /\t/, $_, 2; $x{$m} = $e } }
    for my $m (keys %x) { s/\b$m\b/$x{$m}/g }
    while (/AP_INIT_\w+\(\s*"(\w+)"\s*,[^;]*?,\s*((?:"(?:[^"\\]|\\.)*"\s*)+)\)/g) {
    my ($n, $h) = ($1, $2); $h =~ s/"\s*"//g; $h =~ s/^"|"\s*$//g; print "$n\t$h\n" }' src/*.c)
[ "$(wc -l <<<"$help")" -eq "$(wc -w <<<"$registered")" ] || bad "not every directive's help string was read from src/*.c"
help_opts=$(grep -E '^SlidingLimit(Concurrent)?'$'\t' <<<"$help" | cut -f2 | grep -oE '[a-z][a-z-]*=' | sort -u)
for o in $ref_opts; do
    grep -qx "$o" <<<"$help_opts" || bad "option $o: in $REF's synopsis, not in the help strings (src/sl_config.c)"
done
for o in $help_opts; do
    grep -qx "$o" <<<"$ref_opts" || bad "option $o: in a help string, not in $REF's synopses"
done
while IFS=$'\t' read -r d h; do
    hd=$(grep -oE 'default:? [^ ,;)]+' <<<"$h" | head -1 | sed -E 's/default:? //')
    rd=$(grep -E "^    $d " "$REF" | grep -oE 'default:? [^ ,;)]+' | head -1 | sed -E 's/default:? //')
    [ -z "$hd" ] || [ -z "$rd" ] || [ "$hd" = "$rd" ] ||
        bad "$d: its help string says default $hd, $REF says default $rd"
done <<<"$help"

[ $fail -eq 0 ] && echo "docs-check: $(wc -w <<<"$registered") directives, $(wc -w <<<"$ref_opts") options agree in $REF, $MAN and $CONF"
exit $fail
