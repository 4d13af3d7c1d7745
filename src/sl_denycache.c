/* SPDX-License-Identifier: Apache-2.0 */
/* The deny cache (see sl_denycache.h): a direct-mapped table of refusals in
 * shared memory, read and written without a lock under per-cell sequence
 * numbers, and each child's single flights. Unlike the store, the
 * statistics and the breakers it is not kept across restarts (it lives in
 * the generation's pool): a refusal is only an optimisation, and a new
 * generation may limit differently. Its cells are overwritten, never
 * claimed, so a writer that dies mid-write costs a store call, never a
 * wait. */
#include "sl_denycache.h"
#include "sl_siphash.h"

#include <apr_shm.h>
#include <apr_thread_cond.h>
#include <apr_thread_mutex.h>

#include <string.h>

/* Direct-mapped: a colliding key overwrites the older entry, which only
 * costs that key a store call. Memory stays fixed whatever the flood. */
#define SL_DC_CELLS 4096
#define SL_DC_KEY   128

/* Waiters sleep on the condition of their cell's stripe: an answer wakes
 * the threads of one stripe, and each looks at its own cell again. */
#define SL_DC_CONDS 64

/* A refusal that ended less than this ago marks a key as still flooding:
 * only for such a key may a request wait for another thread's answer. A
 * flooding client is back within milliseconds of the end. */
#define SL_DC_RECENT apr_time_from_sec(1)

/* A cell being written (a few hundred bytes) is looked at this many times
 * before giving up: a reader then asks the store, a writer leaves the cell
 * as it is (both only cost a store call, never a wrong refusal). Also what
 * keeps a cell whose writer died mid-write from hanging anybody. */
#define SL_DC_TRIES 64

/* Children share no condition variable: one that waits for another
 * child's answer looks at the cell again after this long. About a tenth of
 * a store call's time on a loaded host. */
#define SL_DC_POLL 200

typedef struct sl_dc_entry {
    char key[SL_DC_KEY];
    apr_int64_t requests;
    apr_int64_t window;
    apr_int64_t burst;
    int algorithm;
    apr_uint32_t store_tag;
    apr_int64_t cost;  /* of the request the answer was for */
    apr_int64_t block; /* the limit's block=: a refusal under one lasts as
                          long as the block, which a limit without any
                          (the store ignores a block it has no block= for)
                          does not see */
    apr_time_t until;  /* 0: nothing known */
    apr_time_t retry_at;
    /* The request (any child's) asking the store about this key for all
     * children after a refusal ended, 0 for none; ignored after lead_end. */
    apr_uint32_t leader;
    apr_time_t lead_end;
    /* The operator's reset of this key (sl_denycache_clear): an answer the
     * store gave before it is not remembered. */
    apr_time_t cleared;
} sl_dc_entry_t;

/* Shared by all children. seq is even when e is whole, odd while a writer
 * (whoever turned it odd with a compare-and-swap) changes it. */
typedef struct sl_dc_cell {
    apr_uint32_t seq;
    sl_dc_entry_t e;
} sl_dc_cell_t;

typedef struct sl_dc_table {
    apr_uint32_t tokens; /* the last leader's number, server-wide */
    /* Places keys in cells, drawn for each generation: keys are hashes of
     * client-chosen values, and a client that knew the placement could
     * make its keys evict another client's refusal at will. */
    unsigned char seed[SL_SIPHASH_KEY];
    sl_dc_cell_t cells[SL_DC_CELLS];
} sl_dc_table_t;

struct sl_denycache_shm {
    apr_shm_t *shm;
    sl_dc_table_t *table;
};

/* Per process: the request asking the store about a cell's key for the
 * other threads (0: none), and when waiting for it stops making sense: its
 * marker is ignored after that even if it never settled. */
typedef struct sl_dc_flight {
    apr_uint32_t token;
    apr_time_t flight_end;
} sl_dc_flight_t;

struct sl_denycache {
    sl_dc_table_t *table;      /* shared */
    sl_dc_cell_t *cells;       /* its cells */
    apr_thread_mutex_t *mutex; /* threads of one child: the flights */
    int threaded;
    apr_thread_cond_t *cond[SL_DC_CONDS]; /* threaded only */
    sl_dc_flight_t flights[SL_DC_CELLS];
};

apr_status_t sl_denycache_shm_create(apr_pool_t *p, sl_denycache_shm_t **out)
{
    sl_denycache_shm_t *t = apr_pcalloc(p, sizeof(*t));
    apr_size_t size = sizeof(sl_dc_table_t);
    apr_status_t rv;

    /* Anonymous, in the generation's pool: children of an old generation
     * keep their mapping of the old table until they exit, the new ones
     * get a fresh one. The generations never see each other's cells. */
    rv = apr_shm_create(&t->shm, size, NULL, p);
    if (rv != APR_SUCCESS) {
        *out = NULL;
        return rv;
    }
    t->table = apr_shm_baseaddr_get(t->shm);
    memset(t->table, 0, size);
    rv = sl_siphash_key(t->table->seed);
    if (rv != APR_SUCCESS) {
        apr_shm_destroy(t->shm);
        *out = NULL;
        return rv;
    }
    *out = t;
    return APR_SUCCESS;
}

sl_denycache_t *sl_denycache_create(apr_pool_t *p, sl_denycache_shm_t *shm,
                                    int threaded)
{
    sl_denycache_t *dc;
    int i;

    if (!shm) {
        return NULL;
    }
    dc = apr_pcalloc(p, sizeof(*dc));
    dc->table = shm->table;
    dc->cells = shm->table->cells;
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

static unsigned int sl_dc_cell(const sl_denycache_t *dc, const sl_budget_t *c)
{
    return (unsigned int) (sl_siphash(dc->table->seed, c->key, c->key_len) %
                           SL_DC_CELLS);
}

unsigned int sl_denycache_cell(const sl_denycache_t *dc, const sl_budget_t *c)
{
    return sl_dc_cell(dc, c);
}

/* A consistent copy of a cell into *out; 0 when writers kept it busy. The
 * copy is taken between two reads of the same even sequence: no write
 * started before the second read had begun before the first, so every
 * field (key, limit, until, retry_at) comes from one and the same write. */
static int sl_dc_read(const sl_dc_cell_t *sl, sl_dc_entry_t *out)
{
    int i;

    for (i = 0; i < SL_DC_TRIES; i++) {
        apr_uint32_t s1 = __atomic_load_n(&sl->seq, __ATOMIC_ACQUIRE);
        if (s1 & 1) {
            continue;
        }
        memcpy(out, &sl->e, sizeof(*out));
        /* The copy's loads complete before seq is read again. */
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&sl->seq, __ATOMIC_RELAXED) == s1) {
            return 1;
        }
    }
    return 0;
}

/* The cell's entry to change, or NULL when another writer holds it; pass
 * *seq to sl_dc_unlock. */
static sl_dc_entry_t *sl_dc_lock(sl_dc_cell_t *sl, apr_uint32_t *seq)
{
    int i;

    for (i = 0; i < SL_DC_TRIES; i++) {
        apr_uint32_t s = __atomic_load_n(&sl->seq, __ATOMIC_RELAXED);
        if (!(s & 1) &&
            __atomic_compare_exchange_n(&sl->seq, &s, s + 1, 0,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            /* Readers see the odd sequence before any changed field. */
            __atomic_thread_fence(__ATOMIC_RELEASE);
            *seq = s + 2;
            return &sl->e;
        }
    }
    return NULL;
}

static void sl_dc_unlock(sl_dc_cell_t *sl, apr_uint32_t seq)
{
    /* Every changed field is visible before the even sequence. */
    __atomic_store_n(&sl->seq, seq, __ATOMIC_RELEASE);
}

static apr_int64_t sl_dc_cost(const sl_budget_t *c)
{
    return c->cost > 1 ? c->cost : 1;
}

/* A named policy can be used with other values elsewhere: the refusal holds
 * only for the same key and the same limit. And for the same cost: a
 * request that costs less may fit now (cost= differs between sections of
 * one name, cost=expr: between requests), and one that costs more would be
 * told a Retry-After earlier than the time it fits. */
static int sl_dc_match(const sl_dc_entry_t *e, const sl_budget_t *c)
{
    return e->cost == sl_dc_cost(c) && e->requests == c->requests &&
           e->window == c->window && e->burst == c->burst &&
           e->algorithm == c->algorithm && e->store_tag == c->store_tag &&
           e->block == c->block && c->key_len < SL_DC_KEY &&
           !memcmp(e->key, c->key, c->key_len) && e->key[c->key_len] == '\0';
}

/* A refusal that ended less than SL_DC_RECENT ago. */
static int sl_dc_ended_lately(const sl_dc_entry_t *e, apr_time_t now)
{
    return e->until && e->until <= now && now - e->until < SL_DC_RECENT;
}

/* Check c refused here at now: its retry_at, else 0. *recent (when not
 * NULL) tells whether its refusal ended a moment ago. */
static apr_time_t sl_dc_hit(const sl_denycache_t *dc, const sl_budget_t *c,
                            apr_time_t now, int *recent)
{
    sl_dc_entry_t e;
    int match;

    if (recent) {
        *recent = 0;
    }
    if (c->key_len >= SL_DC_KEY ||
        !sl_dc_read(&dc->cells[sl_dc_cell(dc, c)], &e)) {
        return 0;
    }
    match = sl_dc_match(&e, c);
    if (recent) {
        *recent = match && sl_dc_ended_lately(&e, now);
    }
    return match && e.until > now ? e.retry_at : 0;
}

/* Every check refused here at now, with its retry_at; the count. *recent
 * (when not NULL): whether any of them was refused until a moment ago. */
static int sl_dc_hits(const sl_denycache_t *dc, const sl_budget_t *budgets,
                      int n, apr_time_t now, apr_time_t *retry_at, int *recent)
{
    int i, hits = 0, r;

    if (recent) {
        *recent = 0;
    }
    for (i = 0; i < n; i++) {
        retry_at[i] = sl_dc_hit(dc, &budgets[i], now, &r);
        hits += retry_at[i] != 0;
        if (recent) {
            *recent |= r;
        }
    }
    return hits;
}

static int sl_dc_recent(const sl_denycache_t *dc, const sl_budget_t *c,
                        apr_time_t now)
{
    int recent;

    sl_dc_hit(dc, c, now, &recent);
    return recent;
}

static int sl_dc_in_flight(const sl_dc_flight_t *fl, apr_time_t now)
{
    return fl->token && now < fl->flight_end;
}

/* A number for a leader, unique in the server (0 means nobody). */
static apr_uint32_t sl_dc_token(sl_denycache_t *dc)
{
    apr_uint32_t t;

    do {
        t = __atomic_add_fetch(&dc->table->tokens, 1, __ATOMIC_RELAXED);
    } while (!t);
    return t;
}

/* Gives up what this request asked about for others (flights), without an
 * answer to leave: the waiters go on. */
static void sl_dc_release(sl_denycache_t *dc, const sl_budget_t *budgets, int n,
                          apr_uint32_t *flights)
{
    int i;

    if (dc->threaded) {
        apr_thread_mutex_lock(dc->mutex);
    }
    for (i = 0; i < n; i++) {
        unsigned int s = sl_dc_cell(dc, &budgets[i]);
        sl_dc_flight_t *fl = &dc->flights[s];
        apr_uint32_t seq;
        sl_dc_entry_t *e;

        if (!flights[i]) {
            continue;
        }
        if ((e = sl_dc_lock(&dc->cells[s], &seq)) != NULL) {
            if (e->leader == flights[i]) {
                e->leader = 0;
            }
            sl_dc_unlock(&dc->cells[s], seq);
        }
        if (fl->token == flights[i]) {
            fl->token = 0;
            if (dc->threaded) {
                apr_thread_cond_broadcast(dc->cond[s % SL_DC_CONDS]);
            }
        }
        flights[i] = 0;
    }
    if (dc->threaded) {
        apr_thread_mutex_unlock(dc->mutex);
    }
}

/* This request asks the store for its child about the keys in flights
 * (refused until a moment ago). Another child may already be asking about
 * one of them: then wait for that answer (polling, at most until end) and
 * answer from it, as the threads of a child wait for their leader. Else
 * become the leader for every child. Returns the hits, or 0 with flights
 * still set: this request asks the store. */
static int sl_dc_follow(sl_denycache_t *dc, const sl_budget_t *budgets, int n,
                        apr_time_t end, apr_interval_time_t wait,
                        apr_time_t *now, apr_time_t *retry_at,
                        apr_uint32_t *flights)
{
    int i, hits, others;

    for (;;) {
        others = 0;
        for (i = 0; i < n; i++) {
            sl_dc_cell_t *sl = &dc->cells[sl_dc_cell(dc, &budgets[i])];
            sl_dc_entry_t seen, *e;
            apr_uint32_t seq;

            if (!flights[i] || !sl_dc_read(sl, &seen) ||
                !sl_dc_match(&seen, &budgets[i]) ||
                !sl_dc_ended_lately(&seen, *now) || seen.leader == flights[i]) {
                continue;
            }
            if (seen.leader && seen.lead_end > *now) {
                others = 1;
                continue;
            }
            /* Nobody asking: this request will, unless another child's
             * request got there first. */
            if ((e = sl_dc_lock(sl, &seq)) != NULL) {
                if (e->leader && e->lead_end > *now) {
                    others = e->leader != flights[i];
                }
                else if (sl_dc_match(e, &budgets[i])) {
                    e->leader = flights[i];
                    e->lead_end = *now + wait;
                }
                sl_dc_unlock(sl, seq);
            }
        }
        hits = sl_dc_hits(dc, budgets, n, *now, retry_at, NULL);
        if (hits) {
            sl_dc_release(dc, budgets, n, flights);
            return hits;
        }
        if (!others || *now >= end) {
            return 0;
        }
        apr_sleep(SL_DC_POLL);
        *now = apr_time_now();
    }
}

/* Under dc->mutex, until end: a key refused until a moment ago that another
 * thread is asking about right now: its answer most likely refuses or exhausts
 * the key again, so wait for it (bounded) rather than ask too. An answer that
 * came a little early (refused, but only until a time already past) leaves the
 * key recent: the next leader is then waited for in turn, so that the
 * other threads still make no call. An answer with room, or none at
 * all, makes the key not recent: everybody asks. */
static int sl_dc_wait_leaders(sl_denycache_t *dc, const sl_budget_t *budgets,
                              int n, apr_time_t end, apr_time_t *now,
                              apr_time_t *retry_at)
{
    int i, hits;

    for (;;) {
        const sl_dc_flight_t *fl = NULL;
        const sl_budget_t *c = NULL;
        unsigned int s = 0;
        apr_uint32_t token;
        apr_time_t deadline;

        for (i = 0; i < n && !fl; i++) {
            c = &budgets[i];
            s = sl_dc_cell(dc, c);
            fl = &dc->flights[s];
            if (!sl_dc_in_flight(fl, *now) || !sl_dc_recent(dc, c, *now)) {
                fl = NULL;
            }
        }
        if (!fl || *now >= end) {
            break;
        }
        token = fl->token;
        deadline = fl->flight_end < end ? fl->flight_end : end;
        /* Until the leader settles, or anyone (in any child) puts an entry
         * for the key, or the cell goes to another key in this child (which
         * clears the marker), or time is up. */
        while (fl->token == token && !sl_dc_hit(dc, c, *now, NULL) &&
               *now < deadline) {
            apr_thread_cond_timedwait(dc->cond[s % SL_DC_CONDS], dc->mutex,
                                      deadline - *now);
            *now = apr_time_now();
        }
        hits = sl_dc_hits(dc, budgets, n, *now, retry_at, NULL);
        if (hits) {
            return hits;
        }
    }

    return 0;
}

/* Under dc->mutex: this request asks the store: for each recently refused key
 * nobody else in this child is asking about, it asks on behalf of the threads
 * that come next. A leader that never settles is ignored after
 * flight_end. */
static void sl_dc_claim(sl_denycache_t *dc, const sl_budget_t *budgets, int n,
                        apr_time_t now, apr_interval_time_t wait,
                        apr_uint32_t *flights)
{
    int i;

    for (i = 0; i < n; i++) {
        sl_dc_flight_t *fl = &dc->flights[sl_dc_cell(dc, &budgets[i])];
        if (!sl_dc_in_flight(fl, now) && sl_dc_recent(dc, &budgets[i], now)) {
            fl->token = flights[i] = sl_dc_token(dc);
            fl->flight_end = now + wait;
        }
    }
}

int sl_denycache_find(sl_denycache_t *dc, const sl_budget_t *budgets, int n,
                      apr_interval_time_t wait, apr_time_t *now,
                      apr_time_t *retry_at, apr_uint32_t *flights)
{
    int i, hits, recent;
    apr_time_t end;

    *now = apr_time_now();
    if (!dc) {
        for (i = 0; i < n; i++) {
            retry_at[i] = 0;
        }
        return 0;
    }
    /* The flood's path, and the allowed path of a key not refused lately:
     * no lock at all. */
    hits = sl_dc_hits(dc, budgets, n, *now, retry_at, &recent);
    if (hits || !recent) {
        return hits;
    }
    if (!dc->threaded) {
        /* Alone in its process: the leader for its own child, and maybe for
         * the others. */
        for (i = 0; i < n; i++) {
            if (sl_dc_recent(dc, &budgets[i], *now)) {
                flights[i] = sl_dc_token(dc);
            }
        }
        return sl_dc_follow(dc, budgets, n, *now + wait, wait, now, retry_at,
                            flights);
    }

    apr_thread_mutex_lock(dc->mutex);
    /* A leader may have settled since: then its answer, not another ask. */
    *now = apr_time_now();
    hits = sl_dc_hits(dc, budgets, n, *now, retry_at, NULL);
    if (hits) {
        apr_thread_mutex_unlock(dc->mutex);
        return hits;
    }

    end = *now + wait;
    hits = sl_dc_wait_leaders(dc, budgets, n, end, now, retry_at);
    if (hits) {
        apr_thread_mutex_unlock(dc->mutex);
        return hits;
    }
    sl_dc_claim(dc, budgets, n, *now, wait, flights);
    apr_thread_mutex_unlock(dc->mutex);
    return sl_dc_follow(dc, budgets, n, end, wait, now, retry_at, flights);
}

/* Limit i of the answer has no room for one more request until its reset:
 * refused, or admitted with nothing left. For all three algorithms the
 * script's reset is then the exact earliest time one more fits, and only
 * time frees quota (other servers can only consume more). */
/* No room for the budget's next request until its reset. An admission
 * that exhausts a limit with a block is not remembered: the next request
 * must reach the store, whose refusal starts the block (and is remembered,
 * until the block's end). */
static int sl_dc_full(const sl_decision_t *d, int i, const sl_budget_t *c)
{
    const sl_quota_t *r = &d->quota[i];

    if (c->reserve) {
        return 0;
    }
    /* distinct=: a value among the window's passes while a new one is
     * refused, and a block refuses the known ones only until it ends,
     * while a new value's wait may be longer: a refusal says nothing of
     * the key's next request. */
    if (c->algorithm == SL_ALG_DISTINCT) {
        return 0;
    }
    if (d->admitted) {
        return !c->block && r->remaining < sl_dc_cost(c) && r->reset > 0;
    }
    return !r->ok;
}

/* Remembers c refused until until; 1 when that took the cell from another
 * key (or from nothing). A cell another writer holds is left alone. */
static int sl_dc_same_key(const sl_dc_entry_t *e, const sl_budget_t *c)
{
    return c->key_len < SL_DC_KEY && !memcmp(e->key, c->key, c->key_len) &&
           e->key[c->key_len] == '\0';
}

/* The cell's entry becomes c's, with nothing known. */
static void sl_dc_take(sl_dc_entry_t *e, const sl_budget_t *c,
                       apr_time_t cleared)
{
    memcpy(e->key, c->key, c->key_len);
    e->key[c->key_len] = '\0';
    e->requests = c->requests;
    e->window = c->window;
    e->burst = c->burst;
    e->algorithm = c->algorithm;
    e->store_tag = c->store_tag;
    e->cost = sl_dc_cost(c);
    e->block = c->block;
    e->until = 0;
    e->retry_at = 0;
    e->leader = 0;
    e->cleared = cleared;
}

static int sl_dc_put(sl_dc_cell_t *sl, const sl_budget_t *c, apr_time_t sent,
                     apr_time_t until, apr_time_t retry_at, apr_uint32_t token)
{
    apr_uint32_t seq;
    sl_dc_entry_t *e = sl_dc_lock(sl, &seq);
    int taken = 0;

    if (!e) {
        return 0;
    }
    if (e->cleared >= sent && sl_dc_same_key(e, c)) {
        /* Asked before the key was reset: what it said no longer holds. */
        if (token && e->leader == token) {
            e->leader = 0;
        }
    }
    else if (!sl_dc_match(e, c)) {
        sl_dc_take(e, c, 0);
        e->until = until;
        e->retry_at = retry_at;
        taken = 1;
    }
    else {
        if (until > e->until) {
            /* Answers from several requests all hold: the latest end wins,
             * whatever order they arrive in. */
            e->until = until;
            e->retry_at = retry_at;
        }
        if (token && e->leader == token) {
            e->leader = 0; /* the other children's waiters are answered */
        }
    }
    sl_dc_unlock(sl, seq);
    return taken;
}

/* The leader token (for this child: mine) got an answer with room for c, or
 * none: unless a refusal for c holds past got, c is no longer a key to
 * wait for, in any child. */
static void sl_dc_forget(sl_dc_cell_t *sl, const sl_budget_t *c, apr_time_t got,
                         apr_uint32_t token, int mine)
{
    apr_uint32_t seq;
    sl_dc_entry_t *e = sl_dc_lock(sl, &seq);

    if (!e) {
        return;
    }
    if (e->leader == token) {
        e->leader = 0;
        mine = 1;
    }
    if (mine && e->until && e->until <= got && sl_dc_match(e, c)) {
        e->until = 0;
    }
    sl_dc_unlock(sl, seq);
}

void sl_denycache_settle(sl_denycache_t *dc, const sl_budget_t *budgets, int n,
                         const sl_decision_t *d, apr_time_t sent,
                         apr_time_t got, const apr_uint32_t *flights)
{
    int i, todo = 0;

    /* The allowed path, as a rule: nothing to remember, nobody waiting for
     * this request, so no lock. */
    for (i = 0; dc && i < n && !todo; i++) {
        todo = flights[i] || (d && sl_dc_full(d, i, &budgets[i]));
    }
    if (!todo) {
        return;
    }
    /* Without threads there are no flights and no waiters: the shared
     * table's own cell locks are all it takes. */
    if (dc->threaded) {
        apr_thread_mutex_lock(dc->mutex);
    }
    for (i = 0; i < n; i++) {
        const sl_budget_t *c = &budgets[i];
        unsigned int s = sl_dc_cell(dc, c);
        sl_dc_flight_t *fl = &dc->flights[s];
        int waited_on = fl->token != 0;
        int mine = flights[i] && fl->token == flights[i];

        if (d && sl_dc_full(d, i, c)) {
            if (c->key_len < SL_DC_KEY &&
                sl_dc_put(&dc->cells[s], c, sent, sent + d->quota[i].reset,
                          got + d->quota[i].reset, flights[i])) {
                /* The old key's waiters stop waiting, and its leader's
                 * settle no longer finds its marker. */
                fl->token = 0;
            }
        }
        else if (flights[i]) {
            /* The key had room (it is not flooding), or the store did not
             * answer (the waiters ask it themselves, under the breaker):
             * nobody waits for this key until it is refused again. */
            sl_dc_forget(&dc->cells[s], c, got, flights[i], mine);
        }
        /* Whatever happened (an answer with room, an error, a timeout),
         * the waiters go on: with an entry, or to the store themselves. */
        if (mine) {
            fl->token = 0;
        }
        if (waited_on && dc->threaded) {
            apr_thread_cond_broadcast(dc->cond[s % SL_DC_CONDS]);
        }
    }
    if (dc->threaded) {
        apr_thread_mutex_unlock(dc->mutex);
    }
}

int sl_denycache_clear(sl_denycache_t *dc, const sl_budget_t *budgets, int n)
{
    int i, cleared = 0;

    for (i = 0; dc && i < n; i++) {
        const sl_budget_t *c = &budgets[i];
        sl_dc_cell_t *sl = &dc->cells[sl_dc_cell(dc, c)];
        sl_dc_entry_t *e = NULL;
        apr_uint32_t seq;
        int tries;

        if (c->key_len >= SL_DC_KEY) {
            continue;
        }
        /* A cell is held for the copy of one entry: an operator's call
         * may wait for it a little longer than a request would. */
        for (tries = 0; tries < SL_DC_TRIES && !e; tries++) {
            if (!(e = sl_dc_lock(sl, &seq))) {
                apr_sleep(SL_DC_POLL);
            }
        }
        if (!e) {
            continue;
        }
        if (sl_dc_same_key(e, c)) {
            cleared += e->until != 0;
            e->until = 0;
            e->retry_at = 0;
            e->cleared = apr_time_now();
        }
        else {
            /* The cell keeps the reset's time for this key (another key's
             * refusal there only costs that key a store call): a request
             * that asked the store before the reset and settles after it
             * must not bring the refusal back. */
            sl_dc_take(e, c, apr_time_now());
        }
        sl_dc_unlock(sl, seq);
    }
    return cleared;
}
