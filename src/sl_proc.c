/* SPDX-License-Identifier: Apache-2.0 */
/* The per-process state (see sl_proc.h): the shared segments made before
 * fork, and each child's part made after it. */
#include "sl_proc.h"

#include "sl_lease.h"

#include "http_config.h"
#include "http_log.h"
#include "ap_mpm.h"

#include "sl_config.h"
#include "sl_allot.h"
#include "sl_delay.h"
#include "sl_store.h"

#include <string.h>

APLOG_USE_MODULE(slidinglimit);

apr_status_t sl_proc_pre_config(apr_pool_t *pconf)
{
    return sl_shm_pre_config(pconf);
}

/* The segments without which the module does not start: the shm store,
 * the statistics (which hold the main store's breaker) and the other
 * stores' breakers. */
static apr_status_t sl_proc_segments(apr_pool_t *pconf, apr_pool_t *ptemp,
                                     server_rec *s, sl_proc_t *proc)
{
    const sl_server_conf_t *msc = sl_config_server(s);
    const char *id;
    apr_status_t rv;
    void *base;
    int fresh;

    rv = sl_shm_create(pconf, s,
                       (apr_size_t) SL_OR(msc->shm_size, SL_DEFAULT_SHM_SIZE),
                       &proc->shm);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s,
                     "mod_slidinglimit: cannot create the shared memory store");
        return rv;
    }
    rv = sl_stats_create(pconf, s, &proc->stats);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s,
                     "mod_slidinglimit: cannot create the statistics segment");
        return rv;
    }
    id = sl_store_id(ptemp, msc->store_url);
    proc->breaker = sl_stats_breaker(proc->stats, id, strlen(id));
    rv = sl_denycache_shm_create(pconf, &proc->denycache_shm);
    if (rv != APR_SUCCESS) {
        /* Only an optimisation: every decision goes to the store. */
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, s,
                     "mod_slidinglimit: cannot create the deny cache segment; "
                     "running without it");
    }
    /* Only where some section turns allotments on: 1.7 MB otherwise
     * unused. */
    if (sl_allot_noted(pconf) &&
        (rv = sl_allot_shared_create(pconf, &proc->allot_shared)) !=
            APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, s,
                     "mod_slidinglimit: cannot create the allotments' "
                     "segment; each child keeps its own");
    }
    rv = sl_shm_retain(s, "breakers", sl_breakers_size(), &base, &fresh);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s,
                     "mod_slidinglimit: cannot create the breaker segment");
        return rv;
    }
    proc->breakers = sl_breakers_attach(pconf, base);
    /* Without it the stores' prerequisites are not checked: nothing else
     * changes. */
    rv = sl_shm_retain(s, "prereqs", sl_prereqs_size(), &base, &fresh);
    proc->prereqs = rv == APR_SUCCESS ? sl_prereqs_attach(base) : NULL;
    return APR_SUCCESS;
}

apr_status_t sl_proc_create(apr_pool_t *pconf, apr_pool_t *ptemp, server_rec *s)
{
    sl_proc_t *proc = apr_pcalloc(pconf, sizeof(*proc));
    server_rec *vs;
    apr_status_t rv;

    if ((rv = sl_proc_segments(pconf, ptemp, s, proc)) != APR_SUCCESS) {
        return rv;
    }
    for (vs = s; vs; vs = vs->next) {
        sl_server_conf_t *sc = sl_config_server(vs);
        sc->proc = proc;
    }
    return APR_SUCCESS;
}

void sl_proc_child_init(apr_pool_t *pchild, server_rec *s, sl_proc_t *proc)
{
    int threads = 1, threaded = AP_MPMQ_NOT_SUPPORTED, daemons = 1;

    if (sl_shm_child_init(proc->shm, pchild, s) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s,
                     "mod_slidinglimit: cannot attach the shared memory "
                     "store's mutex in this child");
    }
    apr_generate_random_bytes(proc->seed, sizeof(proc->seed));
    ap_mpm_query(AP_MPMQ_MAX_THREADS, &threads);
    if (threads < 1) {
        threads = 1;
    }
    ap_mpm_query(AP_MPMQ_IS_THREADED, &threaded);
    proc->delayed = 0;
    proc->delay_max =
        sl_delay_max_default(threaded != AP_MPMQ_NOT_SUPPORTED, threads);
    proc->denycache =
        sl_denycache_create(pchild, proc->denycache_shm, threads > 1);
    proc->memo = sl_memo_create(pchild, threads);
    ap_mpm_query(AP_MPMQ_MAX_DAEMONS, &daemons);
    /* Shared where several children may see one key: a grant then fills
     * at the server's rate, not at one child's (docs/REFERENCE.md,
     * SlidingLimitAllotment). */
    proc->allot = sl_allot_create(pchild, threads > 1,
                                  daemons > 1 ? proc->allot_shared : NULL);
    sl_store_child_init(pchild, s, proc, threads);
    /* After the stores: its cleanup, which stops the renewer, runs before
     * theirs. */
    proc->leases = sl_leases_create(pchild, s);
}
