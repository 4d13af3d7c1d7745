# Sourced by the scripts that start servers: free_port [LOW [SPAN]] prints a
# loopback TCP port in LOW..LOW+SPAN-1 that nothing listens on. The default
# range stays below the kernel's ephemeral ports (32768-60999), so that no
# client socket takes the port between this check and its use.
free_port() {
    local low=${1:-20000} span=${2:-12000} p
    for _ in $(seq 1 50); do
        p=$((low + RANDOM % span))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "$p"
            return 0
        fi
    done
    return 1
}
