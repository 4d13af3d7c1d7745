/* SPDX-License-Identifier: Apache-2.0 */
/* The allotments (see sl_allot.h): what a request does with its keys'
 * cells, and one child's table of them: a fixed table of cells, one per
 * key, found by a hash of the key and its store, under a mutex when the
 * MPM is threaded. The table the children share is sl_allot_shared.c. */
#include "sl_allot_private.h"
#include "sl_script_layout.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static apr_status_t sl_allot_cleanup(void *data)
{
    sl_allot_t *a = data;

    free(a->cells);
    a->cells = NULL;
    return APR_SUCCESS;
}

sl_allot_t *sl_allot_create(apr_pool_t *p, int threaded,
                            sl_allot_shared_t *shared)
{
    sl_allot_t *a = apr_pcalloc(p, sizeof(*a));

    if (shared) {
        a->shared = shared->table;
        sl_allot_shared_attach();
        return a;
    }
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

int sl_allot_same(const sl_allot_cell_t *c, const sl_budget_t *b)
{
    return c->used && c->tag == b->store_tag && c->key_len == b->key_len &&
           !memcmp(c->key, b->key, b->key_len);
}

/* Whether an ask is under way on c: one older than SL_ALLOT_ABANDON is
 * not (sl_allot_private.h). */
static int sl_allot_pending(const sl_allot_cell_t *c, apr_time_t now)
{
    return c->ask && now - c->ask_since < SL_ALLOT_ABANDON;
}

int sl_allot_evictable(const sl_allot_cell_t *c, apr_time_t now)
{
    return !sl_allot_pending(c, now) && !(c->left > 0 && now < c->deadline);
}

void sl_allot_fill(sl_allot_cell_t *c, const sl_budget_t *b)
{
    apr_uint64_t lock = c->lock;
    apr_uint64_t hint = c->hint;

    /* A replaced key's unused units, if any, go back never: they age out
     * in the store, counted. */
    memset(c, 0, sizeof(*c));
    c->lock = lock;
    c->hint = hint;
    c->used = 1;
    c->tag = b->store_tag;
    c->key_len = b->key_len;
    memcpy(c->key, b->key, b->key_len);
    c->algorithm = b->algorithm;
    c->requests = b->requests;
    c->window = b->window;
    c->burst = b->burst;
}

/* The budget of c's key, as a give-back of its grant asks the store
 * (one unit, the key's limit). */
static void sl_allot_budget_of(const sl_allot_cell_t *c, sl_budget_t *b)
{
    memset(b, 0, sizeof(*b));
    b->key = c->key;
    b->key_len = c->key_len;
    b->store_tag = c->tag;
    b->algorithm = c->algorithm;
    b->requests = c->requests;
    b->window = c->window;
    b->burst = c->burst;
    b->cost = 1;
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
 * longest that holds nothing usable. */
static sl_allot_cell_t *sl_allot_free_cell(sl_allot_t *a, apr_time_t now)
{
    sl_allot_cell_t *victim = NULL;
    int i;

    if (a->nused < SL_ALLOT_CELLS) {
        return &a->cells[a->nused++];
    }
    for (i = 0; i < SL_ALLOT_EVICT; i++) {
        sl_allot_cell_t *c = &a->cells[a->evict++ % SL_ALLOT_CELLS];
        if (!sl_allot_evictable(c, now)) {
            continue;
        }
        if (!victim || c->touched < victim->touched) {
            victim = c;
        }
    }
    return victim;
}

/* b's cell in the child's table, made when new. */
static sl_allot_cell_t *sl_allot_own_find(sl_allot_t *a, const sl_budget_t *b,
                                          apr_time_t now)
{
    unsigned h = sl_allot_hash(b);
    sl_allot_cell_t *c;

    for (c = a->buckets[h]; c; c = c->next) {
        if (sl_allot_same(c, b)) {
            return c;
        }
    }
    if (!(c = sl_allot_free_cell(a, now))) {
        return NULL;
    }
    if (c->used) {
        sl_budget_t old;
        sl_allot_budget_of(c, &old);
        sl_allot_unlink(a, c, sl_allot_hash(&old));
    }
    sl_allot_fill(c, b);
    c->next = a->buckets[h];
    a->buckets[h] = c;
    return c;
}

/* One key, one limit: another limit's values on it (two lines that name
 * one budget differently) are decided at the store. */
static int sl_allot_same_limit(const sl_allot_cell_t *c, const sl_budget_t *b)
{
    return c->algorithm == b->algorithm && c->requests == b->requests &&
           c->window == b->window && c->burst == b->burst;
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

/* The units to ask for: what the table saw of the key in a period of D,
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
    return !sl_allot_pending(c, now) && c->k > 0 && now < c->deadline &&
           c->left >= sl_allot_cost(b);
}

static apr_uint32_t sl_allot_next_ask(sl_allot_t *a)
{
    apr_uint32_t ask;

    do {
        ask = a->shared
                  ? __atomic_add_fetch(&a->shared->asks, 1, __ATOMIC_RELAXED)
                  : ++a->asks;
    } while (!ask);
    return ask;
}

/* c's grant, with units left, into slot as its give-back. */
static void sl_allot_give(sl_allot_slot_t *slot, const sl_allot_cell_t *c)
{
    slot->give = 1;
    memcpy(slot->give_id, c->id, SL_ALLOT_ID_LEN);
    slot->give_k = c->k;
    slot->give_score = c->score;
    slot->give_unused = c->left;
}

/* The request's decision on its cells (slots[i].cell, each locked). */
static int sl_allot_take_cells(sl_allot_t *a, const sl_budget_t *b, int n,
                               apr_time_t now, sl_allot_slot_t *slots)
{
    apr_uint32_t ask;
    int i, usable = 1, asking = 1;

    for (i = 0; i < n; i++) {
        if (!sl_allot_same_limit(slots[i].cell, &b[i])) {
            return SL_ALLOT_NONE;
        }
    }
    for (i = 0; i < n; i++) {
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
        if (sl_allot_pending(c, now) || now < c->dry_until || !slots[i].want) {
            asking = 0;
        }
    }
    if (!asking) {
        return SL_ALLOT_NONE;
    }
    /* What is left of a grant goes back with the next one, usable or not:
     * the cell holds one grant at a time. */
    ask = sl_allot_next_ask(a);
    for (i = 0; i < n; i++) {
        sl_allot_cell_t *c = slots[i].cell;
        if (c->k > 0 && c->left > 0) {
            sl_allot_give(&slots[i], c);
        }
        c->k = c->left = 0;
        c->ask = ask;
        c->ask_since = now;
        slots[i].ask = ask;
    }
    return SL_ALLOT_ASK;
}

/* Whether b[i]'s key is one of b[0..i-1]'s: one budget counted once. */
static int sl_allot_repeated(const sl_budget_t *b, int i)
{
    int j;

    for (j = 0; j < i; j++) {
        if (b[j].store_tag == b[i].store_tag && b[j].key_len == b[i].key_len &&
            !memcmp(b[j].key, b[i].key, b[i].key_len)) {
            return 1;
        }
    }
    return 0;
}

static int sl_allot_take_shared(sl_allot_t *a, const sl_budget_t *b, int n,
                                apr_time_t now, sl_allot_slot_t *slots)
{
    int i, locked, rv = SL_ALLOT_NONE;

    for (locked = 0; locked < n; locked++) {
        if (sl_allot_repeated(b, locked) ||
            !(slots[locked].cell =
                  sl_allot_shared_find(a->shared, &b[locked], now))) {
            break;
        }
    }
    if (locked == n) {
        rv = sl_allot_take_cells(a, b, n, now, slots);
    }
    for (i = 0; i < locked; i++) {
        sl_allot_cell_unlock(slots[i].cell);
    }
    return rv;
}

static int sl_allot_take_own(sl_allot_t *a, const sl_budget_t *b, int n,
                             apr_time_t now, sl_allot_slot_t *slots)
{
    int i;

    if (!a->cells && !(a->cells = calloc(SL_ALLOT_CELLS, sizeof(*a->cells)))) {
        return SL_ALLOT_NONE;
    }
    for (i = 0; i < n; i++) {
        if (sl_allot_repeated(b, i) ||
            !(slots[i].cell = sl_allot_own_find(a, &b[i], now))) {
            return SL_ALLOT_NONE;
        }
    }
    return sl_allot_take_cells(a, b, n, now, slots);
}

int sl_allot_take(sl_allot_t *a, const sl_budget_t *b, int n, apr_time_t now,
                  sl_allot_slot_t *slots)
{
    int rv;

    memset(slots, 0, sizeof(*slots) * (apr_size_t) n);
    if (a->shared) {
        return sl_allot_take_shared(a, b, n, now, slots);
    }
    if (a->mutex && apr_thread_mutex_lock(a->mutex) != APR_SUCCESS) {
        return SL_ALLOT_NONE;
    }
    rv = sl_allot_take_own(a, b, n, now, slots);
    if (a->mutex) {
        apr_thread_mutex_unlock(a->mutex);
    }
    return rv;
}

/* The lock of cell c: the table's mutex, or in the shared table the
 * cell's own. 0 when it could not be had: a cell left pending then asks
 * again once its ask is abandoned. */
static int sl_allot_lock(sl_allot_t *a, sl_allot_cell_t *c)
{
    if (a->shared) {
        return sl_allot_cell_lock(c);
    }
    return !a->mutex || apr_thread_mutex_lock(a->mutex) == APR_SUCCESS;
}

static void sl_allot_unlock(sl_allot_t *a, sl_allot_cell_t *c)
{
    if (a->shared) {
        sl_allot_cell_unlock(c);
    }
    else if (a->mutex) {
        apr_thread_mutex_unlock(a->mutex);
    }
}

/* Whether slot's ask is still the one under way in its cell: not taken
 * for abandoned, the cell not given to another key since. */
static int sl_allot_owns(const sl_allot_slot_t *slot)
{
    return slot->ask && slot->cell->ask == slot->ask;
}

void sl_allot_settle(sl_allot_t *a, const sl_budget_t *b, int n,
                     sl_allot_slot_t *slots, const char *id, apr_time_t asked,
                     const apr_int64_t *k, const apr_int64_t *score)
{
    int i;

    for (i = 0; i < n; i++) {
        sl_allot_cell_t *c = slots[i].cell;
        apr_int64_t cost = sl_allot_cost(&b[i]);
        slots[i].left = 0;
        if (!sl_allot_lock(a, c)) {
            continue;
        }
        if (sl_allot_owns(&slots[i]) && sl_allot_same(c, &b[i])) {
            c->ask = 0;
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
        sl_allot_unlock(a, c);
    }
}

/* Cells sl_allot_stale looks at per call: a bounded cost on the request
 * that pays for it. */
#define SL_ALLOT_SWEEP 8
/* The shared table's cells a call reads the hint of, at most: all of
 * them, a few microseconds on a call that asks the store anyway, as the
 * cells in use may lie anywhere in it. */
#define SL_ALLOT_SWEEP_SHARED SL_ALLOT_CELLS

/* c, locked, when it holds a grant its key no longer uses: marked pending
 * for its give-back (slot, b). */
static int sl_allot_stale_cell(sl_allot_t *a, sl_allot_cell_t *c,
                               apr_time_t now, sl_budget_t *b,
                               sl_allot_slot_t *slot)
{
    if (!c->used || sl_allot_pending(c, now) || c->k <= 0 || c->left <= 0 ||
        now < c->deadline + SL_ALLOT_DEADLINE) {
        return 0;
    }
    memset(slot, 0, sizeof(*slot));
    slot->cell = c;
    sl_allot_give(slot, c);
    sl_allot_budget_of(c, b);
    c->k = c->left = 0;
    c->ask = slot->ask = sl_allot_next_ask(a);
    c->ask_since = now;
    return 1;
}

static int sl_allot_stale_shared(sl_allot_t *a, apr_time_t now, sl_budget_t *b,
                                 sl_allot_slot_t *slot)
{
    int i, found = 0, looked = 0;

    /* A look without the lock first: most cells hold nothing, and only
     * the cells that hold a key count toward the bound. */
    for (i = 0; i < SL_ALLOT_SWEEP_SHARED && looked < SL_ALLOT_SWEEP && !found;
         i++) {
        apr_uint32_t at =
            __atomic_fetch_add(&a->shared->sweep, 1, __ATOMIC_RELAXED);
        sl_allot_cell_t *c = &a->shared->cells[at % SL_ALLOT_CELLS];
        if (!__atomic_load_n(&c->hint, __ATOMIC_RELAXED)) {
            continue;
        }
        looked++;
        if (sl_allot_cell_lock(c)) {
            found = sl_allot_stale_cell(a, c, now, b, slot);
            sl_allot_cell_unlock(c);
        }
    }
    return found;
}

int sl_allot_stale(sl_allot_t *a, apr_time_t now, sl_budget_t *b,
                   sl_allot_slot_t *slot)
{
    int i, found = 0;

    if (a->shared) {
        return sl_allot_stale_shared(a, now, b, slot);
    }
    if (a->mutex && apr_thread_mutex_lock(a->mutex) != APR_SUCCESS) {
        return 0;
    }
    for (i = 0; i < SL_ALLOT_SWEEP && a->nused > 0 && !found; i++) {
        found = sl_allot_stale_cell(a, &a->cells[a->sweep++ % a->nused], now, b,
                                    slot);
    }
    a->sweep %= a->nused > 0 ? a->nused : 1;
    if (a->mutex) {
        apr_thread_mutex_unlock(a->mutex);
    }
    return found;
}

void sl_allot_release(sl_allot_t *a, sl_allot_slot_t *slot)
{
    if (!sl_allot_lock(a, slot->cell)) {
        return;
    }
    if (sl_allot_owns(slot)) {
        slot->cell->ask = 0;
    }
    sl_allot_unlock(a, slot->cell);
}
