#!/bin/sh
# Installs the Debian packages named on the command line that are missing:
# with apt-get when run as root, otherwise prints the command and stops.
set -eu
missing=""
for pkg in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null |
        grep -q "install ok installed"; then
        missing="$missing $pkg"
    fi
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
    echo "deps: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # Installing redis-server or apache2 may try to start them; nothing here
    # relies on those system services.
    apt-get install -y -qq --no-install-recommends $missing
else
    echo "deps: missing packages:$missing" >&2
    echo "deps: run as root:  apt-get install -y$missing" >&2
    exit 1
fi
