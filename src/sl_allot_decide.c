/* SPDX-License-Identifier: Apache-2.0 */
/* SlidingLimitAllotment auto in a request's decision (sl_allot.h has the
 * table): which limits may use allotments, the store's grant, and the
 * answer of a request admitted from one. Refusals are always the store's
 * (lua/sl_check.lua): its reset, Retry-After and block are the truth. */
#include "sl_decide_private.h"

#include "http_log.h"
#include "apr_strings.h"

#include "sl_allot.h"
#include "sl_redis.h"
#include "sl_script_layout.h"

#include <string.h>

APLOG_USE_MODULE(slidinglimit);

/* Limits decided at the store only: a count= reservation, a cost=after:
 * charge, a block (a refusal elsewhere must stop this server at once), an
 * expr: quota (it may change under a grant), distinct= and in-flight
 * leases (sl_allot_fits: log, gcra and counter only). */
static int sl_allot_limit_fits(const sl_limit_t *l, const sl_budget_t *b)
{
    return !l->ncount && !l->after && !l->block && !l->quota_prog &&
           !l->distinct && sl_allot_fits(b);
}

#define SL_ALLOT_MAX_BUDGETS 8
/* The script's arguments after the grant's id: the deadline, then per
 * limit (src/sl_script_layout.h). */
#define SL_ALLOT_ARGS(n) (SL_ALLOT_ARGV_HEAD - 1 + SL_ALLOT_ARGV_PER * (n))

/* What a request admitted from allotments is told: remaining is what is
 * left of this child's grant (the store's own remaining is at least that,
 * unless others spent it: never more than the truth), reset the latest
 * time the whole quota can be back (a window, or a gcra tolerance, after
 * the last grant's deadline; for the counter, two windows from now: every
 * unit counted so far is in the current window or the one before, and
 * none of them weighs anything once the next window ends). */
static apr_int64_t sl_allot_reset(const sl_budget_t *b)
{
    apr_int64_t span = b->window;

    if (b->algorithm == SL_ALG_COUNTER) {
        return 2 * b->window;
    }
    if (b->algorithm == SL_ALG_GCRA && b->burst > b->requests) {
        span = b->window / b->requests * b->burst;
    }
    return span + SL_ALLOT_DEADLINE;
}

static void sl_allot_answer(const sl_case_t *c, const sl_allot_slot_t *slots,
                            const apr_int64_t *store_left, apr_time_t now,
                            sl_decision_t *d)
{
    int i;

    d->now = now;
    d->admitted = 1;
    d->n = c->n;
    d->quota = apr_pcalloc(c->r->pool, sizeof(*d->quota) * c->n);
    for (i = 0; i < c->n; i++) {
        d->quota[i].ok = 1;
        d->quota[i].remaining =
            slots[i].left + (store_left ? store_left[i] : 0);
        d->quota[i].reset = sl_allot_reset(&c->budgets[i]);
    }
}

static int sl_allot_args(const sl_case_t *c, const sl_allot_slot_t *slots,
                         sl_allot_arg_t *args)
{
    int i, k = 0;

    args[k++].v = SL_ALLOT_DEADLINE;
    for (i = 0; i < c->n; i++) {
        const sl_budget_t *b = &c->budgets[i];
        const sl_allot_slot_t *s = &slots[i];
        char code = sl_algorithm_code(b->algorithm);

        args[k].word = apr_pstrmemdup(c->r->pool, &code, 1);
        args[k++].len = 1;
        args[k++].v = b->requests;
        args[k++].v = b->window;
        args[k++].v = b->burst ? b->burst : b->requests;
        args[k++].v = b->cost > 1 ? b->cost : 1;
        args[k++].v = s->want;
        args[k].word = s->give ? s->give_id : "-";
        args[k++].len = s->give ? SL_ALLOT_ID_LEN : 1;
        args[k++].v = s->give ? s->give_k : 0;
        args[k++].v = s->give ? s->give_score : 0;
        args[k++].v = s->give ? s->give_unused : 0;
    }
    return k;
}

/* One grant of this child that its key no longer uses goes back, by a
 * request that made a store call anyway: idle keys' units return to the
 * other servers instead of aging out a window later. */
static void sl_allot_sweep(sl_case_t *c)
{
    sl_allot_slot_t slot;
    sl_budget_t b;
    sl_allot_arg_t args[SL_ALLOT_ARGS(1)];
    sl_case_t one = *c;
    const long long *v;
    const char *id;
    apr_size_t nv;

    if (!sl_allot_stale(c->proc->allot, sl_allot_clock(), &b, &slot)) {
        return;
    }
    memset(args, 0, sizeof(args));
    one.budgets = &b;
    one.n = 1;
    slot.want = 0;
    sl_allot_args(&one, &slot, args);
    /* A store that does not answer: the units age out, counted. */
    sl_store_allot(c->store, c->r, &b, 1, args, SL_ALLOT_ARGS(1), &id, &v, &nv);
    sl_allot_release(c->proc->allot, &slot);
}

/* The store's grant for an ASK: admitted from it, or not decided here
 * (no room for the request: the check refuses it with the truth). */
static int sl_allot_ask(sl_case_t *c, sl_allot_slot_t *slots, sl_decision_t *d)
{
    apr_pool_t *p = c->r->pool;
    sl_allot_arg_t *args =
        apr_pcalloc(p, sizeof(*args) * (SL_ALLOT_ARGS(c->n)));
    apr_int64_t *k = apr_palloc(p, sizeof(*k) * c->n);
    apr_int64_t *score = apr_palloc(p, sizeof(*score) * c->n);
    apr_int64_t *left = apr_palloc(p, sizeof(*left) * c->n);
    const long long *v = NULL;
    const char *id = NULL;
    apr_size_t nv = 0;
    int nargs = sl_allot_args(c, slots, args), i, granted;
    /* Before the call: the deadline never counts from the answer. */
    apr_time_t asked = sl_allot_clock();
    apr_status_t rv = sl_store_allot(c->store, c->r, c->budgets, c->n, args,
                                     nargs, &id, &v, &nv);

    granted = rv == APR_SUCCESS && nv == 3 + 3 * (apr_size_t) c->n && v[2] == 1;
    for (i = 0; granted && i < c->n; i++) {
        k[i] = v[3 + 3 * i];
        left[i] = v[4 + 3 * i];
        score[i] = v[5 + 3 * i];
        granted = k[i] >= (c->budgets[i].cost > 1 ? c->budgets[i].cost : 1) &&
                  left[i] >= 0;
    }
    if (rv != APR_SUCCESS) {
        ap_log_rerror(APLOG_MARK, APLOG_TRACE1, rv, c->r,
                      "mod_slidinglimit: allotment not granted: the store "
                      "did not answer");
    }
    sl_allot_settle(c->proc->allot, c->budgets, c->n, slots, id, asked,
                    granted ? k : NULL, granted ? score : NULL);
    if (rv == APR_SUCCESS) {
        sl_allot_sweep(c);
    }
    if (!granted) {
        return -1;
    }
    sl_allot_answer(c, slots, left, (apr_time_t) v[0] * APR_USEC_PER_SEC + v[1],
                    d);
    return SL_STEP_ADMITTED;
}

int sl_allot_decide(sl_case_t *c, sl_decision_t *d)
{
    sl_allot_slot_t slots[SL_ALLOT_MAX_BUDGETS];
    int i, how;

    if (!c->proc->allot || SL_OR(c->dc->allotment, 0) != 1 || c->reserve ||
        c->n > SL_ALLOT_MAX_BUDGETS) {
        return -1;
    }
    for (i = 0; i < c->n; i++) {
        if (!sl_allot_limit_fits(APR_ARRAY_IDX(c->limits, i, sl_limit_t *),
                                 &c->budgets[i])) {
            return -1;
        }
    }
    how = sl_allot_take(c->proc->allot, c->budgets, c->n, sl_allot_clock(),
                        slots);
    if (how == SL_ALLOT_TAKEN) {
        sl_allot_answer(c, slots, NULL, apr_time_now(), d);
        return SL_STEP_ADMITTED;
    }
    return how == SL_ALLOT_ASK ? sl_allot_ask(c, slots, d) : -1;
}
