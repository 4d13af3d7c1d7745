#include "sl_denycache.h"

#include <apr_thread_mutex.h>

#include <string.h>

/* Direct-mapped: a colliding key overwrites the older entry, which only
 * costs that key a store call. Memory stays fixed whatever the flood. */
#define SL_DC_SLOTS 4096
#define SL_DC_KEY   128

typedef struct sl_dc_entry {
    char key[SL_DC_KEY];
    apr_int64_t requests;
    apr_int64_t window;
    apr_int64_t burst;
    int algorithm;
    apr_time_t until;
    apr_time_t retry_at;
} sl_dc_entry_t;

struct sl_denycache {
    apr_thread_mutex_t *mutex; /* threads of one child share the table */
    sl_dc_entry_t slots[SL_DC_SLOTS];
};

sl_denycache_t *sl_denycache_create(apr_pool_t *p)
{
    sl_denycache_t *dc = apr_pcalloc(p, sizeof(*dc));

    if (apr_thread_mutex_create(&dc->mutex, APR_THREAD_MUTEX_DEFAULT, p) !=
        APR_SUCCESS) {
        return NULL;
    }
    return dc;
}

static unsigned int sl_dc_slot(const sl_check_t *c)
{
    /* FNV-1a: the keys are already hashes, any spread will do. */
    unsigned int h = 2166136261u;
    apr_size_t i;

    for (i = 0; i < c->key_len; i++) {
        h = (h ^ (unsigned char) c->key[i]) * 16777619u;
    }
    return h % SL_DC_SLOTS;
}

/* A named policy can be used with other values elsewhere: the refusal holds
 * only for the same key and the same limit. */
static int sl_dc_match(const sl_dc_entry_t *e, const sl_check_t *c)
{
    return e->requests == c->requests && e->window == c->window &&
           e->burst == c->burst && e->algorithm == c->algorithm &&
           c->key_len < SL_DC_KEY && !memcmp(e->key, c->key, c->key_len) &&
           e->key[c->key_len] == '\0';
}

int sl_denycache_find(sl_denycache_t *dc, const sl_check_t *checks, int n,
                      apr_time_t now, apr_time_t *retry_at)
{
    int i, found = -1;

    if (!dc) {
        return -1;
    }
    apr_thread_mutex_lock(dc->mutex);
    for (i = 0; i < n && found < 0; i++) {
        const sl_dc_entry_t *e = &dc->slots[sl_dc_slot(&checks[i])];
        if (e->until > now && sl_dc_match(e, &checks[i])) {
            *retry_at = e->retry_at;
            found = i;
        }
    }
    apr_thread_mutex_unlock(dc->mutex);
    return found;
}

void sl_denycache_put(sl_denycache_t *dc, const sl_check_t *c, apr_time_t until,
                      apr_time_t retry_at)
{
    sl_dc_entry_t *e;

    if (!dc || c->key_len >= SL_DC_KEY) {
        return;
    }
    apr_thread_mutex_lock(dc->mutex);
    e = &dc->slots[sl_dc_slot(c)];
    memcpy(e->key, c->key, c->key_len);
    e->key[c->key_len] = '\0';
    e->requests = c->requests;
    e->window = c->window;
    e->burst = c->burst;
    e->algorithm = c->algorithm;
    e->until = until;
    e->retry_at = retry_at;
    apr_thread_mutex_unlock(dc->mutex);
}
