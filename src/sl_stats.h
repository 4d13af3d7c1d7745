/* Counters for the whole server, in shared memory so every child adds to
 * the same figures, served in the Prometheus text format by the
 * "slidinglimit-status" handler. */
#ifndef SL_STATS_H
#define SL_STATS_H

#include "httpd.h"
#include "sl_breaker.h"
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

void sl_stats_decision(sl_stats_t *st, const char *policy, int result);
void sl_stats_store(sl_stats_t *st, apr_interval_time_t latency, int error);
/* Round trips a store call made itself (several calls share one when the
 * Redis client batches them). */
void sl_stats_round_trips(sl_stats_t *st, int trips);
void sl_stats_fallback(sl_stats_t *st);
void sl_stats_deny_cached(sl_stats_t *st);
/* A refusal that started a block= (one store answer, not a cached one). */
void sl_stats_blocks(sl_stats_t *st, int started);

/* The text of the status page. */
void sl_stats_write(sl_stats_t *st, request_rec *r);

#endif
