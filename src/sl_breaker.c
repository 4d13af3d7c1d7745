/* SPDX-License-Identifier: Apache-2.0 */
/* The store's circuit breaker (lock-free, so that it can live in shared
 * memory) and the table of one breaker per store. */
#include "sl_breaker.h"
#include "sl_atomic.h"
#include "sl_claim.h"

#include <apr_atomic.h>
#include <apr_sha1.h>

#include <string.h>

void sl_breaker_init(sl_breaker_t *b)
{
    apr_atomic_set32(&b->open, 0);
    apr_atomic_set32(&b->backoff_ms, 0);
    sl_atomic_set64(&b->retry_at, 0);
    sl_atomic_set64(&b->changed_at, 0);
}

static int sl_breaker_changed_since(sl_breaker_t *b, apr_time_t started)
{
    return (apr_uint64_t) started < sl_atomic_read64(&b->changed_at);
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
    at = sl_atomic_read64(&b->retry_at);
    if ((apr_uint64_t) now < at) {
        return 0;
    }
    /* Claim this probe turn: the winner moves the next probe a backoff
     * interval ahead, so a lost probe (a killed child) only delays the next
     * one instead of wedging the breaker open. */
    ms = apr_atomic_read32(&b->backoff_ms);
    return sl_atomic_cas64(&b->retry_at,
                           (apr_uint64_t) now + apr_time_from_msec(ms),
                           at) == at;
}

int sl_breaker_success(sl_breaker_t *b, apr_time_t started, apr_time_t now)
{
    if (!apr_atomic_read32(&b->open) || sl_breaker_changed_since(b, started)) {
        return 0;
    }
    if (apr_atomic_cas32(&b->open, 0, 1) != 1) {
        return 0;
    }
    apr_atomic_set32(&b->backoff_ms, 0);
    sl_atomic_set64(&b->changed_at, (apr_uint64_t) now);
    return 1;
}

int sl_breaker_failure(sl_breaker_t *b, apr_time_t started, apr_time_t now)
{
    apr_uint32_t ms = apr_atomic_read32(&b->backoff_ms), next;

    if (sl_breaker_changed_since(b, started)) {
        return 0;
    }

    next =
        ms ? ms * 2 : (apr_uint32_t) apr_time_as_msec(SL_BREAKER_MIN_BACKOFF);
    if (next > apr_time_as_msec(SL_BREAKER_MAX_BACKOFF)) {
        next = (apr_uint32_t) apr_time_as_msec(SL_BREAKER_MAX_BACKOFF);
    }
    apr_atomic_set32(&b->backoff_ms, next);
    sl_atomic_set64(&b->retry_at,
                    (apr_uint64_t) now + apr_time_from_msec(next));
    if (apr_atomic_cas32(&b->open, 1, 0) != 0) {
        return 0;
    }
    sl_atomic_set64(&b->changed_at, (apr_uint64_t) now);
    return 1;
}

apr_interval_time_t sl_breaker_wait(const sl_breaker_t *b, apr_time_t now)
{
    apr_uint64_t at = sl_atomic_read64((volatile apr_uint64_t *) &b->retry_at);

    return at > (apr_uint64_t) now ? (apr_interval_time_t) (at - now) : 0;
}

typedef struct sl_breaker_cell {
    sl_claim_id_t id;
    sl_breaker_t breaker;
} sl_breaker_cell_t;

struct sl_breakers {
    sl_breaker_cell_t *cells;
};

apr_size_t sl_breakers_size(void)
{
    return sizeof(sl_breaker_cell_t) * SL_BREAKER_CELLS;
}

sl_breakers_t *sl_breakers_attach(apr_pool_t *p, void *base)
{
    sl_breakers_t *t = apr_pcalloc(p, sizeof(*t));

    t->cells = base;
    return t;
}

static void sl_breaker_cell_init(void *cell)
{
    sl_breaker_init(&((sl_breaker_cell_t *) cell)->breaker);
}

sl_breaker_t *sl_breakers_get(sl_breakers_t *t, const char *id,
                              apr_size_t id_len)
{
    unsigned char digest[APR_SHA1_DIGESTSIZE];
    apr_sha1_ctx_t ctx;
    int i;

    /* The cell keeps a digest of the id, never the id: it holds the
     * store's password. */
    apr_sha1_init(&ctx);
    apr_sha1_update_binary(&ctx, (const unsigned char *) id,
                           (unsigned int) id_len);
    apr_sha1_final(digest, &ctx);
    i = sl_claim_digest(t->cells, sizeof(sl_breaker_cell_t), SL_BREAKER_CELLS,
                        digest, sl_breaker_cell_init);
    return i < 0 ? NULL : &t->cells[i].breaker;
}
