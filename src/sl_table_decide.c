/* SPDX-License-Identifier: Apache-2.0 */
/* The shm store's table: one decision over a request's budgets
 * (lua/sl_check.lua's answer, the math in sl_algo.c), with the blocks of
 * block= and the room an admission takes; every switch on an algorithm
 * of the table (evaluate, apply, charge, give back) is here. */

/* What apr-1-config --cppflags gives the real build: apr.h needs it for
 * PATH_MAX under a strict -std=c99. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sl_table_private.h"

#include <string.h>

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
void sl_evaluate_entry(sl_txn_t *t, sl_shm_op_t *q, sl_entry_t *e,
                       apr_int64_t skip, apr_int64_t skip_units)
{
    switch ((sl_alg_t) q->alg) {
    case SL_ALG_LOG:
    case SL_ALG_CONCURRENT: /* a log of leases (sl_table_prepare) */
    {
        sl_log_ctx_t x = {t, e, skip};
        apr_int64_t units = e ? (apr_int64_t) e->st.log.units - skip_units : 0;
        if (q->lease) {
            sl_lease_evaluate(t->now, q->limit, q->win, units, sl_table_log_at,
                              &x, &q->ev);
            break;
        }
        sl_log_evaluate(t->now, q->limit, q->win, q->cost, units,
                        sl_table_log_at, &x, &q->ev);
        break;
    }
    case SL_ALG_COUNTER:
        sl_counter_evaluate(t->now, q->limit, q->win, q->cost,
                            e ? &e->st.counter : NULL, &q->ev);
        break;
    case SL_ALG_DISTINCT:
        sl_distinct_evaluate(t, q, e);
        break;
    case SL_ALG_GCRA:
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

/* The entry q writes, made when it has none (NULL: no room). */
static sl_entry_t *sl_op_entry(sl_txn_t *t, sl_shm_op_t *q)
{
    if (q->entry == SL_NIL) {
        q->entry = sl_entry_new(t, q);
    }
    return q->entry == SL_NIL ? NULL : sl_entry(t, q->entry);
}

/* Never earlier than before: times handed in slightly out of order must
 * not drop a key that a later time still needs. */
static void sl_entry_extend(sl_entry_t *e, apr_int64_t expires)
{
    if (expires > e->expires) {
        e->expires = expires;
    }
}

static void sl_apply(sl_txn_t *t, sl_shm_op_t *q)
{
    sl_entry_t *e = sl_op_entry(t, q);
    apr_int64_t expires = 0;

    if (!e) {
        return;
    }
    switch ((sl_alg_t) q->alg) {
    case SL_ALG_LOG:
    case SL_ALG_CONCURRENT:
        sl_log_insert(t, e, t->now, q->cost);
        expires = sl_log_expires(t->now, q->win);
        break;
    case SL_ALG_COUNTER:
        expires = sl_counter_apply(t->now, q->win, q->cost, &e->st.counter);
        break;
    case SL_ALG_DISTINCT:
        expires = sl_distinct_apply(t, q, e);
        break;
    case SL_ALG_GCRA:
        expires = sl_gcra_apply(t->now, q->limit, q->win, q->burst, q->cost,
                                &e->st.gcra);
        break;
    }
    sl_entry_extend(e, expires);
}

/* lua/sl_charge.lua's write: q->cost units past the limit if need be. */
static void sl_op_charge(sl_txn_t *t, sl_shm_op_t *q)
{
    sl_entry_t *e = sl_op_entry(t, q);
    apr_int64_t expires = 0;

    if (!e) {
        return;
    }
    switch ((sl_alg_t) q->alg) {
    case SL_ALG_LOG:
    case SL_ALG_CONCURRENT:
        /* The units are 32 bits here (a double in Redis): a debt that
         * large stays at the most they hold. */
        if (q->cost > (apr_int64_t) (0xffffffffU - e->st.log.units)) {
            q->cost = (apr_int64_t) (0xffffffffU - e->st.log.units);
        }
        if (q->cost > 0) {
            sl_log_insert(t, e, t->now, q->cost);
            expires = sl_log_expires(t->now, q->win);
        }
        break;
    case SL_ALG_COUNTER:
        expires = sl_counter_charge(t->now, q->win, q->cost, &e->st.counter);
        break;
    case SL_ALG_DISTINCT: /* no cost=after: on its line (sl_limit.c) */
        break;
    case SL_ALG_GCRA:
        expires = sl_gcra_charge(t->now, q->limit, q->win, q->burst, q->cost,
                                 &e->st.gcra);
        break;
    }
    sl_entry_extend(e, expires);
    /* What the next request of one unit finds, for the eviction guard. */
    q->cost = 1;
    sl_evaluate_entry(t, q, e, 0, 0);
}

/* lua/sl_give_back.lua's undoing of one op's admission at at, on its
 * stored state e. */
void sl_op_give_back(sl_txn_t *t, sl_shm_op_t *q, sl_entry_t *e, apr_time_t at)
{
    switch ((sl_alg_t) q->alg) {
    case SL_ALG_LOG:
    case SL_ALG_CONCURRENT: /* a log of leases (sl_table_prepare) */
        /* The last lease back: nothing in flight keeps the entry. */
        if (sl_log_remove(t, e, at, q->cost) && q->lease &&
            e->st.log.count == 0) {
            e->kept_until = 0;
        }
        break;
    case SL_ALG_COUNTER:
        sl_counter_give_back(t->now, q->win, at, q->cost, &e->st.counter);
        break;
    case SL_ALG_DISTINCT: /* no count= on its line (sl_limit.c) */
        break;
    case SL_ALG_GCRA:
        sl_gcra_give_back(t->now, q->limit, q->win, at, q->cost, &e->st.gcra);
        break;
    }
}

/* A budget that needs room the table cannot give is refused, as if it had
 * no quota left: never admitted for want of space (that would let one
 * client past every limit once its state fills its stripe). The wait told
 * is a hint: for a log, until its oldest chunk empties and frees a cell;
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
 * trusts. Leases are kept while any is in flight, whatever room is left:
 * a lease's wait is capped at a second, its life is not. */
static void sl_mark_kept(sl_txn_t *t, const sl_shm_op_t *q, int admitted)
{
    sl_entry_t *e;

    if (q->entry == SL_NIL || !(e = sl_entry(t, q->entry))) {
        return;
    }
    if (q->lease && e->st.log.count > 0) {
        sl_entry_keep(e, e->expires);
    }
    if (admitted ? q->ev.remaining > 0 : q->ev.ok) {
        return;
    }
    sl_entry_keep(e, t->now + (admitted ? q->ev.reset : q->ev.reset0));
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
            e = &t->tab->cells[q[i].entry].e;
        }
        if (q[i].alg == SL_ALG_LOG && sl_log_room(e) == 0) {
            need++;
        }
        if (q[i].alg == SL_ALG_DISTINCT) {
            need += sl_distinct_need(&q[i]);
        }
    }
    return need;
}

apr_status_t sl_table_charge(sl_table_t *tab, sl_shm_op_t *q, int n,
                             apr_time_t now)
{
    sl_txn_t t = {tab, now, 0};
    apr_status_t rv = APR_SUCCESS;
    int i, evicted;

    if (n < 1 || now <= 0) {
        return APR_EINVAL;
    }
    /* Read as a decision reads (expired state dropped, the log trimmed),
     * never refused: the request was admitted, this is its bill. A block
     * changes nothing of what is owed. */
    for (i = 0; i < n && !t.corrupt; i++) {
        q[i].entry = SL_NIL;
        q[i].block = 0;
        sl_evaluate(&t, &q[i]);
    }
    if (!t.corrupt && !sl_reserve(&t, q, n, sl_need(&t, q, n), &evicted)) {
        rv = APR_ENOSPC;
    }
    for (i = 0; i < n && !t.corrupt && rv == APR_SUCCESS; i++) {
        if (q[i].last) {
            sl_op_charge(&t, &q[i]);
            sl_mark_kept(&t, &q[i], 0);
        }
    }
    if (t.corrupt) {
        sl_format(tab);
        return APR_EGENERAL;
    }
    return rv;
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
        sl_mark_kept(&t, &q[i], admitted);
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
