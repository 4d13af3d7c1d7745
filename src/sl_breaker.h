/* Circuit breaker for the store, lock-free so that it can live in shared
 * memory and be shared by every child: after a failure requests stop paying
 * the store's timeouts, and one request at a time probes the store again
 * with exponential backoff. */
#ifndef SL_BREAKER_H
#define SL_BREAKER_H

#include <apr_time.h>

#define SL_BREAKER_MIN_BACKOFF apr_time_from_msec(100)
#define SL_BREAKER_MAX_BACKOFF apr_time_from_sec(2)

typedef struct sl_breaker {
    volatile apr_uint32_t open;       /* 1 while the store is considered down */
    volatile apr_uint32_t backoff_ms; /* current probe interval */
    volatile apr_uint64_t retry_at;   /* apr_time_t of the next probe */
} sl_breaker_t;

void sl_breaker_init(sl_breaker_t *b);

/* 1 if this request may use the store: always while closed; once per
 * backoff interval while open (that request is the probe). */
int sl_breaker_allow(sl_breaker_t *b, apr_time_t now);

/* Each returns 1 on the call that changed the state, so that exactly one
 * process logs each outage and each recovery. */
int sl_breaker_success(sl_breaker_t *b);
int sl_breaker_failure(sl_breaker_t *b, apr_time_t now);

int sl_breaker_is_open(const sl_breaker_t *b);

/* Time until the next probe, for a fail-closed Retry-After. */
apr_interval_time_t sl_breaker_wait(const sl_breaker_t *b, apr_time_t now);

#endif
