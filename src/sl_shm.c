/* The embedded store: "SlidingLimitStore shm" and the local fallback. It
 * gives the answers of lua/sl_check.lua (the math is in sl_algo.c) for all
 * children of this httpd from up to 8 stripes (see sl_shm_decide at the end),
 * each one anonymous shared memory segment under its own global mutex; what
 * follows describes one stripe.
 *
 * Layout. Every link inside the segment is a 32-bit slot index, never a
 * pointer, so the segment means the same wherever it is mapped:
 *
 *   header   magic, layout version, sizes, free list, LRU ends, the
 *            generation, counters and the hash secret (64-byte aligned)
 *   buckets  nbuckets x uint32, heads of the hash chains (a power of two,
 *            between a quarter and a half of the slot count)
 *   slots    nslots x 64 bytes; each one is free, an entry or a log chunk
 *
 * An entry is one 64-byte slot per store key: a 128-bit keyed SipHash of
 * the key (two SipHash-2-4 with a secret drawn when the segment is made, so
 * nobody can aim keys at one chain), the algorithm and key length (entries
 * must match all three: a collision across algorithms gives two entries,
 * never one state read as another, and within one algorithm a 2^-128 chance
 * merges two budgets), the time the script's TTL would drop the key, the
 * state (counter: window index and two counts; gcra: the TAT; log: first
 * and last chunk, count and offset into the first), the chain link and the
 * two LRU links. A log's admission times live in chunks of 7 int64 (one
 * slot each, linked by index, oldest first), so a log of N live times
 * takes 1 + ceil(N / 7) slots: 64 bytes per key plus ~9.1 bytes per
 * timestamp, plus 1-2 bytes of bucket per slot. Entries and chunks share
 * one pool of slots, so no ratio between algorithms has to be guessed.
 *
 * When it fills. A refused request never needs space. An admitted one
 * takes free slots; when there are none, an entry whose key has expired
 * (its data is worthless: the script's TTL would have deleted it) is
 * reused first, looked for among the least recently used, then the least
 * recently used entry is evicted with its chunks, and that budget starts
 * afresh. Entries of the request being decided are never evicted; when
 * nothing else is left (one log longer than the whole store), the answer
 * is APR_ENOSPC and nothing changes: never a crash, never a silent pass.
 *
 * Lifecycle. The segment lives in the process pool and is kept across
 * graceful restarts (retained data, recreated only when its size changes),
 * and so is its mutex: children of the old generation that are still
 * finishing requests after a graceful restart take the same lock as the new
 * ones, so two generations never write the segment at once. The price: a
 * changed "Mutex slidinglimit-shm" takes effect at the next full restart. */

/* What apr-1-config --cppflags gives the real build: apr.h needs it for
 * PATH_MAX under a strict -std=c99. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sl_shm.h"
#include "sl_algo.h"

#include "http_config.h"
#include "http_log.h"
#include "util_mutex.h"

#include <apr_atomic.h>
#include <apr_global_mutex.h>
#include <apr_shm.h>
#include <apr_siphash.h>
#include <apr_strings.h>

#include <stddef.h>
#include <string.h>

APLOG_USE_MODULE(slidinglimit);

typedef struct sl_part sl_part_t;

#define SL_SHM_MAGIC    0x4d534c53U /* "SLSM" */
#define SL_SHM_LAYOUT   1
#define SL_SHM_RETAINED "mod_slidinglimit-shm"
#define SL_NIL          0xffffffffU
#define SL_MIN_SLOTS    64
#define SL_MAX_SLOTS    (1U << 28)
/* Entries looked at, from the LRU end, for an expired one to reuse before
 * a live one is evicted: bounded, because it runs under the lock. */
#define SL_SCAN 16

#define SL_KIND_FREE  0
#define SL_KIND_ENTRY 1
#define SL_KIND_CHUNK 2

/* An entry's alg for a limit's block (the script's KEY.b): the limit's own
 * key hash, told apart by this code. */
#define SL_SHM_BLOCK 3

typedef struct sl_shm_hdr {
    apr_uint32_t magic;
    apr_uint32_t layout;
    apr_uint64_t size;
    apr_uint32_t nbuckets;
    apr_uint32_t nslots;
    apr_uint32_t free_head;
    apr_uint32_t nfree;
    apr_uint32_t lru_head; /* most recently used entry */
    apr_uint32_t lru_tail;
    apr_uint32_t nentries;
    apr_uint32_t generation;
    apr_uint32_t full; /* the last admission found no room */
    apr_uint32_t pad;
    apr_uint64_t evicted; /* live entries evicted for room */
    unsigned char secret[2 * APR_SIPHASH_KSIZE];
} sl_shm_hdr_t;

typedef struct sl_entry {
    unsigned char hash[16];
    apr_int64_t expires; /* microseconds; the script's PEXPIRE */
    union {
        sl_counter_t counter;
        sl_gcra_t gcra;
        struct {
            apr_uint32_t head; /* oldest chunk */
            apr_uint32_t tail;
            apr_uint32_t count;
            apr_uint32_t off; /* first live time in the head chunk */
        } log;
        apr_int64_t until; /* SL_SHM_BLOCK: the block's end */
    } st;
    apr_uint32_t hnext;
    apr_uint32_t lprev;
    apr_uint32_t lnext;
    unsigned char kind;
    unsigned char alg;
    apr_uint16_t klen;
} sl_entry_t;

#define SL_CHUNK_TS 7

typedef struct sl_chunk {
    apr_int64_t ts[SL_CHUNK_TS];
    apr_uint32_t next; /* also the free list's link */
    unsigned char kind;
    unsigned char pad[3];
} sl_chunk_t;

typedef union sl_slot {
    sl_entry_t e;
    sl_chunk_t c;
} sl_slot_t;

/* The layout above is the documented one: refuse to build otherwise. */
typedef char sl_assert_slot[sizeof(sl_slot_t) == SL_SHM_SLOT_BYTES ? 1 : -1];
typedef char sl_assert_entry[sizeof(sl_entry_t) == SL_SHM_SLOT_BYTES ? 1 : -1];
typedef char sl_assert_chunk[sizeof(sl_chunk_t) == SL_SHM_SLOT_BYTES ? 1 : -1];
typedef char sl_assert_kind
    [offsetof(sl_entry_t, kind) == offsetof(sl_chunk_t, kind) ? 1 : -1];
typedef char sl_assert_ts[SL_CHUNK_TS == SL_SHM_LOG_PER_SLOT ? 1 : -1];

typedef struct sl_shm_retained {
    apr_shm_t *shm;
    apr_size_t size;
    apr_global_mutex_t *mutex;
} sl_shm_retained_t;

struct sl_part {
    apr_shm_t *shm;
    apr_global_mutex_t *mutex;
    server_rec *s;
    sl_shm_hdr_t *hdr;
    apr_uint32_t *buckets;
    sl_slot_t *slots;
    apr_uint32_t generation;
};

/* One limit of the request being decided. */
typedef struct sl_req {
    unsigned char hash[16];
    apr_uint16_t klen;
    unsigned char alg;
    int last; /* no later limit has the same key: its write is the one */
    apr_int64_t limit;
    apr_int64_t win;
    apr_int64_t burst;
    apr_int64_t cost;
    apr_int64_t block;
    int blocked; /* refused by a running block */
    apr_uint32_t entry;
    sl_eval_t ev;
} sl_req_t;

/* Work under the lock; corrupt is set by any link that leads nowhere. */
typedef struct sl_txn {
    sl_part_t *shm;
    apr_int64_t now;
    int corrupt;
} sl_txn_t;

static apr_size_t sl_align64(apr_size_t n)
{
    return (n + 63) & ~(apr_size_t) 63;
}

/* How a segment of size bytes is cut; 0 when it is too small. */
static int sl_layout(apr_size_t size, apr_uint32_t *nbuckets,
                     apr_uint32_t *nslots)
{
    apr_size_t hdr = sl_align64(sizeof(sl_shm_hdr_t)), avail, slots;
    apr_size_t nb = 1;

    if (size < hdr + SL_MIN_SLOTS * SL_SHM_SLOT_BYTES) {
        return 0;
    }
    avail = size - hdr;
    slots = avail / SL_SHM_SLOT_BYTES;
    if (slots > SL_MAX_SLOTS) {
        slots = SL_MAX_SLOTS;
    }
    while (nb * 2 <= slots / 2) {
        nb *= 2;
    }
    slots = (avail - sl_align64(nb * sizeof(apr_uint32_t))) / SL_SHM_SLOT_BYTES;
    if (slots > SL_MAX_SLOTS) {
        slots = SL_MAX_SLOTS;
    }
    if (slots < SL_MIN_SLOTS) {
        return 0;
    }
    *nbuckets = (apr_uint32_t) nb;
    *nslots = (apr_uint32_t) slots;
    return 1;
}

static void sl_map(sl_part_t *shm, void *base)
{
    char *b = base;
    apr_size_t hdr = sl_align64(sizeof(sl_shm_hdr_t));

    shm->hdr = base;
    shm->buckets = (apr_uint32_t *) (b + hdr);
    shm->slots =
        (sl_slot_t *) (b + hdr +
                       sl_align64(shm->hdr->nbuckets * sizeof(apr_uint32_t)));
}

/* Empties the store; the secret and the generation stay. */
static void sl_format(sl_part_t *shm)
{
    sl_shm_hdr_t *h = shm->hdr;
    apr_uint32_t i;

    memset(shm->buckets, 0xff, h->nbuckets * sizeof(apr_uint32_t));
    for (i = 0; i < h->nslots; i++) {
        memset(&shm->slots[i], 0, sizeof(sl_slot_t));
        shm->slots[i].c.kind = SL_KIND_FREE;
        shm->slots[i].c.next = i + 1 < h->nslots ? i + 1 : SL_NIL;
    }
    h->free_head = 0;
    h->nfree = h->nslots;
    h->lru_head = SL_NIL;
    h->lru_tail = SL_NIL;
    h->nentries = 0;
    h->full = 0;
    h->evicted = 0;
}

/* ---- slots ---- */

static sl_entry_t *sl_entry(sl_txn_t *t, apr_uint32_t i)
{
    sl_part_t *shm = t->shm;

    if (i >= shm->hdr->nslots || shm->slots[i].e.kind != SL_KIND_ENTRY) {
        t->corrupt = 1;
        return NULL;
    }
    return &shm->slots[i].e;
}

static sl_chunk_t *sl_chunk(sl_txn_t *t, apr_uint32_t i)
{
    sl_part_t *shm = t->shm;

    if (i >= shm->hdr->nslots || shm->slots[i].c.kind != SL_KIND_CHUNK) {
        t->corrupt = 1;
        return NULL;
    }
    return &shm->slots[i].c;
}

/* Callers reserve first: nfree > 0 here. */
static apr_uint32_t sl_slot_take(sl_txn_t *t, unsigned char kind)
{
    sl_part_t *shm = t->shm;
    apr_uint32_t i = shm->hdr->free_head;
    sl_slot_t *slot;

    if (i >= shm->hdr->nslots || shm->slots[i].c.kind != SL_KIND_FREE) {
        t->corrupt = 1;
        return SL_NIL;
    }
    slot = &shm->slots[i];
    shm->hdr->free_head = slot->c.next;
    shm->hdr->nfree--;
    memset(slot, 0, sizeof(*slot));
    slot->c.kind = kind;
    return i;
}

static void sl_slot_give(sl_txn_t *t, apr_uint32_t i)
{
    sl_part_t *shm = t->shm;
    sl_slot_t *slot = &shm->slots[i];

    memset(slot, 0, sizeof(*slot));
    slot->c.kind = SL_KIND_FREE;
    slot->c.next = shm->hdr->free_head;
    shm->hdr->free_head = i;
    shm->hdr->nfree++;
}

/* ---- entries: hash chains and the LRU list ---- */

static apr_uint32_t *sl_bucket(sl_part_t *shm, const unsigned char *hash)
{
    apr_uint32_t b;

    memcpy(&b, hash, sizeof(b));
    return &shm->buckets[b & (shm->hdr->nbuckets - 1)];
}

static void sl_lru_unlink(sl_txn_t *t, sl_entry_t *e)
{
    sl_shm_hdr_t *h = t->shm->hdr;
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
    sl_shm_hdr_t *h = t->shm->hdr;
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

static void sl_lru_touch(sl_txn_t *t, apr_uint32_t i, sl_entry_t *e)
{
    if (t->shm->hdr->lru_head != i) {
        sl_lru_unlink(t, e);
        sl_lru_front(t, i, e);
    }
}

static void sl_log_clear(sl_txn_t *t, sl_entry_t *e)
{
    apr_uint32_t c = e->st.log.head, n = 0;
    sl_chunk_t *ch;

    /* Bounded by the slot count even if a link loops. */
    while (c != SL_NIL && n++ < t->shm->hdr->nslots && (ch = sl_chunk(t, c))) {
        apr_uint32_t next = ch->next;
        sl_slot_give(t, c);
        c = next;
    }
    e->st.log.head = e->st.log.tail = SL_NIL;
    e->st.log.count = e->st.log.off = 0;
}

static void sl_entry_drop(sl_txn_t *t, apr_uint32_t i)
{
    sl_entry_t *e = sl_entry(t, i), *o;
    apr_uint32_t *link, n = 0;

    if (!e) {
        return;
    }
    if (e->alg == SL_ALG_LOG) {
        sl_log_clear(t, e);
    }
    link = sl_bucket(t->shm, e->hash);
    while (*link != SL_NIL && *link != i && n++ < t->shm->hdr->nslots) {
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
    t->shm->hdr->nentries--;
    sl_slot_give(t, i);
}

static apr_uint32_t sl_entry_find(sl_txn_t *t, const sl_req_t *q)
{
    apr_uint32_t i = *sl_bucket(t->shm, q->hash), n = 0;
    sl_entry_t *e;

    while (i != SL_NIL && n++ < t->shm->hdr->nslots && (e = sl_entry(t, i))) {
        if (!memcmp(e->hash, q->hash, sizeof(q->hash)) && e->alg == q->alg &&
            e->klen == q->klen) {
            return i;
        }
        i = e->hnext;
    }
    return SL_NIL;
}

static apr_uint32_t sl_entry_new(sl_txn_t *t, const sl_req_t *q)
{
    apr_uint32_t i = sl_slot_take(t, SL_KIND_ENTRY), *bucket;
    sl_entry_t *e;

    if (i == SL_NIL) {
        return SL_NIL;
    }
    e = &t->shm->slots[i].e;
    memcpy(e->hash, q->hash, sizeof(e->hash));
    e->alg = q->alg;
    e->klen = q->klen;
    if (q->alg == SL_ALG_LOG) {
        e->st.log.head = e->st.log.tail = SL_NIL;
    }
    bucket = sl_bucket(t->shm, q->hash);
    e->hnext = *bucket;
    *bucket = i;
    e->lprev = e->lnext = SL_NIL;
    sl_lru_front(t, i, e);
    t->shm->hdr->nentries++;
    return i;
}

/* ---- the sliding log in chunks ---- */

/* ZREMRANGEBYSCORE key -inf now-win, chunk by chunk from the oldest. */
static void sl_log_drop(sl_txn_t *t, sl_entry_t *e, apr_int64_t horizon)
{
    while (e->st.log.count > 0) {
        apr_uint32_t head = e->st.log.head;
        sl_chunk_t *c = sl_chunk(t, head);

        if (!c || e->st.log.off >= SL_CHUNK_TS) {
            t->corrupt = 1;
            return;
        }
        if (c->ts[e->st.log.off] > horizon) {
            return;
        }
        e->st.log.off++;
        e->st.log.count--;
        if (e->st.log.count == 0) {
            sl_log_clear(t, e);
            return;
        }
        if (e->st.log.off == SL_CHUNK_TS) {
            e->st.log.head = c->next;
            e->st.log.off = 0;
            sl_slot_give(t, head);
        }
    }
}

typedef struct sl_log_ctx {
    sl_txn_t *t;
    sl_entry_t *e;
} sl_log_ctx_t;

static apr_int64_t sl_shm_log_at(void *ctx, apr_int64_t i)
{
    sl_log_ctx_t *x = ctx;
    apr_int64_t pos = x->e->st.log.off + i, hops;
    apr_uint32_t c = x->e->st.log.head;
    sl_chunk_t *ch = NULL;

    if (i < 0 || i >= x->e->st.log.count) {
        x->t->corrupt = 1;
        return 0;
    }
    for (hops = pos / SL_CHUNK_TS; (ch = sl_chunk(x->t, c)) && hops > 0;
         hops--) {
        c = ch->next;
    }
    return ch ? ch->ts[pos % SL_CHUNK_TS] : 0;
}

/* A new time needs a new chunk when the last one is full (or none). */
static int sl_log_needs_chunk(const sl_entry_t *e)
{
    return e == NULL || (e->st.log.off + e->st.log.count) % SL_CHUNK_TS == 0;
}

/* ZADD key now member: in time order. Callers take their time before the
 * lock, so one may arrive a little after a later one: insert, not append. */
static void sl_log_insert(sl_txn_t *t, sl_entry_t *e, apr_int64_t now)
{
    apr_uint32_t end = e->st.log.off + e->st.log.count, pos, ci, k, first;
    apr_int64_t last = 0, carry;
    int placing = 0;
    sl_chunk_t *c;

    if (e->st.log.count > 0) {
        if (!(c = sl_chunk(t, e->st.log.tail))) {
            return;
        }
        last = c->ts[(end - 1) % SL_CHUNK_TS];
    }
    if (sl_log_needs_chunk(e)) {
        apr_uint32_t n = sl_slot_take(t, SL_KIND_CHUNK);
        if (n == SL_NIL) {
            return;
        }
        if (e->st.log.count == 0) {
            e->st.log.head = n;
            e->st.log.off = 0;
            end = 0;
        }
        else if ((c = sl_chunk(t, e->st.log.tail))) {
            c->next = n;
        }
        t->shm->slots[n].c.next = SL_NIL;
        e->st.log.tail = n;
    }
    if (!(c = sl_chunk(t, e->st.log.tail))) {
        return;
    }
    c->ts[end % SL_CHUNK_TS] = now;
    e->st.log.count++;
    if (e->st.log.count == 1 || last <= now) {
        return;
    }
    /* Rotate now into place, from the first later time to the end. A time
     * is late by a wait for the lock at most, so its place is usually in
     * the last chunk: start there when that chunk begins earlier. */
    ci = e->st.log.head;
    pos = e->st.log.off;
    first = e->st.log.tail == e->st.log.head ? e->st.log.off : 0;
    if (end % SL_CHUNK_TS != first && c->ts[first] <= now) {
        ci = e->st.log.tail;
        pos = first;
    }
    carry = now;
    for (k = 0; k < e->st.log.count; k++) {
        if (!(c = sl_chunk(t, ci))) {
            return;
        }
        if (placing || c->ts[pos] > now) {
            apr_int64_t tmp = c->ts[pos];
            c->ts[pos] = carry;
            carry = tmp;
            placing = 1;
        }
        if (ci == e->st.log.tail && pos == end % SL_CHUNK_TS) {
            return;
        }
        if (++pos == SL_CHUNK_TS) {
            pos = 0;
            ci = c->next;
        }
    }
    t->corrupt = 1;
}

/* ---- room ---- */

static int sl_req_holds(const sl_req_t *q, int n, apr_uint32_t i)
{
    int k;

    for (k = 0; k < n; k++) {
        if (q[k].entry == i) {
            return 1;
        }
    }
    return 0;
}

/* The entry to give up for room: an expired one near the LRU end, else the
 * least recently used one; never one this request uses. */
static apr_uint32_t sl_victim(sl_txn_t *t, const sl_req_t *q, int n)
{
    apr_uint32_t i = t->shm->hdr->lru_tail, fallback = SL_NIL, seen = 0;
    sl_entry_t *e;

    while (i != SL_NIL && (seen < SL_SCAN || fallback == SL_NIL) &&
           seen++ < t->shm->hdr->nslots && (e = sl_entry(t, i))) {
        if (!sl_req_holds(q, n, i)) {
            if (e->expires <= t->now) {
                return i;
            }
            if (fallback == SL_NIL) {
                fallback = i;
            }
        }
        i = e->lprev;
    }
    return fallback;
}

static int sl_reserve(sl_txn_t *t, const sl_req_t *q, int n, apr_uint32_t need,
                      int *evicted)
{
    while (t->shm->hdr->nfree < need && !t->corrupt) {
        apr_uint32_t v = sl_victim(t, q, n);
        if (v == SL_NIL) {
            return 0;
        }
        if (t->shm->slots[v].e.expires > t->now) {
            (*evicted)++;
            t->shm->hdr->evicted++;
        }
        sl_entry_drop(t, v);
    }
    return !t->corrupt;
}

/* ---- the decision ---- */

/* The limit's block entry, if one is stored and not expired. */
static apr_uint32_t sl_block_find(sl_txn_t *t, const sl_req_t *q)
{
    sl_req_t b = *q;
    apr_uint32_t i;
    sl_entry_t *e;

    b.alg = SL_SHM_BLOCK;
    i = sl_entry_find(t, &b);
    if (i != SL_NIL && (e = sl_entry(t, i)) && e->expires <= t->now) {
        sl_entry_drop(t, i);
        i = SL_NIL;
    }
    return i;
}

/* A refusal starts the limit's block (the script's SET KEY.b ... PX). */
static void sl_block_store(sl_txn_t *t, const sl_req_t *q, int n, sl_req_t *r)
{
    sl_req_t b = *r;
    apr_uint32_t i;
    sl_entry_t *e;
    int evicted = 0;

    b.alg = SL_SHM_BLOCK;
    if ((i = sl_block_find(t, r)) == SL_NIL &&
        sl_reserve(t, q, n, 1, &evicted)) {
        i = sl_entry_new(t, &b);
    }
    if (i == SL_NIL || !(e = sl_entry(t, i))) {
        return;
    }
    e->st.until = sl_block_begin(t->now, r->block, &r->ev);
    e->expires = sl_block_expires(t->now, r->block);
}

static void sl_evaluate(sl_txn_t *t, sl_req_t *q)
{
    sl_entry_t *e = NULL;

    if (q->block) {
        apr_uint32_t b = sl_block_find(t, q);
        if (b != SL_NIL && (e = sl_entry(t, b)) &&
            sl_block_active(t->now, q->block, e->st.until, &q->ev)) {
            q->blocked = 1;
            q->entry = SL_NIL;
            return;
        }
        e = NULL;
    }

    q->entry = sl_entry_find(t, q);
    if (q->entry != SL_NIL && (e = sl_entry(t, q->entry))) {
        if (e->expires <= t->now) {
            /* The script's key would be gone: same as no state. */
            sl_entry_drop(t, q->entry);
            q->entry = SL_NIL;
            e = NULL;
        }
        else {
            sl_lru_touch(t, q->entry, e);
        }
    }
    switch (q->alg) {
    case SL_ALG_LOG: {
        sl_log_ctx_t x = {t, e};
        apr_int64_t count = 0;
        if (e) {
            sl_log_drop(t, e, sl_log_horizon(t->now, q->win));
            count = e->st.log.count;
        }
        sl_log_evaluate(t->now, q->limit, q->win, q->cost, count, sl_shm_log_at,
                        &x, &q->ev);
        break;
    }
    case SL_ALG_COUNTER:
        sl_counter_evaluate(t->now, q->limit, q->win, q->cost,
                            e ? &e->st.counter : NULL, &q->ev);
        break;
    default:
        sl_gcra_evaluate(t->now, q->limit, q->win, q->burst, q->cost,
                         e ? &e->st.gcra : NULL, &q->ev);
        break;
    }
}

static void sl_apply(sl_txn_t *t, sl_req_t *q)
{
    sl_entry_t *e;
    apr_int64_t expires;

    if (q->entry == SL_NIL) {
        q->entry = sl_entry_new(t, q);
    }
    if (q->entry == SL_NIL || !(e = sl_entry(t, q->entry))) {
        return;
    }
    switch (q->alg) {
    case SL_ALG_LOG: {
        apr_int64_t u;
        for (u = 0; u < q->cost && !t->corrupt; u++) {
            sl_log_insert(t, e, t->now);
        }
        expires = sl_log_expires(t->now, q->win);
        break;
    }
    case SL_ALG_COUNTER:
        expires = sl_counter_apply(t->now, q->win, q->cost, &e->st.counter);
        break;
    default:
        expires = sl_gcra_apply(t->now, q->limit, q->win, q->burst, q->cost,
                                &e->st.gcra);
        break;
    }
    /* Never earlier than before: times handed in slightly out of order
     * must not drop a key that a later time still needs. */
    if (expires > e->expires) {
        e->expires = expires;
    }
}

/* The space an admission takes: an entry per new key, a chunk per log
 * whose last chunk is full. */
static apr_uint32_t sl_need(sl_txn_t *t, const sl_req_t *q, int n)
{
    apr_uint32_t need = 0;
    int i;

    for (i = 0; i < n; i++) {
        const sl_entry_t *e = NULL;
        if (!q[i].last) {
            continue;
        }
        if (q[i].entry == SL_NIL) {
            need++;
        }
        else {
            e = &t->shm->slots[q[i].entry].e;
        }
        if (q[i].alg == SL_ALG_LOG) {
            /* Room left in the last chunk, then a chunk per SL_CHUNK_TS
             * entries of the request's cost. */
            apr_int64_t room =
                sl_log_needs_chunk(e)
                    ? 0
                    : SL_CHUNK_TS -
                          (e->st.log.off + e->st.log.count) % SL_CHUNK_TS;
            if (q[i].cost > room) {
                need += (apr_uint32_t) ((q[i].cost - room + SL_CHUNK_TS - 1) /
                                        SL_CHUNK_TS);
            }
        }
    }
    return need;
}

static void sl_key_hash(const sl_shm_hdr_t *h, const char *key, apr_size_t len,
                        unsigned char out[16])
{
    apr_siphash24_auth(out, key, len, h->secret);
    apr_siphash24_auth(out + APR_SIPHASH_DSIZE, key, len,
                       h->secret + APR_SIPHASH_KSIZE);
}

static apr_status_t sl_stripe_decide(sl_part_t *shm, apr_pool_t *p,
                                     const sl_budget_t *budgets, int n,
                                     apr_time_t now, sl_decision_t *d)
{
    sl_req_t *q;
    sl_txn_t t = {shm, now, 0};
    apr_status_t rv;
    int i, j, admitted = 1, evicted = 0, full = 0, was_full = 0;

    if (n < 1 || !budgets || now <= 0) {
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
        if (!c->key || q[i].limit < 1 || q[i].win < 1 || q[i].burst < 1 ||
            q[i].cost >
                (c->algorithm == SL_ALG_GCRA ? q[i].burst : q[i].limit) ||
            (c->algorithm != SL_ALG_LOG && c->algorithm != SL_ALG_COUNTER &&
             c->algorithm != SL_ALG_GCRA)) {
            return APR_EINVAL;
        }
        q[i].alg = (unsigned char) c->algorithm;
        q[i].klen = (apr_uint16_t) c->key_len;
        q[i].entry = SL_NIL;
        /* The secret never changes while the segment lives: no lock. */
        sl_key_hash(shm->hdr, c->key, c->key_len, q[i].hash);
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
    d->quota = apr_pcalloc(p, sizeof(*d->quota) * n);

    if ((rv = apr_global_mutex_lock(shm->mutex)) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, shm->s,
                     "mod_slidinglimit: cannot lock the shm store");
        return rv;
    }
    for (i = 0; i < n && !t.corrupt; i++) {
        sl_evaluate(&t, &q[i]);
        admitted = admitted && q[i].ev.ok;
    }
    if (admitted && !t.corrupt) {
        if (sl_reserve(&t, q, n, sl_need(&t, q, n), &evicted)) {
            for (i = 0; i < n && !t.corrupt; i++) {
                if (q[i].last) {
                    sl_apply(&t, &q[i]);
                }
            }
        }
        else if (!t.corrupt) {
            full = 1;
        }
        was_full = shm->hdr->full;
        shm->hdr->full = full;
    }
    for (i = 0; i < n && !admitted && !t.corrupt; i++) {
        if (q[i].block && !q[i].ev.ok && !q[i].blocked) {
            sl_block_store(&t, q, n, &q[i]);
        }
    }
    if (t.corrupt) {
        sl_format(shm);
    }
    apr_global_mutex_unlock(shm->mutex);

    if (t.corrupt) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, shm->s,
                     "mod_slidinglimit: the shm store was inconsistent and "
                     "has been emptied");
        return APR_EGENERAL;
    }
    if (evicted) {
        ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, shm->s,
                     "mod_slidinglimit: shm store full, %d idle budget(s) "
                     "evicted",
                     evicted);
    }
    if (full != was_full) {
        ap_log_error(APLOG_MARK, full ? APLOG_WARNING : APLOG_INFO, 0, shm->s,
                     full ? "mod_slidinglimit: the shm store cannot hold "
                            "the state of a request (a sliding log longer "
                            "than the whole store?): such requests fail "
                            "until it has room"
                          : "mod_slidinglimit: the shm store has room "
                            "again");
    }
    if (full) {
        return APR_ENOSPC;
    }
    d->now = now;
    d->admitted = admitted;
    d->n = n;
    for (i = 0; i < n; i++) {
        sl_eval_quota(&q[i].ev, admitted, &d->quota[i]);
    }
    return APR_SUCCESS;
}

/* ---- lifecycle ---- */

apr_status_t sl_shm_pre_config(apr_pool_t *pconf)
{
    return ap_mutex_register(pconf, SL_SHM_MUTEX, NULL, APR_LOCK_DEFAULT, 0);
}

static apr_status_t sl_part_create(apr_pool_t *pconf, server_rec *s,
                                   apr_size_t size, int part, sl_part_t **out)
{
    sl_shm_retained_t *rd;
    sl_part_t *shm;
    const char *key;
    apr_uint32_t nbuckets, nslots;
    apr_size_t real;
    apr_status_t rv;
    int fresh = 0;

    if (!sl_layout(size, &nbuckets, &nslots)) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s,
                     "mod_slidinglimit: shm store size %" APR_SIZE_T_FMT
                     " is too small (at least %" APR_SIZE_T_FMT " bytes)",
                     size,
                     sl_align64(sizeof(sl_shm_hdr_t)) +
                         (apr_size_t) SL_MIN_SLOTS * SL_SHM_SLOT_BYTES);
        return APR_EINVAL;
    }
    key = apr_psprintf(pconf, "%s-%d", SL_SHM_RETAINED, part);
    rd = ap_retained_data_get(key);
    if (!rd) {
        rd = ap_retained_data_create(key, sizeof(*rd));
    }
    if (rd->shm && rd->size != size) {
        /* Children of the old generation keep their own mapping. */
        apr_shm_destroy(rd->shm);
        rd->shm = NULL;
    }
    if (!rd->shm) {
        /* The process pool: the segment outlives graceful restarts. */
        rv = apr_shm_create(&rd->shm, size, NULL, s->process->pool);
        if (rv != APR_SUCCESS) {
            rd->shm = NULL;
            ap_log_error(APLOG_MARK, APLOG_ERR, rv, s,
                         "mod_slidinglimit: cannot create the shm store "
                         "(%" APR_SIZE_T_FMT " bytes)",
                         size);
            return rv;
        }
        rd->size = size;
        fresh = 1;
    }
    real = apr_shm_size_get(rd->shm);
    if (real < size) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s,
                     "mod_slidinglimit: the shm store has %" APR_SIZE_T_FMT
                     " bytes, %" APR_SIZE_T_FMT " were asked for",
                     real, size);
        return APR_ENOMEM;
    }

    shm = apr_pcalloc(pconf, sizeof(*shm));
    shm->shm = rd->shm;
    shm->s = s;
    shm->hdr = apr_shm_baseaddr_get(rd->shm);
    if (fresh || shm->hdr->magic != SL_SHM_MAGIC ||
        shm->hdr->layout != SL_SHM_LAYOUT || shm->hdr->size != size ||
        shm->hdr->nbuckets != nbuckets || shm->hdr->nslots != nslots) {
        memset(shm->hdr, 0, sizeof(*shm->hdr));
        rv = apr_generate_random_bytes(shm->hdr->secret,
                                       sizeof(shm->hdr->secret));
        if (rv != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_ERR, rv, s,
                         "mod_slidinglimit: no random bytes for the shm "
                         "store's hash secret");
            return rv;
        }
        shm->hdr->magic = SL_SHM_MAGIC;
        shm->hdr->layout = SL_SHM_LAYOUT;
        shm->hdr->size = size;
        shm->hdr->nbuckets = nbuckets;
        shm->hdr->nslots = nslots;
        sl_map(shm, shm->hdr);
        sl_format(shm);
    }
    else {
        /* Kept across a graceful restart: every budget survives. */
        sl_map(shm, shm->hdr);
        shm->hdr->generation++;
    }
    shm->generation = shm->hdr->generation;

    if (!rd->mutex) {
        rv = ap_global_mutex_create(&rd->mutex, NULL, SL_SHM_MUTEX,
                                    apr_itoa(s->process->pool, part), s,
                                    s->process->pool, 0);
        if (rv != APR_SUCCESS) {
            rd->mutex = NULL;
            return rv;
        }
    }
    shm->mutex = rd->mutex;
    ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, s,
                 "mod_slidinglimit: shm store %s: %" APR_SIZE_T_FMT
                 " bytes, %u slots of %d bytes, %u buckets",
                 fresh ? "created" : "kept", size, nslots, SL_SHM_SLOT_BYTES,
                 nbuckets);
    *out = shm;
    return APR_SUCCESS;
}

static apr_status_t sl_part_child_init(sl_part_t *shm, apr_pool_t *pchild,
                                       server_rec *s)
{
    apr_status_t rv;

    rv = apr_global_mutex_child_init(
        &shm->mutex, apr_global_mutex_lockfile(shm->mutex), pchild);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s,
                     "mod_slidinglimit: cannot reattach the shm store's "
                     "mutex in this child");
    }
    return rv;
}

/* The store is split into stripes, each its own segment, index and lock,
 * chosen by the identity's hash tag: every key of one request has the same
 * tag, so a decision still takes exactly one lock and stays atomic, while
 * requests of other identities take other locks. One lock for everything
 * made every thread wait whenever its holder was preempted. */
#define SL_SHM_STRIPES    8
#define SL_SHM_MIN_STRIPE (64 * 1024)

struct sl_shm {
    int n;
    sl_part_t *part[SL_SHM_STRIPES];
};

apr_status_t sl_shm_create(apr_pool_t *pconf, server_rec *s, apr_size_t size,
                           sl_shm_t **out)
{
    sl_shm_t *shm = apr_pcalloc(pconf, sizeof(*shm));
    apr_status_t rv;
    int i;

    shm->n = (int) (size / SL_SHM_MIN_STRIPE);
    if (shm->n > SL_SHM_STRIPES) {
        shm->n = SL_SHM_STRIPES;
    }
    if (shm->n < 1) {
        shm->n = 1;
    }
    for (i = 0; i < shm->n; i++) {
        rv = sl_part_create(pconf, s, size / (apr_size_t) shm->n, i,
                            &shm->part[i]);
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    *out = shm;
    return APR_SUCCESS;
}

apr_status_t sl_shm_child_init(sl_shm_t *shm, apr_pool_t *pchild, server_rec *s)
{
    apr_status_t rv = APR_SUCCESS;
    int i;

    for (i = 0; i < shm->n; i++) {
        apr_status_t r = sl_part_child_init(shm->part[i], pchild, s);
        if (r != APR_SUCCESS) {
            rv = r;
        }
    }
    return rv;
}

apr_status_t sl_shm_decide(sl_shm_t *shm, apr_pool_t *p,
                           const sl_budget_t *budgets, int n, apr_time_t now,
                           sl_decision_t *d)
{
    const char *key;
    apr_size_t len;

    if (n < 1 || !budgets || !budgets[0].key) {
        return APR_EINVAL;
    }
    /* The stripe: FNV-1a of the hash tag (or the whole key when it has
     * none). */
    key = sl_hash_tag(budgets[0].key, budgets[0].key_len, &len);
    return sl_stripe_decide(
        shm->part[sl_fnv1a(SL_FNV_INIT, key, len) % (unsigned int) shm->n], p,
        budgets, n, now, d);
}
