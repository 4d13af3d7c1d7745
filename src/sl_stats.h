/* SPDX-License-Identifier: Apache-2.0 */
/* Counters for the whole server, in shared memory so every child adds to
 * the same figures, served in the Prometheus text format by the
 * "slidinglimit-status" handler. */
#ifndef SL_STATS_H
#define SL_STATS_H

#include "httpd.h"
#include "sl_breaker.h"
#include "sl_limit.h"
#include "sl_outcome.h"

typedef struct sl_stats sl_stats_t;

const char *sl_result_name(int result);

/* post_config: the segment (kept across graceful restarts) with the main
 * server's store breaker inside it; the breaker of the store whose id
 * (URL with credentials) is given, closed afresh when that store is not
 * the one it was before the restart. Called in the parent only. */
apr_status_t sl_stats_create(apr_pool_t *pconf, server_rec *s,
                             sl_stats_t **out);
sl_breaker_t *sl_stats_breaker(sl_stats_t *st, const char *id,
                               apr_size_t id_len);

/* The policy label of a limit: its name, and for an unnamed limit (named
 * by its values) the innermost section's argument too: "3-per-1m@/login". */
const char *sl_stats_policy(apr_pool_t *p, const sl_limit_t *l);

/* The label sl_stats_policy made when the limit was read. */
#define sl_limit_label(l) ((l)->label ? (l)->label : (l)->name)

/* A decision of limit l (NULL: of none, shown as policy "-"). */
void sl_stats_decision(sl_stats_t *st, const sl_limit_t *l, int result);
/* A count= limit's admission once the status is known: counted (1) or
 * given back (0). */
void sl_stats_counted(sl_stats_t *st, const sl_limit_t *l, int counted);
/* One call to the Redis store shown as name (its URL's display, whose
 * sl_fnv1a is name_hash: sl_store_url_t's display_hash): its time,
 * whether it failed, and the round trips it made itself (several calls
 * share one when the client batches them). */
void sl_stats_store(sl_stats_t *st, const char *name, apr_uint32_t name_hash,
                    apr_interval_time_t latency, int error, int trips);
void sl_stats_fallback(sl_stats_t *st);
void sl_stats_deny_cached(sl_stats_t *st);
/* A refusal that started a block= (one store answer, not a cached one). */
void sl_stats_blocks(sl_stats_t *st, int started);
/* delay=: a request of this server starts waiting (1) or stops (-1); one
 * that waited waited microseconds and was then admitted or not; one the
 * cap of waiters turned away (refused at once). */
void sl_stats_delay_waiting(sl_stats_t *st, int change);
void sl_stats_delayed(sl_stats_t *st, apr_int64_t waited, int admitted);
void sl_stats_delay_full(sl_stats_t *st);
/* A charge of cost=after: after the response: done with units charged, or
 * failed. */
void sl_stats_charge(sl_stats_t *st, int failed, apr_int64_t units);

/* A Redis store's breaker as the status page shows it. */
typedef struct sl_stats_breaker_state {
    const char *name; /* its URL's display */
    int open;
} sl_stats_breaker_state_t;

/* The text of the status page; breakers (sl_stats_breaker_state_t, NULL:
 * none) are the configured Redis stores. */
void sl_stats_write(sl_stats_t *st, request_rec *r,
                    const apr_array_header_t *breakers);

#endif
