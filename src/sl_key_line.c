/* SPDX-License-Identifier: Apache-2.0 */
/* key=SOURCE: a SlidingLimit line keyed by a source of its own rather
 * than its section's SlidingLimitKey (see sl_key.h). */
#include "sl_budget.h"
#include "sl_key.h"
#include "sl_proc.h"
#include "sl_shm.h"

#include "http_log.h"

#include <string.h>

APLOG_USE_MODULE(slidinglimit);

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

void sl_key_lines(apr_pool_t *p, request_rec *r, const sl_dir_conf_t *dc,
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
            p, sc, l,
            sl_key_identity(r, sl_key_line_conf(dc, l, &one), before_auth),
            sc->proc ? sc->proc->memo : NULL, &budgets[i]);
    }
}

int sl_key_lines_check(apr_pool_t *pconf, server_rec *s)
{
    void *lines = NULL;

    apr_pool_userdata_get(&lines, SL_SHM_ONE_STRIPE, pconf);
    for (; lines && s; s = s->next) {
        const sl_server_conf_t *sc = sl_config_server(s);
        /* A script's keys must share one hash slot in a cluster; a
         * request's keys of several identities carry several hash tags. */
        if (sc->store_url && sc->store_url->kind == SL_URL_CLUSTER) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s,
                         "mod_slidinglimit: SlidingLimit key= needs one "
                         "Redis server for a request's budgets (one atomic "
                         "call over keys of several identities), which a "
                         "Redis Cluster store cannot give: use a single "
                         "Redis (or Sentinel) store, or shm");
            return 0;
        }
    }
    return 1;
}

int sl_key_line_takes(const sl_dir_conf_t *dc, const sl_limit_t *l,
                      const char *source)
{
    const apr_array_header_t *keys = l->key_keys;
    sl_dir_conf_t one;

    /* key=ip: every request has an address, so none of its requests is in
     * the shared bucket; none=- means the key=none lines. */
    if (keys && !strcmp(source, "none") && keys->nelts == 1 &&
        APR_ARRAY_IDX(keys, 0, sl_key_source_t).type == SL_KEY_IP) {
        return 0;
    }
    return sl_key_takes(sl_key_line_conf(dc, l, &one), source);
}
