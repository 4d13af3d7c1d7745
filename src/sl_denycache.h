/* SPDX-License-Identifier: Apache-2.0 */
/* Cache of refusals shared by all children of the server: once the store
 * says a key has no room for a request's cost until T, nothing can free
 * quota for it before T (only admissions change its state, and it admits
 * none), so later requests of that cost on that key are refused here until
 * T without a store call, by whichever child gets them. That keeps a flood
 * from one key off the store and off the network, however many children
 * (prefork) answer it.
 *
 * An admission that leaves a limit with nothing remaining is cached the
 * same way: the script's reset for remaining 0 is the exact earliest time
 * one more request fits, and other servers can only consume more.
 *
 * The table lives in shared memory made before fork, one per generation
 * (children of an old generation keep theirs). Readers take no lock: each
 * cell has a sequence number a writer makes odd while it writes, and a
 * reader uses only a copy taken between two equal even values.
 *
 * Single flight: when a refusal just ended and the key is still flooding,
 * every thread of every child would ask the store at the same moment. The
 * first thread of a child asks for its child, the others wait on a
 * condition variable for its answer; and the first of those leaders, in any
 * child, asks for all children: the leaders of the other children wait for
 * its answer by looking at the cell again every 200 us (children share no
 * condition variable). All waits end with the answer, or at the command
 * timeout; the waiters are answered here when it refused or exhausted the
 * key, else ask the store themselves. */
#ifndef SL_DENYCACHE_H
#define SL_DENYCACHE_H

#include "sl_limit.h"
#include "sl_reply.h"

typedef struct sl_denycache_shm sl_denycache_shm_t;
typedef struct sl_denycache sl_denycache_t;

/* The shared table, in the parent before fork (post_config): its life is
 * p's (the configuration pool: one table per generation). */
apr_status_t sl_denycache_shm_create(apr_pool_t *p, sl_denycache_shm_t **out);

/* A process's handle on the shared table (child_init; NULL shm: no cache).
 * threaded: other threads of this process decide at the same time, so a
 * request may wait for one of them; without threads nobody ever waits. */
sl_denycache_t *sl_denycache_create(apr_pool_t *p, sl_denycache_shm_t *shm,
                                    int threaded);

/* Before a store call. Returns how many budgets are refused here: for each,
 * retry_at[i] is the time to tell the client (0 for the others); *now is
 * the time this answer holds for, also the "sent" time of a store call made
 * after it (it may be later than on entry: see wait).
 *
 * When none is refused but one of the budgets was refused until a moment ago
 * and another request (another thread, or another child) is asking the
 * store about it, this waits for that answer, at most wait, then looks
 * again. flights (n entries, zeroed by the
 * caller) records the budgets this request asks the store about on behalf
 * of the others: pass it to sl_denycache_settle, whatever the store does. */
int sl_denycache_find(sl_denycache_t *dc, const sl_budget_t *budgets, int n,
                      apr_interval_time_t wait, apr_time_t *now,
                      apr_time_t *retry_at, apr_uint32_t *flights);

/* After the store call (d NULL when it failed or was not made): remembers
 * each limit that has no room for one more request until its reset, and
 * releases the threads waiting for this request's answer. sent is *now of
 * sl_denycache_find (never later than the store's decision: the cache
 * stops answering no later than the store would), got the time of the
 * answer (never earlier: what clients are told). */
void sl_denycache_settle(sl_denycache_t *dc, const sl_budget_t *budgets, int n,
                         const sl_decision_t *d, apr_time_t sent,
                         apr_time_t got, const apr_uint32_t *flights);

/* The operator's reset: forgets every refusal remembered for the budgets'
 * keys (whatever limit it was for), in the table every child reads, and
 * keeps out the answers of store calls sent before now (a request in
 * flight during the reset). Returns how many refusals were forgotten. */
int sl_denycache_clear(sl_denycache_t *dc, const sl_budget_t *budgets, int n);

/* The cell c takes in the shared table: keyed by the table's own secret,
 * so it differs from one generation to the next. For tests. */
unsigned int sl_denycache_cell(const sl_denycache_t *dc, const sl_budget_t *c);

#endif
