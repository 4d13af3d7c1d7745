/* SPDX-License-Identifier: Apache-2.0 */
/* The decision math of every algorithm, exactly as lua/sl_check.lua computes
 * it, on plain state and a time in microseconds. APR only, no httpd.h: the
 * shm store keeps the state, this file decides, tests/unit checks it.
 *
 * The script runs in Lua 5.1, whose numbers are IEEE doubles. Every formula
 * here uses doubles in the script's order of operations, so that both stores
 * give bit-identical answers, rounding included. */
#ifndef SL_ALGO_H
#define SL_ALGO_H

#include <apr.h>

#include "sl_reply.h"

/* One limit's answer, as the script's (ok, r, r0, rs, rs0). */
typedef struct sl_eval {
    int ok;                 /* this limit has room for the request */
    apr_int64_t remaining;  /* r:  left after the request, if admitted */
    apr_int64_t reset;      /* rs: microseconds until more quota then */
    apr_int64_t remaining0; /* r0: left now, if the call is refused */
    apr_int64_t reset0;     /* rs0 */
} sl_eval_t;

/* The reply values of one limit: (r, rs) when the whole call admitted the
 * request, (r0, rs0) when any limit refused it. */
void sl_eval_quota(const sl_eval_t *ev, int admitted, sl_quota_t *q);

/* Sliding log: the admitted requests newer than now - win, each one entry
 * (its admission time and its weight, the units it consumed) in time
 * order, and the units they hold together. A request of any cost is one
 * entry: work and memory grow with the requests admitted, never with a
 * cost. Entries at or before the horizon are dropped first
 * (ZREMRANGEBYSCORE (0 now-win, which includes the bound). */
typedef apr_int64_t sl_log_at_fn(void *ctx, apr_int64_t i);

/* Entries a refusal's wait reads at most (lua/sl_check.lua's MAX_WALK). */
#define SL_LOG_WALK 1024

apr_int64_t sl_log_horizon(apr_int64_t now, apr_int64_t win);

/* units is the number of live units; at(ctx, i) returns the admission
 * time of the i-th oldest unit (0-based): that of the entry whose weight
 * covers it, found by reading the entries from the oldest, at most
 * SL_LOG_WALK of them; when those do not cover it, the newest entry's time
 * (by its expiry everything has: later than exact, never earlier, and a
 * refusal's work stays bounded). Only units 0 and units + cost - limit - 1
 * are ever read.
 * cost is the units the request consumes (1 to limit; the caller refuses
 * more, the script does too). */
void sl_log_evaluate(apr_int64_t now, apr_int64_t limit, apr_int64_t win,
                     apr_int64_t cost, apr_int64_t units, sl_log_at_fn *at,
                     void *ctx, sl_eval_t *ev);

/* A log as plain sorted arrays (the unit tests and the replay; the shm
 * store keeps the same sequence in chunks). */
typedef struct sl_log {
    apr_int64_t *ts;   /* admission times, ascending */
    apr_int64_t *w;    /* each entry's weight */
    apr_int64_t count; /* entries */
    apr_int64_t units; /* the sum of their weights */
} sl_log_t;

apr_int64_t sl_log_array_at(void *ctx, apr_int64_t i);

/* Drops the entries at or before the horizon; returns how many. */
apr_int64_t sl_log_expire(sl_log_t *log, apr_int64_t now, apr_int64_t win);

/* Admission: inserts one entry of weight cost at now in time order (ts and
 * w must have room for it) and returns the key's new expiry time
 * (PEXPIRE). */
apr_int64_t sl_log_apply(sl_log_t *log, apr_int64_t now, apr_int64_t win,
                         apr_int64_t cost);

/* Give-back (lua/sl_give_back.lua): drops one entry stamped at, the
 * admission's time, of weight cost; returns cost, or 0 when there is none.
 * Another request's entry of the same microsecond and weight is the same
 * entry to the math (same time, same weight, same expiry). */
apr_int64_t sl_log_give_back(sl_log_t *log, apr_int64_t at, apr_int64_t cost);

/* SlidingLimitConcurrent (the script's 'n'): the log of cost 1 whose
 * window is the lease, one entry per request in flight; every reset is
 * capped at SL_LEASE_WAIT (sl_limit.h), as nothing tells when a request in
 * flight ends. */
void sl_lease_evaluate(apr_int64_t now, apr_int64_t limit, apr_int64_t lease,
                       apr_int64_t units, sl_log_at_fn *at, void *ctx,
                       sl_eval_t *ev);

/* The expiry time of a log key after an admission at now. */
apr_int64_t sl_log_expires(apr_int64_t now, apr_int64_t win);

/* Approximated sliding window: the count of the fixed window idx (windows
 * aligned to multiples of win) and of the one before it. A zeroed state is
 * the same as no state. */
typedef struct sl_counter {
    apr_int64_t idx;
    apr_int64_t cur;
    apr_int64_t prev;
} sl_counter_t;

/* The stored state as seen from now's window (counter_state). */
void sl_counter_load(apr_int64_t now, apr_int64_t win,
                     const sl_counter_t *stored, sl_counter_t *st);

void sl_counter_evaluate(apr_int64_t now, apr_int64_t limit, apr_int64_t win,
                         apr_int64_t cost, const sl_counter_t *stored,
                         sl_eval_t *ev);

/* Admission: st becomes the new stored state; returns its expiry time. */
apr_int64_t sl_counter_apply(apr_int64_t now, apr_int64_t win, apr_int64_t cost,
                             sl_counter_t *st);

/* Give-back of cost units admitted at the store time at: taken from the
 * window they went into, the stored current one or, once the window moved
 * on, the previous one; nothing once it weighs nothing. Returns the units
 * given back (st is changed only then; its expiry stays). */
apr_int64_t sl_counter_give_back(apr_int64_t now, apr_int64_t win,
                                 apr_int64_t at, apr_int64_t cost,
                                 sl_counter_t *st);

/* The charge of cost=after: (lua/sl_charge.lua): cost units into now's
 * window whatever the limit, the count kept within the script's nine
 * digits (SL_COUNTER_MAX). Returns the expiry time, as an admission's. */
#define SL_COUNTER_MAX 999999999
apr_int64_t sl_counter_charge(apr_int64_t now, apr_int64_t win,
                              apr_int64_t cost, sl_counter_t *st);

/* GCRA: the theoretical arrival time of the next request; 0 is no state. */
typedef struct sl_gcra {
    double tat;
} sl_gcra_t;

void sl_gcra_evaluate(apr_int64_t now, apr_int64_t limit, apr_int64_t win,
                      apr_int64_t burst, apr_int64_t cost, const sl_gcra_t *st,
                      sl_eval_t *ev);

/* Admission: st becomes the new stored state; returns its expiry time. */
apr_int64_t sl_gcra_apply(apr_int64_t now, apr_int64_t limit, apr_int64_t win,
                          apr_int64_t burst, apr_int64_t cost, sl_gcra_t *st);

/* Give-back of cost units admitted at the store time at: the TAT moves
 * back by at most at + cost * T - now (T the emission interval), never by
 * more than cost * T, never below now. The request's charge is the cost
 * intervals after the TAT it found, which was at least at: at least that
 * much of it is still ahead of now, all of it if the bucket was empty. So
 * a long request's give-back never returns what has decayed since, which
 * would come out of later requests' charges. Returns the units given back,
 * rounded up (0: none; the expiry stays). */
apr_int64_t sl_gcra_give_back(apr_int64_t now, apr_int64_t limit,
                              apr_int64_t win, apr_int64_t at, apr_int64_t cost,
                              sl_gcra_t *st);

/* The charge of cost=after: (lua/sl_charge.lua): the TAT moves on by cost
 * intervals, at most to an empty bucket (now + tau): a TAT beyond it reads
 * as a clock that stepped back. Returns the expiry time (0: nothing
 * charged, the state is unchanged). */
apr_int64_t sl_gcra_charge(apr_int64_t now, apr_int64_t limit, apr_int64_t win,
                           apr_int64_t burst, apr_int64_t cost, sl_gcra_t *st);

/* Blocks (SlidingLimit ... block=): until is the stored end of the limit's
 * block (0: none). While it runs the limit refuses, whatever its
 * algorithm, with the block's end as reset: returns 1 and fills ev. An end
 * beyond now + block (the clock stepped back) ends one block from now. */
int sl_block_active(apr_int64_t now, apr_int64_t block, apr_int64_t until,
                    sl_eval_t *ev);

/* A limit that refused on its own starts its block: its reset becomes the
 * block's end when that is later. Returns the end to store; the entry
 * expires at sl_block_expires(). */
apr_int64_t sl_block_begin(apr_int64_t now, apr_int64_t block, sl_eval_t *ev);
apr_int64_t sl_block_expires(apr_int64_t now, apr_int64_t block);

#endif
