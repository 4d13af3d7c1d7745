/* SPDX-License-Identifier: Apache-2.0 */
/* The shm store's table: what is done to budgets besides deciding: the
 * give-back of count= (lua/sl_give_back.lua), the operator's peek, which
 * changes nothing, and the operator's reset. */

/* What apr-1-config --cppflags gives the real build: apr.h needs it for
 * PATH_MAX under a strict -std=c99. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sl_table_private.h"

void sl_table_give_back(sl_table_t *tab, sl_shm_op_t *q, int n, apr_time_t at,
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
        sl_op_give_back(&t, &q[i], e, at);
    }
    if (t.corrupt) {
        sl_format(tab);
    }
}

int sl_table_renew(sl_table_t *tab, sl_shm_op_t *q, int n, apr_time_t at,
                   apr_time_t now)
{
    sl_txn_t t = {tab, now, 0};
    int i, renewed = 0;

    for (i = 0; i < n && !t.corrupt; i++) {
        apr_uint32_t k = sl_entry_find(&t, &q[i]);
        sl_entry_t *e;
        apr_int64_t expires;

        /* An expired lease stays gone: another request may hold its
         * place (lua/sl_renew.lua). */
        if (!q[i].lease || k == SL_NIL || !(e = sl_entry(&t, k)) ||
            e->expires <= now || !(at > sl_log_horizon(now, q[i].win))) {
            continue;
        }
        /* The removal leaves room for the insertion: a place in the last
         * chunk, or the chunk it emptied back in the free list. */
        if (sl_log_remove(&t, e, at, 1) == 1) {
            sl_log_insert(&t, e, now, 1);
            expires = sl_log_expires(now, q[i].win);
            if (expires > e->expires) {
                e->expires = expires;
            }
            sl_entry_keep(e, e->expires);
            renewed++;
        }
    }
    if (t.corrupt) {
        sl_format(tab);
        return 0;
    }
    return renewed;
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
