#include "sl_denycache.h"

#include <apr_thread_cond.h>
#include <apr_thread_mutex.h>

#include <string.h>

/* Direct-mapped: a colliding key overwrites the older entry, which only
 * costs that key a store call. Memory stays fixed whatever the flood. */
#define SL_DC_SLOTS 4096
#define SL_DC_KEY   128

/* Waiters sleep on the condition of their slot's stripe: an answer wakes
 * the threads of one stripe, and each looks at its own slot again. */
#define SL_DC_CONDS 64

/* A refusal that ended less than this ago marks a key as still flooding:
 * only for such a key may a request wait for another thread's answer. A
 * flooding client is back within milliseconds of the end. */
#define SL_DC_RECENT apr_time_from_sec(1)

typedef struct sl_dc_entry {
    char key[SL_DC_KEY];
    apr_int64_t requests;
    apr_int64_t window;
    apr_int64_t burst;
    int algorithm;
    apr_time_t until; /* 0: nothing known */
    apr_time_t retry_at;
    /* The request asking the store about this key for the other threads
     * (0: none), and when waiting for it stops making sense: its marker is
     * ignored after that even if it never settled. */
    apr_uint32_t probe;
    apr_time_t probe_end;
} sl_dc_entry_t;

struct sl_denycache {
    apr_thread_mutex_t *mutex; /* threads of one child share the table */
    int threaded;
    apr_thread_cond_t *cond[SL_DC_CONDS]; /* threaded only */
    apr_uint32_t last_probe;
    sl_dc_entry_t slots[SL_DC_SLOTS];
};

sl_denycache_t *sl_denycache_create(apr_pool_t *p, int threaded)
{
    sl_denycache_t *dc = apr_pcalloc(p, sizeof(*dc));
    int i;

    if (apr_thread_mutex_create(&dc->mutex, APR_THREAD_MUTEX_DEFAULT, p) !=
        APR_SUCCESS) {
        return NULL;
    }
    dc->threaded = threaded;
    for (i = 0; dc->threaded && i < SL_DC_CONDS; i++) {
        if (apr_thread_cond_create(&dc->cond[i], p) != APR_SUCCESS) {
            /* The cache still works, only without single flight. */
            dc->threaded = 0;
        }
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

/* Every check refused here at now, with its retry_at; the count. */
static int sl_dc_hits(const sl_denycache_t *dc, const sl_check_t *checks, int n,
                      apr_time_t now, apr_time_t *retry_at)
{
    int i, hits = 0;

    for (i = 0; i < n; i++) {
        const sl_dc_entry_t *e = &dc->slots[sl_dc_slot(&checks[i])];
        retry_at[i] = 0;
        if (e->until > now && sl_dc_match(e, &checks[i])) {
            retry_at[i] = e->retry_at;
            hits++;
        }
    }
    return hits;
}

static int sl_dc_recent(const sl_dc_entry_t *e, const sl_check_t *c,
                        apr_time_t now)
{
    return e->until && e->until <= now && now - e->until < SL_DC_RECENT &&
           sl_dc_match(e, c);
}

static int sl_dc_probing(const sl_dc_entry_t *e, apr_time_t now)
{
    return e->probe && now < e->probe_end;
}

int sl_denycache_find(sl_denycache_t *dc, const sl_check_t *checks, int n,
                      apr_interval_time_t wait, apr_time_t *now,
                      apr_time_t *retry_at, apr_uint32_t *probes)
{
    int i, hits;
    apr_time_t end;

    if (!dc) {
        *now = apr_time_now();
        for (i = 0; i < n; i++) {
            retry_at[i] = 0;
        }
        return 0;
    }
    apr_thread_mutex_lock(dc->mutex);
    *now = apr_time_now();
    hits = sl_dc_hits(dc, checks, n, *now, retry_at);
    if (hits || !dc->threaded) {
        apr_thread_mutex_unlock(dc->mutex);
        return hits;
    }

    /* A key refused until a moment ago that another thread is asking about
     * right now: its answer most likely refuses or exhausts the key again,
     * so wait for it (bounded) rather than ask too. An answer that came a
     * little early (refused, but only until a time already past) leaves the
     * key recent: the next asker is then waited for in turn, so that the
     * other threads still make no call. An answer with room, or none at
     * all, makes the key not recent: everybody asks. */
    end = *now + wait;
    for (;;) {
        const sl_dc_entry_t *e = NULL;
        unsigned int s = 0;
        apr_uint32_t probe;
        apr_time_t deadline;

        for (i = 0; i < n && !e; i++) {
            s = sl_dc_slot(&checks[i]);
            e = &dc->slots[s];
            if (!sl_dc_probing(e, *now) || !sl_dc_recent(e, &checks[i], *now)) {
                e = NULL;
            }
        }
        if (!e || *now >= end) {
            break;
        }
        probe = e->probe;
        deadline = e->probe_end < end ? e->probe_end : end;
        /* Until the asker settles, or anyone puts an entry for the key, or
         * the slot goes to another key (which clears the marker), or time
         * is up. */
        while (e->probe == probe && e->until <= *now && *now < deadline) {
            apr_thread_cond_timedwait(dc->cond[s % SL_DC_CONDS], dc->mutex,
                                      deadline - *now);
            *now = apr_time_now();
        }
        hits = sl_dc_hits(dc, checks, n, *now, retry_at);
        if (hits) {
            apr_thread_mutex_unlock(dc->mutex);
            return hits;
        }
    }

    /* This request asks the store: for each recently refused key nobody
     * else is asking about, it asks on behalf of the threads that come
     * next. An asker that never settles is ignored after probe_end. */
    for (i = 0; i < n; i++) {
        sl_dc_entry_t *e = &dc->slots[sl_dc_slot(&checks[i])];
        if (!sl_dc_probing(e, *now) && sl_dc_recent(e, &checks[i], *now)) {
            if (++dc->last_probe == 0) {
                ++dc->last_probe; /* 0 means nobody */
            }
            e->probe = probes[i] = dc->last_probe;
            e->probe_end = *now + wait;
        }
    }
    apr_thread_mutex_unlock(dc->mutex);
    return 0;
}

/* Limit i of the answer has no room for one more request until its reset:
 * refused, or admitted with nothing left. For all three algorithms the
 * script's reset is then the exact earliest time one more fits, and only
 * time frees quota (other servers can only consume more). */
static int sl_dc_full(const sl_decision_t *d, int i)
{
    const sl_result_t *r = &d->res[i];

    return d->admitted ? r->remaining <= 0 && r->reset > 0 : !r->ok;
}

static void sl_dc_put(sl_dc_entry_t *e, const sl_check_t *c, apr_time_t until,
                      apr_time_t retry_at)
{
    if (!sl_dc_match(e, c)) {
        memcpy(e->key, c->key, c->key_len);
        e->key[c->key_len] = '\0';
        e->requests = c->requests;
        e->window = c->window;
        e->burst = c->burst;
        e->algorithm = c->algorithm;
        e->until = until;
        e->retry_at = retry_at;
        /* The old key's waiters stop waiting, and its asker's settle no
         * longer finds its marker. */
        e->probe = 0;
        return;
    }
    /* Answers from several threads all hold: the latest end wins, whatever
     * order they arrive in. */
    if (until > e->until) {
        e->until = until;
        e->retry_at = retry_at;
    }
}

void sl_denycache_settle(sl_denycache_t *dc, const sl_check_t *checks, int n,
                         const sl_decision_t *d, apr_time_t sent,
                         apr_time_t got, const apr_uint32_t *probes)
{
    int i, todo = 0;

    /* The allowed path, as a rule: nothing to remember, nobody waiting for
     * this request, so no lock. */
    for (i = 0; dc && i < n && !todo; i++) {
        todo = probes[i] || (d && sl_dc_full(d, i));
    }
    if (!todo) {
        return;
    }
    apr_thread_mutex_lock(dc->mutex);
    for (i = 0; i < n; i++) {
        const sl_check_t *c = &checks[i];
        unsigned int s = sl_dc_slot(c);
        sl_dc_entry_t *e = &dc->slots[s];
        int waited_on = e->probe != 0;
        int mine = probes[i] && e->probe == probes[i];

        if (d && sl_dc_full(d, i)) {
            if (c->key_len < SL_DC_KEY) {
                sl_dc_put(e, c, sent + d->res[i].reset, got + d->res[i].reset);
            }
        }
        else if (mine && e->until <= got) {
            /* The key had room (it is not flooding), or the store did not
             * answer (the waiters ask it themselves, under the breaker):
             * nobody waits for this key until it is refused again. */
            e->until = 0;
        }
        /* Whatever happened (an answer with room, an error, a timeout),
         * the waiters go on: with an entry, or to the store themselves. */
        if (mine) {
            e->probe = 0;
        }
        if (waited_on && dc->threaded) {
            apr_thread_cond_broadcast(dc->cond[s % SL_DC_CONDS]);
        }
    }
    apr_thread_mutex_unlock(dc->mutex);
}
