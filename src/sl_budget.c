/* SPDX-License-Identifier: Apache-2.0 */
/* The budgets of a section's limits for one identity (see sl_budget.h). */
#include "sl_budget.h"

#include "sl_ident.h"

#include <apr_strings.h>

#include <string.h>

/* The policy's part of l's keys under sc (sl_store_policy): under a
 * secret an HMAC, made once where there is a memo. */
static APR_INLINE const char *sl_budget_policy(apr_pool_t *p, sl_memo_t *m,
                                               const sl_server_conf_t *sc,
                                               const sl_limit_t *l)
{
    apr_size_t len = strlen(l->id) + 1;
    const char *policy;
    char in[SL_MEMO_IN];
    unsigned int set;

    if (!sc->secret || !m || len + 1 > SL_MEMO_IN) {
        return sl_store_policy(p, l, sc->secret, sc->secret_len);
    }
    /* 'p' keeps a policy's entry apart from every identity's (sl_key.c). */
    in[0] = 'p';
    memcpy(in + 1, l->id, len);
    if ((policy = sl_memo_find(m, p, sc->secret, sc->secret_len, in, len + 1,
                               &set))) {
        return policy;
    }
    policy = sl_store_policy(p, l, sc->secret, sc->secret_len);
    sl_memo_put(m, set, sc->secret, sc->secret_len, in, len + 1, policy);
    return policy;
}

static void sl_budget_fill(apr_pool_t *p, sl_memo_t *memo,
                           const sl_server_conf_t *sc, const sl_dir_conf_t *dc,
                           const sl_limit_t *l, const char *identity,
                           sl_budget_t *b)
{
    b->algorithm = l->algorithm != SL_ALG_UNSET
                       ? l->algorithm
                       : SL_OR(dc->algorithm, SL_ALG_LOG);
    b->key = sl_store_key_join(p, sc->prefix ? sc->prefix : SL_DEFAULT_PREFIX,
                               identity, sl_budget_policy(p, memo, sc, l),
                               b->algorithm, &b->key_len);
    b->store_tag = sc->store_url ? sc->store_url->tag : 0;
    b->requests = l->requests;
    b->window = l->window;
    b->burst = l->burst;
    b->script_args =
        l->script_args && b->algorithm >= 0 && b->algorithm < SL_ALG_COUNT
            ? &l->script_args[b->algorithm]
            : NULL;
    /* A block's end is the limit's reset, so the deny cache answers a
     * blocked identity until it ends without a store call. */
    b->block = l->block;
}

void sl_budget_make(apr_pool_t *p, const sl_server_conf_t *sc,
                    const sl_dir_conf_t *dc, const sl_limit_t *l,
                    const char *identity, sl_budget_t *b)
{
    sl_budget_fill(p, NULL, sc, dc, l, identity, b);
}

sl_budget_t *sl_budgets_build(apr_pool_t *p, const sl_server_conf_t *sc,
                              const sl_dir_conf_t *dc,
                              const apr_array_header_t *limits,
                              const char *identity, sl_memo_t *memo,
                              int *reserve)
{
    sl_budget_t *budgets = apr_pcalloc(p, sizeof(*budgets) * limits->nelts);
    int i;

    *reserve = 0;
    for (i = 0; i < limits->nelts; i++) {
        const sl_limit_t *l = APR_ARRAY_IDX(limits, i, sl_limit_t *);
        sl_budget_t *b = &budgets[i];
        sl_budget_fill(p, memo, sc, dc, l, identity, b);
        /* cost= is at most what the limit holds (checked at start-up;
         * cost=expr: per request, when the request's cost is known). */
        b->cost = l->cost;
        /* A lease is given back at the request's end, so it is a
         * reservation too (nothing answered from the deny cache). */
        b->reserve = l->count != NULL || l->algorithm == SL_ALG_CONCURRENT;
        *reserve = *reserve || b->reserve;
    }
    return budgets;
}

void sl_budget_rekey(apr_pool_t *p, const sl_server_conf_t *sc,
                     const sl_limit_t *l, const char *identity, sl_memo_t *memo,
                     sl_budget_t *b)
{
    b->key = sl_store_key_join(p, sc->prefix ? sc->prefix : SL_DEFAULT_PREFIX,
                               identity, sl_budget_policy(p, memo, sc, l),
                               b->algorithm, &b->key_len);
}

void sl_budget_look(apr_pool_t *p, const sl_server_conf_t *sc,
                    const sl_dir_conf_t *dc, const sl_limit_t *l,
                    const char *identity, sl_budget_t *b)
{
    sl_budget_make(p, sc, dc, l, identity, b);
    b->cost = 1;
}

int sl_budget_counts(const sl_dir_conf_t *dc)
{
    return (dc->needs & SL_NEEDS_COUNT) != 0;
}
