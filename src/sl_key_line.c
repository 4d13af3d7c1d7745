/* SPDX-License-Identifier: Apache-2.0 */
/* key=SOURCE: a SlidingLimit line keyed by a source of its own rather
 * than its section's SlidingLimitKey (see sl_key.h). */
#include "sl_budget.h"
#include "sl_key.h"
#include "sl_proc.h"

const sl_dir_conf_t *sl_key_line_conf(const sl_dir_conf_t *dc,
                                      const sl_limit_t *l, sl_dir_conf_t *one)
{
    if (!l->key_keys) {
        return dc;
    }
    /* The section as it is (SlidingLimitIPv6Prefix, its expressions),
     * with the one source: the function that keys a section's requests
     * keys the line's, so the line's form: falls back to the address, and
     * its user pairs an attempted name with it, exactly as a section's. */
    *one = *dc;
    one->keys = (apr_array_header_t *) l->key_keys;
    return one;
}

void sl_key_lines(request_rec *r, const sl_dir_conf_t *dc,
                  const apr_array_header_t *limits, sl_budget_t *budgets,
                  int before_auth)
{
    const sl_server_conf_t *sc = sl_config_server(r->server);
    int i;

    for (i = 0; i < limits->nelts; i++) {
        const sl_limit_t *l = APR_ARRAY_IDX(limits, i, sl_limit_t *);
        sl_dir_conf_t one;

        if (!l->key_keys) {
            continue;
        }
        sl_budget_rekey(
            r->pool, sc, l,
            sl_key_identity(r, sl_key_line_conf(dc, l, &one), before_auth),
            sc->proc ? sc->proc->memo : NULL, &budgets[i]);
    }
}
