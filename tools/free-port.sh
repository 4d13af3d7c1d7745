# SPDX-License-Identifier: Apache-2.0
# Sourced by the scripts that start servers (and called by the test suite's
# SL::Test::free_port): free_port [LOW [SPAN [COUNT]]] prints the first of
# COUNT (default 1) consecutive loopback TCP ports in LOW..LOW+SPAN-1 that
# nothing listens on. The default range stays below the kernel's ephemeral
# ports (32768-60999), so that no client socket takes a port between this
# check and its use.
free_port() {
    local low=${1:-20000} span=${2:-12000} count=${3:-1} p i busy
    for _ in $(seq 1 50); do
        p=$((low + RANDOM % (span - count + 1)))
        busy=
        for i in $(seq 0 $((count - 1))); do
            if (exec 3<>"/dev/tcp/127.0.0.1/$((p + i))") 2>/dev/null; then
                busy=1
                break
            fi
        done
        if [ -z "$busy" ]; then
            echo "$p"
            return 0
        fi
    done
    return 1
}
