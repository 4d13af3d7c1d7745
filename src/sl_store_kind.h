/* SPDX-License-Identifier: Apache-2.0 */
/* The kinds of store behind sl_store_t (sl_store.h), each a table of
 * operations over its own client: sl_store_redis.c, sl_store_shm.c.
 * sl_store.c picks the kind from the store's URL and wraps every call with
 * the circuit breaker, the statistics and the log; a kind only talks to its
 * store. A new kind is a file with its table, and a line in sl_store.c. */
#ifndef SL_STORE_KIND_H
#define SL_STORE_KIND_H

#include "sl_store.h"

typedef struct sl_store_ops sl_store_ops_t;

struct sl_store {
    const sl_store_ops_t *ops;
    /* The kind's client; NULL when it could not be made, and then every
     * call fails (the fail mode applies). */
    void *ctx;
    const sl_store_url_t *url; /* NULL: the shm store */
    sl_breaker_t *breaker;     /* NULL: none (the shm store, no client) */
    sl_proc_t *proc;
};

/* Each operation answers APR_SUCCESS, or fails with *err saying why (a
 * static or pool string; NULL: unknown). now and at are store times as the
 * callers have them; member identifies a decision for its give-back. */
struct sl_store_ops {
    const char *kind;
    /* child_init: the client of the store of sc (vs's record) in st->ctx. */
    apr_status_t (*make)(sl_store_t *st, apr_pool_t *pchild, server_rec *vs,
                         const sl_server_conf_t *sc, int threads);
    /* One atomic decision over budgets; *trips is the round trips it made
     * itself. */
    apr_status_t (*decide)(sl_store_t *st, apr_pool_t *p,
                           const sl_budget_t *budgets, int n,
                           const char *member, apr_size_t member_len,
                           apr_time_t now, sl_decision_t *d, const char **err,
                           int *trips);
    /* The give-back of count=: what the decision with member at the store
     * time at consumed on budgets goes back. */
    apr_status_t (*give_back)(sl_store_t *st, apr_pool_t *p,
                              const sl_budget_t *budgets, int n,
                              const char *member, apr_size_t member_len,
                              apr_time_t at, const char **err);
    /* The operator's look at budgets, which changes nothing, and their
     * reset. */
    apr_status_t (*peek)(sl_store_t *st, apr_pool_t *p,
                         const sl_budget_t *budgets, int n, apr_time_t now,
                         sl_decision_t *d, apr_int64_t **blocked,
                         const char **err);
    apr_status_t (*reset)(sl_store_t *st, apr_pool_t *p,
                          const sl_budget_t *budgets, int n, apr_time_t now,
                          const char **err);
    /* SlidingLimitConcurrent: the leases on budgets that the request with
     * member, admitted (or renewed last) at at, holds, renewed at now; *at
     * becomes what gives them back (sl_store_give_back), 0 when the
     * leases are known to be gone (nothing of theirs to name). */
    apr_status_t (*renew)(sl_store_t *st, apr_pool_t *p,
                          const sl_budget_t *budgets, int n, const char *member,
                          apr_size_t member_len, apr_time_t now, apr_time_t *at,
                          const char **err);
    /* The charge of cost=after:: each budget's cost added after the
     * response of the decision with member, past the limit if need be. */
    apr_status_t (*charge)(sl_store_t *st, apr_pool_t *p,
                           const sl_budget_t *budgets, int n,
                           const char *member, apr_size_t member_len,
                           const char **err);
};

extern const sl_store_ops_t sl_store_redis_ops;
extern const sl_store_ops_t sl_store_shm_ops;

#endif
