#!/bin/sh
# The test of tools/abi-check.sh, on symbol lists written here in the
# format of `nm -D --undefined-only`: it passes the module's kind of
# imports, and fails, naming the symbol, on one missing from the baseline
# (apr_atomic_add64), on one newer than the baseline, on one of no known
# library; a "guarded" line lets the newer one through. Prints
# "N passed, N failed"; exits non-zero on any failure.
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CHECK="$ROOT/tools/abi-check.sh"
BASE="$ROOT/tools/abi-baseline.txt"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sl-abi.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
pass=0
fail=0

# expect NAME STATUS PATTERN SYMS [BASELINE]: the checker's exit status
# is STATUS (0 or non-zero) and its output matches PATTERN.
expect() {
    name=$1 want=$2 pat=$3 syms=$4 base=${5:-$BASE}
    out=$(sh "$CHECK" --symbols "$syms" "$base" 2>&1)
    rc=$?
    if { [ "$want" = 0 ] && [ $rc -eq 0 ]; } ||
        { [ "$want" != 0 ] && [ $rc -ne 0 ]; }; then
        if printf '%s\n' "$out" | grep -q -- "$pat"; then
            pass=$((pass + 1))
            echo "ok: $name"
            return
        fi
    fi
    fail=$((fail + 1))
    echo "FAILED: $name (exit $rc, wanted $want, output must match: $pat)"
    printf '%s\n' "$out" | sed 's/^/    /'
}

cat >"$WORK/good" <<'EOF'
                 U ap_hook_handler
                 U ap_state_query
                 U apr_pool_create_unmanaged_ex
                 U apr_sha1_init
                 U redisReaderCreate
                 U SSL_new@OPENSSL_3.0.0
                 U strlen@GLIBC_2.2.5
                 w __gmon_start__
EOF
expect "the module's kind of imports pass" 0 "abi-check: passed" "$WORK/good"
expect "libc is ignored and listed" 0 "ignored, GNU libc.*strlen" "$WORK/good"
expect "OpenSSL is ignored and listed" 0 "ignored, OpenSSL.*SSL_new" "$WORK/good"

cp "$WORK/good" "$WORK/add64"
echo "                 U apr_atomic_add64" >>"$WORK/add64"
expect "apr_atomic_add64 missing from the baseline fails" 1 \
    "FAIL apr_atomic_add64: not in" "$WORK/add64"

# The baseline as tools/abi-baseline.sh writes it once the module imports
# apr_atomic_add64 (Debian's libapr1 symbols: 1.7.0).
cp "$BASE" "$WORK/base"
echo "apr_atomic_add64 apr <=1.7.0 debian-symbols debian/symbols.common: apr_atomic_add64@Base 1.7.0" >>"$WORK/base"
expect "apr_atomic_add64 newer than APR 1.4.8 fails" 1 \
    "FAIL apr_atomic_add64: needs APR 1.7.0 (at the latest; debian-symbols), newer than the baseline APR 1.4.8" \
    "$WORK/add64" "$WORK/base"

echo "guarded apr_atomic_add64 called only where APR_VERSION_AT_LEAST(1, 7, 0)" >>"$WORK/base"
expect "a guarded line lets it through, with its reason" 0 \
    "guarded apr_atomic_add64 .*APR_VERSION_AT_LEAST" "$WORK/add64" "$WORK/base"

echo "apr_atomic_add64 apr unknown debian-symbols nothing says" >"$WORK/unknown"
grep -v '^apr_atomic_add64 ' "$WORK/base" | grep -v '^guarded' >>"$WORK/unknown"
expect "an unknown version fails" 1 "FAIL apr_atomic_add64: apr version unknown" \
    "$WORK/add64" "$WORK/unknown"

cp "$WORK/good" "$WORK/pcre"
echo "                 U pcre2_compile_8" >>"$WORK/pcre"
expect "a symbol of no known library fails" 1 \
    "FAIL pcre2_compile_8: imported from no library" "$WORK/pcre"

cp "$WORK/good" "$WORK/redis"
echo "                 U redisConnectWithOptions" >>"$WORK/redis"
expect "a hiredis function missing from the baseline fails" 1 \
    "FAIL redisConnectWithOptions: not in" "$WORK/redis"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
