/* SPDX-License-Identifier: Apache-2.0 */
/* The shm store's table: one stripe's budgets in a plain memory region,
 * giving the answers of lua/sl_check.lua (the math is in sl_algo.c). APR
 * only: no lock (the caller holds one), no logging (the status codes and
 * sl_table_news_t say what happened), so that tests/unit/sl_shm_test.c
 * drives it in malloc'd memory. sl_shm.c makes the regions shared.
 *
 * Layout. Every link inside the region is a 32-bit cell index, never a
 * pointer, so the region means the same wherever it is mapped:
 *
 *   header   magic, layout version, sizes, free list, LRU ends and
 *            counters in one cache line, the hash secret in the next
 *            (64-byte aligned)
 *   chains   nchains x uint32, heads of the hash chains (a power of two,
 *            between a quarter and a half of the cell count)
 *   cells    ncells x 64 bytes; each one is free, an entry or a log chunk
 *
 * An entry is one 64-byte cell per store key: a 96-bit keyed hash of the
 * key (of a 128-bit SipHash-2-4, one pass over the key, with a secret drawn
 * when the region is formatted, so nobody can aim keys at one chain), the
 * algorithm and key length (entries must match all three: a collision across
 * algorithms gives two entries, never one state read as another, and within one
 * algorithm a 2^-96 chance merges two budgets), until when the budget refuses,
 * the time the script's TTL would drop the key, the state (counter: window
 * index and two counts; gcra: the TAT; log: first and last chunk, count and
 * offset into the first, and the units the log holds), the chain link and the
 * two LRU links. A log holds one entry per admitted request, whatever its cost:
 * its admission time (int64) and its weight (uint32, the units it consumed),
 * four to a chunk (one cell each, linked by index, oldest first), so a log
 * of N live requests takes 1 + ceil(N / 4) cells: 64 bytes per key plus 16
 * bytes per request, plus 1-2 bytes of chain head per cell. Entries and chunks
 * share one pool of cells, so no ratio between algorithms has to be
 * guessed.
 *
 * When it fills. A refused request never needs space. An admitted one
 * takes free cells; when there are none, an entry whose key has expired
 * (its data is worthless: the script's TTL would have deleted it) is
 * reused first, looked for among the least recently used, then the least
 * recently used entry is evicted with its chunks, and that budget starts
 * afresh. Never evicted: entries of the request being decided, entries
 * that are refusing (no room for one more request before kept_until), and
 * entries that hold leases of requests in flight (SlidingLimitConcurrent,
 * kept until their last lease expires or is given back): evicting those
 * would hand a spent budget its quota back, or let a key hold more than N
 * in flight, so a flood of new clients could free its own victim. When
 * nothing can be evicted (one client's logs longer than the whole table,
 * or a table of refusing or leased budgets), the request is refused:
 * never admitted for want of space.
 *
 * Corruption. Every link is checked before it is followed; one that leads
 * nowhere (a cell of the wrong kind, an index out of range, a loop) stops
 * the decision, and the table is emptied rather than trusted.
 *
 * This file holds the region (layout, cells, hash chains, the LRU list,
 * eviction) and the budgets' preparation; a log's chunks are
 * sl_table_log.c's, the decision sl_table_decide.c's, the give-back, peek
 * and reset sl_table_ops.c's, behind sl_table_private.h. */

/* What apr-1-config --cppflags gives the real build: apr.h needs it for
 * PATH_MAX under a strict -std=c99. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sl_table_private.h"

#include "sl_ident.h"

#include <stddef.h>
#include <string.h>

#define SL_TABLE_MAGIC 0x4d534c53U /* "SLSM" */
/* 3: a log's entry is a request with its weight, no longer a unit.
 * 4: an entry's hash is one 128-bit SipHash under one secret. */
#define SL_TABLE_LAYOUT 4
#define SL_MIN_CELLS    64
#define SL_MAX_CELLS    (1U << 28)
/* Entries looked at, from the LRU end, for an expired one to reuse before
 * a live one is evicted: bounded, because it runs under the lock (refusing
 * entries, which are skipped, are moved to the front as they are met). */
#define SL_SCAN 16

/* The layout in sl_table_private.h is the documented one: refuse to build
 * otherwise. */
typedef char sl_assert_cell[sizeof(sl_cell_t) == SL_TABLE_CELL_BYTES ? 1 : -1];
typedef char
    sl_assert_entry[sizeof(sl_entry_t) == SL_TABLE_CELL_BYTES ? 1 : -1];
typedef char
    sl_assert_chunk[sizeof(sl_chunk_t) == SL_TABLE_CELL_BYTES ? 1 : -1];
typedef char sl_assert_kind
    [offsetof(sl_entry_t, kind) == offsetof(sl_chunk_t, kind) ? 1 : -1];
typedef char sl_assert_ts[SL_CHUNK_TS == SL_TABLE_LOG_PER_CELL ? 1 : -1];
typedef char sl_assert_hdr[offsetof(sl_table_hdr_t, free_head) == 24 &&
                                   offsetof(sl_table_hdr_t, secret) == 64
                               ? 1
                               : -1];

static apr_size_t sl_align64(apr_size_t n)
{
    return (n + 63) & ~(apr_size_t) 63;
}

/* How a segment of size bytes is cut; 0 when it is too small. */
static int sl_layout(apr_size_t size, apr_uint32_t *nchains,
                     apr_uint32_t *ncells)
{
    apr_size_t hdr = sl_align64(sizeof(sl_table_hdr_t)), avail, cells;
    apr_size_t nb = 1;

    if (size < hdr + SL_MIN_CELLS * SL_TABLE_CELL_BYTES) {
        return 0;
    }
    avail = size - hdr;
    cells = avail / SL_TABLE_CELL_BYTES;
    if (cells > SL_MAX_CELLS) {
        cells = SL_MAX_CELLS;
    }
    while (nb * 2 <= cells / 2) {
        nb *= 2;
    }
    cells =
        (avail - sl_align64(nb * sizeof(apr_uint32_t))) / SL_TABLE_CELL_BYTES;
    if (cells > SL_MAX_CELLS) {
        cells = SL_MAX_CELLS;
    }
    if (cells < SL_MIN_CELLS) {
        return 0;
    }
    *nchains = (apr_uint32_t) nb;
    *ncells = (apr_uint32_t) cells;
    return 1;
}

static void sl_map(sl_table_t *tab, void *base)
{
    char *b = base;
    apr_size_t hdr = sl_align64(sizeof(sl_table_hdr_t));

    tab->hdr = base;
    tab->chains = (apr_uint32_t *) (b + hdr);
    tab->cells =
        (sl_cell_t *) (b + hdr +
                       sl_align64(tab->hdr->nchains * sizeof(apr_uint32_t)));
}

/* Empties the table; the secret stays. */
void sl_format(sl_table_t *tab)
{
    sl_table_hdr_t *h = tab->hdr;
    apr_uint32_t i;

    memset(tab->chains, 0xff, h->nchains * sizeof(apr_uint32_t));
    for (i = 0; i < h->ncells; i++) {
        memset(&tab->cells[i], 0, sizeof(sl_cell_t));
        tab->cells[i].c.kind = SL_KIND_FREE;
        tab->cells[i].c.next = i + 1 < h->ncells ? i + 1 : SL_NIL;
    }
    h->free_head = 0;
    h->nfree = h->ncells;
    h->lru_head = SL_NIL;
    h->lru_tail = SL_NIL;
    h->nentries = 0;
    h->full = 0;
    h->evicted = 0;
}

/* ---- cells ---- */

sl_entry_t *sl_entry(sl_txn_t *t, apr_uint32_t i)
{
    sl_table_t *tab = t->tab;

    if (i >= tab->hdr->ncells || tab->cells[i].e.kind != SL_KIND_ENTRY) {
        t->corrupt = 1;
        return NULL;
    }
    return &tab->cells[i].e;
}

sl_chunk_t *sl_chunk(sl_txn_t *t, apr_uint32_t i)
{
    sl_table_t *tab = t->tab;

    if (i >= tab->hdr->ncells || tab->cells[i].c.kind != SL_KIND_CHUNK) {
        t->corrupt = 1;
        return NULL;
    }
    return &tab->cells[i].c;
}

/* Callers reserve first: nfree > 0 here. */
apr_uint32_t sl_cell_take(sl_txn_t *t, unsigned char kind)
{
    sl_table_t *tab = t->tab;
    apr_uint32_t i = tab->hdr->free_head;
    sl_cell_t *cell;

    if (i >= tab->hdr->ncells || tab->cells[i].c.kind != SL_KIND_FREE) {
        t->corrupt = 1;
        return SL_NIL;
    }
    cell = &tab->cells[i];
    tab->hdr->free_head = cell->c.next;
    tab->hdr->nfree--;
    memset(cell, 0, sizeof(*cell));
    cell->c.kind = kind;
    return i;
}

void sl_cell_give(sl_txn_t *t, apr_uint32_t i)
{
    sl_table_t *tab = t->tab;
    sl_cell_t *cell = &tab->cells[i];

    memset(cell, 0, sizeof(*cell));
    cell->c.kind = SL_KIND_FREE;
    cell->c.next = tab->hdr->free_head;
    tab->hdr->free_head = i;
    tab->hdr->nfree++;
}

/* ---- entries: hash chains and the LRU list ---- */

static apr_uint32_t *sl_chain(sl_table_t *tab, const unsigned char *hash)
{
    apr_uint32_t b;

    memcpy(&b, hash, sizeof(b));
    return &tab->chains[b & (tab->hdr->nchains - 1)];
}

static void sl_lru_unlink(sl_txn_t *t, sl_entry_t *e)
{
    sl_table_hdr_t *h = t->tab->hdr;
    sl_entry_t *o;

    if (e->lprev == SL_NIL) {
        h->lru_head = e->lnext;
    }
    else if ((o = sl_entry(t, e->lprev))) {
        o->lnext = e->lnext;
    }
    if (e->lnext == SL_NIL) {
        h->lru_tail = e->lprev;
    }
    else if ((o = sl_entry(t, e->lnext))) {
        o->lprev = e->lprev;
    }
    e->lprev = e->lnext = SL_NIL;
}

static void sl_lru_front(sl_txn_t *t, apr_uint32_t i, sl_entry_t *e)
{
    sl_table_hdr_t *h = t->tab->hdr;
    sl_entry_t *o;

    e->lprev = SL_NIL;
    e->lnext = h->lru_head;
    if (h->lru_head != SL_NIL && (o = sl_entry(t, h->lru_head))) {
        o->lprev = i;
    }
    h->lru_head = i;
    if (h->lru_tail == SL_NIL) {
        h->lru_tail = i;
    }
}

void sl_lru_touch(sl_txn_t *t, apr_uint32_t i, sl_entry_t *e)
{
    if (t->tab->hdr->lru_head != i) {
        sl_lru_unlink(t, e);
        sl_lru_front(t, i, e);
    }
}

void sl_entry_drop(sl_txn_t *t, apr_uint32_t i)
{
    sl_entry_t *e = sl_entry(t, i), *o;
    apr_uint32_t *link, n = 0;

    if (!e) {
        return;
    }
    if (e->alg == SL_ALG_LOG || e->alg == SL_ALG_DISTINCT) {
        sl_log_clear(t, e);
    }
    link = sl_chain(t->tab, e->hash);
    while (*link != SL_NIL && *link != i && n++ < t->tab->hdr->ncells) {
        if (!(o = sl_entry(t, *link))) {
            return;
        }
        link = &o->hnext;
    }
    if (*link != i) {
        t->corrupt = 1;
        return;
    }
    *link = e->hnext;
    sl_lru_unlink(t, e);
    t->tab->hdr->nentries--;
    sl_cell_give(t, i);
}

apr_uint32_t sl_entry_find(sl_txn_t *t, const sl_shm_op_t *q)
{
    apr_uint32_t i = *sl_chain(t->tab, q->hash), n = 0;
    sl_entry_t *e;

    while (i != SL_NIL && n++ < t->tab->hdr->ncells && (e = sl_entry(t, i))) {
        if (!memcmp(e->hash, q->hash, sizeof(q->hash)) && e->alg == q->alg &&
            e->klen == q->klen) {
            return i;
        }
        i = e->hnext;
    }
    return SL_NIL;
}

apr_uint32_t sl_entry_new(sl_txn_t *t, const sl_shm_op_t *q)
{
    apr_uint32_t i = sl_cell_take(t, SL_KIND_ENTRY), *chain;
    sl_entry_t *e;

    if (i == SL_NIL) {
        return SL_NIL;
    }
    e = &t->tab->cells[i].e;
    memcpy(e->hash, q->hash, sizeof(e->hash));
    e->alg = q->alg;
    e->klen = q->klen;
    if (q->alg == SL_ALG_LOG || q->alg == SL_ALG_DISTINCT) {
        e->st.log.head = e->st.log.tail = SL_NIL;
    }
    chain = sl_chain(t->tab, q->hash);
    e->hnext = *chain;
    *chain = i;
    e->lprev = e->lnext = SL_NIL;
    sl_lru_front(t, i, e);
    t->tab->hdr->nentries++;
    return i;
}

/* ---- room ---- */

static int sl_ops_hold(const sl_shm_op_t *q, int n, apr_uint32_t i)
{
    int k;

    for (k = 0; k < n; k++) {
        if (q[k].entry == i) {
            return 1;
        }
    }
    return 0;
}

static int sl_kept(const sl_txn_t *t, const sl_entry_t *e)
{
    return (apr_int64_t) e->kept_until * APR_USEC_PER_SEC > t->now;
}

void sl_entry_keep(sl_entry_t *e, apr_int64_t until)
{
    until = (until + APR_USEC_PER_SEC - 1) / APR_USEC_PER_SEC;
    if (until > (apr_int64_t) e->kept_until) {
        e->kept_until = until > (apr_int64_t) 0xffffffffU
                            ? 0xffffffffU
                            : (apr_uint32_t) until;
    }
}

/* The entry to give up for room: an expired one near the LRU end, else the
 * least recently used one; never one this request uses, never one that is
 * kept (refusing: evicted, it would start afresh with its whole quota;
 * holding leases: evicted, its requests in flight would stop counting). */
static apr_uint32_t sl_victim(sl_txn_t *t, const sl_shm_op_t *q, int n)
{
    apr_uint32_t i = t->tab->hdr->lru_tail, fallback = SL_NIL, seen = 0;
    sl_entry_t *e;

    while (i != SL_NIL && (seen < SL_SCAN || fallback == SL_NIL) &&
           seen++ < t->tab->hdr->ncells && (e = sl_entry(t, i))) {
        apr_uint32_t prev = e->lprev;
        if (!sl_ops_hold(q, n, i)) {
            if (e->expires <= t->now) {
                return i;
            }
            if (sl_kept(t, e)) {
                /* Out of the way of the next search: a table full of
                 * kept budgets costs one walk, not one per request. */
                sl_lru_touch(t, i, e);
            }
            else if (fallback == SL_NIL) {
                fallback = i;
            }
        }
        i = prev;
    }
    return fallback;
}

int sl_reserve(sl_txn_t *t, const sl_shm_op_t *q, int n, apr_uint32_t need,
               int *evicted)
{
    while (t->tab->hdr->nfree < need && !t->corrupt) {
        apr_uint32_t v = sl_victim(t, q, n);
        if (v == SL_NIL) {
            return 0;
        }
        if (t->tab->cells[v].e.expires > t->now) {
            (*evicted)++;
            t->tab->hdr->evicted++;
        }
        sl_entry_drop(t, v);
    }
    return !t->corrupt;
}

/* ---- the budgets' hashes ---- */

/* A budget's key as the table finds it: SipHash-128 under the table's
 * secret, cut to SL_HASH_BYTES (sl_key.c's hash makes the identity in the
 * key, which is another thing). */
static void sl_table_key_hash(const sl_table_hdr_t *h, const char *key,
                              apr_size_t len, unsigned char out[SL_HASH_BYTES])
{
    apr_uint64_t w[2];

    sl_siphash128(h->secret, key, len, w);
    memcpy(out, &w[0], sizeof(w[0]));
    memcpy(out + sizeof(w[0]), &w[1], SL_HASH_BYTES - sizeof(w[0]));
}

unsigned int sl_table_stripe(const unsigned char key[SL_SIPHASH_KEY],
                             const char *budget_key, apr_size_t len,
                             unsigned int n)
{
    apr_size_t tag_len;
    const char *tag = sl_hash_tag(budget_key, len, &tag_len);

    return n ? (unsigned int) (sl_siphash(key, tag, tag_len) % n) : 0;
}

apr_status_t sl_table_prepare(apr_pool_t *p, const sl_table_t *tab,
                              const sl_budget_t *budgets, int n,
                              sl_shm_op_t **ops)
{
    sl_shm_op_t *q;
    int i, j;

    if (n < 1 || !budgets) {
        return APR_EINVAL;
    }
    q = apr_pcalloc(p, sizeof(*q) * n);
    for (i = 0; i < n; i++) {
        const sl_budget_t *c = &budgets[i];
        q[i].limit = c->requests;
        q[i].win = c->window;
        q[i].burst = c->burst ? c->burst : c->requests;
        q[i].cost = c->cost > 1 ? c->cost : 1;
        q[i].block = c->block > 0 ? c->block : 0;
        /* The script refuses the same arguments. */
        if (!c->key || c->key_len > 0xffff || q[i].limit < 1 || q[i].win < 1 ||
            q[i].burst < 1 || q[i].cost > sl_budget_capacity(c) ||
            c->algorithm < 0 || c->algorithm >= SL_ALG_COUNT ||
            (c->algorithm == SL_ALG_DISTINCT &&
             (q[i].limit > SL_DISTINCT_MAX || q[i].cost != 1))) {
            return APR_EINVAL;
        }
        /* distinct=: the value as a fingerprint keyed by the table's
         * secret, which no client knows: none can choose a value that
         * passes for another. */
        if (c->algorithm == SL_ALG_DISTINCT && c->distinct) {
            q[i].fp =
                sl_siphash(tab->hdr->secret, c->distinct, strlen(c->distinct));
            q[i].has_fp = 1;
        }
        /* Leases are log entries whose window is the lease: admitted,
         * given back and expired as the log's (the key tells them apart). */
        q[i].lease = c->algorithm == SL_ALG_CONCURRENT;
        q[i].alg = (unsigned char) (q[i].lease ? SL_ALG_LOG : c->algorithm);
        q[i].klen = (apr_uint16_t) c->key_len;
        q[i].entry = SL_NIL;
        sl_table_key_hash(tab->hdr, c->key, c->key_len, q[i].hash);
    }
    /* Two limits on one key: the script writes both from the state both
     * read, so the later write is the one that stays. */
    for (i = 0; i < n; i++) {
        q[i].last = 1;
        for (j = i + 1; j < n && q[i].last; j++) {
            if (q[j].alg == q[i].alg && q[j].klen == q[i].klen &&
                !memcmp(q[j].hash, q[i].hash, sizeof(q[i].hash))) {
                q[i].last = 0;
            }
        }
    }
    *ops = q;
    return APR_SUCCESS;
}

apr_size_t sl_table_min_size(void)
{
    apr_size_t size = sl_align64(sizeof(sl_table_hdr_t)) +
                      (apr_size_t) SL_MIN_CELLS * SL_TABLE_CELL_BYTES;
    apr_uint32_t nb, ns;

    /* The chain heads come on top: a few cells' worth. */
    while (!sl_layout(size, &nb, &ns)) {
        size += SL_TABLE_CELL_BYTES;
    }
    return size;
}

apr_status_t sl_table_attach(apr_pool_t *p, void *base, apr_size_t size,
                             int fresh, int *kept, sl_table_t **out)
{
    sl_table_t *tab;
    sl_table_hdr_t *h = base;
    apr_uint32_t nchains, ncells;
    apr_status_t rv;

    if (!sl_layout(size, &nchains, &ncells)) {
        return APR_EINVAL;
    }
    tab = apr_pcalloc(p, sizeof(*tab));
    *kept = !fresh && h->magic == SL_TABLE_MAGIC &&
            h->layout == SL_TABLE_LAYOUT && h->size == size &&
            h->nchains == nchains && h->ncells == ncells;
    if (!*kept) {
        memset(h, 0, sizeof(*h));
        rv = sl_siphash_key(h->secret);
        if (rv != APR_SUCCESS) {
            return rv;
        }
        h->magic = SL_TABLE_MAGIC;
        h->layout = SL_TABLE_LAYOUT;
        h->size = size;
        h->nchains = nchains;
        h->ncells = ncells;
        sl_map(tab, h);
        sl_format(tab);
    }
    else {
        sl_map(tab, h);
    }
    *out = tab;
    return APR_SUCCESS;
}

void sl_table_geometry(const sl_table_t *tab, apr_uint32_t *ncells,
                       apr_uint32_t *nchains)
{
    *ncells = tab->hdr->ncells;
    *nchains = tab->hdr->nchains;
}

void *sl_table_base(const sl_table_t *tab)
{
    return tab->hdr;
}

apr_uint32_t sl_table_entries(const sl_table_t *tab)
{
    return tab->hdr->nentries;
}

apr_uint32_t sl_table_free(const sl_table_t *tab)
{
    return tab->hdr->nfree;
}
