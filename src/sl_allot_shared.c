/* SPDX-License-Identifier: Apache-2.0 */
/* The allotments the children share (see sl_allot.h): a table in
 * anonymous shm, four cells to a set, a key's set chosen by a keyed hash;
 * each cell its own lock, taken by one compare-and-swap and held for the
 * few hundred instructions of a decision on it, never across a store call
 * (an ask marks the cell pending instead). A lock not had within a bounded
 * number of tries costs a store call, never a wait: a holder preempted
 * while holding it holds up nobody, and a lock whose holder died is taken
 * over. */
#include "sl_allot_private.h"

#include <apr_shm.h>

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

/* Tries of a cell's lock before its request is decided at the store; from
 * the SL_ALLOT_SPIN'th on, each gives the processor away first (its
 * holder may be a process that was preempted). */
#define SL_ALLOT_TRIES 64
#define SL_ALLOT_SPIN  16

/* The word this process's locks hold: its id, read once per process
 * (getpid is a system call), again in each child (sl_allot_create). */
static apr_uint32_t sl_allot_me;

void sl_allot_shared_attach(void)
{
    __atomic_store_n(&sl_allot_me, (apr_uint32_t) getpid(), __ATOMIC_RELAXED);
}

/* This process's id, read at its first lock if it never attached. */
static apr_uint32_t sl_allot_self(void)
{
    apr_uint32_t me = __atomic_load_n(&sl_allot_me, __ATOMIC_RELAXED);

    if (!me) {
        sl_allot_shared_attach();
        me = __atomic_load_n(&sl_allot_me, __ATOMIC_RELAXED);
    }
    return me;
}

/* The word of a lock taken by me, after the word seen in it: the count of
 * takings moves on, so that a word read earlier never matches it again. */
static apr_uint64_t sl_allot_taken(apr_uint64_t seen, apr_uint32_t me)
{
    return ((seen >> 32) + 1) << 32 | me;
}

/* A lock held by a process that no longer exists (killed between taking
 * and giving it back: an OOM kill, a crash elsewhere in the child) would
 * otherwise stay held for the generation, and every request of its key
 * would spin through the tries first. Taken over, the cell keeps its key
 * and a pending ask (whose asker, alive, names it), and drops its grant:
 * the holder may have died halfway through writing one, and units not
 * used age out in the store, counted. A reused id looks alive: the lock
 * then stays held, and its keys are decided at the store. The whole word
 * is compared, not the id alone: between the check that its holder is
 * gone and the swap, another process may take the lock over, give it
 * back, and a new process that got the dead one's id may take it; the
 * count of takings tells that word from the one seen, so two never hold
 * the cell at once. */
int sl_allot_cell_take_over(sl_allot_cell_t *c, apr_uint64_t seen)
{
    apr_uint32_t me = sl_allot_self();
    apr_uint32_t holder = SL_ALLOT_HOLDER(seen);

    if (!holder || holder == me || kill((pid_t) holder, 0) == 0 ||
        errno != ESRCH ||
        !__atomic_compare_exchange_n(&c->lock, &seen, sl_allot_taken(seen, me),
                                     0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        return 0;
    }
    c->k = c->left = 0;
    return 1;
}

int sl_allot_cell_lock(sl_allot_cell_t *c)
{
    apr_uint32_t me = sl_allot_self();
    apr_uint64_t seen = 0;
    int i;

    for (i = 0; i < SL_ALLOT_TRIES; i++) {
        if (i >= SL_ALLOT_SPIN) {
            sched_yield();
        }
        seen = __atomic_load_n(&c->lock, __ATOMIC_RELAXED);
        if (!SL_ALLOT_HOLDER(seen) &&
            __atomic_compare_exchange_n(&c->lock, &seen,
                                        sl_allot_taken(seen, me), 0,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            return 1;
        }
    }
    return sl_allot_cell_take_over(c, seen);
}

void sl_allot_cell_unlock(sl_allot_cell_t *c)
{
    /* Free, the count of takings kept. Only a holder's word is its own to
     * change while it lives: a plain read of it is the word it wrote. */
    apr_uint64_t mine = __atomic_load_n(&c->lock, __ATOMIC_RELAXED);

    __atomic_store_n(&c->lock, mine & ~(apr_uint64_t) 0xffffffffU,
                     __ATOMIC_RELEASE);
}

apr_status_t sl_allot_shared_create(apr_pool_t *pconf, sl_allot_shared_t **out)
{
    sl_allot_shared_t *sh = apr_pcalloc(pconf, sizeof(*sh));
    apr_shm_t *shm;
    apr_status_t rv;

    *out = NULL;
    if ((rv = apr_shm_create(&shm, sizeof(sl_allot_table_t), NULL, pconf)) !=
        APR_SUCCESS) {
        return rv;
    }
    sh->table = apr_shm_baseaddr_get(shm);
    memset(sh->table, 0, sizeof(*sh->table));
    if ((rv = sl_siphash_key(sh->table->seed)) != APR_SUCCESS) {
        apr_shm_destroy(shm);
        return rv;
    }
    *out = sh;
    return APR_SUCCESS;
}

/* The key's hash, never 0 (0 marks a free cell): its store's tag and its
 * bytes. */
static apr_uint64_t sl_allot_key_hash(const sl_allot_table_t *t,
                                      const sl_budget_t *b)
{
    apr_uint64_t h = sl_siphash(t->seed, b->key, b->key_len);

    return (h ^ (apr_uint64_t) b->store_tag * 0x9e3779b97f4a7c15ULL) | 1;
}

/* Of cells a and b, each locked or NULL, the better to give a new key
 * (free first, then the one idle longest), the other unlocked. */
static sl_allot_cell_t *sl_allot_better(sl_allot_cell_t *a, sl_allot_cell_t *b)
{
    sl_allot_cell_t *keep = a, *drop = b;

    if (!a || (b && a->used && (!b->used || b->touched < a->touched))) {
        keep = b;
        drop = a;
    }
    if (drop) {
        sl_allot_cell_unlock(drop);
    }
    return keep;
}

sl_allot_cell_t *sl_allot_shared_find(sl_allot_table_t *t, const sl_budget_t *b,
                                      apr_time_t now)
{
    apr_uint64_t h = sl_allot_key_hash(t, b);
    sl_allot_cell_t *set = &t->cells[(h >> 1) % SL_ALLOT_SETS * SL_ALLOT_WAYS];
    sl_allot_cell_t *victim = NULL;
    int w;

    for (w = 0; w < SL_ALLOT_WAYS; w++) {
        sl_allot_cell_t *c = &set[w];
        if (__atomic_load_n(&c->hint, __ATOMIC_RELAXED) != h) {
            continue;
        }
        /* Most likely the key's own cell, held: decided at the store this
         * time rather than placed in a second cell. */
        if (!sl_allot_cell_lock(c)) {
            return NULL;
        }
        if (sl_allot_same(c, b)) {
            return c;
        }
        sl_allot_cell_unlock(c);
    }
    /* A new key here. Two children may both place it at once, in two
     * cells: each then holds grants of its own, each counted at the
     * store. */
    for (w = 0; w < SL_ALLOT_WAYS; w++) {
        sl_allot_cell_t *c = &set[w];
        if (!sl_allot_cell_lock(c)) {
            continue;
        }
        if (c->used && !sl_allot_evictable(c, now)) {
            sl_allot_cell_unlock(c);
            continue;
        }
        victim = sl_allot_better(victim, c);
    }
    if (victim) {
        sl_allot_fill(victim, b);
        __atomic_store_n(&victim->hint, h, __ATOMIC_RELAXED);
    }
    return victim;
}
