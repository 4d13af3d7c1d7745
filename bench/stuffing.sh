#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# make bench-stuffing: credential stuffing replayed against a real
# WordPress (bench/wordpress.sh: Debian's packages, its own MariaDB, a
# private prefork httpd with mod_php), with the README's WordPress recipe
# on and off, while legitimate users log in from addresses of their own.
# Clients are told apart by X-Forwarded-For, which mod_remoteip trusts from
# 127.0.0.1 only (RemoteIPInternalProxy 127.0.0.1): the replay's source
# addresses are the header's.
#
#   (a) one address tries 20 accounts, 10 leaked passwords each;
#   (b) one account tried from 50 addresses, 2 passwords each;
#   (c) 200 accounts, each tried once from an address of its own.
# An attacker stops trying an account once its password is found. Per
# scenario: the guesses that reached WordPress's password check (answered
# 200 or 302, not 429), the accounts found (302), the legitimate logins
# refused (429). Figures to docs/STUFFING.md; make bench-stuffing bounds
# the run (timeout 900).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
. "$HERE/wordpress.sh"
OUT=${SL_STUFF_OUT:-$TOP/docs/STUFFING.md}
LEGIT="alice bob carol dave erin"
RES=$W/stuffing
mkdir -p "$RES"

# 200 accounts of the replay, u001..u200, each with its own password.
stuff_users() {
    HTTP_HOST=127.0.0.1 php -r '
        $_SERVER["HTTP_HOST"] = "127.0.0.1"; $_SERVER["REQUEST_URI"] = "/";
        require "/usr/share/wordpress/wp-load.php";
        for ($i = 1; $i <= 200; $i++) {
            $u = sprintf("u%03d", $i);
            if (!username_exists($u)) {
                wp_create_user($u, "good-$u", "$u@example.invalid");
            }
        }' >"$RES/users.log" 2>&1
}

# The attack of a scenario: lines "ACCOUNT PASSWORD ADDRESS".
scenario() {
    local i j a
    case $1 in
    a)  for i in $(seq 1 20); do
            a=$(printf 'u%03d' "$i")
            for j in $(seq 1 10); do
                # the leak holds the right password of u001-u003 third, of
                # u004-u005 eighth; the others' passwords are not in it
                if { [ "$i" -le 3 ] && [ "$j" -eq 3 ]; } || { [ "$i" -ge 4 ] && [ "$i" -le 5 ] && [ "$j" -eq 8 ]; }; then
                    echo "$a good-$a 10.20.0.1"
                else
                    echo "$a leaked-$j 10.20.0.1"
                fi
            done
        done ;;
    b)  for i in $(seq 1 100); do
            # the 60th of 100 guesses is right
            [ "$i" -eq 60 ] && echo "u100 good-u100 10.21.$(((i - 1) / 2)).1" ||
                echo "u100 leaked-$i 10.21.$(((i - 1) / 2)).1"
        done ;;
    c)  for i in $(seq 1 200); do
            a=$(printf 'u%03d' "$i")
            # one account in twenty has its leaked password still in use
            [ $((i % 20)) -eq 0 ] && echo "$a good-$a 10.22.$((i / 250)).$((i % 250 + 1))" ||
                echo "$a leaked-1 10.22.$((i / 250)).$((i % 250 + 1))"
        done ;;
    esac
}

# run SCENARIO MODE (off, on, site): replays it against a fresh server (a fresh shm store);
# a legitimate login every 10 guesses. Prints "reached found refused-legit
# legit-total guesses".
run() {
    local sc=$1 mode=$2 n=0 reached=0 found=0 lrefused=0 ltotal=0 st acct pw addr k=0
    local -A done_
    wp_httpd_down
    wp_httpd_up "$([ "$mode" = on ] || echo "$mode")" || return 1
    while read -r acct pw addr; do
        [ -n "${done_[$acct]:-}" ] && continue
        n=$((n + 1))
        st=$(wp_login "$acct" "$pw" "$addr")
        case $st in
        302) reached=$((reached + 1)); found=$((found + 1)); done_[$acct]=1 ;;
        200) reached=$((reached + 1)) ;;
        esac
        if [ $((n % 10)) -eq 0 ]; then
            local users u
            read -r -a users <<<"$LEGIT"
            u=${users[$((k % 5))]}
            k=$((k + 1))
            ltotal=$((ltotal + 1))
            [ "$(wp_login "$u" "$u-good-pw" "10.30.0.$((k % 5 + 1))")" = 429 ] && lrefused=$((lrefused + 1))
        fi
    done < <(scenario "$sc")
    echo "$reached $found $lrefused $ltotal $n"
}

main() {
    local start=$SECONDS sc mode r rows=
    wp_up off || return 1
    stuff_users
    for sc in a b c; do
        # (c) also under one failure budget for the whole site, the one
        # lever that refuses a botnet's spread guesses.
        for mode in off on $([ "$sc" = c ] && echo site); do
            r=$(run "$sc" "$mode") || return 1
            echo "scenario $sc, recipe $mode: $r (reached found legit-refused legit-total guesses)"
            rows="$rows$sc $mode $r
"
        done
    done
    wp_down
    write_doc "$rows" $((SECONDS - start))
}

write_doc() {
    local rows=$1 took=$2
    local wp mdb
    wp=$(dpkg-query -W -f '${Version}' wordpress)
    mdb=$(dpkg-query -W -f '${Version}' mariadb-server)
    row() {
        echo "$rows" | awk -v s="$1" -v m="$2" '$1 == s && $2 == m {
            printf "| %d of %d | %d | %d of %d |", $3, $7, $4, $5, $6 }'
    }
    cat >"$OUT" <<DOC
# Credential stuffing against WordPress, replayed

\`make bench-stuffing\` (bench/stuffing.sh) replays credential stuffing
against a real WordPress: Debian's \`wordpress\` $wp with
\`mariadb-server\` $mdb, installed and served on 127.0.0.1 by
\`make test-wordpress\`'s bench/wordpress.sh (a MariaDB of its own, a
private prefork httpd with mod_php and the shm store). Each scenario runs
against a fresh server, with the README's WordPress recipe ("Form logins
by account": 5 failures per account in 15 minutes, \`count=200\`,
\`SlidingLimitKey form:log\`) on, and without it. Clients are told apart
by \`X-Forwarded-For\`, which mod_remoteip trusts from 127.0.0.1 only
(\`RemoteIPInternalProxy 127.0.0.1\`): the addresses below are the
header's. The accounts are u001..u200, each with its own password; an
attacker stops trying an account once its password is found. Every tenth
guess, one of five legitimate users logs in with the right password from
an address of their own.

- (a) one address tries 20 accounts with 10 leaked passwords each; the
  leak holds the right password of 3 accounts third and of 2 eighth;
- (b) one account is tried from 50 addresses, 2 passwords each; the 60th
  of 100 is right;
- (c) 200 accounts, each tried once from an address of its own (a
  botnet); 10 of the leaked passwords are still in use.

"Reached" counts the guesses WordPress checked (answered 200 or 302, not
429), of those sent; "found" the accounts whose password the attacker
learned; "refused" the legitimate logins answered 429.

| scenario | recipe | reached WordPress | accounts found | legitimate refused |
|---|---|---|---|---|
| (a) one address, 20 accounts | off $(row a off)
| (a) one address, 20 accounts | on $(row a on)
| (b) one account, 50 addresses | off $(row b off)
| (b) one account, 50 addresses | on $(row b on)
| (c) 200 accounts, 200 addresses | off $(row c off)
| (c) 200 accounts, 200 addresses | on $(row c on)
| (c) 200 accounts, 200 addresses | site-wide 50 $(row c site)

The whole run took $took s on this machine (2 shared cores).

What it shows:

- (b), many addresses against one account, is what a limit by account
  exists for: after 5 failures the account is refused from every
  address, and the password tried 60th is never checked. A limit by
  address alone would refuse none of the 100 guesses (2 per address).
- (a), one address against many accounts, is held only to 5 guesses per
  account: 20 accounts are at most 100 guesses, and a password among an
  account's first five is found (3 of the 5 here). What bounds it is a
  limit by address, and a section holds one key: the recipe's section
  cannot count by address beside its count by account. A limit on how
  many distinct accounts one address tries is the tool for this shape;
  it is not measured here.
- (c), each account tried once from an address of its own, is what no
  limiter can stop: every guess is the first of its account and of its
  address, so no limit by account or by address ever refuses one, and
  every leaked password still in use is found, recipe or not. What stops
  it lies outside the web server: a second factor, refusing passwords
  known to be leaked, a challenge for logins from new devices. A limit
  still bounds the cost of each of these attacks when it is repeated
  (each account has 5 failures per 15 minutes whatever the number of
  addresses), and never refused a legitimate login here: the legitimate
  users' accounts and addresses were not the attacked ones. An attacker
  who targets a legitimate user's account can lock it out for the window
  (README, "Form logins by account").
- "site-wide 50" is not a recipe but the one lever that does refuse
  (c): one budget of 50 failures per 15 minutes for the whole site
  (\`SlidingLimitKey expr:site\`, \`count=200\`). It stops the guesses
  after the 50th failure, and with them every legitimate login, whoever
  and wherever: the row's last column is what it costs. A site-wide
  budget that only tightens the per-address or per-account limits while
  an attack runs, instead of refusing everyone, is something the module
  does not offer today.

Rerun: \`make bench-stuffing\` (cached: the packages, the database and
the 200 accounts stay in /var/tmp/slidinglimit-wordpress;
\`make test-wordpress-remove\` purges them).
DOC
    echo "bench-stuffing: wrote $OUT"
}

trap wp_down EXIT
trap 'exit 143' TERM INT
main
