/* SPDX-License-Identifier: Apache-2.0 */
/* Circuit breaker for the store, lock-free so that it can live in shared
 * memory and be shared by every child: after a failure requests stop paying
 * the store's timeouts, and one request at a time flights the store again
 * with exponential backoff. */
#ifndef SL_BREAKER_H
#define SL_BREAKER_H

#include <apr_pools.h>
#include <apr_time.h>

#define SL_BREAKER_MIN_BACKOFF apr_time_from_msec(100)
#define SL_BREAKER_MAX_BACKOFF apr_time_from_sec(2)

typedef struct sl_breaker {
    volatile apr_uint32_t open;       /* 1 while the store is considered down */
    volatile apr_uint32_t backoff_ms; /* current probe interval */
    volatile apr_uint64_t retry_at;   /* apr_time_t of the next probe */
    volatile apr_uint64_t changed_at; /* apr_time_t of the last transition */
} sl_breaker_t;

void sl_breaker_init(sl_breaker_t *b);

/* 1 if this request may use the store: always while closed; once per
 * backoff interval while open (that request is the probe). */
int sl_breaker_allow(sl_breaker_t *b, apr_time_t now);

/* Each returns 1 on the call that changed the state, so that exactly one
 * process logs each outage and each recovery. started is when the request
 * asked the store: an answer to a request older than the last transition
 * says nothing new (under load, requests in flight when Redis goes away
 * still succeed after the first failure, and those in flight when it
 * returns still fail), so it changes nothing, neither the state nor the
 * backoff. */
int sl_breaker_success(sl_breaker_t *b, apr_time_t started, apr_time_t now);
int sl_breaker_failure(sl_breaker_t *b, apr_time_t started, apr_time_t now);

int sl_breaker_is_open(const sl_breaker_t *b);

/* Time until the next probe, for a fail-closed Retry-After. */
apr_interval_time_t sl_breaker_wait(const sl_breaker_t *b, apr_time_t now);

/* One breaker per store: a virtual host whose Redis is down must not switch
 * the other hosts' stores to their fail mode. The table lives in a small
 * zeroed shared segment kept across graceful restarts (sl_shm_retain: an
 * outage that spans a restart is still logged once, and no segment is made
 * per generation); a store's cell is claimed (sl_claim.h) by a digest of its
 * URL, credentials included, so two stores that differ only in the password
 * do not share a breaker. */
#define SL_BREAKER_CELLS 64

typedef struct sl_breakers sl_breakers_t;

/* The table's size, and the table in zeroed memory of that size. */
apr_size_t sl_breakers_size(void);
sl_breakers_t *sl_breakers_attach(apr_pool_t *p, void *base);

/* The store's breaker, claimed on first use by any process; NULL when every
 * cell belongs to another store (or was lost by a claimer that died). */
sl_breaker_t *sl_breakers_get(sl_breakers_t *t, const char *id,
                              apr_size_t id_len);

#endif
