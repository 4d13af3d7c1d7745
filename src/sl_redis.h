/* SPDX-License-Identifier: Apache-2.0 */
/* The Redis store: a per-child pool of connections per node, the scripts
 * (lua/) run with EVALSHA: a decision, a give-back, a charge, a lease's
 * renewal, the operator's look and reset; Redis Cluster topology and
 * Sentinel discovery (sl_redis_private.h has the parts). Every call fails
 * with SL_STORE_PART_DOWN (sl_reply.h) when the master of its slot in a
 * Redis Cluster does not answer while other nodes do. */
#ifndef SL_REDIS_H
#define SL_REDIS_H

#include "sl_limit.h"
#include "sl_reply.h"
#include "sl_url.h"

typedef struct sl_redis sl_redis_t;

/* Called in child_init: nothing connects until the first request. */
apr_status_t sl_redis_create(apr_pool_t *p, const sl_store_url_t *url,
                             apr_interval_time_t connect_timeout,
                             apr_interval_time_t command_timeout,
                             int max_connections, sl_redis_t **out);

/* Makes l's script_args (sl_limit.h), in p. */
void sl_redis_limit_args(apr_pool_t *p, sl_limit_t *l);

/* One decision for every limit in budgets, in one round trip (two after a
 * SCRIPT FLUSH or a cluster redirection). APR_TIMEUP when the store did not
 * answer in time; *err says why on any failure. Under a threaded MPM the
 * threads of a child that call at the same time share round trips (one
 * write and one read for many EVALSHA); *trips is the number of round trips
 * this call made itself: 0 when another thread carried its command. */
apr_status_t sl_redis_decide(sl_redis_t *rs, apr_pool_t *p,
                             const sl_budget_t *budgets, int n,
                             const char *member, apr_size_t member_len,
                             sl_decision_t *d, const char **err, int *trips);

/* SlidingLimitConcurrent's leases of budgets, held by the request with
 * member, renewed (lua/sl_renew.lua). */
apr_status_t sl_redis_renew(sl_redis_t *rs, apr_pool_t *p,
                            const sl_budget_t *budgets, int n,
                            const char *member, apr_size_t member_len,
                            const char **err);

/* The give-back of count= (lua/sl_give_back.lua): undoes what the decision
 * with member at the store time at consumed on budgets. */
apr_status_t sl_redis_give_back(sl_redis_t *rs, apr_pool_t *p,
                                const sl_budget_t *budgets, int n,
                                const char *member, apr_size_t member_len,
                                apr_time_t at, const char **err);

/* The charge of cost=after: (lua/sl_charge.lua): each budget's cost added
 * after the response of the decision with member, past the limit if need
 * be. */
apr_status_t sl_redis_charge(sl_redis_t *rs, apr_pool_t *p,
                             const sl_budget_t *budgets, int n,
                             const char *member, apr_size_t member_len,
                             const char **err);

/* SlidingLimitAllotment: lua/sl_allot.lua over budgets, grant id member,
 * with its arguments after the member: each a word (word not NULL, len
 * bytes) or an integer v. *v is the reply's integers (nv of them), in
 * p. */
typedef struct sl_allot_arg {
    const char *word;
    apr_size_t len;
    apr_int64_t v;
} sl_allot_arg_t;
apr_status_t sl_redis_allot(sl_redis_t *rs, apr_pool_t *p,
                            const sl_budget_t *budgets, int n,
                            const char *member, apr_size_t member_len,
                            const sl_allot_arg_t *args, int nargs,
                            const long long **v, apr_size_t *nv,
                            const char **err);

/* The operator's look at budgets (the status handler): the check script's
 * peek, which changes nothing. *d is the state now (quota[i]: whether the
 * next request of the budget's cost fits, remaining, reset), blocked[i]
 * the microseconds until budget i's block ends (0: none). */
apr_status_t sl_redis_peek(sl_redis_t *rs, apr_pool_t *p,
                           const sl_budget_t *budgets, int n, sl_decision_t *d,
                           apr_int64_t **blocked, const char **err);

/* The operator's reset: deletes every budget's key and its block (KEY.b)
 * in one call on the identity's node. */
apr_status_t sl_redis_reset(sl_redis_t *rs, apr_pool_t *p,
                            const sl_budget_t *budgets, int n,
                            const char **err);

/* Set in child_init, before the first request: a TLS store's client
 * context (sl_config_tls_setup), a Sentinel store's Sentinel credentials
 * (SlidingLimitSentinelAuth). */
struct sl_tls;
void sl_redis_tls_set(sl_redis_t *rs, struct sl_tls *tls);
void sl_redis_sentinel_auth(sl_redis_t *rs, const char *user,
                            const char *password);

/* The store's prerequisites (sl_store_redis.c): claim says whether a new
 * connection to node ("host:port", or a socket's path) sends INFO (this
 * process checks that node in this generation), and info gets the
 * answer: its text, else the error reply, else neither (no answer: the
 * connection failed first). Set in child_init. */
typedef int sl_redis_claim_fn(void *ctx, const char *node);
typedef void sl_redis_info_fn(void *ctx, const char *node, const char *text,
                              apr_size_t len, const char *error);
void sl_redis_prereq_set(sl_redis_t *rs, sl_redis_claim_fn *claim,
                         sl_redis_info_fn *info, void *ctx);

#endif
