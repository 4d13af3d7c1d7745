/* Which store decides for a server record in this child: the Redis client
 * with its circuit breaker, or the embedded shm store. Made in child_init,
 * one per SlidingLimitStore (virtual hosts that inherit a store share it). */
#ifndef SL_STORE_H
#define SL_STORE_H

#include "httpd.h"

#include "sl_limit.h"
#include "sl_proc.h"
#include "sl_redis.h"
#include "sl_reply.h"
#include "sl_url.h"

typedef struct sl_store {
    const sl_store_url_t *url; /* NULL: the shm store */
    /* NULL for shm; for Redis when the client could not be made, and then
     * every call fails (the fail mode applies) */
    sl_redis_t *redis;
    sl_breaker_t *breaker;
} sl_store_t;

/* child_init: the store of s and of every virtual host. threads: the
 * MPM's threads per child, the client's connections per node. */
/* What tells one store from another: its URL with the credentials (two
 * stores that differ only in the password are two); "shm" for none. */
const char *sl_store_id(apr_pool_t *p, const sl_store_url_t *u);

void sl_store_child_init(apr_pool_t *pchild, server_rec *s, sl_proc_t *proc,
                         int threads);

/* The store that decides for requests of s (NULL before child_init). */
sl_store_t *sl_store_of(server_rec *s);

/* One atomic decision over budgets: APR_SUCCESS with *d filled, anything
 * else when the store did not answer (logged once per outage, each failed
 * request at debug). */
apr_status_t sl_store_decide(sl_store_t *st, request_rec *r, sl_proc_t *proc,
                             const sl_budget_t *budgets, int n,
                             sl_decision_t *d, const char **member);

/* The give-back of count=: what the decision with member (from
 * sl_store_decide) at store time at consumed on budgets goes back. */
void sl_store_refund(sl_store_t *st, request_rec *r, sl_proc_t *proc,
                     const sl_budget_t *budgets, int n, const char *member,
                     apr_time_t at);

/* Time until the store is tried again, for a fail-closed Retry-After. */
apr_interval_time_t sl_store_wait(const sl_store_t *st, apr_time_t now);

/* Every Redis store of the configuration (main first) and its breaker's
 * state, for the status page; shared stores appear once per server. */
apr_array_header_t *sl_store_breakers(apr_pool_t *p, server_rec *main);

#endif
