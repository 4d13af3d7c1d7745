/* SPDX-License-Identifier: Apache-2.0 */
/* distinct=SOURCE: the value a request brings, and how the Redis store
 * sends it (see sl_distinct.h). */
#include "sl_distinct.h"
#include "sl_key.h"
#include "sl_resp.h"

#include <apr_strings.h>

#include <string.h>

void sl_distinct_values(apr_pool_t *p, request_rec *r, const sl_dir_conf_t *dc,
                        const apr_array_header_t *limits, sl_budget_t *budgets,
                        int before_auth)
{
    int i;

    for (i = 0; i < limits->nelts; i++) {
        const sl_limit_t *l = APR_ARRAY_IDX(limits, i, sl_limit_t *);
        sl_dir_conf_t one;

        if (!l->distinct_keys) {
            continue;
        }
        /* The section as it is, with the one source: the same function
         * that keys requests makes the value, so the value of "user" is
         * what the key "user" would be (nocase, the attempted name before
         * authentication, the address without a user), and a source a
         * later release adds is a distinct= source at once. */
        one = *dc;
        one.keys = (apr_array_header_t *) l->distinct_keys;
        budgets[i].distinct = sl_key_identity(r, &one, before_auth);
        if (budgets[i].distinct && p != r->pool) {
            budgets[i].distinct = apr_pstrdup(p, budgets[i].distinct);
        }
    }
}

apr_size_t sl_distinct_size(const sl_budget_t *budgets, int n)
{
    apr_size_t size = 0;
    int i;

    for (i = 0; i < n; i++) {
        if (budgets[i].algorithm == SL_ALG_DISTINCT) {
            size += SL_RESP_ARG_MAX(
                1 + (budgets[i].distinct ? strlen(budgets[i].distinct) : 0));
        }
    }
    return size;
}

char *sl_distinct_head(char *o, const sl_budget_t *b)
{
    char code[1 + 32];
    apr_size_t len = b->distinct ? strlen(b->distinct) : 0;

    /* An identity is 16 base64 characters; anything longer is no
     * identity, and the look's "d" alone is read as no value. */
    if (len >= sizeof(code)) {
        len = 0;
    }
    code[0] = 'd';
    if (len) {
        memcpy(code + 1, b->distinct, len);
    }
    o = sl_resp_arg(o, code, 1 + len);
    o = sl_resp_int(o, b->requests);
    o = sl_resp_int(o, b->window);
    return sl_resp_int(o, b->requests);
}
