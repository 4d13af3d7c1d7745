# SPDX-License-Identifier: Apache-2.0
# Sourced by tools/compat/run.sh: Debian roots made with mmdebstrap from
# Debian's registry, kept in a cache outside the checkout and reused, and
# entered through a throwaway overlay, so that nothing a run does (a build,
# a package installed and purged, a server's files) reaches the cached root
# or the host.
#
#   root_ensure NAME        makes CACHE/roots/NAME once (rebuilt when its
#                           recipe below changes); prints nothing
#   root_up NAME DIR        mounts NAME's overlay at DIR with /proc, /sys,
#                           /dev, /dev/pts and a /dev/shm of its own
#   root_down DIR           ends every process whose root is DIR, unmounts
#                           and removes DIR's overlay; safe to call twice
#   root_run DIR CMD        CMD by bash as root inside DIR, with a clean
#                           environment
#
# The host's apt sources, services and /etc stay as they are: mmdebstrap
# writes only into the new root, and a policy-rc.d there keeps every
# package installed later from starting a service.

CACHE=${SL_COMPAT_CACHE:-/var/tmp/slidinglimit-compat}
MIRROR=${SL_COMPAT_MIRROR:-http://deb.debian.org/debian}

# What every root has: the build, the suite and the package's build and
# test (make deps, make deb, t/package.sh).
ROOT_PACKAGES="build-essential apache2 apache2-dev libhiredis-dev libssl-dev
redis-tools libapache2-mod-perl2 libwww-perl curl faketime openssl
prometheus fail2ban nodejs npm ca-certificates procps git
debhelper fakeroot lintian dpkg-dev man-db"

# NAME -> "SUITE|SOURCES|EXTRA PACKAGES|PACKAGES FROM A SOURCE" (SOURCES:
# suites of the mirror besides SUITE; the last field installs with -t).
# The mirror serves bullseye and bullseye-updates but not
# bullseye-security's pool: Debian 11's root has no security updates.
root_recipe() {
    case $1 in
    bullseye) echo "bullseye|bullseye-updates|redis-server|" ;;
    bookworm) echo "bookworm|bookworm-updates bookworm-backports|redis-server|bookworm-backports:valkey-server" ;;
    trixie) echo "trixie|trixie-updates|redis-server valkey-server|" ;;
    *) return 1 ;;
    esac
}

root_ensure() {
    local name=$1 recipe suite sources extra from dir stamp tmp s lines=() hooks=()
    recipe=$(root_recipe "$name") || { echo "root: no recipe for $name" >&2; return 1; }
    IFS='|' read -r suite sources extra from <<<"$recipe"
    dir=$CACHE/roots/$name
    stamp="$recipe|$(echo $ROOT_PACKAGES)|$MIRROR"
    if [ -f "$dir/.slidinglimit-root" ] && [ "$(cat "$dir/.slidinglimit-root")" = "$stamp" ]; then
        return 0
    fi
    command -v mmdebstrap >/dev/null || sh "$(dirname "${BASH_SOURCE[0]}")/../deps.sh" mmdebstrap ||
        return 1
    echo "root: making the Debian $suite root $dir (mmdebstrap from $MIRROR)"
    mkdir -p "$CACHE/roots"
    tmp=$CACHE/roots/.$name.new
    rm -rf "$tmp"
    lines=("deb $MIRROR $suite main")
    for s in $sources; do lines+=("deb $MIRROR $s main"); done
    if [ -n "$from" ]; then
        hooks=(--customize-hook="chroot \"\$1\" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends -t ${from%%:*} ${from#*:}")
    fi
    if ! mmdebstrap --variant=minbase --quiet \
        --include="$(echo $ROOT_PACKAGES $extra | tr ' ' ',')" "${hooks[@]}" \
        "$suite" "$tmp" "${lines[@]}" >"$CACHE/roots/$name.log" 2>&1; then
        echo "root: mmdebstrap $suite failed; the last lines of $CACHE/roots/$name.log:" >&2
        tail -n 20 "$CACHE/roots/$name.log" >&2
        rm -rf "$tmp"
        return 1
    fi
    echo "$stamp" >"$tmp/.slidinglimit-root"
    rm -rf "$dir"
    mv "$tmp" "$dir"
}

root_up() {
    local name=$1 dir=$2
    mkdir -p "$dir/upper" "$dir/work" "$dir/merged"
    mount -t overlay overlay \
        -o "lowerdir=$CACHE/roots/$name,upperdir=$dir/upper,workdir=$dir/work" \
        "$dir/merged" || return 1
    mount -t proc proc "$dir/merged/proc" &&
        mount --bind /sys "$dir/merged/sys" &&
        mount --bind /dev "$dir/merged/dev" &&
        mount --bind /dev/pts "$dir/merged/dev/pts" &&
        mount -t tmpfs -o mode=1777 shm "$dir/merged/dev/shm" || {
        root_down "$dir"
        return 1
    }
    # Name resolution inside the root, as on the host; no service started
    # by a package installed there.
    cp -L /etc/resolv.conf "$dir/merged/etc/resolv.conf" 2>/dev/null
    # The host's certificate authorities too (npm reaches its registry
    # through whatever the host trusts): root_run hands them to Node.js.
    cp -L /etc/ssl/certs/ca-certificates.crt "$dir/merged/etc/ssl/host-ca.crt" 2>/dev/null
    printf '#!/bin/sh\nexit 101\n' >"$dir/merged/usr/sbin/policy-rc.d"
    chmod 755 "$dir/merged/usr/sbin/policy-rc.d"
    return 0
}

root_down() {
    local dir=$1 m p pass
    [ -d "$dir/merged" ] || return 0
    # Whatever a run left inside (a daemonized redis-server, an httpd).
    for pass in TERM KILL; do
        for p in /proc/[0-9]*; do
            [ "$(readlink "$p/root" 2>/dev/null)" = "$dir/merged" ] &&
                kill -"$pass" "${p#/proc/}" 2>/dev/null
        done
        [ "$pass" = TERM ] && sleep 1
    done
    for m in dev/shm dev/pts dev sys proc; do
        mountpoint -q "$dir/merged/$m" 2>/dev/null &&
            { umount "$dir/merged/$m" 2>/dev/null || umount -l "$dir/merged/$m"; }
    done
    mountpoint -q "$dir/merged" &&
        { umount "$dir/merged" 2>/dev/null || umount -l "$dir/merged"; }
    rm -rf "$dir"
}

root_run() {
    local dir=$1
    shift
    chroot "$dir/merged" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 TERM=dumb ${CI:+CI=$CI} SL_IN_ROOT=1 \
        NODE_EXTRA_CA_CERTS=/etc/ssl/host-ca.crt npm_config_cafile=/etc/ssl/host-ca.crt bash -c "$*"
}
