#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Runs every unit test named, each to its end even after one has failed,
# and adds up their counts (each ends with its own "N passed, M failed").
# A test that fails without its count (a crash, a sanitizer's abort) counts
# as one failed check, so that the total never reads 0 failed while a test
# failed. The failed tests are named, the last line is the total, and the
# status is 1 if any failed.
#
#   bash run.sh TEST...     (make -C tests/unit)
set -uo pipefail

passed=0
failed=0
bad=()
out=$(mktemp "${TMPDIR:-/tmp}/sl-unit.XXXXXX")
trap 'rm -f "$out"' EXIT

for t in "$@"; do
    # stdout through tee to find the count; stderr (a sanitizer's report)
    # straight through.
    "./$t" | tee "$out"
    rc=${PIPESTATUS[0]}
    count=$(grep -E '[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1)
    if [[ $count =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        p=${BASH_REMATCH[1]}
        f=${BASH_REMATCH[2]}
        passed=$((passed + p))
        if [ "$f" -gt 0 ]; then
            failed=$((failed + f))
            bad+=("$t ($f of $((p + f)) checks failed, exit $rc)")
        elif [ "$rc" -ne 0 ]; then
            failed=$((failed + 1))
            bad+=("$t (exit $rc after its count)")
        fi
    else
        failed=$((failed + 1))
        bad+=("$t (exit $rc before its count)")
    fi
done

if [ ${#bad[@]} -gt 0 ]; then
    echo "unit tests failed: ${#bad[@]} of $#"
    for b in "${bad[@]}"; do
        echo "  $b"
    done
fi
echo "$passed passed, $failed failed"
[ ${#bad[@]} -eq 0 ]
