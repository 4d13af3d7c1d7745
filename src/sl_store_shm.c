/* SPDX-License-Identifier: Apache-2.0 */
/* The shm store as a kind of store (sl_store_kind.h): the embedded store
 * of "SlidingLimitStore shm", which also stands in for a Redis store, in
 * the shared memory every child of this httpd reads (sl_shm.h). */
#include "sl_store_kind.h"

#include "http_log.h"

APLOG_USE_MODULE(slidinglimit);

static apr_status_t sl_shm_store_make(sl_store_t *st, apr_pool_t *pchild,
                                      server_rec *vs,
                                      const sl_server_conf_t *sc, int threads)
{
    (void) pchild;
    (void) vs;
    (void) sc;
    (void) threads;
    st->ctx = st->proc->shm;
    return APR_SUCCESS;
}

static apr_status_t sl_shm_store_decide(sl_store_t *st, apr_pool_t *p,
                                        const sl_budget_t *budgets, int n,
                                        const char *member,
                                        apr_size_t member_len, apr_time_t now,
                                        sl_decision_t *d, const char **err,
                                        int *trips)
{
    apr_status_t rv = sl_shm_decide(st->ctx, p, budgets, n, now, d);

    (void) member;
    (void) member_len;
    (void) trips;
    if (rv != APR_SUCCESS) {
        /* sl_shm_decide logs each change of its state once (full,
         * emptied): not once per request. */
        *err = "the shared memory store did not decide";
    }
    return rv;
}

static apr_status_t sl_shm_store_give_back(sl_store_t *st, apr_pool_t *p,
                                           const sl_budget_t *budgets, int n,
                                           const char *member,
                                           apr_size_t member_len, apr_time_t at,
                                           const char **err)
{
    (void) member;
    (void) member_len;
    (void) err;
    sl_shm_give_back(st->ctx, p, budgets, n, at, apr_time_now());
    return APR_SUCCESS;
}

static apr_status_t sl_shm_store_peek(sl_store_t *st, apr_pool_t *p,
                                      const sl_budget_t *budgets, int n,
                                      apr_time_t now, sl_decision_t *d,
                                      apr_int64_t **blocked, const char **err)
{
    apr_status_t rv = sl_shm_peek(st->ctx, p, budgets, n, now, d, blocked);

    if (rv != APR_SUCCESS) {
        *err = "the shared memory store could not be read";
    }
    return rv;
}

static apr_status_t sl_shm_store_reset(sl_store_t *st, apr_pool_t *p,
                                       const sl_budget_t *budgets, int n,
                                       apr_time_t now, const char **err)
{
    apr_status_t rv = sl_shm_reset(st->ctx, p, budgets, n, now);

    if (rv != APR_SUCCESS) {
        *err = "the shared memory store could not be changed";
    }
    return rv;
}

/* A lease is named by its budget's key and the time its request wrote
 * into that budget's log (the admission's, or the last renewal's): *at
 * moves only to a time this renewal wrote. Leases that had all expired
 * (their child stopped longer than the lease) are gone, and their time
 * may now be another request's: *at becomes 0, so that neither a later
 * renewal nor the give-back names anything. */
static apr_status_t sl_shm_store_renew(sl_store_t *st, apr_pool_t *p,
                                       const sl_budget_t *budgets, int n,
                                       const char *member,
                                       apr_size_t member_len, apr_time_t now,
                                       apr_time_t *at, const char **err)
{
    apr_status_t rv;
    int renewed;

    (void) member;
    (void) member_len;
    rv = sl_shm_renew(st->ctx, p, budgets, n, *at, now, &renewed);
    if (rv != APR_SUCCESS) {
        *err = "the shared memory store could not be locked";
        return rv;
    }
    if (!renewed) {
        *at = 0;
        *err = "its lease had expired before the renewal; it is not "
               "renewed or given back";
        return APR_ENOENT;
    }
    *at = now;
    return APR_SUCCESS;
}

static apr_status_t sl_shm_store_charge(sl_store_t *st, apr_pool_t *p,
                                        const sl_budget_t *budgets, int n,
                                        const char *member,
                                        apr_size_t member_len, const char **err)
{
    apr_status_t rv;

    (void) member;
    (void) member_len;
    rv = sl_shm_charge(st->ctx, p, budgets, n, apr_time_now());
    if (rv != APR_SUCCESS) {
        *err = "the shared memory store had no room for the charge";
    }
    return rv;
}

const sl_store_ops_t sl_store_shm_ops = {
    "shm",
    sl_shm_store_make,
    sl_shm_store_decide,
    sl_shm_store_give_back,
    sl_shm_store_peek,
    sl_shm_store_reset,
    sl_shm_store_renew,
    sl_shm_store_charge,
};
