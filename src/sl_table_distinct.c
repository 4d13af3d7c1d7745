/* SPDX-License-Identifier: Apache-2.0 */
/* The shm store's table: distinct= (lua/sl_check.lua's sl_distinct). A
 * key's set is its entry and a list of chunks, each cell three slots of a
 * value's last-seen time and its fingerprint (64 bits of SipHash keyed by
 * the table's secret); a time at or before now - win is a free slot. A
 * value in the window is seen again in its slot, a new one takes a free
 * slot or, with none, a new chunk; a refused one is written nowhere. So a
 * set holds at most limit live values in at most ceil(limit / 3) chunks
 * plus what a lowered limit left, and it goes as a whole when its entry
 * expires, one window after the last value was seen. */

/* What apr-1-config --cppflags gives the real build: apr.h needs it for
 * PATH_MAX under a strict -std=c99. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sl_table_private.h"

#include <stdlib.h>
#include <string.h>

/* Slots per chunk: a time and a fingerprint are 16 bytes, and a chunk's
 * link and kind are at its end (sl_chunk_t), 56 bytes in. */
#define SL_DSLOTS 3

/* The most slots a set is read for: a limit's values, the slots a lowered
 * limit left, and a chunk's slack. */
#define SL_DWALK (2 * SL_DISTINCT_MAX + 2 * SL_DSLOTS)

/* Slot j of chunk c, read and written byte-wise: the cell is an
 * sl_chunk_t, whose arrays this layout overlays. */
static apr_int64_t sl_dslot_ts(const sl_chunk_t *c, int j)
{
    apr_int64_t v;

    memcpy(&v, (const unsigned char *) c + 16 * j, sizeof(v));
    return v;
}

static apr_uint64_t sl_dslot_fp(const sl_chunk_t *c, int j)
{
    apr_uint64_t v;

    memcpy(&v, (const unsigned char *) c + 16 * j + 8, sizeof(v));
    return v;
}

static void sl_dslot_set(sl_chunk_t *c, int j, apr_int64_t ts, apr_uint64_t fp)
{
    memcpy((unsigned char *) c + 16 * j, &ts, sizeof(ts));
    memcpy((unsigned char *) c + 16 * j + 8, &fp, sizeof(fp));
}

static int sl_dcmp(const void *a, const void *b)
{
    apr_int64_t x = *(const apr_int64_t *) a, y = *(const apr_int64_t *) b;

    return x < y ? -1 : x > y;
}

/* The live values' times (at most SL_DWALK, into live, ascending), with
 * q's slot if its value is among them, else the first free slot. Returns
 * how many; sets t->corrupt on a broken link. */
static int sl_distinct_read(sl_txn_t *t, sl_shm_op_t *q, const sl_entry_t *e,
                            apr_int64_t *live, apr_int64_t *known_ts)
{
    apr_int64_t horizon = t->now - q->win;
    apr_uint32_t c = e ? e->st.log.head : SL_NIL, hops = 0;
    int n = 0, j;
    sl_chunk_t *ch;

    while (c != SL_NIL && hops++ < t->tab->hdr->ncells &&
           (ch = sl_chunk(t, c))) {
        for (j = 0; j < SL_DSLOTS; j++) {
            apr_int64_t ts = sl_dslot_ts(ch, j);
            if (ts <= horizon) {
                if (!q->known && q->dchunk == SL_NIL) {
                    q->dchunk = c;
                    q->dslot = j;
                }
                continue;
            }
            if (n < SL_DWALK) {
                live[n++] = ts;
            }
            if (q->has_fp && !q->known && sl_dslot_fp(ch, j) == q->fp) {
                q->known = 1;
                q->dchunk = c;
                q->dslot = j;
                *known_ts = ts;
            }
        }
        c = ch->next;
    }
    if (c != SL_NIL && !t->corrupt) {
        t->corrupt = 1;
    }
    qsort(live, (size_t) n, sizeof(*live), sl_dcmp);
    return n;
}

void sl_distinct_evaluate(sl_txn_t *t, sl_shm_op_t *q, sl_entry_t *e)
{
    apr_int64_t live[SL_DWALK], known_ts = 0, r0, rs0;
    sl_eval_t *ev = &q->ev;
    int n;

    q->known = 0;
    q->dchunk = SL_NIL;
    q->dslot = 0;
    n = sl_distinct_read(t, q, e, live, &known_ts);
    r0 = q->limit - n > 0 ? q->limit - n : 0;
    rs0 = n > 0 ? live[0] + q->win - t->now : 0;
    ev->remaining0 = r0;
    ev->reset0 = rs0;
    if (q->known) {
        /* Seen again: the oldest, when it is this value, is the next. */
        ev->ok = 1;
        ev->remaining = r0;
        ev->reset = known_ts != live[0] ? rs0
                    : n > 1             ? live[1] + q->win - t->now
                                        : q->win;
    }
    else if (n < q->limit) {
        ev->ok = 1;
        ev->remaining = q->limit - n - 1;
        ev->reset = n > 0 ? rs0 : q->win;
    }
    else {
        /* A new value fits once the value at rank n - limit, oldest
         * first, has left. */
        ev->ok = 0;
        ev->remaining = ev->remaining0 = 0;
        ev->reset = ev->reset0 = live[n - q->limit] + q->win - t->now;
    }
}

apr_uint32_t sl_distinct_need(const sl_shm_op_t *q)
{
    return q->has_fp && !q->known && q->dchunk == SL_NIL ? 1 : 0;
}

apr_int64_t sl_distinct_apply(sl_txn_t *t, sl_shm_op_t *q, sl_entry_t *e)
{
    apr_uint32_t c = q->dchunk;
    sl_chunk_t *ch;
    int j = q->dslot;

    if (!q->has_fp) {
        return e->expires;
    }
    if (c == SL_NIL) {
        /* Reserved by sl_need: a new chunk at the end of the list. */
        if ((c = sl_cell_take(t, SL_KIND_CHUNK)) == SL_NIL) {
            return e->expires;
        }
        t->tab->cells[c].c.next = SL_NIL;
        if (e->st.log.tail == SL_NIL) {
            e->st.log.head = c;
        }
        else if ((ch = sl_chunk(t, e->st.log.tail))) {
            ch->next = c;
        }
        e->st.log.tail = c;
        j = 0;
    }
    if (!(ch = sl_chunk(t, c))) {
        return e->expires;
    }
    sl_dslot_set(ch, j, t->now, q->fp);
    return sl_log_expires(t->now, q->win);
}
