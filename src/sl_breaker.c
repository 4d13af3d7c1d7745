#include "sl_breaker.h"

#include <apr_atomic.h>
#include <apr_sha1.h>
#include <apr_shm.h>

#include <string.h>

void sl_breaker_init(sl_breaker_t *b)
{
    apr_atomic_set32(&b->open, 0);
    apr_atomic_set32(&b->backoff_ms, 0);
    apr_atomic_set64(&b->retry_at, 0);
    apr_atomic_set64(&b->changed_at, 0);
}

static int sl_breaker_stale(sl_breaker_t *b, apr_time_t started)
{
    return (apr_uint64_t) started < apr_atomic_read64(&b->changed_at);
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

int sl_breaker_success(sl_breaker_t *b, apr_time_t started, apr_time_t now)
{
    if (!apr_atomic_read32(&b->open) || sl_breaker_stale(b, started)) {
        return 0;
    }
    if (apr_atomic_cas32(&b->open, 0, 1) != 1) {
        return 0;
    }
    apr_atomic_set32(&b->backoff_ms, 0);
    apr_atomic_set64(&b->changed_at, (apr_uint64_t) now);
    return 1;
}

int sl_breaker_failure(sl_breaker_t *b, apr_time_t started, apr_time_t now)
{
    apr_uint32_t ms = apr_atomic_read32(&b->backoff_ms), next;

    if (sl_breaker_stale(b, started)) {
        return 0;
    }

    next =
        ms ? ms * 2 : (apr_uint32_t) apr_time_as_msec(SL_BREAKER_MIN_BACKOFF);
    if (next > apr_time_as_msec(SL_BREAKER_MAX_BACKOFF)) {
        next = (apr_uint32_t) apr_time_as_msec(SL_BREAKER_MAX_BACKOFF);
    }
    apr_atomic_set32(&b->backoff_ms, next);
    apr_atomic_set64(&b->retry_at,
                     (apr_uint64_t) now + apr_time_from_msec(next));
    if (apr_atomic_cas32(&b->open, 1, 0) != 0) {
        return 0;
    }
    apr_atomic_set64(&b->changed_at, (apr_uint64_t) now);
    return 1;
}

apr_interval_time_t sl_breaker_wait(const sl_breaker_t *b, apr_time_t now)
{
    apr_uint64_t at = apr_atomic_read64((volatile apr_uint64_t *) &b->retry_at);

    return at > (apr_uint64_t) now ? (apr_interval_time_t) (at - now) : 0;
}

typedef struct sl_breaker_slot {
    volatile apr_uint32_t state; /* 0 free, 1 being claimed, 2 ready */
    unsigned char id[APR_SHA1_DIGESTSIZE];
    sl_breaker_t breaker;
} sl_breaker_slot_t;

struct sl_breakers {
    apr_shm_t *shm;
    sl_breaker_slot_t *slots;
};

/* The process pool outlives every generation of pconf, so keeping the table
 * there (found again through the userdata of that pool) makes graceful
 * restarts reuse it instead of mapping a new segment each time. */
#define SL_BREAKERS_KEY "mod_slidinglimit-breakers"

apr_status_t sl_breakers_create(apr_pool_t *process_pool, sl_breakers_t **out)
{
    sl_breakers_t *t = NULL;
    apr_status_t rv;

    apr_pool_userdata_get((void **) &t, SL_BREAKERS_KEY, process_pool);
    if (t) {
        *out = t;
        return APR_SUCCESS;
    }
    t = apr_pcalloc(process_pool, sizeof(*t));
    rv = apr_shm_create(&t->shm, sizeof(sl_breaker_slot_t) * SL_BREAKER_SLOTS,
                        NULL, process_pool);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    t->slots = apr_shm_baseaddr_get(t->shm);
    memset(t->slots, 0, sizeof(sl_breaker_slot_t) * SL_BREAKER_SLOTS);
    apr_pool_userdata_setn(t, SL_BREAKERS_KEY, NULL, process_pool);
    *out = t;
    return APR_SUCCESS;
}

sl_breaker_t *sl_breakers_get(sl_breakers_t *t, const char *id,
                              apr_size_t id_len)
{
    unsigned char digest[APR_SHA1_DIGESTSIZE];
    apr_sha1_ctx_t ctx;
    unsigned int h, i;

    apr_sha1_init(&ctx);
    apr_sha1_update_binary(&ctx, (const unsigned char *) id,
                           (unsigned int) id_len);
    apr_sha1_final(digest, &ctx);
    h = (unsigned int) digest[0] | (unsigned int) digest[1] << 8;
    for (i = 0; i < SL_BREAKER_SLOTS; i++) {
        sl_breaker_slot_t *slot = &t->slots[(h + i) % SL_BREAKER_SLOTS];
        apr_uint32_t state = apr_atomic_read32(&slot->state);

        if (state == 0 && apr_atomic_cas32(&slot->state, 1, 0) == 0) {
            memcpy(slot->id, digest, sizeof(digest));
            sl_breaker_init(&slot->breaker);
            apr_atomic_set32(&slot->state, 2);
            return &slot->breaker;
        }
        /* Another process is claiming this slot: its id is written in the
         * next instructions, so wait for it rather than skip a slot that
         * may be ours. */
        while ((state = apr_atomic_read32(&slot->state)) == 1) {
            apr_sleep(10);
        }
        if (!memcmp(slot->id, digest, sizeof(digest))) {
            return &slot->breaker;
        }
    }
    return NULL;
}
