/* The shm store's table: one stripe's budgets in a plain memory region,
 * giving the answers of lua/sl_check.lua (the math is in sl_algo.c). APR
 * only: no lock (the caller holds one), no logging (the status codes and
 * sl_table_news_t say what happened), so that tests/unit/sl_shm_test.c
 * drives it in malloc'd memory. sl_shm.c makes the regions shared.
 *
 * Layout. Every link inside the region is a 32-bit slot index, never a
 * pointer, so the region means the same wherever it is mapped:
 *
 *   header   magic, layout version, sizes, free list, LRU ends, counters
 *            and the hash secret (64-byte aligned)
 *   buckets  nbuckets x uint32, heads of the hash chains (a power of two,
 *            between a quarter and a half of the slot count)
 *   slots    nslots x 64 bytes; each one is free, an entry or a log chunk
 *
 * An entry is one 64-byte slot per store key: a 96-bit keyed hash of the
 * key (two SipHash-2-4 with secrets drawn when the region is formatted, so
 * nobody can aim keys at one chain), the algorithm and key length (entries
 * must match all three: a collision across algorithms gives two entries,
 * never one state read as another, and within one algorithm a 2^-96 chance
 * merges two budgets), until when the budget refuses, the time the
 * script's TTL would drop the key, the state (counter: window index and two
 * counts; gcra: the TAT; log: first and last chunk, count and offset into the
 * first, and the units the log holds), the chain link and the two LRU
 * links. A log holds one entry per admitted request, whatever its cost: its
 * admission time (int64) and its weight (uint32, the units it consumed),
 * four to a chunk (one slot each, linked by index, oldest first), so a log
 * of N live requests takes 1 + ceil(N / 4) slots: 64 bytes per key plus 16
 * bytes per request, plus 1-2 bytes of bucket per slot. Entries and chunks
 * share one pool of slots, so no ratio between algorithms has to be
 * guessed.
 *
 * When it fills. A refused request never needs space. An admitted one
 * takes free slots; when there are none, an entry whose key has expired
 * (its data is worthless: the script's TTL would have deleted it) is
 * reused first, looked for among the least recently used, then the least
 * recently used entry is evicted with its chunks, and that budget starts
 * afresh. Never evicted: entries of the request being decided, and entries
 * that are refusing (no room for one more request before refusing_until):
 * evicting those would hand a spent budget its quota back, so a flood of
 * new clients could free its own victim. When nothing can be evicted (one
 * client's logs longer than the whole table, or a table of refusing
 * budgets), the request is refused: never admitted for want of space.
 *
 * Corruption. Every link is checked before it is followed; one that leads
 * nowhere (a slot of the wrong kind, an index out of range, a loop) stops
 * the decision, and the table is emptied rather than trusted. */

/* What apr-1-config --cppflags gives the real build: apr.h needs it for
 * PATH_MAX under a strict -std=c99. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sl_table.h"

#include "sl_ident.h"
#include "sl_siphash.h"

#include <apr_general.h>

#include <stddef.h>
#include <string.h>

#define SL_TABLE_MAGIC 0x4d534c53U /* "SLSM" */
/* 3: a log's entry is a request with its weight, no longer a unit. */
#define SL_TABLE_LAYOUT 3
#define SL_NIL          0xffffffffU
#define SL_MIN_SLOTS    64
#define SL_MAX_SLOTS    (1U << 28)
/* Entries looked at, from the LRU end, for an expired one to reuse before
 * a live one is evicted: bounded, because it runs under the lock (refusing
 * entries, which are skipped, are moved to the front as they are met). */
#define SL_SCAN 16

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
    apr_uint32_t nbuckets;
    apr_uint32_t nslots;
    apr_uint32_t free_head;
    apr_uint32_t nfree;
    apr_uint32_t lru_head; /* most recently used entry */
    apr_uint32_t lru_tail;
    apr_uint32_t nentries;
    apr_uint32_t full;    /* the last admission found no room */
    apr_uint64_t evicted; /* live entries evicted for room */
    unsigned char secret[2 * SL_SIPHASH_KEY];
} sl_table_hdr_t;

#define SL_HASH_BYTES 12

typedef struct sl_entry {
    unsigned char hash[SL_HASH_BYTES];
    /* Until when (seconds, rounded up) the budget has no room for one more
     * request: it is not evicted before, which would give it its quota
     * back. */
    apr_uint32_t refusing_until;
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

typedef union sl_slot {
    sl_entry_t e;
    sl_chunk_t c;
} sl_slot_t;

/* The layout above is the documented one: refuse to build otherwise. */
typedef char sl_assert_slot[sizeof(sl_slot_t) == SL_TABLE_SLOT_BYTES ? 1 : -1];
typedef char
    sl_assert_entry[sizeof(sl_entry_t) == SL_TABLE_SLOT_BYTES ? 1 : -1];
typedef char
    sl_assert_chunk[sizeof(sl_chunk_t) == SL_TABLE_SLOT_BYTES ? 1 : -1];
typedef char sl_assert_kind
    [offsetof(sl_entry_t, kind) == offsetof(sl_chunk_t, kind) ? 1 : -1];
typedef char sl_assert_ts[SL_CHUNK_TS == SL_TABLE_LOG_PER_SLOT ? 1 : -1];

struct sl_table {
    sl_table_hdr_t *hdr;
    apr_uint32_t *buckets;
    sl_slot_t *slots;
};

/* One limit of the request being decided. */
struct sl_shm_op {
    unsigned char hash[SL_HASH_BYTES];
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
};

/* Work under the lock; corrupt is set by any link that leads nowhere. */
typedef struct sl_txn {
    sl_table_t *tab;
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
    apr_size_t hdr = sl_align64(sizeof(sl_table_hdr_t)), avail, slots;
    apr_size_t nb = 1;

    if (size < hdr + SL_MIN_SLOTS * SL_TABLE_SLOT_BYTES) {
        return 0;
    }
    avail = size - hdr;
    slots = avail / SL_TABLE_SLOT_BYTES;
    if (slots > SL_MAX_SLOTS) {
        slots = SL_MAX_SLOTS;
    }
    while (nb * 2 <= slots / 2) {
        nb *= 2;
    }
    slots =
        (avail - sl_align64(nb * sizeof(apr_uint32_t))) / SL_TABLE_SLOT_BYTES;
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

static void sl_map(sl_table_t *tab, void *base)
{
    char *b = base;
    apr_size_t hdr = sl_align64(sizeof(sl_table_hdr_t));

    tab->hdr = base;
    tab->buckets = (apr_uint32_t *) (b + hdr);
    tab->slots =
        (sl_slot_t *) (b + hdr +
                       sl_align64(tab->hdr->nbuckets * sizeof(apr_uint32_t)));
}

/* Empties the table; the secret stays. */
static void sl_format(sl_table_t *tab)
{
    sl_table_hdr_t *h = tab->hdr;
    apr_uint32_t i;

    memset(tab->buckets, 0xff, h->nbuckets * sizeof(apr_uint32_t));
    for (i = 0; i < h->nslots; i++) {
        memset(&tab->slots[i], 0, sizeof(sl_slot_t));
        tab->slots[i].c.kind = SL_KIND_FREE;
        tab->slots[i].c.next = i + 1 < h->nslots ? i + 1 : SL_NIL;
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
    sl_table_t *tab = t->tab;

    if (i >= tab->hdr->nslots || tab->slots[i].e.kind != SL_KIND_ENTRY) {
        t->corrupt = 1;
        return NULL;
    }
    return &tab->slots[i].e;
}

static sl_chunk_t *sl_chunk(sl_txn_t *t, apr_uint32_t i)
{
    sl_table_t *tab = t->tab;

    if (i >= tab->hdr->nslots || tab->slots[i].c.kind != SL_KIND_CHUNK) {
        t->corrupt = 1;
        return NULL;
    }
    return &tab->slots[i].c;
}

/* Callers reserve first: nfree > 0 here. */
static apr_uint32_t sl_slot_take(sl_txn_t *t, unsigned char kind)
{
    sl_table_t *tab = t->tab;
    apr_uint32_t i = tab->hdr->free_head;
    sl_slot_t *slot;

    if (i >= tab->hdr->nslots || tab->slots[i].c.kind != SL_KIND_FREE) {
        t->corrupt = 1;
        return SL_NIL;
    }
    slot = &tab->slots[i];
    tab->hdr->free_head = slot->c.next;
    tab->hdr->nfree--;
    memset(slot, 0, sizeof(*slot));
    slot->c.kind = kind;
    return i;
}

static void sl_slot_give(sl_txn_t *t, apr_uint32_t i)
{
    sl_table_t *tab = t->tab;
    sl_slot_t *slot = &tab->slots[i];

    memset(slot, 0, sizeof(*slot));
    slot->c.kind = SL_KIND_FREE;
    slot->c.next = tab->hdr->free_head;
    tab->hdr->free_head = i;
    tab->hdr->nfree++;
}

/* ---- entries: hash chains and the LRU list ---- */

static apr_uint32_t *sl_bucket(sl_table_t *tab, const unsigned char *hash)
{
    apr_uint32_t b;

    memcpy(&b, hash, sizeof(b));
    return &tab->buckets[b & (tab->hdr->nbuckets - 1)];
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

static void sl_lru_touch(sl_txn_t *t, apr_uint32_t i, sl_entry_t *e)
{
    if (t->tab->hdr->lru_head != i) {
        sl_lru_unlink(t, e);
        sl_lru_front(t, i, e);
    }
}

static void sl_log_clear(sl_txn_t *t, sl_entry_t *e)
{
    apr_uint32_t c = e->st.log.head, n = 0;
    sl_chunk_t *ch;

    /* Bounded by the slot count even if a link loops. */
    while (c != SL_NIL && n++ < t->tab->hdr->nslots && (ch = sl_chunk(t, c))) {
        apr_uint32_t next = ch->next;
        sl_slot_give(t, c);
        c = next;
    }
    e->st.log.head = e->st.log.tail = SL_NIL;
    e->st.log.count = e->st.log.off = e->st.log.units = 0;
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
    link = sl_bucket(t->tab, e->hash);
    while (*link != SL_NIL && *link != i && n++ < t->tab->hdr->nslots) {
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
    sl_slot_give(t, i);
}

static apr_uint32_t sl_entry_find(sl_txn_t *t, const sl_shm_op_t *q)
{
    apr_uint32_t i = *sl_bucket(t->tab, q->hash), n = 0;
    sl_entry_t *e;

    while (i != SL_NIL && n++ < t->tab->hdr->nslots && (e = sl_entry(t, i))) {
        if (!memcmp(e->hash, q->hash, sizeof(q->hash)) && e->alg == q->alg &&
            e->klen == q->klen) {
            return i;
        }
        i = e->hnext;
    }
    return SL_NIL;
}

static apr_uint32_t sl_entry_new(sl_txn_t *t, const sl_shm_op_t *q)
{
    apr_uint32_t i = sl_slot_take(t, SL_KIND_ENTRY), *bucket;
    sl_entry_t *e;

    if (i == SL_NIL) {
        return SL_NIL;
    }
    e = &t->tab->slots[i].e;
    memcpy(e->hash, q->hash, sizeof(e->hash));
    e->alg = q->alg;
    e->klen = q->klen;
    if (q->alg == SL_ALG_LOG) {
        e->st.log.head = e->st.log.tail = SL_NIL;
    }
    bucket = sl_bucket(t->tab, q->hash);
    e->hnext = *bucket;
    *bucket = i;
    e->lprev = e->lnext = SL_NIL;
    sl_lru_front(t, i, e);
    t->tab->hdr->nentries++;
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
        e->st.log.units -= c->w[e->st.log.off];
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
    apr_int64_t skip; /* requests before the first one to read */
} sl_log_ctx_t;

/* The admission time of the i-th oldest unit: that of the request whose
 * weight covers it, walking from the oldest, or past SL_LOG_WALK requests
 * the newest one's (sl_log_array_at's walk). */
static apr_int64_t sl_table_log_at(void *ctx, apr_int64_t i)
{
    sl_log_ctx_t *x = ctx;
    sl_entry_t *e = x->e;
    apr_uint32_t c = e->st.log.head;
    apr_int64_t k, pos = e->st.log.off, acc = 0;
    sl_chunk_t *ch = sl_chunk(x->t, c);

    for (k = 0; ch && k < e->st.log.count; k++) {
        if (k >= x->skip) {
            if (k - x->skip == SL_LOG_WALK) {
                ch = sl_chunk(x->t, e->st.log.tail);
                pos = (e->st.log.off + e->st.log.count - 1) % SL_CHUNK_TS;
                return ch ? ch->ts[pos] : 0;
            }
            acc += ch->w[pos];
            if (acc > i) {
                return ch->ts[pos];
            }
        }
        if (++pos == SL_CHUNK_TS && k + 1 < e->st.log.count) {
            pos = 0;
            ch = sl_chunk(x->t, ch->next);
        }
    }
    x->t->corrupt = 1;
    return 0;
}

/* Removes one request admitted at at of weight cost (the give-back): the
 * later ones move down in place, and a chunk left empty at the end goes.
 * Returns the units removed (cost, or 0 when there is no such request). */
static apr_int64_t sl_log_remove(sl_txn_t *t, sl_entry_t *e, apr_int64_t at,
                                 apr_int64_t cost)
{
    apr_uint32_t rc = e->st.log.head, wc = rc, keep, k, i;
    apr_uint32_t rp = e->st.log.off, wp = rp, count = e->st.log.count;
    int removed = 0;
    sl_chunk_t *r = sl_chunk(t, rc), *w = r;

    for (i = 0; i < count; i++) {
        apr_int64_t ts;
        apr_uint32_t wt;
        if (!r || !w) {
            t->corrupt = 1;
            return 0;
        }
        ts = r->ts[rp];
        wt = r->w[rp];
        if (!removed && ts == at && (apr_int64_t) wt == cost) {
            removed = 1;
        }
        else {
            w->ts[wp] = ts;
            w->w[wp] = wt;
            if (++wp == SL_CHUNK_TS) {
                wp = 0;
                wc = w->next;
                w = i + 1 < count ? sl_chunk(t, wc) : w;
            }
        }
        if (++rp == SL_CHUNK_TS && i + 1 < count) {
            rp = 0;
            rc = r->next;
            r = sl_chunk(t, rc);
        }
    }
    if (!removed) {
        return 0;
    }
    e->st.log.count = count - 1;
    e->st.log.units -= (apr_uint32_t) cost;
    if (e->st.log.count == 0) {
        sl_log_clear(t, e);
        return cost;
    }
    /* The chunk of the last kept entry becomes the tail. */
    keep = (e->st.log.off + e->st.log.count - 1) / SL_CHUNK_TS;
    wc = e->st.log.head;
    for (k = 0; k < keep && (w = sl_chunk(t, wc)); k++) {
        wc = w->next;
    }
    if (!(w = sl_chunk(t, wc))) {
        t->corrupt = 1;
        return 0;
    }
    rc = w->next;
    w->next = SL_NIL;
    e->st.log.tail = wc;
    while (rc != SL_NIL && (r = sl_chunk(t, rc))) {
        apr_uint32_t next = r->next;
        sl_slot_give(t, rc);
        rc = next;
    }
    return cost;
}

static int sl_log_needs_chunk(const sl_entry_t *e)
{
    return e == NULL || (e->st.log.off + e->st.log.count) % SL_CHUNK_TS == 0;
}

/* Timestamps the log's last chunk can still take (0 for a new log). */
static apr_int64_t sl_log_room(const sl_entry_t *e)
{
    return sl_log_needs_chunk(e)
               ? 0
               : SL_CHUNK_TS - (e->st.log.off + e->st.log.count) % SL_CHUNK_TS;
}

/* ZADD key now member: one request of weight w, in time order. Callers
 * take their time before the lock, so one may arrive a little after a
 * later one: insert, not append. */
static void sl_log_insert(sl_txn_t *t, sl_entry_t *e, apr_int64_t now,
                          apr_int64_t w)
{
    apr_uint32_t end = e->st.log.off + e->st.log.count, pos, ci, k, first;
    apr_int64_t last = 0, carry;
    apr_uint32_t wcarry;
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
        t->tab->slots[n].c.next = SL_NIL;
        e->st.log.tail = n;
    }
    if (!(c = sl_chunk(t, e->st.log.tail))) {
        return;
    }
    c->ts[end % SL_CHUNK_TS] = now;
    c->w[end % SL_CHUNK_TS] = (apr_uint32_t) w;
    e->st.log.count++;
    e->st.log.units += (apr_uint32_t) w;
    if (e->st.log.count == 1 || last <= now) {
        return;
    }
    /* Rotate the request into place, from the first later time to the
     * end. A time is late by a wait for the lock at most, so its place is
     * usually in the last chunk: start there when that chunk begins
     * earlier. */
    ci = e->st.log.head;
    pos = e->st.log.off;
    first = e->st.log.tail == e->st.log.head ? e->st.log.off : 0;
    if (end % SL_CHUNK_TS != first && c->ts[first] <= now) {
        ci = e->st.log.tail;
        pos = first;
    }
    carry = now;
    wcarry = (apr_uint32_t) w;
    for (k = 0; k < e->st.log.count; k++) {
        if (!(c = sl_chunk(t, ci))) {
            return;
        }
        if (placing || c->ts[pos] > now) {
            apr_int64_t tmp = c->ts[pos];
            apr_uint32_t wtmp = c->w[pos];
            c->ts[pos] = carry;
            c->w[pos] = wcarry;
            carry = tmp;
            wcarry = wtmp;
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

static int sl_refusing(const sl_txn_t *t, const sl_entry_t *e)
{
    return (apr_int64_t) e->refusing_until * APR_USEC_PER_SEC > t->now;
}

/* The entry to give up for room: an expired one near the LRU end, else the
 * least recently used one; never one this request uses, never one that is
 * refusing (evicted, it would start afresh with its whole quota). */
static apr_uint32_t sl_victim(sl_txn_t *t, const sl_shm_op_t *q, int n)
{
    apr_uint32_t i = t->tab->hdr->lru_tail, fallback = SL_NIL, seen = 0;
    sl_entry_t *e;

    while (i != SL_NIL && (seen < SL_SCAN || fallback == SL_NIL) &&
           seen++ < t->tab->hdr->nslots && (e = sl_entry(t, i))) {
        apr_uint32_t prev = e->lprev;
        if (!sl_ops_hold(q, n, i)) {
            if (e->expires <= t->now) {
                return i;
            }
            if (sl_refusing(t, e)) {
                /* Out of the way of the next search: a table full of
                 * refusing budgets costs one walk, not one per request. */
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

static int sl_reserve(sl_txn_t *t, const sl_shm_op_t *q, int n,
                      apr_uint32_t need, int *evicted)
{
    while (t->tab->hdr->nfree < need && !t->corrupt) {
        apr_uint32_t v = sl_victim(t, q, n);
        if (v == SL_NIL) {
            return 0;
        }
        if (t->tab->slots[v].e.expires > t->now) {
            (*evicted)++;
            t->tab->hdr->evicted++;
        }
        sl_entry_drop(t, v);
    }
    return !t->corrupt;
}

/* ---- the decision ---- */

/* The limit's block entry, if one is stored and not expired. */
static apr_uint32_t sl_block_find(sl_txn_t *t, const sl_shm_op_t *q)
{
    sl_shm_op_t b = *q;
    apr_uint32_t i;
    sl_entry_t *e;

    b.alg = SL_TABLE_BLOCK;
    i = sl_entry_find(t, &b);
    if (i != SL_NIL && (e = sl_entry(t, i)) && e->expires <= t->now) {
        sl_entry_drop(t, i);
        i = SL_NIL;
    }
    return i;
}

/* A refusal starts the limit's block (the script's SET KEY.b ... PX). */
static void sl_block_store(sl_txn_t *t, const sl_shm_op_t *q, int n,
                           sl_shm_op_t *r, int *evicted)
{
    sl_shm_op_t b = *r;
    apr_uint32_t i;
    sl_entry_t *e;

    b.alg = SL_TABLE_BLOCK;
    if ((i = sl_block_find(t, r)) == SL_NIL &&
        sl_reserve(t, q, n, 1, evicted)) {
        i = sl_entry_new(t, &b);
    }
    if (i == SL_NIL || !(e = sl_entry(t, i))) {
        return;
    }
    e->st.until = sl_block_begin(t->now, r->block, &r->ev);
    e->expires = sl_block_expires(t->now, r->block);
}

/* The stored state e (NULL: none) of q at t->now; a log's first skip
 * requests, of skip_units units, are out of its window. */
static void sl_evaluate_entry(sl_txn_t *t, sl_shm_op_t *q, sl_entry_t *e,
                              apr_int64_t skip, apr_int64_t skip_units)
{
    switch (q->alg) {
    case SL_ALG_LOG: {
        sl_log_ctx_t x = {t, e, skip};
        sl_log_evaluate(t->now, q->limit, q->win, q->cost,
                        e ? (apr_int64_t) e->st.log.units - skip_units : 0,
                        sl_table_log_at, &x, &q->ev);
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

static void sl_evaluate(sl_txn_t *t, sl_shm_op_t *q)
{
    sl_entry_t *e = NULL;

    if (q->block) {
        apr_uint32_t b = sl_block_find(t, q);
        if (b != SL_NIL && (e = sl_entry(t, b)) &&
            sl_block_active(t->now, q->block, e->st.until, &q->ev)) {
            q->blocked = 1;
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
    if (e && q->alg == SL_ALG_LOG) {
        sl_log_drop(t, e, sl_log_horizon(t->now, q->win));
    }
    sl_evaluate_entry(t, q, e, 0, 0);
}

/* The requests of a log at or before the horizon, still there (a peek
 * removes nothing), and in *units their weights: the oldest ones. */
static apr_int64_t sl_log_dead(sl_txn_t *t, sl_entry_t *e, apr_int64_t horizon,
                               apr_int64_t *units)
{
    apr_uint32_t pos = e->st.log.off;
    apr_int64_t k;
    sl_chunk_t *ch = sl_chunk(t, e->st.log.head);

    *units = 0;
    for (k = 0; ch && k < e->st.log.count && ch->ts[pos] <= horizon; k++) {
        *units += ch->w[pos];
        if (++pos == SL_CHUNK_TS && k + 1 < e->st.log.count) {
            pos = 0;
            ch = sl_chunk(t, ch->next);
        }
    }
    return k;
}

/* What sl_evaluate decides for q, without a write: no expired entry or
 * log time dropped, nothing moved in the LRU list. *blocked is the time
 * left in the limit's block (0: none). */
static void sl_peek_one(sl_txn_t *t, sl_shm_op_t *q, apr_int64_t *blocked)
{
    sl_shm_op_t b = *q;
    sl_entry_t *e = NULL;
    apr_uint32_t i;

    *blocked = 0;
    b.alg = SL_TABLE_BLOCK;
    if (q->block && (i = sl_entry_find(t, &b)) != SL_NIL &&
        (e = sl_entry(t, i)) && e->expires > t->now &&
        sl_block_active(t->now, q->block, e->st.until, &q->ev)) {
        *blocked = q->ev.reset0;
        return;
    }
    e = NULL;
    if ((i = sl_entry_find(t, q)) != SL_NIL && (e = sl_entry(t, i)) &&
        e->expires <= t->now) {
        e = NULL;
    }
    if (e && q->alg == SL_ALG_LOG) {
        apr_int64_t units,
            dead = sl_log_dead(t, e, sl_log_horizon(t->now, q->win), &units);
        sl_evaluate_entry(t, q, e, dead, units);
        return;
    }
    sl_evaluate_entry(t, q, e, 0, 0);
}

static void sl_apply(sl_txn_t *t, sl_shm_op_t *q)
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
    case SL_ALG_LOG:
        sl_log_insert(t, e, t->now, q->cost);
        expires = sl_log_expires(t->now, q->win);
        break;
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

/* A budget that needs room the table cannot give is refused, as if it had
 * no quota left: never admitted for want of space (that would let one
 * client past every limit once its state fills its stripe). The wait told
 * is a hint: for a log, until its oldest chunk empties and frees a slot;
 * otherwise a window. */
static void sl_no_room(sl_txn_t *t, sl_shm_op_t *q)
{
    sl_entry_t *e = NULL;
    apr_int64_t reset = q->win;

    if (!q->last) {
        return;
    }
    if (q->entry != SL_NIL && !(e = sl_entry(t, q->entry))) {
        return;
    }
    if (q->alg == SL_ALG_LOG) {
        if (sl_log_room(e) > 0) {
            return;
        }
        if (e && e->st.log.count > 0) {
            /* The head chunk's last request. */
            sl_chunk_t *c = sl_chunk(t, e->st.log.head);
            apr_uint32_t last = e->st.log.off + e->st.log.count - 1;
            if (last > SL_CHUNK_TS - 1) {
                last = SL_CHUNK_TS - 1;
            }
            if (!c) {
                return;
            }
            reset = c->ts[last] + q->win - t->now;
        }
    }
    else if (e) {
        return; /* a counter or gcra entry that exists needs no room */
    }
    q->ev.ok = 0;
    q->ev.remaining0 = 0;
    q->ev.reset0 = reset > 0 ? reset : 1;
}

/* After the decision: a budget left without room for one more request
 * (refused, or admitted with nothing remaining) is not evicted until more
 * quota can come, the script's reset: the same exact time the deny cache
 * trusts. */
static void sl_mark_refusing(sl_txn_t *t, const sl_shm_op_t *q, int admitted)
{
    sl_entry_t *e;
    apr_int64_t until;

    if (q->entry == SL_NIL || !(e = sl_entry(t, q->entry))) {
        return;
    }
    if (admitted ? q->ev.remaining > 0 : q->ev.ok) {
        return;
    }
    until = t->now + (admitted ? q->ev.reset : q->ev.reset0);
    until = (until + APR_USEC_PER_SEC - 1) / APR_USEC_PER_SEC;
    if (until > (apr_int64_t) e->refusing_until) {
        e->refusing_until = until > (apr_int64_t) 0xffffffffU
                                ? 0xffffffffU
                                : (apr_uint32_t) until;
    }
}

/* The space an admission takes: an entry per new key, for a log a chunk
 * when its last one is full (one request is one entry, whatever its
 * cost). */
static apr_uint32_t sl_need(sl_txn_t *t, const sl_shm_op_t *q, int n)
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
            e = &t->tab->slots[q[i].entry].e;
        }
        if (q[i].alg == SL_ALG_LOG && sl_log_room(e) == 0) {
            need++;
        }
    }
    return need;
}

static void sl_key_hash(const sl_table_hdr_t *h, const char *key,
                        apr_size_t len, unsigned char out[SL_HASH_BYTES])
{
    apr_uint64_t a = sl_siphash(h->secret, key, len);
    apr_uint64_t b = sl_siphash(h->secret + SL_SIPHASH_KEY, key, len);

    memcpy(out, &a, sizeof(a));
    memcpy(out + sizeof(a), &b, SL_HASH_BYTES - sizeof(a));
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
            q[i].burst < 1 ||
            q[i].cost >
                (c->algorithm == SL_ALG_GCRA ? q[i].burst : q[i].limit) ||
            (c->algorithm != SL_ALG_LOG && c->algorithm != SL_ALG_COUNTER &&
             c->algorithm != SL_ALG_GCRA)) {
            return APR_EINVAL;
        }
        q[i].alg = (unsigned char) c->algorithm;
        q[i].klen = (apr_uint16_t) c->key_len;
        q[i].entry = SL_NIL;
        sl_key_hash(tab->hdr, c->key, c->key_len, q[i].hash);
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

void sl_table_refund(sl_table_t *tab, sl_shm_op_t *q, int n, apr_time_t at,
                     apr_time_t now)
{
    sl_txn_t t = {tab, now, 0};
    int i;

    for (i = 0; i < n && !t.corrupt; i++) {
        apr_uint32_t k = sl_entry_find(&t, &q[i]);
        sl_entry_t *e;

        if (k == SL_NIL || !(e = sl_entry(&t, k)) || e->expires <= now) {
            continue;
        }
        switch (q[i].alg) {
        case SL_ALG_LOG:
            sl_log_remove(&t, e, at, q[i].cost);
            break;
        case SL_ALG_COUNTER:
            sl_counter_refund(now, q[i].win, at, q[i].cost, &e->st.counter);
            break;
        default:
            sl_gcra_refund(now, q[i].limit, q[i].win, at, q[i].cost,
                           &e->st.gcra);
            break;
        }
    }
    if (t.corrupt) {
        sl_format(tab);
    }
}

apr_status_t sl_table_decide(sl_table_t *tab, sl_shm_op_t *q, int n,
                             apr_time_t now, sl_decision_t *d,
                             sl_table_news_t *news)
{
    sl_txn_t t = {tab, now, 0};
    int i, admitted = 1, full = 0;

    memset(news, 0, sizeof(*news));
    if (n < 1 || now <= 0) {
        return APR_EINVAL;
    }
    for (i = 0; i < n; i++) {
        q[i].entry = SL_NIL;
        q[i].blocked = 0;
    }
    for (i = 0; i < n && !t.corrupt; i++) {
        sl_evaluate(&t, &q[i]);
        admitted = admitted && q[i].ev.ok;
    }
    if (admitted && !t.corrupt) {
        if (sl_reserve(&t, q, n, sl_need(&t, q, n), &news->evicted)) {
            for (i = 0; i < n && !t.corrupt; i++) {
                if (q[i].last) {
                    sl_apply(&t, &q[i]);
                }
            }
        }
        else if (!t.corrupt) {
            full = 1;
            admitted = 0;
            for (i = 0; i < n; i++) {
                sl_no_room(&t, &q[i]);
            }
        }
        news->was_full = (int) tab->hdr->full;
        news->full = full;
        tab->hdr->full = (apr_uint32_t) full;
    }
    for (i = 0; i < n && !admitted && !t.corrupt; i++) {
        if (q[i].block && !q[i].ev.ok && !q[i].blocked) {
            sl_block_store(&t, q, n, &q[i], &news->evicted);
        }
    }
    for (i = 0; i < n && !t.corrupt; i++) {
        sl_mark_refusing(&t, &q[i], admitted);
    }
    if (t.corrupt) {
        sl_format(tab);
        news->emptied = 1;
        news->full = news->was_full = 0;
        return APR_EGENERAL;
    }
    d->now = now;
    d->admitted = admitted;
    d->n = n;
    for (i = 0; i < n; i++) {
        sl_eval_quota(&q[i].ev, admitted, &d->quota[i]);
    }
    return APR_SUCCESS;
}

apr_status_t sl_table_peek(sl_table_t *tab, sl_shm_op_t *q, int n,
                           apr_time_t now, sl_decision_t *d,
                           apr_int64_t *blocked)
{
    sl_txn_t t = {tab, now, 0};
    int i, admitted = 1;

    if (n < 1 || now <= 0) {
        return APR_EINVAL;
    }
    for (i = 0; i < n && !t.corrupt; i++) {
        sl_peek_one(&t, &q[i], &blocked[i]);
        admitted = admitted && q[i].ev.ok;
    }
    if (t.corrupt) {
        /* Emptied at the next decision, which finds the same link. */
        return APR_EGENERAL;
    }
    d->now = now;
    d->admitted = admitted;
    d->n = n;
    for (i = 0; i < n; i++) {
        sl_eval_quota(&q[i].ev, 0, &d->quota[i]);
    }
    return APR_SUCCESS;
}

void sl_table_reset(sl_table_t *tab, sl_shm_op_t *q, int n, apr_time_t now)
{
    sl_txn_t t = {tab, now, 0};
    int i;

    for (i = 0; i < n && !t.corrupt; i++) {
        sl_shm_op_t b = q[i];
        apr_uint32_t k;

        if ((k = sl_entry_find(&t, &q[i])) != SL_NIL) {
            sl_entry_drop(&t, k);
        }
        b.alg = SL_TABLE_BLOCK;
        if (!t.corrupt && (k = sl_entry_find(&t, &b)) != SL_NIL) {
            sl_entry_drop(&t, k);
        }
    }
    if (t.corrupt) {
        sl_format(tab);
    }
}

apr_size_t sl_table_min_size(void)
{
    apr_size_t size = sl_align64(sizeof(sl_table_hdr_t)) +
                      (apr_size_t) SL_MIN_SLOTS * SL_TABLE_SLOT_BYTES;
    apr_uint32_t nb, ns;

    /* The buckets come on top: a few slots' worth. */
    while (!sl_layout(size, &nb, &ns)) {
        size += SL_TABLE_SLOT_BYTES;
    }
    return size;
}

apr_status_t sl_table_attach(apr_pool_t *p, void *base, apr_size_t size,
                             int fresh, int *kept, sl_table_t **out)
{
    sl_table_t *tab;
    sl_table_hdr_t *h = base;
    apr_uint32_t nbuckets, nslots;
    apr_status_t rv;

    if (!sl_layout(size, &nbuckets, &nslots)) {
        return APR_EINVAL;
    }
    tab = apr_pcalloc(p, sizeof(*tab));
    *kept = !fresh && h->magic == SL_TABLE_MAGIC &&
            h->layout == SL_TABLE_LAYOUT && h->size == size &&
            h->nbuckets == nbuckets && h->nslots == nslots;
    if (!*kept) {
        memset(h, 0, sizeof(*h));
        rv = sl_siphash_key(h->secret);
        if (rv == APR_SUCCESS) {
            rv = sl_siphash_key(h->secret + SL_SIPHASH_KEY);
        }
        if (rv != APR_SUCCESS) {
            return rv;
        }
        h->magic = SL_TABLE_MAGIC;
        h->layout = SL_TABLE_LAYOUT;
        h->size = size;
        h->nbuckets = nbuckets;
        h->nslots = nslots;
        sl_map(tab, h);
        sl_format(tab);
    }
    else {
        sl_map(tab, h);
    }
    *out = tab;
    return APR_SUCCESS;
}

void sl_table_geometry(const sl_table_t *tab, apr_uint32_t *nslots,
                       apr_uint32_t *nbuckets)
{
    *nslots = tab->hdr->nslots;
    *nbuckets = tab->hdr->nbuckets;
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
