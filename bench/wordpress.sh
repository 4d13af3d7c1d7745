#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A real WordPress behind the module, on 127.0.0.1 only: Debian's wordpress
# and mariadb-server packages, a MariaDB of its own (datadir, socket and
# port under SL_WP_DIR, started by hand and stopped after; never the host's
# database service), the site configured by
# /etc/wordpress/config-127.0.0.1.php (Debian's wp-config.php reads the
# file named after the Host), served by a private httpd (prefork, mod_php)
# with the README's WordPress recipe taken from README.md as written.
#
#   bash bench/wordpress.sh test     make test-wordpress: the recipe's
#                                    figures against wp-login.php
#   bash bench/wordpress.sh remove   purges what install added, removes
#                                    SL_WP_DIR and the config file
# Sourced (bench/stuffing.sh): wp_up [off] / wp_down, WP_URL.
#
# Cached: the packages stay installed and the installed site (its
# datadir) stays in SL_WP_DIR (default /var/tmp/slidinglimit-wordpress), so
# a rerun starts two servers and installs nothing. What install added is
# listed in SL_WP_DIR/packages.added, for remove. The packages' scripts
# would enable mod_php in the host's /etc/apache2: its *-enabled
# directories are put back as they were, and services never start during
# the install (a policy-rc.d answering 101 while it runs, unless the host
# has one).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
W=${SL_WP_DIR:-/var/tmp/slidinglimit-wordpress}
PKGS="wordpress mariadb-server libapache2-mod-php8.2 php8.2-mysql"
WP_CONF=/etc/wordpress/config-127.0.0.1.php
WP_USERS="alice bob carol dave erin"
. "$HERE/../tools/free-port.sh"

wp_log() { printf 'wordpress: %s\n' "$*" >&2; }

wp_install_packages() {
    local p missing=
    for p in $PKGS; do
        dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing=1
    done
    [ -z "$missing" ] && return 0
    [ "$(id -u)" -eq 0 ] || { wp_log "installing $PKGS needs root"; return 1; }
    mkdir -p "$W"
    local policy=
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        policy=1
    fi
    tar -C /etc/apache2 -cf "$W/apache2-enabled.tar" mods-enabled conf-enabled sites-enabled
    dpkg-query -W -f '${Package}\n' | sort >"$W/packages.before"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $PKGS >"$W/apt.log" 2>&1
    local rc=$?
    dpkg-query -W -f '${Package}\n' | sort | comm -13 "$W/packages.before" - >>"$W/packages.added"
    rm -rf /etc/apache2/mods-enabled /etc/apache2/conf-enabled /etc/apache2/sites-enabled
    tar -C /etc/apache2 -xf "$W/apache2-enabled.tar"
    [ -n "$policy" ] && rm -f /usr/sbin/policy-rc.d
    [ $rc -eq 0 ] || { wp_log "apt-get install failed (see $W/apt.log)"; return 1; }
}

# The database: its own datadir, socket and port, as the mysql user.
wp_db_up() {
    local db=$W/db
    mkdir -p "$W/run"
    chown mysql:mysql "$W/run"
    if [ ! -d "$db/mysql" ]; then
        mkdir -p "$db" && chown mysql:mysql "$db"
        mariadb-install-db --no-defaults --user=mysql --datadir="$db" \
            --auth-root-authentication-method=socket --skip-test-db >"$W/db-install.log" 2>&1 ||
            { wp_log "mariadb-install-db failed (see $W/db-install.log)"; return 1; }
    fi
    WP_DB_PORT=$(free_port 33000 1000 1) || return 1
    mariadbd --no-defaults --user=mysql --datadir="$db" --socket="$W/run/db.sock" \
        --port="$WP_DB_PORT" --bind-address=127.0.0.1 --pid-file="$W/run/db.pid" \
        --log-error="$W/db.log" --skip-log-bin --innodb-buffer-pool-size=32M \
        --performance-schema=OFF >/dev/null 2>&1 &
    for _ in $(seq 1 200); do
        mariadb --no-defaults -S "$W/run/db.sock" -uroot -e 'select 1' >/dev/null 2>&1 && break
        sleep 0.1
    done
    mariadb --no-defaults -S "$W/run/db.sock" -uroot -e "
        CREATE DATABASE IF NOT EXISTS slwp;
        CREATE USER IF NOT EXISTS 'slwp'@'localhost' IDENTIFIED BY 'slwp-pw';
        GRANT ALL ON slwp.* TO 'slwp'@'localhost';" ||
        { wp_log "the database did not start (see $W/db.log)"; return 1; }
}

wp_db_down() {
    local pid
    pid=$(cat "$W/run/db.pid" 2>/dev/null) || return 0
    kill "$pid" 2>/dev/null
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
}

# Debian's wp-config.php reads the file of the Host's name (without the
# port); the site's URL follows the port of each run.
wp_config() {
    mkdir -p /etc/wordpress
    cat >"$WP_CONF" <<PHP
<?php
/* Written by mod_slidinglimit's bench/wordpress.sh; removed by its remove. */
define('DB_NAME', 'slwp');
define('DB_USER', 'slwp');
define('DB_PASSWORD', 'slwp-pw');
define('DB_HOST', 'localhost:$W/run/db.sock');
define('WP_CONTENT_DIR', '/var/lib/wordpress/wp-content');
if (isset(\$_SERVER['HTTP_HOST'])) {
    define('WP_HOME', 'http://' . \$_SERVER['HTTP_HOST']);
    define('WP_SITEURL', 'http://' . \$_SERVER['HTTP_HOST']);
}
define('AUTOMATIC_UPDATER_DISABLED', true);
define('DISABLE_WP_CRON', true);
\$table_prefix = 'wp_';
PHP
    chmod 644 "$WP_CONF"
}

# The README's WordPress recipe, as written (t/144 checks the same block).
wp_recipe() {
    awk '/^<!-- recipe: wordpress /{on=1; next} on && /^```apache/{b=1; next}
         b && /^```/{exit} b{print}' "$TOP/README.md"
}

# wp_httpd_up [off|site]: prefork with mod_php, WordPress at /, the recipe
# (off: none; site: one failure budget for the whole site instead); clients told apart by X-Forwarded-For, trusted from
# 127.0.0.1 only (mod_remoteip).
wp_httpd_up() {
    local h=$W/httpd recipe=
    mkdir -p "$h/logs" "$h/run"
    chown www-data "$h/run"
    WP_PORT=$(free_port 34000 1000 1) || return 1
    case ${1:-} in
    off) ;;
    # Not a recipe: one failure budget for the whole site (bench/stuffing.sh
    # shows what it costs the legitimate users).
    site) recipe='<Files "wp-login.php">
    <If "%{REQUEST_METHOD} == '"'POST'"'">
        SlidingLimit 50 15m name=wp-site count=200
        SlidingLimitKey expr:site
    </If>
</Files>' ;;
    *) recipe=$(wp_recipe) ;;
    esac
    # Each start begins with an empty store: the shm store's state, written
    # at the last stop, would carry that run's failures into this one.
    rm -f "$h/run/slidinglimit-shm.state"
    cat >"$h/httpd.conf" <<CONF
ServerRoot "$h"
ServerName 127.0.0.1
Listen 127.0.0.1:$WP_PORT
PidFile "$h/run/httpd.pid"
DefaultRuntimeDir "$h/run"
Mutex file:$h/run default
ErrorLog "$h/logs/error_log"
LogLevel warn
LogFormat "%a %>s %r sl=%{SLIDINGLIMIT_RESULT}e" sl
CustomLog "$h/logs/access_log" sl
LoadModule mpm_prefork_module /usr/lib/apache2/modules/mod_mpm_prefork.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
LoadModule authz_host_module /usr/lib/apache2/modules/mod_authz_host.so
LoadModule mime_module /usr/lib/apache2/modules/mod_mime.so
LoadModule dir_module /usr/lib/apache2/modules/mod_dir.so
LoadModule remoteip_module /usr/lib/apache2/modules/mod_remoteip.so
LoadModule request_module /usr/lib/apache2/modules/mod_request.so
LoadModule php_module /usr/lib/apache2/modules/libphp8.2.so
LoadModule slidinglimit_module "$TOP/.libs/mod_slidinglimit.so"
TypesConfig /etc/mime.types
User www-data
Group www-data
StartServers 4
MinSpareServers 4
MaxSpareServers 8
MaxRequestWorkers 16
RemoteIPHeader X-Forwarded-For
RemoteIPInternalProxy 127.0.0.1
SlidingLimitStore shm
DocumentRoot /usr/share/wordpress
<Directory /usr/share/wordpress>
    Options FollowSymLinks
    DirectoryIndex index.php
    Require all granted
</Directory>
<FilesMatch "\.php\$">
    SetHandler application/x-httpd-php
</FilesMatch>
$recipe
CONF
    apache2 -d "$h" -f "$h/httpd.conf" -k start || return 1
    WP_URL=http://127.0.0.1:$WP_PORT
    for _ in $(seq 1 100); do
        curl -s -o /dev/null "$WP_URL/wp-login.php" && return 0
        sleep 0.1
    done
    wp_log "httpd did not answer (see $h/logs/error_log)"
    return 1
}

wp_httpd_down() {
    local pid
    pid=$(cat "$W/httpd/run/httpd.pid" 2>/dev/null) || return 0
    kill "$pid" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
}

# Installs the site (wp-admin/install.php, as a browser would) and its
# users, once: the datadir keeps them.
wp_site() {
    local q="mariadb --no-defaults -S $W/run/db.sock -uroot -N slwp -e"
    local want=$(($(echo $WP_USERS | wc -w) + 1))
    if [ "$($q "select count(*) from wp_users" 2>/dev/null || echo 0)" -lt "$want" ]; then
        curl -s -o "$W/install.html" -w '%{http_code}' "$WP_URL/wp-admin/install.php?step=2" \
            --data-urlencode weblog_title=slidinglimit --data-urlencode user_name=admin \
            --data-urlencode admin_password=admin-pw-9471 --data-urlencode admin_password2=admin-pw-9471 \
            --data-urlencode pw_weak=1 --data-urlencode admin_email=admin@example.invalid \
            --data-urlencode blog_public=0 --data-urlencode language= >"$W/install.status"
        local u
        for u in $WP_USERS; do
            HTTP_HOST=127.0.0.1 php -r '
                $_SERVER["HTTP_HOST"] = "127.0.0.1"; $_SERVER["REQUEST_URI"] = "/";
                require "/usr/share/wordpress/wp-load.php";
                if (!username_exists($argv[1])) {
                    wp_create_user($argv[1], $argv[2], $argv[1] . "@example.invalid");
                }' "$u" "$u-good-pw" >>"$W/users.log" 2>&1
        done
    fi
    [ "$($q "select count(*) from wp_users" 2>/dev/null || echo 0)" -ge "$want" ] ||
        { wp_log "the site was not installed (see $W/install.html, $W/users.log)"; return 1; }
}

# shellcheck disable=SC2120 # bench/stuffing.sh passes off
wp_up() {
    wp_install_packages && wp_config && wp_db_up && wp_httpd_up "${1:-}" && wp_site
}

wp_down() {
    wp_httpd_down
    wp_db_down
}

# wp_login ACCOUNT PASSWORD ADDRESS -> the status wp-login.php answers.
wp_login() {
    curl -s -o /dev/null -w '%{http_code}' -H "X-Forwarded-For: $3" \
        -b 'wordpress_test_cookie=WP%20Cookie%20check' \
        --data-urlencode "log=$1" --data-urlencode "pwd=$2" \
        --data-urlencode 'wp-submit=Log In' --data-urlencode 'redirect_to=/wp-admin/' \
        --data-urlencode testcookie=1 "$WP_URL/wp-login.php"
}

wp_test() {
    local fails=0 all=
    check() {
        if [ "$2" = "$3" ]; then echo "ok   $1: $2"; else echo "FAIL $1: $2 (expected $3)"; fails=$((fails + 1)); fi
    }
    wp_up || return 1
    check "right login (bob), 302" "$(wp_login bob bob-good-pw 10.9.0.1)" 302
    for i in 1 2 3 4 5 6; do all="$all $(wp_login alice "wrong-$i" "10.9.1.$i")"; done
    check "six wrong logins as alice from six addresses" "${all# }" "200 200 200 200 200 429"
    check "alice from a seventh address, right password" "$(wp_login alice alice-good-pw 10.9.1.7)" 429
    check "ALICE (another case) from an eighth" "$(wp_login ' ALICE ' wrong 10.9.1.8)" 429
    check "carol's wrong login meanwhile" "$(wp_login carol wrong 10.9.2.1)" 200
    check "carol's right login" "$(wp_login carol carol-good-pw 10.9.2.2)" 302
    all=
    for i in 1 2 3 4 5 6; do all="$all $(wp_login bob bob-good-pw "10.9.3.$i")"; done
    check "six right logins as bob (given back)" "${all# }" "302 302 302 302 302 302"
    wp_down
    [ $fails -eq 0 ] && echo "test-wordpress: passed" || echo "test-wordpress: $fails failed"
    return $fails
}

wp_remove() {
    wp_down
    if [ -s "$W/packages.added" ]; then
        # shellcheck disable=SC2046
        DEBIAN_FRONTEND=noninteractive apt-get purge -y $(cat "$W/packages.added")
    fi
    rm -f "$WP_CONF"
    rm -rf "$W"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    case "${1:-test}" in
    test) trap wp_down EXIT; wp_test ;;
    remove) wp_remove ;;
    *) echo "usage: $0 test|remove" >&2; exit 2 ;;
    esac
fi
