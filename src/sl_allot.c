/* SPDX-License-Identifier: Apache-2.0 */
/* One child's allotments (see sl_allot.h): a fixed table of cells, one per
 * key, found by a hash of the key and its store; a mutex under a threaded
 * MPM. */
#include "sl_allot.h"
#include "sl_script_layout.h"

#include <apr_thread_mutex.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SL_ALLOT_BUCKETS 1024

struct sl_allot_cell {
    sl_allot_cell_t *next; /* in its bucket */
    int used;              /* holds a key */
    apr_uint32_t tag;
    int algorithm;
    apr_int64_t requests, window, burst;
    apr_size_t key_len;
    char key[SL_ALLOT_KEY_MAX];
    /* The grant held: k units (0: none) of which left are unused, usable
     * before deadline; score names its log entry. */
    char id[SL_ALLOT_ID_LEN];
    apr_int64_t k, left, score;
    apr_time_t deadline;
    int pending; /* a thread is asking the store */
    /* No asking before then: the last ask found no room. */
    apr_time_t dry_until;
    /* Requests seen in the current period of D (its index) and the one
     * before: the key's rate on this child. */
    apr_int64_t period, seen, seen_prev;
    apr_time_t touched;
};

struct sl_allot {
    apr_thread_mutex_t *mutex; /* NULL: one thread */
    /* Made at the first use under the lock, so that a child whose
     * sections leave allotments off keeps none; with calloc, as a pool of
     * the child's (its allocator too) is one thread's at a time, and
     * other threads (another store's waiters, httpd's own) use it. Freed
     * at child exit. */
    sl_allot_cell_t *cells;
    sl_allot_cell_t *buckets[SL_ALLOT_BUCKETS];
    int nused;
    int sweep;      /* the next cell sl_allot_stale looks at */
    unsigned evict; /* the next cell sl_allot_free_cell looks at */
};

static apr_status_t sl_allot_cleanup(void *data)
{
    sl_allot_t *a = data;

    free(a->cells);
    a->cells = NULL;
    return APR_SUCCESS;
}

sl_allot_t *sl_allot_create(apr_pool_t *p, int threaded)
{
    sl_allot_t *a = apr_pcalloc(p, sizeof(*a));

    apr_pool_cleanup_register(p, a, sl_allot_cleanup, apr_pool_cleanup_null);
    if (threaded && apr_thread_mutex_create(&a->mutex, APR_THREAD_MUTEX_DEFAULT,
                                            p) != APR_SUCCESS) {
        /* No lock, no sharing: every request decides at the store. */
        return NULL;
    }
    return a;
}

apr_time_t sl_allot_clock(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (apr_time_t) ts.tv_sec * APR_USEC_PER_SEC + ts.tv_nsec / 1000;
}

/* The most units one grant of b holds. */
static apr_int64_t sl_allot_cap(const sl_budget_t *b)
{
    apr_int64_t cap = sl_budget_capacity(b);

    return cap / SL_ALLOT_FRACTION;
}

static apr_int64_t sl_allot_cost(const sl_budget_t *b)
{
    return b->cost > 1 ? b->cost : 1;
}

/* gcra: the tolerance in microseconds, which must hold a grant's D (the
 * units are charged as arriving D late, lua/sl_allot.lua) with room to
 * spare. */
static int sl_allot_gcra_fits(const sl_budget_t *b)
{
    apr_int64_t burst = b->burst ? b->burst : b->requests;

    return b->window / b->requests * burst >= 2 * SL_ALLOT_DEADLINE;
}

/* counter: a window in which most of the time lies more than D before
 * its end (a grant's every use falls in the window that counts it,
 * lua/sl_allot.lua, which refuses shorter windows too). */
int sl_allot_counter_fits(const sl_budget_t *b)
{
    return b->window >= SL_ALLOT_COUNTER_SPANS * SL_ALLOT_DEADLINE;
}

/* Whether lua/sl_allot.lua can grant units of b's algorithm: an
 * admission from them must be counted where every later decision sees it
 * (docs/REFERENCE.md, SlidingLimitAllotment). */
static int sl_allot_algorithm_fits(const sl_budget_t *b)
{
    switch ((sl_alg_t) b->algorithm) {
    case SL_ALG_LOG:
        return 1;
    case SL_ALG_COUNTER:
        return sl_allot_counter_fits(b);
    case SL_ALG_GCRA:
        return sl_allot_gcra_fits(b);
    case SL_ALG_CONCURRENT:
    case SL_ALG_DISTINCT:
        return 0;
    }
    return 0;
}

int sl_allot_fits(const sl_budget_t *b)
{
    return sl_allot_algorithm_fits(b) && b->requests >= SL_ALLOT_MIN_REQUESTS &&
           !b->block && b->key_len <= SL_ALLOT_KEY_MAX &&
           2 * sl_allot_cost(b) <= sl_allot_cap(b);
}

static unsigned sl_allot_hash(const sl_budget_t *b)
{
    apr_uint32_t h = 2166136261u ^ b->store_tag;
    apr_size_t i;

    for (i = 0; i < b->key_len; i++) {
        h = (h ^ (unsigned char) b->key[i]) * 16777619u;
    }
    return h % SL_ALLOT_BUCKETS;
}

static int sl_allot_same(const sl_allot_cell_t *c, const sl_budget_t *b)
{
    return c->tag == b->store_tag && c->key_len == b->key_len &&
           !memcmp(c->key, b->key, b->key_len);
}

static void sl_allot_unlink(sl_allot_t *a, sl_allot_cell_t *c, unsigned h)
{
    sl_allot_cell_t **pp;

    for (pp = &a->buckets[h]; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    }
}

/* Cells a full table looks at for one new key: a bounded cost under the
 * lock, whatever the number of keys. */
#define SL_ALLOT_EVICT 32

/* A cell for a new key: a free one, else, among the next few, the one idle
 * longest that holds nothing usable (its unused units, if any, go back
 * never: they age out in the store, counted). */
static sl_allot_cell_t *sl_allot_free_cell(sl_allot_t *a, apr_time_t now)
{
    sl_allot_cell_t *victim = NULL;
    int i;

    if (a->nused < SL_ALLOT_CELLS) {
        return &a->cells[a->nused++];
    }
    for (i = 0; i < SL_ALLOT_EVICT; i++) {
        sl_allot_cell_t *c = &a->cells[a->evict++ % SL_ALLOT_CELLS];
        if (c->pending || (c->left > 0 && now < c->deadline)) {
            continue;
        }
        if (!victim || c->touched < victim->touched) {
            victim = c;
        }
    }
    return victim;
}

static sl_allot_cell_t *sl_allot_find(sl_allot_t *a, const sl_budget_t *b,
                                      apr_time_t now)
{
    unsigned h = sl_allot_hash(b);
    sl_allot_cell_t *c;

    for (c = a->buckets[h]; c; c = c->next) {
        if (sl_allot_same(c, b)) {
            break;
        }
    }
    if (!c) {
        if (!(c = sl_allot_free_cell(a, now))) {
            return NULL;
        }
        if (c->used) {
            sl_budget_t old = {0};
            old.key = c->key;
            old.key_len = c->key_len;
            old.store_tag = c->tag;
            sl_allot_unlink(a, c, sl_allot_hash(&old));
        }
        memset(c, 0, sizeof(*c));
        c->used = 1;
        c->tag = b->store_tag;
        c->key_len = b->key_len;
        memcpy(c->key, b->key, b->key_len);
        c->algorithm = b->algorithm;
        c->requests = b->requests;
        c->window = b->window;
        c->burst = b->burst;
        c->next = a->buckets[h];
        a->buckets[h] = c;
    }
    /* One key, one limit: another limit's values on it (two lines that
     * name one budget differently) are decided at the store. */
    if (c->algorithm != b->algorithm || c->requests != b->requests ||
        c->window != b->window || c->burst != b->burst) {
        return NULL;
    }
    return c;
}

static void sl_allot_seen(sl_allot_cell_t *c, apr_time_t now)
{
    apr_int64_t period = now / SL_ALLOT_DEADLINE;

    if (period == c->period) {
        c->seen++;
    }
    else {
        c->seen_prev = period == c->period + 1 ? c->seen : 0;
        c->seen = 1;
        c->period = period;
    }
    c->touched = now;
}

/* The units to ask for: what this child saw of the key in a period of D,
 * within a grant's cap; 0 when that is less than two requests' worth. */
static apr_int64_t sl_allot_want(const sl_allot_cell_t *c, const sl_budget_t *b)
{
    apr_int64_t cost = sl_allot_cost(b);
    apr_int64_t rate = c->seen > c->seen_prev ? c->seen : c->seen_prev;
    apr_int64_t want = rate * cost, cap = sl_allot_cap(b);

    if (want > cap) {
        want = cap;
    }
    return want >= 2 * cost ? want : 0;
}

static int sl_allot_usable(const sl_allot_cell_t *c, const sl_budget_t *b,
                           apr_time_t now)
{
    return !c->pending && c->k > 0 && now < c->deadline &&
           c->left >= sl_allot_cost(b);
}

static int sl_allot_take_locked(sl_allot_t *a, const sl_budget_t *b, int n,
                                apr_time_t now, sl_allot_slot_t *slots)
{
    int i, j, usable = 1, ask = 1;

    if (!a->cells && !(a->cells = calloc(SL_ALLOT_CELLS, sizeof(*a->cells)))) {
        return SL_ALLOT_NONE;
    }

    for (i = 0; i < n; i++) {
        for (j = 0; j < i; j++) {
            if (sl_allot_same(slots[j].cell, &b[i])) {
                return SL_ALLOT_NONE; /* one budget counted once */
            }
        }
        if (!(slots[i].cell = sl_allot_find(a, &b[i], now))) {
            return SL_ALLOT_NONE;
        }
        sl_allot_seen(slots[i].cell, now);
        usable = usable && sl_allot_usable(slots[i].cell, &b[i], now);
    }
    if (usable) {
        for (i = 0; i < n; i++) {
            slots[i].cell->left -= sl_allot_cost(&b[i]);
            slots[i].left = slots[i].cell->left;
        }
        return SL_ALLOT_TAKEN;
    }
    for (i = 0; i < n; i++) {
        const sl_allot_cell_t *c = slots[i].cell;
        slots[i].want = sl_allot_want(c, &b[i]);
        if (c->pending || now < c->dry_until || !slots[i].want) {
            ask = 0;
        }
    }
    if (!ask) {
        return SL_ALLOT_NONE;
    }
    /* What is left of a grant goes back with the next one, usable or not:
     * the cell holds one grant at a time. */
    for (i = 0; i < n; i++) {
        sl_allot_cell_t *c = slots[i].cell;
        slots[i].give = c->k > 0 && c->left > 0;
        if (slots[i].give) {
            memcpy(slots[i].give_id, c->id, SL_ALLOT_ID_LEN);
            slots[i].give_k = c->k;
            slots[i].give_score = c->score;
            slots[i].give_unused = c->left;
        }
        c->k = c->left = 0;
        c->pending = 1;
    }
    return SL_ALLOT_ASK;
}

int sl_allot_take(sl_allot_t *a, const sl_budget_t *b, int n, apr_time_t now,
                  sl_allot_slot_t *slots)
{
    int rv;

    if (a->mutex && apr_thread_mutex_lock(a->mutex) != APR_SUCCESS) {
        return SL_ALLOT_NONE;
    }
    memset(slots, 0, sizeof(*slots) * (apr_size_t) n);
    rv = sl_allot_take_locked(a, b, n, now, slots);
    if (a->mutex) {
        apr_thread_mutex_unlock(a->mutex);
    }
    return rv;
}

void sl_allot_settle(sl_allot_t *a, const sl_budget_t *b, int n,
                     sl_allot_slot_t *slots, const char *id, apr_time_t asked,
                     const apr_int64_t *k, const apr_int64_t *score)
{
    int i;

    /* Settled even when the lock fails: a cell left pending would never
     * ask again. Only this thread writes a pending cell's grant. */
    int locked = a->mutex && apr_thread_mutex_lock(a->mutex) == APR_SUCCESS;

    for (i = 0; i < n; i++) {
        sl_allot_cell_t *c = slots[i].cell;
        apr_int64_t cost = sl_allot_cost(&b[i]);
        c->pending = 0;
        if (k && k[i] >= cost) {
            memcpy(c->id, id, SL_ALLOT_ID_LEN);
            c->k = k[i];
            c->left = k[i] - cost;
            c->score = score[i];
            c->deadline = asked + SL_ALLOT_DEADLINE;
        }
        else {
            c->k = c->left = 0;
            c->dry_until = asked + SL_ALLOT_DEADLINE;
        }
        slots[i].left = c->left;
    }
    if (locked) {
        apr_thread_mutex_unlock(a->mutex);
    }
}

/* Cells sl_allot_stale looks at per call: a bounded cost on the request
 * that pays for it. */
#define SL_ALLOT_SWEEP 8

int sl_allot_stale(sl_allot_t *a, apr_time_t now, sl_budget_t *b,
                   sl_allot_slot_t *slot)
{
    int i, found = 0;

    if (a->mutex && apr_thread_mutex_lock(a->mutex) != APR_SUCCESS) {
        return 0;
    }
    for (i = 0; i < SL_ALLOT_SWEEP && a->nused > 0 && !found; i++) {
        sl_allot_cell_t *c = &a->cells[a->sweep++ % a->nused];
        if (!c->used || c->pending || c->k <= 0 || c->left <= 0 ||
            now < c->deadline + SL_ALLOT_DEADLINE) {
            continue;
        }
        memset(slot, 0, sizeof(*slot));
        memset(b, 0, sizeof(*b));
        slot->cell = c;
        slot->give = 1;
        memcpy(slot->give_id, c->id, SL_ALLOT_ID_LEN);
        slot->give_k = c->k;
        slot->give_score = c->score;
        slot->give_unused = c->left;
        b->key = c->key;
        b->key_len = c->key_len;
        b->store_tag = c->tag;
        b->algorithm = c->algorithm;
        b->requests = c->requests;
        b->window = c->window;
        b->burst = c->burst;
        b->cost = 1;
        c->k = c->left = 0;
        c->pending = 1;
        found = 1;
    }
    a->sweep %= a->nused > 0 ? a->nused : 1;
    if (a->mutex) {
        apr_thread_mutex_unlock(a->mutex);
    }
    return found;
}

void sl_allot_release(sl_allot_t *a, sl_allot_slot_t *slot)
{
    int locked = a->mutex && apr_thread_mutex_lock(a->mutex) == APR_SUCCESS;

    slot->cell->pending = 0;
    if (locked) {
        apr_thread_mutex_unlock(a->mutex);
    }
}
