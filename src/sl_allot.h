/* SPDX-License-Identifier: Apache-2.0 */
/* SlidingLimitAllotment auto: a server's allotments. For a key whose
 * rate is high enough, a child asks the store for k units at once
 * (lua/sl_allot.lua) and the server admits from them on its own until
 * they are used or D has passed on the machine's monotonic clock since it
 * asked; what is left goes back with the key's next grant, naming the
 * grant it came from. The table is shared by the children through shm
 * where the MPM runs several (a prefork server's 40 children then fill one
 * grant of a key instead of asking 40 times), else it is the child's.
 * Pure: APR only, no httpd.h (tests/unit/sl_allot_test.c); the decision's
 * side is sl_allot_decide.c. */
#ifndef SL_ALLOT_H
#define SL_ALLOT_H

#include <apr_pools.h>
#include <apr_time.h>

#include "sl_limit.h"

/* D: how long a child may admit from a grant, from before it asked. */
#define SL_ALLOT_DEADLINE (1 * APR_USEC_PER_SEC)
/* A cell asking the store for longer than this is taken to be abandoned
 * (its asker died, or stalls far beyond any store timeout): its key may
 * ask again, and the late asker's grant is never used (sl_allot_settle
 * matches the ask's number), so it ages out in the store, counted. */
#define SL_ALLOT_ABANDON (10 * SL_ALLOT_DEADLINE)
/* The smallest limit that gets allotments, and the fraction of a limit
 * (or of a gcra burst) that one grant holds at most: a login's 5 per 15
 * minutes never gets one. */
#define SL_ALLOT_MIN_REQUESTS 64
#define SL_ALLOT_FRACTION     8
/* Keys a table keeps, and the longest key it keeps. */
#define SL_ALLOT_CELLS   4096
#define SL_ALLOT_KEY_MAX 240
/* A grant's id: the asking decision's member (sl_store.c). */
#define SL_ALLOT_ID_LEN 12

typedef struct sl_allot sl_allot_t;
typedef struct sl_allot_cell sl_allot_cell_t;
typedef struct sl_allot_shared sl_allot_shared_t;

/* post_config: the table the children share, anonymous shm in pconf (a
 * generation's own: an old generation's units age out in the store,
 * counted, as a dead child's do). */
apr_status_t sl_allot_shared_create(apr_pool_t *pconf, sl_allot_shared_t **out);

/* child_init: the child's view of shared, or, shared NULL, a table of its
 * own (threaded: locked by an apr_thread_mutex). */
sl_allot_t *sl_allot_create(apr_pool_t *p, int threaded,
                            sl_allot_shared_t *shared);

/* Microseconds on CLOCK_MONOTONIC: neither a step of the wall clock nor
 * another host's clock moves a deadline. */
apr_time_t sl_allot_clock(void);

/* Whether a budget may be decided from allotments at all (algorithm log,
 * gcra with a tolerance of 2 D, or counter with a window of
 * SL_ALLOT_COUNTER_SPANS D; a limit of at least SL_ALLOT_MIN_REQUESTS, a
 * cost of at most a grant). The caller excludes what this cannot see
 * (count=, block=, cost=after:, expr: quotas). */
int sl_allot_fits(const sl_budget_t *b);
/* Whether a counter budget's window is long enough for grants (its
 * algorithm not looked at: sl_allot_check.c warns by it at start-up). */
int sl_allot_counter_fits(const sl_budget_t *b);

/* What sl_allot_take says of one budget of a request. */
typedef struct sl_allot_slot {
    sl_allot_cell_t *cell;
    apr_uint32_t ask; /* ASK: the number of the ask under way */
    apr_int64_t want; /* units to ask for (SL_ALLOT_ASK) */
    /* the previous grant's give-back: give is 0 when none */
    int give;
    char give_id[SL_ALLOT_ID_LEN];
    apr_int64_t give_k, give_score, give_unused;
    apr_int64_t left; /* SL_ALLOT_TAKEN, sl_allot_settle: units left */
} sl_allot_slot_t;

#define SL_ALLOT_NONE  0 /* decide without allotments */
#define SL_ALLOT_TAKEN 1 /* admitted from the table's allotments */
#define SL_ALLOT_ASK   2 /* ask the store; then sl_allot_settle */

/* The request's budgets (n of them, each sl_allot_fits) at monotonic time
 * now: each takes its cost from its key's allotment (TAKEN, all or none),
 * else the cells are marked pending and slots say what to ask for and
 * give back (ASK), else NONE (no rate to fill a grant, another request is
 * asking, a key too long, a table full, a shared cell kept locked). */
int sl_allot_take(sl_allot_t *a, const sl_budget_t *b, int n, apr_time_t now,
                  sl_allot_slot_t *slots);

/* The store's answer to an ASK: k[i] units granted to budget i with the
 * log score score[i], under grant id, asked at monotonic time asked
 * (before the call); k NULL: nothing granted (no room, or no answer: what
 * was given back or granted ages out in the store, counted, never twice).
 * Each grant's units less the request's cost are the table's until
 * asked + SL_ALLOT_DEADLINE; slots[i].left says how many (0 when the ask
 * was taken for abandoned meanwhile: its units are never used). */
void sl_allot_settle(sl_allot_t *a, const sl_budget_t *b, int n,
                     sl_allot_slot_t *slots, const char *id, apr_time_t asked,
                     const apr_int64_t *k, const apr_int64_t *score);

/* A grant the table no longer uses: its deadline a D past, units left
 * (its key went idle here). Found among the next few cells, marked
 * pending, its give-back in *slot and its key in *b (pointing into the
 * cell, which stays while pending): 1; 0 when none. The caller gives it
 * back (lua/sl_allot.lua asking for nothing), then sl_allot_release. */
int sl_allot_stale(sl_allot_t *a, apr_time_t now, sl_budget_t *b,
                   sl_allot_slot_t *slot);
void sl_allot_release(sl_allot_t *a, sl_allot_slot_t *slot);

#endif
