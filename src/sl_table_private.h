/* SPDX-License-Identifier: Apache-2.0 */
/* What the shm store's table files share: sl_table.c (the region's
 * layout, cells, hash chains, the LRU list and eviction, preparing the
 * budgets), sl_table_log.c (a sliding log in chunks), sl_table_decide.c
 * (the decision) and sl_table_ops.c (the give-back, the operator's peek
 * and reset). The layout is described at the top of sl_table.c. Nothing
 * here is seen outside the table. */
#ifndef SL_TABLE_PRIVATE_H
#define SL_TABLE_PRIVATE_H

#include "sl_table.h"

#include "sl_siphash.h"

#include <apr_general.h>

#define SL_NIL 0xffffffffU

#define SL_KIND_FREE  0
#define SL_KIND_ENTRY 1
#define SL_KIND_CHUNK 2

/* An entry's alg for a limit's block (the script's KEY.b): the limit's own
 * key hash, told apart by this code. */
#define SL_TABLE_BLOCK 3

typedef struct sl_table_hdr {
    apr_uint32_t magic;
    apr_uint32_t layout;
    apr_uint64_t size;
    apr_uint32_t nchains;
    apr_uint32_t ncells;
    /* Written under the lock, in the first cache line, at offsets 24-56 as
     * in layout 3: a child of the previous build still running after a
     * graceful restart onto this one writes its counters here, never over
     * the secret. */
    apr_uint32_t free_head;
    apr_uint32_t nfree;
    apr_uint32_t lru_head; /* most recently used entry */
    apr_uint32_t lru_tail;
    apr_uint32_t nentries;
    apr_uint32_t full;    /* the last admission found no room */
    apr_uint64_t evicted; /* live entries evicted for room */
    unsigned char pad[8];
    /* Read by every request before it takes the lock, and never written
     * while the region lives: a cache line of its own, so that hashing a
     * key on one core does not pull the line that the lock's holder on
     * another is writing. */
    unsigned char secret[SL_SIPHASH_KEY];
} sl_table_hdr_t;

#define SL_HASH_BYTES 12

typedef struct sl_entry {
    unsigned char hash[SL_HASH_BYTES];
    /* Until when (seconds, rounded up) the entry is not evicted: the
     * budget has no room for one more request (evicted, it would have its
     * quota back), or it holds leases of requests in flight (evicted, they
     * would no longer count, and its key would have more than N in
     * flight). */
    apr_uint32_t kept_until;
    apr_int64_t expires; /* microseconds; the script's PEXPIRE */
    union {
        sl_counter_t counter;
        sl_gcra_t gcra;
        struct {
            apr_uint32_t head; /* oldest chunk */
            apr_uint32_t tail;
            apr_uint32_t count; /* requests */
            apr_uint32_t off;   /* first live one in the head chunk */
            apr_uint32_t units; /* their weights' sum, at most 1e8 */
        } log;
        apr_int64_t until; /* SL_TABLE_BLOCK: the block's end */
    } st;
    apr_uint32_t hnext;
    apr_uint32_t lprev;
    apr_uint32_t lnext;
    unsigned char kind;
    unsigned char alg;
    apr_uint16_t klen;
} sl_entry_t;

#define SL_CHUNK_TS 4

typedef struct sl_chunk {
    apr_int64_t ts[SL_CHUNK_TS]; /* admission times */
    apr_uint32_t w[SL_CHUNK_TS]; /* weights */
    unsigned char pad0[8];
    apr_uint32_t next; /* also the free list's link */
    unsigned char kind;
    unsigned char pad[3];
} sl_chunk_t;

typedef union sl_cell {
    sl_entry_t e;
    sl_chunk_t c;
} sl_cell_t;

struct sl_table {
    sl_table_hdr_t *hdr;
    apr_uint32_t *chains;
    sl_cell_t *cells;
};

/* One limit of the request being decided. */
struct sl_shm_op {
    unsigned char hash[SL_HASH_BYTES];
    apr_uint16_t klen;
    unsigned char alg;
    int last;  /* no later limit has the same key: its write is the one */
    int lease; /* SlidingLimitConcurrent: a log (alg) of leases */
    apr_int64_t limit;
    apr_int64_t win;
    apr_int64_t burst;
    apr_int64_t cost;
    apr_int64_t block;
    int blocked; /* refused by a running block */
    apr_uint32_t entry;
    sl_eval_t ev;
    /* distinct= (sl_table_distinct.c): the request's value as a keyed
     * 64-bit fingerprint (has_fp 0: a look, no value); the slot that holds
     * it (known) or a free one to take, found by the evaluation. */
    apr_uint64_t fp;
    int has_fp;
    int known;
    apr_uint32_t dchunk;
    int dslot;
};

/* Work under the lock; corrupt is set by any link that leads nowhere. */
typedef struct sl_txn {
    sl_table_t *tab;
    apr_int64_t now;
    int corrupt;
} sl_txn_t;

/* ---- cells (sl_table.c) ---- */

/* Empties the table; the secret stays. */
void sl_format(sl_table_t *tab);

/* The entry or chunk at cell i; NULL (and t->corrupt) when cell i is not
 * one. */
sl_entry_t *sl_entry(sl_txn_t *t, apr_uint32_t i);
sl_chunk_t *sl_chunk(sl_txn_t *t, apr_uint32_t i);

/* Callers reserve first: nfree > 0 here. */
apr_uint32_t sl_cell_take(sl_txn_t *t, unsigned char kind);
void sl_cell_give(sl_txn_t *t, apr_uint32_t i);

/* ---- entries (sl_table.c) ---- */

/* Entry i becomes the most recently used. */
void sl_lru_touch(sl_txn_t *t, apr_uint32_t i, sl_entry_t *e);
/* Entry i and its chunks go back to the free cells, out of its chain and
 * the LRU list. */
void sl_entry_drop(sl_txn_t *t, apr_uint32_t i);
/* q's entry, or SL_NIL. */
apr_uint32_t sl_entry_find(sl_txn_t *t, const sl_shm_op_t *q);
/* A new empty entry for q, most recently used; SL_NIL without a cell. */
apr_uint32_t sl_entry_new(sl_txn_t *t, const sl_shm_op_t *q);

/* Entry e is not evicted before until (microseconds): sl_entry_t's
 * kept_until, which only grows here. */
void sl_entry_keep(sl_entry_t *e, apr_int64_t until);

/* Frees entries until need cells are free: 0 when nothing more can be
 * evicted, or a link led nowhere. *evicted counts the live ones. */
int sl_reserve(sl_txn_t *t, const sl_shm_op_t *q, int n, apr_uint32_t need,
               int *evicted);

/* ---- the sliding log in chunks (sl_table_log.c) ---- */

typedef struct sl_log_ctx {
    sl_txn_t *t;
    sl_entry_t *e;
    apr_int64_t skip; /* requests before the first one to read */
} sl_log_ctx_t;

/* The log's chunks go back to the free cells; the log is empty. */
void sl_log_clear(sl_txn_t *t, sl_entry_t *e);
void sl_log_drop(sl_txn_t *t, sl_entry_t *e, apr_int64_t horizon);
/* sl_log_evaluate's reader over a log's chunks; ctx is an sl_log_ctx_t. */
apr_int64_t sl_table_log_at(void *ctx, apr_int64_t i);
apr_int64_t sl_log_remove(sl_txn_t *t, sl_entry_t *e, apr_int64_t at,
                          apr_int64_t cost);
apr_int64_t sl_log_room(const sl_entry_t *e);
void sl_log_insert(sl_txn_t *t, sl_entry_t *e, apr_int64_t now, apr_int64_t w);
apr_int64_t sl_log_dead(sl_txn_t *t, sl_entry_t *e, apr_int64_t horizon,
                        apr_int64_t *units);

/* ---- distinct= (sl_table_distinct.c) ---- */

/* q's answer from its set e (NULL: none) at t->now; notes where the
 * admission writes. */
void sl_distinct_evaluate(sl_txn_t *t, sl_shm_op_t *q, sl_entry_t *e);
/* The cells the admission of q needs beyond its entry: a chunk when its
 * value is new and no slot is free. */
apr_uint32_t sl_distinct_need(const sl_shm_op_t *q);
/* The admission: q's value seen now. Returns the entry's expiry. */
apr_int64_t sl_distinct_apply(sl_txn_t *t, sl_shm_op_t *q, sl_entry_t *e);

/* ---- the decision (sl_table_decide.c) ---- */

/* The stored state e (NULL: none) of q at t->now; a log's first skip
 * requests, of skip_units units, are out of its window. */
void sl_evaluate_entry(sl_txn_t *t, sl_shm_op_t *q, sl_entry_t *e,
                       apr_int64_t skip, apr_int64_t skip_units);

/* Undoes q's admission at time at on its stored state e (count=). */
void sl_op_give_back(sl_txn_t *t, sl_shm_op_t *q, sl_entry_t *e, apr_time_t at);

#endif
