#!/bin/bash
# tools/abi-baseline.sh -- writes tools/abi-baseline.txt, the list make
# abi-check (tools/abi-check.sh) reads: for each httpd, APR, APR-util and
# hiredis function the built module imports, its library and the oldest
# version that has it, with the source that says so.
#
#   bash tools/abi-baseline.sh [MODULE]           rewrite the baseline
#   bash tools/abi-baseline.sh --verify [MODULE]  compare, change nothing
#
# Root or not, it needs network once: Debian's source packages apr,
# apr-util, hiredis and apache2 (bookworm, with its updates
# suite) are fetched with apt-get source through a private apt
# configuration (deb-src lines of its own; the system's sources and lists
# stay as they are) into SL_ABI_SRC (default
# /var/tmp/slidinglimit-abi-src), unpacked there and reused by later runs.
# The check itself reads only the committed file.
#
# Where a version comes from, in this order:
#   httpd    the MMN bump comments of include/ap_mmn.h, then CHANGES;
#   APR,     CHANGES, then an "@since" in the function's header comment,
#   APR-util then Debian's symbols files (debian/libapr1.symbols'
#            symbols.common and .linux, debian/libaprutil1.symbols), whose
#            version is the first Debian package that exported it: an upper
#            bound ("<="), enough because APR removes nothing within 1.x;
#   hiredis  CHANGELOG.md;
# and the few that none of these settle are written out below (INFERRED)
# with the reason. A function of httpd that ap_mmn.h and CHANGES never name
# is taken as older than 2.4.0 (ap_mmn.h's entries since 20120211.0 name
# what each 2.4 release added) and marked inferred.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
OUT="$HERE/abi-baseline.txt"
SRC=${SL_ABI_SRC:-/var/tmp/slidinglimit-abi-src}
VERIFY=0
if [ "${1:-}" = "--verify" ]; then VERIFY=1; shift; fi
MODULE=${1:-$HERE/../.libs/mod_slidinglimit.so}
[ -f "$MODULE" ] || { echo "abi-baseline: $MODULE: build it first (make)" >&2; exit 2; }

# Versions and reasons no source above settles: symbol|library|since|reason.
INFERRED='
ap_pbase64encode|httpd|2.4.5|not named in ap_mmn.h; CHANGES for 2.4.5: "ap_expr: Add the ability to base64 encode and base64 decode strings", whose implementation (server/util_expr_eval.c) calls it; declared in include/httpd.h
redisReaderCreate|hiredis|0.12.0|CHANGELOG 0.14.0 removes the macros that mapped the older redisReplyReader* names onto the redisReader* ones, so these predate 0.14.0; 0.12.0 "Refactor reading code into read.c"; that 0.12 has them no Debian source shows (the oldest hiredis in the registry is 0.14.1)
redisReaderFeed|hiredis|0.12.0|as redisReaderCreate (CHANGELOG 0.14.0 names it among the new names of the removed aliases)
redisReaderFree|hiredis|0.12.0|as redisReaderCreate (CHANGELOG 0.14.0 names it among the new names of the removed aliases)
redisReaderGetReply|hiredis|0.12.0|as redisReaderCreate (CHANGELOG 0.14.0 names it among the new names of the removed aliases)
freeReplyObject|hiredis|0.12.0|never named in CHANGELOG.md (hiredis.h of 0.14.1, the oldest in the registry, declares it); the reply API of hiredis from its first releases, not shown by a Debian source
'

# Functions the module may import although they are newer than the
# baseline, because it calls them only behind a version check:
# symbol|reason. None today.
GUARDED='
'

fetch() {
    [ -e "$SRC/.unpacked" ] && return 0
    rm -rf "$SRC"
    mkdir -p "$SRC/apt/lists/partial" "$SRC/apt/cache/archives/partial" "$SRC/pkg"
    local k=/usr/share/keyrings/debian-archive-keyring.gpg
    cat >"$SRC/apt/sources.list" <<EOF
deb-src [signed-by=$k] http://deb.debian.org/debian bookworm main
deb-src [signed-by=$k] http://deb.debian.org/debian bookworm-updates main
EOF
    local apt=(-o "Dir::Etc::SourceList=$SRC/apt/sources.list"
        -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$SRC/apt/lists"
        -o "Dir::Cache=$SRC/apt/cache")
    apt-get "${apt[@]}" -qq update
    (cd "$SRC/pkg" && apt-get "${apt[@]}" -qq source --download-only \
        apr apr-util hiredis apache2)
    local f d
    for f in "$SRC"/pkg/*.orig.tar.*; do
        case $f in *.asc) continue ;; esac
        tar xf "$f" -C "$SRC"
    done
    for f in "$SRC"/pkg/*.debian.tar.*; do
        d="$SRC/debian-$(basename "$f" | cut -d_ -f1)"
        mkdir -p "$d" && tar xf "$f" -C "$d"
    done
    touch "$SRC/.unpacked"
}

fetch
# The one directory a glob names (one version of each package unpacked).
one() {
    if [ $# -ne 1 ] || [ ! -e "$1" ]; then
        echo "abi-baseline: not exactly one of $*" >&2
        exit 1
    fi
    echo "$1"
}
HTTPD=$(one "$SRC"/httpd-2.*)
APR=$(one "$SRC"/apr-1.*)
APU=$(one "$SRC"/apr-util-1.*)
HIREDIS=$(one "$SRC"/hiredis-*)
APR_SYMS=("$SRC/debian-apr/debian/symbols.common" "$SRC/debian-apr/debian/symbols.linux")
APU_SYMS="$SRC/debian-apr-util/debian/libaprutil1.symbols"

# The first (oldest) ap_mmn.h entry that names SYM, globs such as
# ap_expr_str_*() and ap_{proc,global}_mutex_create() included:
# "VERSION<TAB>MMN (VERSION-dev): TEXT", VERSION prefixed with "<=" unless
# the entry adds it by name.
mmn() {
    awk -v sym="$1" '
    function flush(   n, i, t, re) {
        if (entry == "" || found != "") return
        n = split(text, w, /[^A-Za-z0-9_*{},]+/)
        for (i = 1; i <= n; i++) {
            t = w[i]; sub(/,+$/, "", t)
            if (t !~ /^ap_/) continue
            # A glob names a family only past a word of its own (ap_log_*,
            # not ap_reg* for the regex functions), and says only that
            # its members existed by then.
            g = (t ~ /[*{]/)
            if (t ~ /\*/ && t !~ /^ap_[a-z]+_/) continue
            re = t; gsub(/\*/, "[A-Za-z0-9_]*", re)
            while (match(re, /\{[^}]*\}/)) {
                alt = substr(re, RSTART + 1, RLENGTH - 2); gsub(/,/, "|", alt)
                re = substr(re, 1, RSTART - 1) "(" alt ")" substr(re, RSTART + RLENGTH)
            }
            if (sym ~ ("^" re "$")) {
                v = ver; if (g || text !~ /([Aa]dd|[Ii]ntroduc|[Nn]ew)/) v = "<=" v
                found = v "\tap_mmn.h " entry " (" ver "-dev):" text
                return
            }
        }
    }
    /^ \* [0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9](\.[0-9]+)? +\([0-9.]+-dev\)/ {
        flush(); entry = $2; ver = $3; gsub(/[()]|-dev/, "", ver)
        text = $0; sub(/^ \* [^)]*\)/, "", text); next
    }
    /^ \*  +[^ ]/ && entry != "" { t = $0; sub(/^ \* +/, " ", t); text = text t; next }
    { flush(); entry = "" }
    END { flush(); if (found != "") { gsub(/  +/, " ", found); print found } }
    ' "$HTTPD/include/ap_mmn.h"
}

# The oldest section of a CHANGES file with a line that names SYM as a
# word and says it is added: "VERSION<TAB>FILE (VERSION): LINE". With
# ANY, failing that, the oldest line that names it at all (a fix, a changed
# behaviour), which says only that it existed by then: "<=VERSION...".
changes() {
    local sym=$1 file=$2 head=$3 any=${4:-}
    awk -v sym="$sym" -v head="$head" -v name="${file#"$SRC"/}" -v any="$any" '
    $0 ~ head { v = $0; sub(head, "", v); sub(/[ :].*/, "", v); next }
    v != "" && (" " $0 " ") ~ ("[^A-Za-z0-9_]" sym "[^A-Za-z0-9_]") {
        l = $0; gsub(/^[ *)]+|[ ]+$/, "", l)
        if ($0 ~ /([Aa]dd|[Pp]rovide|[Nn]ew|[Ii]ntroduc|[Cc]reate)/)
            found = v "\t" name " (" v "): " l
        else if (any != "")
            named = "<=" v "\t" name " (" v "): " l
    }
    END { if (found != "") print found; else if (named != "") print named }' "$file"
}

# An "@since" in the doc comment just above SYM's declaration in DIR/*.h.
since_tag() {
    local sym=$1 dir=$2
    awk -v sym="$sym" '
    /\/\*\*/ { c = "" }
    { c = c " " $0 }
    $0 ~ ("[^A-Za-z0-9_]" sym "[ ]*\\(") && c ~ /@since/ {
        s = c; sub(/.*@since[ ]*/, "", s); sub(/\*\/.*/, "", s)
        v = s; sub(/^[^0-9]*/, "", v); sub(/[^0-9.].*/, "", v); sub(/\.$/, "", v)
        print v "\t" FILENAME ": @since " s; exit
    }' "$dir"/*.h | sed "s|$SRC/||"
}

debsym() {
    local sym=$1; shift
    awk -v sym="$sym" -v name="$*" '
    $1 == sym "@Base" { v = $2; sub(/[-+~#].*/, "", v)
        n = FILENAME; sub(/.*\/debian\//, "debian/", n)
        print "<=" v "\t" n ": " $1 " " $2 " (the first Debian package to export it)"; exit }' "$@"
}

# The header that declares SYM (a hook's ap_hook_/ap_run_ by its
# AP_DECLARE_HOOK), or nothing.
header_of() {
    local re="\\b$1\\b" h=${1#ap_hook_}
    h=${h#ap_run_}
    [ "$h" != "$1" ] && re="DECLARE_(EXTERNAL_)?HOOK.*\\b$h\\b"
    { grep -lE -- "$re" "$2"/*.h || true; } | grep -v '/ap_mmn\.h$'  | head -1 | sed "s|$SRC/||"
}

# SYM -> "SYM LIB SINCE BASIS EVIDENCE"
resolve() {
    local s=$1 r lib v ev basis=named
    r=$(printf '%s\n' "$INFERRED" | awk -F'|' -v s="$s" '$1 == s')
    if [ -n "$r" ]; then
        IFS='|' read -r _ lib v ev <<<"$r"
        echo "$s $lib $v inferred $ev"
        return
    fi
    case $s in
    ap_* | unixd_*)
        lib=httpd
        r=$(mmn "$s")
        [ -n "$r" ] || r=$(changes "$s" "$HTTPD/CHANGES" '^Changes with Apache ')
        if [ -z "$r" ]; then
            local h
            h=$(header_of "$s" "$HTTPD/include")
            r="<=2.4.0	named neither in ap_mmn.h nor in CHANGES, taken as older than 2.4.0${h:+ (declared in $h)}"
            basis=inferred
        fi
        ;;
    apr_* | apu_*)
        if [ -n "$(debsym "$s" "${APR_SYMS[@]}")" ]; then
            lib=apr
            r=$(changes "$s" "$APR/CHANGES" '^Changes for APR ')
            [ -n "$r" ] || r=$(since_tag "$s" "$APR/include")
            [ -n "$r" ] || { r=$(debsym "$s" "${APR_SYMS[@]}"); basis=debian-symbols; }
        elif [ -n "$(debsym "$s" "$APU_SYMS")" ]; then
            lib=apr-util
            r=$(changes "$s" "$APU/CHANGES" '^Changes with APR-util ')
            [ -n "$r" ] || r=$(since_tag "$s" "$APU/include")
            [ -n "$r" ] || { r=$(debsym "$s" "$APU_SYMS"); basis=debian-symbols; }
        else
            lib=unknown r="unknown	in neither Debian's libapr1 nor libaprutil1 symbols"
        fi
        ;;
    redis* | __redis* | freeReplyObject)
        lib=hiredis
        r=$(changes "$s" "$HIREDIS/CHANGELOG.md" '^### ' any)
        [ -n "$r" ] || r="unknown	not named in hiredis' CHANGELOG.md"
        ;;
    *) return ;;
    esac
    printf '%s %s %s %s %s\n' "$s" "$lib" "${r%%	*}" "$basis" "${r#*	}"
}

dsc() {
    local f
    for f in "$SRC"/pkg/*.dsc; do
        printf '#   %s (sha256 %s)\n' "$(basename "$f" .dsc)" "$(sha256sum "$f" | cut -c1-16)"
    done
}

generate() {
    cat <<EOF
# The httpd, APR, APR-util and hiredis functions mod_slidinglimit imports,
# each with its library and the oldest version that has it. make abi-check
# (tools/abi-check.sh, run by make test) fails when the built module imports
# one that is missing here or newer than the baseline below (RHEL 7's
# stack), unless a "guarded" line says why it may.
#
# Made by tools/abi-baseline.sh (which also verifies it: --verify) from the
# module's imports (nm -D --undefined-only) and Debian's source packages,
# fetched with apt-get source from bookworm (and bookworm-updates; the
# security suite's pool does not answer here), the only source trees used:
$(dsc)
# httpd from include/ap_mmn.h (the MMN bump comments name each function
# added and the release it came with; "(2.3.x-dev)" means before 2.4.0),
# then CHANGES. APR and APR-util from their CHANGES (which cover only 1.7.x
# and 1.6.x: the older ones are links to svn), then "@since" in the headers,
# then Debian's symbols files (debian/libapr1.symbols' symbols.common and
# .linux, debian/libaprutil1.symbols): the version of the first Debian
# package that exported the function, so an upper bound ("<="), which is
# enough because APR removes nothing within 1.x. hiredis from CHANGELOG.md.
# Debian's registry reaches back to bullseye only (apr 1.7.0, apr-util
# 1.6.1, hiredis 0.14.1, httpd 2.4.6x): no older headers were at hand, so
# where none of these name a function the version is inferred, with the
# reason, and its basis says "inferred".
#
# Columns: symbol, library, since ("<=V": present in V, maybe earlier),
# basis (named: a CHANGES/ap_mmn.h entry names it; debian-symbols;
# inferred), evidence. "guarded SYMBOL REASON": used only behind a version
# check, allowed although newer than the baseline.
#
# Ignored by library (tools/abi-check.sh): GNU libc with libm and
# libpthread (@GLIBC_*), OpenSSL (@OPENSSL_*), the toolchain's weak hooks,
# and what the module's own libc, OpenSSL, libasan or libubsan defines.

# baseline LIBRARY OLDEST NAME
baseline httpd 2.4.6 httpd
baseline apr 1.4.8 APR
baseline apr-util 1.5.2 APR-util
baseline hiredis 0.12 hiredis

EOF
    nm -D --undefined-only "$MODULE" | awk '{ s = $2; sub(/@.*/, "", s); print s }' |
        sort -u | while read -r s; do resolve "$s"; done |
        sort -k2,2 -k1,1
    printf '%s\n' "$GUARDED" | awk -F'|' 'NF == 2 { print "guarded " $1 " " $2 }'
}

TMP=$(mktemp)
trap 'rm -f "$TMP"' EXIT
generate >"$TMP"
if [ "$VERIFY" = 1 ]; then
    if diff -u "$OUT" "$TMP"; then echo "abi-baseline: $OUT is up to date"; else
        echo "abi-baseline: $OUT differs from what the sources say (above)"; exit 1
    fi
else
    cp "$TMP" "$OUT"
    echo "abi-baseline: wrote $OUT ($(grep -cvE '^(#|baseline |guarded |$)' "$OUT") symbols)"
fi
