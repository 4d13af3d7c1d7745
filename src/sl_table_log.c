/* SPDX-License-Identifier: Apache-2.0 */
/* The shm store's table: a sliding log in chunks of SL_CHUNK_TS requests
 * (the layout is described at the top of sl_table.c), read, trimmed,
 * inserted into and given back, under the caller's lock. */

/* What apr-1-config --cppflags gives the real build: apr.h needs it for
 * PATH_MAX under a strict -std=c99. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sl_table_private.h"

#include <string.h>

void sl_log_clear(sl_txn_t *t, sl_entry_t *e)
{
    apr_uint32_t c = e->st.log.head, n = 0;
    sl_chunk_t *ch;

    /* Bounded by the cell count even if a link loops. */
    while (c != SL_NIL && n++ < t->tab->hdr->ncells && (ch = sl_chunk(t, c))) {
        apr_uint32_t next = ch->next;
        sl_cell_give(t, c);
        c = next;
    }
    e->st.log.head = e->st.log.tail = SL_NIL;
    e->st.log.count = e->st.log.off = e->st.log.units = 0;
}

/* ZREMRANGEBYSCORE key -inf now-win, chunk by chunk from the oldest. */
void sl_log_drop(sl_txn_t *t, sl_entry_t *e, apr_int64_t horizon)
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
            sl_cell_give(t, head);
        }
    }
}

/* The admission time of the i-th oldest unit: that of the request whose
 * weight covers it, walking from the oldest, or past SL_LOG_WALK requests
 * the newest one's (sl_log_array_at's walk). */
apr_int64_t sl_table_log_at(void *ctx, apr_int64_t i)
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
apr_int64_t sl_log_remove(sl_txn_t *t, sl_entry_t *e, apr_int64_t at,
                          apr_int64_t cost)
{
    apr_uint32_t rc = e->st.log.head, wc = rc, keep, k, i;
    apr_uint32_t rp = e->st.log.off, wp = rp, count = e->st.log.count;
    int removed = 0;
    sl_chunk_t *r, *w;

    /* An empty log has no chunk to look at (its head is SL_NIL, not a
     * broken link): what a late give-back or renewal finds once the
     * request's entry has been trimmed or given back. */
    if (count == 0) {
        return 0;
    }
    r = w = sl_chunk(t, rc);
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
        sl_cell_give(t, rc);
        rc = next;
    }
    return cost;
}

static int sl_log_needs_chunk(const sl_entry_t *e)
{
    return e == NULL || (e->st.log.off + e->st.log.count) % SL_CHUNK_TS == 0;
}

/* Timestamps the log's last chunk can still take (0 for a new log). */
apr_int64_t sl_log_room(const sl_entry_t *e)
{
    return sl_log_needs_chunk(e)
               ? 0
               : SL_CHUNK_TS - (e->st.log.off + e->st.log.count) % SL_CHUNK_TS;
}

/* ZADD key now member: one request of weight w, in time order. Callers
 * take their time before the lock, so one may arrive a little after a
 * later one: insert, not append. */
void sl_log_insert(sl_txn_t *t, sl_entry_t *e, apr_int64_t now, apr_int64_t w)
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
        apr_uint32_t n = sl_cell_take(t, SL_KIND_CHUNK);
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
        t->tab->cells[n].c.next = SL_NIL;
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

/* The requests of a log at or before the horizon, still there (a peek
 * removes nothing), and in *units their weights: the oldest ones. */
apr_int64_t sl_log_dead(sl_txn_t *t, sl_entry_t *e, apr_int64_t horizon,
                        apr_int64_t *units)
{
    apr_uint32_t pos = e->st.log.off;
    apr_int64_t k;
    sl_chunk_t *ch;

    *units = 0;
    if (e->st.log.count == 0) {
        return 0;
    }
    ch = sl_chunk(t, e->st.log.head);
    for (k = 0; ch && k < e->st.log.count && ch->ts[pos] <= horizon; k++) {
        *units += ch->w[pos];
        if (++pos == SL_CHUNK_TS && k + 1 < e->st.log.count) {
            pos = 0;
            ch = sl_chunk(t, ch->next);
        }
    }
    return k;
}
