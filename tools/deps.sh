#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
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
    # Debian's module packages (mod_qos, mod_evasive, mod_security2) enable
    # themselves in the system's Apache; Debian 12's mod_qos then breaks
    # its configtest. The benchmark loads them from its own configurations:
    # leave the system's Apache as it was.
    for pkg in $missing; do
        case "$pkg" in libapache2-mod-*) ;; *) continue ;; esac
        for load in $(dpkg -L "$pkg" 2>/dev/null | grep '/mods-available/.*\.load$'); do
            mod=$(basename "$load" .load)
            if [ -e "/etc/apache2/mods-enabled/$mod.load" ]; then
                echo "deps: disabling $mod in the system's Apache ($pkg enabled it)"
                a2dismod -q -f "$mod" >/dev/null
            fi
        done
    done
else
    echo "deps: missing packages:$missing" >&2
    echo "deps: run as root:  apt-get install -y$missing" >&2
    exit 1
fi
