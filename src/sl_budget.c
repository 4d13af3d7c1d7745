/* The budgets of a section's limits for one identity (see sl_budget.h). */
#include "sl_budget.h"

#include "sl_ident.h"

#include <string.h>

void sl_budget_make(apr_pool_t *p, const sl_server_conf_t *sc,
                    const sl_dir_conf_t *dc, const sl_limit_t *l,
                    const char *identity, sl_budget_t *b)
{
    b->algorithm = l->algorithm != SL_ALG_UNSET
                       ? l->algorithm
                       : SL_OR(dc->algorithm, SL_ALG_LOG);
    b->key =
        sl_store_key(p, sc->prefix ? sc->prefix : SL_DEFAULT_PREFIX, identity,
                     l, b->algorithm, sc->secret, sc->secret_len);
    b->key_len = strlen(b->key);
    b->store_tag = sc->store_url ? sc->store_url->tag : 0;
    b->requests = l->requests;
    b->window = l->window;
    b->burst = l->burst;
    /* A block's end is the limit's reset, so the deny cache answers a
     * blocked identity until it ends without a store call. */
    b->block = l->block;
}

sl_budget_t *sl_budgets_build(apr_pool_t *p, const sl_server_conf_t *sc,
                              const sl_dir_conf_t *dc,
                              const apr_array_header_t *limits,
                              const char *identity, int *reserve)
{
    sl_budget_t *budgets = apr_pcalloc(p, sizeof(*budgets) * limits->nelts);
    int i;

    *reserve = 0;
    for (i = 0; i < limits->nelts; i++) {
        const sl_limit_t *l = APR_ARRAY_IDX(limits, i, sl_limit_t *);
        sl_budget_t *b = &budgets[i];
        sl_budget_make(p, sc, dc, l, identity, b);
        /* cost= is at most what the limit holds (checked at start-up;
         * cost=expr: per request, when the request's cost is known). */
        b->cost = l->cost;
        b->reserve = l->count != NULL;
        *reserve = *reserve || b->reserve;
    }
    return budgets;
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
    int i;

    for (i = 0; dc->limits && i < dc->limits->nelts; i++) {
        if (APR_ARRAY_IDX(dc->limits, i, sl_limit_t *)->count) {
            return 1;
        }
    }
    return 0;
}
