/* SPDX-License-Identifier: Apache-2.0 */
/* The allotment tables' insides, for sl_allot.c (the decisions on a cell,
 * and one child's table) and sl_allot_shared.c (the table the children
 * share in shm). Pure: APR only. */
#ifndef SL_ALLOT_PRIVATE_H
#define SL_ALLOT_PRIVATE_H

#include "sl_allot.h"
#include "sl_siphash.h"

#include <apr_thread_mutex.h>

#define SL_ALLOT_BUCKETS 1024

struct sl_allot_cell {
    sl_allot_cell_t *next; /* in its bucket (one child's table only) */
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
    /* The ask under way (0: none; its number, unique in the table) and
     * when it began. */
    apr_uint32_t ask;
    apr_time_t ask_since;
    /* No asking before then: the last ask found no room. */
    apr_time_t dry_until;
    /* Requests seen in the current period of D (its index) and the one
     * before: the key's rate on this child, or on this server. */
    apr_int64_t period, seen, seen_prev;
    apr_time_t touched;
    /* The shared table's: the cell's lock (a spin lock of one compare-and-
     * swap, held for a few hundred instructions, never across a store
     * call: the holder's process id in the low 32 bits, 0 when free, and
     * in the high 32 how many times it was taken) and the hash of the key
     * it holds (0: none; a hint for finding it, checked under the lock). */
    apr_uint64_t lock;
    apr_uint64_t hint;
};

/* The table shared by the children of one generation. */
#define SL_ALLOT_WAYS 4
#define SL_ALLOT_SETS (SL_ALLOT_CELLS / SL_ALLOT_WAYS)
typedef struct sl_allot_table {
    apr_uint32_t asks;  /* the last ask's number */
    apr_uint32_t sweep; /* the next cell sl_allot_stale looks at */
    /* Places keys in sets, drawn for each generation: a client that knew
     * the placement could aim its keys at another key's set. */
    unsigned char seed[SL_SIPHASH_KEY];
    sl_allot_cell_t cells[SL_ALLOT_CELLS];
} sl_allot_table_t;

struct sl_allot_shared {
    sl_allot_table_t *table;
};

struct sl_allot {
    sl_allot_table_t *shared;  /* the children's table; NULL: the child's */
    apr_thread_mutex_t *mutex; /* the child's table, threaded: its lock */
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
    apr_uint32_t asks;
};

int sl_allot_same(const sl_allot_cell_t *c, const sl_budget_t *b);
/* Whether c's key may be replaced at now: nothing usable, no ask. */
int sl_allot_evictable(const sl_allot_cell_t *c, apr_time_t now);
/* c made to hold b's key, with nothing seen and nothing granted. */
void sl_allot_fill(sl_allot_cell_t *c, const sl_budget_t *b);

/* sl_allot_shared.c: a cell of the shared table, locked, b's key in it
 * (found, or a free or evictable cell of its set made to hold it); NULL
 * when none could be locked or replaced. */
sl_allot_cell_t *sl_allot_shared_find(sl_allot_table_t *t, const sl_budget_t *b,
                                      apr_time_t now);
/* The cell's lock, tried a bounded number of times, or taken over from a
 * holder that died: 0 when another holder kept it (the caller decides at
 * the store). */
int sl_allot_cell_lock(sl_allot_cell_t *c);
/* Takes the lock over from the holder seen in it (the lock's whole word,
 * as read) if that holder has died and the lock has not changed hands
 * since: 1 when taken. */
int sl_allot_cell_take_over(sl_allot_cell_t *c, apr_uint64_t seen);
/* The process id a lock's word names, its low 32 bits (0: free). */
#define SL_ALLOT_HOLDER(word) ((apr_uint32_t) (word))
/* This process's id for the locks it takes: in each child, as it starts
 * (sl_allot_create); a process that never called it reads its id at its
 * first lock. */
void sl_allot_shared_attach(void);
void sl_allot_cell_unlock(sl_allot_cell_t *c);

#endif
