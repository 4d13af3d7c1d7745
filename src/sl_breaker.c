#include "sl_breaker.h"

#include <apr_atomic.h>

void sl_breaker_init(sl_breaker_t *b)
{
    apr_atomic_set32(&b->open, 0);
    apr_atomic_set32(&b->backoff_ms, 0);
    apr_atomic_set64(&b->retry_at, 0);
}

int sl_breaker_is_open(const sl_breaker_t *b)
{
    return apr_atomic_read32((volatile apr_uint32_t *) &b->open) != 0;
}

int sl_breaker_allow(sl_breaker_t *b, apr_time_t now)
{
    apr_uint64_t at;
    apr_uint32_t ms;

    if (!apr_atomic_read32(&b->open)) {
        return 1;
    }
    at = apr_atomic_read64(&b->retry_at);
    if ((apr_uint64_t) now < at) {
        return 0;
    }
    /* Claim this probe slot: the winner moves the next probe a backoff
     * interval ahead, so a lost probe (a killed child) only delays the next
     * one instead of wedging the breaker open. */
    ms = apr_atomic_read32(&b->backoff_ms);
    return apr_atomic_cas64(&b->retry_at,
                            (apr_uint64_t) now + apr_time_from_msec(ms),
                            at) == at;
}

int sl_breaker_success(sl_breaker_t *b)
{
    if (!apr_atomic_read32(&b->open)) {
        return 0;
    }
    apr_atomic_set32(&b->backoff_ms, 0);
    return apr_atomic_cas32(&b->open, 0, 1) == 1;
}

int sl_breaker_failure(sl_breaker_t *b, apr_time_t now)
{
    apr_uint32_t ms = apr_atomic_read32(&b->backoff_ms), next;

    next = ms ? ms * 2 : (apr_uint32_t) apr_time_as_msec(SL_BREAKER_MIN_BACKOFF);
    if (next > apr_time_as_msec(SL_BREAKER_MAX_BACKOFF)) {
        next = (apr_uint32_t) apr_time_as_msec(SL_BREAKER_MAX_BACKOFF);
    }
    apr_atomic_set32(&b->backoff_ms, next);
    apr_atomic_set64(&b->retry_at, (apr_uint64_t) now + apr_time_from_msec(next));
    return apr_atomic_cas32(&b->open, 1, 0) == 0;
}

apr_interval_time_t sl_breaker_wait(const sl_breaker_t *b, apr_time_t now)
{
    apr_uint64_t at = apr_atomic_read64((volatile apr_uint64_t *) &b->retry_at);

    return at > (apr_uint64_t) now ? (apr_interval_time_t)(at - now) : 0;
}
