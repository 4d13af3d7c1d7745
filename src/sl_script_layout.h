/* SPDX-License-Identifier: Apache-2.0 */
/* How many arguments each script takes (ARGV): head of them once per call
 * (the member first, then the give-back's admission time), then per of them
 * for each budget (what sl_redis.c writes for it, in the order the script's
 * header lists). The one home of those numbers: tools/embed-lua.sh writes
 * them into each script as the Lua locals ARGV_HEAD and ARGV_PER, and
 * sl_redis.c counts its RESP arguments with them, so a budget argument
 * added on one side only is a protocol error on the first call. Any other
 * SL_X_NAME number here is a bound script X shares with the C side, written
 * into it as the local NAME. One #define per line, read by
 * tools/embed-lua.sh. */
#ifndef SL_SCRIPT_LAYOUT_H
#define SL_SCRIPT_LAYOUT_H

/* lua/sl_check.lua: member; algorithm, requests, window, burst, cost,
 * block ("peek" may follow them all) */
#define SL_CHECK_ARGV_HEAD 1
#define SL_CHECK_ARGV_PER  6
/* distinct=: the most values a limit may count (sl_limit.h's
 * SL_DISTINCT_MAX; the script's DISTINCT_MAX) */
#define SL_CHECK_DISTINCT_MAX 1000

/* lua/sl_give_back.lua: member, admission time; algorithm, requests,
 * window, cost */
#define SL_GIVE_BACK_ARGV_HEAD 2
#define SL_GIVE_BACK_ARGV_PER  4

/* lua/sl_charge.lua: member; algorithm, requests, window, burst, units */
#define SL_CHARGE_ARGV_HEAD 1
#define SL_CHARGE_ARGV_PER  5

/* lua/sl_renew.lua: member; lease */
#define SL_RENEW_ARGV_HEAD 1
#define SL_RENEW_ARGV_PER  1

/* lua/sl_allot.lua: grant id, deadline; algorithm, requests, window,
 * burst, cost, want, and the give-back's grant id, units, score, unused */
#define SL_ALLOT_ARGV_HEAD 2
#define SL_ALLOT_ARGV_PER  10
/* The shortest counter window that gets grants, in deadlines (D): the
 * script's COUNTER_SPANS, sl_allot.c's and sl_allot_check.c's too */
#define SL_ALLOT_COUNTER_SPANS 2

#endif
