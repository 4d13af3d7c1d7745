#!/bin/sh
# tools/abi-check.sh -- the module imports nothing that the oldest supported
# stack (RHEL 7: httpd 2.4.6, APR 1.4.8, APR-util 1.5.2, hiredis 0.12) lacks.
#
#   sh tools/abi-check.sh [MODULE [BASELINE]]     (make abi-check)
#   sh tools/abi-check.sh --symbols FILE [BASELINE]
#
# MODULE defaults to .libs/mod_slidinglimit.so, BASELINE to
# tools/abi-baseline.txt (made by tools/abi-baseline.sh from Debian's
# source packages; see its header). --symbols reads FILE, in the format of
# `nm -D --undefined-only`, instead of the module's (tests/abi/run.sh).
#
# Every imported httpd (ap_*, ap_hook_*, ap_run_*, ap_unixd_*, unixd_*),
# APR and APR-util (apr_*, apu_*) and hiredis (redis*, __redis*,
# freeReplyObject) function must have a line in BASELINE whose version is
# no newer than the baseline's for its library, or a "guarded" line that
# says why the module can use it anyway (only behind a version check). A
# symbol of no known library fails too, so that a new dependency is never
# skipped unseen. Ignored, by library: GNU libc (libc, libm, libpthread;
# versioned @GLIBC_*), OpenSSL (libssl, libcrypto; @OPENSSL_*), the
# toolchain's weak hooks (_ITM_*, __gmon_start__); and, for a module read
# from a file, any symbol that one of its libc, libm, libpthread, libssl,
# libcrypto, libasan or libubsan (ldd) defines: make SANITIZE=1's libasan
# stands in for libc's functions, unversioned. Needs no network.
set -eu

if [ "${1:-}" = "--symbols" ]; then
    [ $# -ge 2 ] || { echo "usage: $0 --symbols FILE [BASELINE]" >&2; exit 2; }
    what=$2
    syms=$(cat "$2")
    shift 2
else
    what=${1:-.libs/mod_slidinglimit.so}
    [ $# -gt 0 ] && shift
    if [ ! -f "$what" ]; then
        echo "abi-check: $what: no such module (make all builds it)" >&2
        exit 2
    fi
    syms=$(nm -D --undefined-only "$what")
    # The ignorable libraries' own symbols, "symbol soname" a line.
    defs=$(ldd "$what" 2>/dev/null | awk '$3 ~ /^\// { print $1, $3 }' |
        while read -r so path; do
            case $so in
            libc.so* | libm.so* | libpthread.so* | libssl.so* | libcrypto.so* | \
                libasan.so* | libubsan.so*)
                nm -D --defined-only "$path" | awk -v so="$so" '{ s = $3; sub(/@.*/, "", s); print s, so }' ;;
            esac
        done)
fi
DEFS=$(mktemp)
trap 'rm -f "$DEFS"' EXIT
printf '%s\n' "${defs:-}" >"$DEFS"
baseline=${1:-$(dirname "$0")/abi-baseline.txt}
[ -r "$baseline" ] || { echo "abi-check: $baseline: cannot read" >&2; exit 2; }

printf '%s\n' "$syms" | awk -v what="$what" -v bfile="$baseline" -v dfile="$DEFS" '
function vcmp(a, b,    x, y, n, m, i, p, q) {
    sub(/^<=/, "", a); sub(/^<=/, "", b)
    n = split(a, x, "."); m = split(b, y, ".")
    for (i = 1; i <= (n > m ? n : m); i++) {
        p = (i <= n) ? x[i] + 0 : 0; q = (i <= m) ? y[i] + 0 : 0
        if (p != q) return p < q ? -1 : 1
    }
    return 0
}
function fail(msg) { print "abi-check: FAIL " msg; bad++ }
BEGIN {
    while ((getline line < bfile) > 0) {
        if (line ~ /^[ \t]*(#|$)/) continue
        n = split(line, f, /[ \t]+/)
        if (f[1] == "baseline") { want[f[2]] = f[3]; label[f[2]] = f[4]; continue }
        if (f[1] == "guarded") {
            g = line; sub(/^guarded[ \t]+[^ \t]+[ \t]*/, "", g)
            guard[f[2]] = g; continue
        }
        if (n < 4) { print "abi-check: " bfile ": bad line: " line; bad++; continue }
        lib[f[1]] = f[2]; since[f[1]] = f[3]; basis[f[1]] = f[4]
    }
    close(bfile)
    while ((getline line < dfile) > 0) { split(line, f, " "); if (f[2] != "") def[f[1]] = f[2] }
    close(dfile)
}
$1 == "U" || $1 == "w" {
    s = $2; ver = ""
    if (s ~ /@/) { ver = s; sub(/^[^@]*@+/, "", ver); sub(/@.*/, "", s) }
    if (ver ~ /^GLIBC_/) { ign["GNU libc (libc, libm, libpthread)"] = ign["GNU libc (libc, libm, libpthread)"] " " s; ni["GNU libc (libc, libm, libpthread)"]++; next }
    if (ver ~ /^OPENSSL_/) { ign["OpenSSL (libssl, libcrypto)"] = ign["OpenSSL (libssl, libcrypto)"] " " s; ni["OpenSSL (libssl, libcrypto)"]++; next }
    if ($1 == "w" && s ~ /^(_ITM_|__gmon_start__$|__cxa_finalize$)/) { ign["toolchain weak hooks"] = ign["toolchain weak hooks"] " " s; ni["toolchain weak hooks"]++; next }
    if (s !~ /^(ap_|apr_|apu_|unixd_|redis|__redis|freeReplyObject$)/) {
        if (s in def) { k = def[s]; ign[k] = ign[k] " " s; ni[k]++; next }
        fail(s ": imported from no library this check knows (not httpd, APR, APR-util, hiredis, libc or OpenSSL): add it to " bfile " with its library and oldest version, or to the ignored libraries in tools/abi-check.sh")
        next
    }
    if (!(s in lib)) {
        fail(s ": not in " bfile ": find its library and the oldest version that has it (tools/abi-baseline.sh) before using it")
        next
    }
    L = lib[s]; seen[L]++; total++
    if (!(L in want)) { fail(s ": library \"" L "\" has no baseline line in " bfile); next }
    if (since[s] == "unknown") { fail(s ": " L " version unknown in " bfile); next }
    if (vcmp(since[s], want[L]) > 0) {
        if (s in guard) { guarded = guarded "\nabi-check: guarded " s " (" label[L] " " since[s] "): " guard[s]; next }
        v = since[s]; how = basis[s]
        if (sub(/^<=/, "", v)) how = "at the latest; " how
        fail(s ": needs " label[L] " " v " (" how "), newer than the baseline " label[L] " " want[L] ": do without it, or call it only behind a version check and add a \"guarded\" line")
        next
    }
    if (basis[s] == "inferred") inferred++
}
END {
    out = ""
    for (L in seen) out = out ", " label[L] " " seen[L]
    print "abi-check: " what ": " total + 0 " imported httpd/APR/APR-util/hiredis symbols (" substr(out, 3) ") against " bfile
    base = ""
    for (L in want) base = base ", " label[L] " " want[L]
    print "abi-check: baseline " substr(base, 3) "; " inferred + 0 " of the versions are inferred (basis \"inferred\" in the file)"
    if (guarded != "") print substr(guarded, 2)
    for (k in ign) print "abi-check: ignored, " k ": " ni[k] ":" ign[k]
    if (bad) { print "abi-check: FAILED: " bad " symbol(s) above"; exit 1 }
    print "abi-check: passed"
}'
