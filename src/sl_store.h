/* SPDX-License-Identifier: Apache-2.0 */
/* The store that decides for a server record in this child, whatever its
 * kind (a Redis store, the shm store: sl_store_kind.h), and every call to
 * it: a decision, a give-back, a lease's renewal, a cost=after: charge, the
 * operator's look and reset, each through the store's circuit breaker (a
 * Redis store's), counted on the status page, an outage logged once. Made
 * in child_init: one client per Redis store (records that name the same
 * store share it) and one shm store per child, which decides for
 * "SlidingLimitStore shm" and stands in for a Redis store that is down. */
#ifndef SL_STORE_H
#define SL_STORE_H

#include "httpd.h"

#include "sl_config.h"
#include "sl_limit.h"
#include "sl_proc.h"
#include "sl_reply.h"
#include "sl_url.h"

typedef struct sl_store sl_store_t;

/* What tells one store from another: its URL with the credentials (two
 * stores that differ only in the password are two); "shm" for none. */
const char *sl_store_id(apr_pool_t *p, const sl_store_url_t *u);

/* Whether the server records a and b have one store: the same
 * SlidingLimitStore with the same TLS settings and Sentinel password (a
 * virtual host that inherits them from the main server). */
int sl_store_shared(const sl_server_conf_t *a, const sl_server_conf_t *b);

/* post_config: every server record's store checked, and the TLS context of
 * each TLS store made (one for the records that share it). Logs what is
 * wrong; APR_SUCCESS when nothing is. */
apr_status_t sl_store_post_config(apr_pool_t *pconf, apr_pool_t *ptemp,
                                  server_rec *s);

/* child_init: the store of s and of every virtual host. threads: the
 * MPM's threads per child, the client's connections per node. */
void sl_store_child_init(apr_pool_t *pchild, server_rec *s, sl_proc_t *proc,
                         int threads);

/* The store that decides for requests of s (NULL before child_init). */
sl_store_t *sl_store_of(server_rec *s);

/* This child's shm store: it decides for "SlidingLimitStore shm" and
 * stands in while a Redis store is down (SlidingLimitLocalFallback). */
sl_store_t *sl_store_shm_of(sl_proc_t *proc);

/* Whether the store is away from this host (Redis): the deny cache spares
 * it calls, and the shm store stands in while it is down. */
int sl_store_remote(const sl_store_t *st);

/* The store as logs and answers name it: its URL's display, or "shm". */
const char *sl_store_name(const sl_store_t *st);

/* One atomic decision over budgets: APR_SUCCESS with *d filled, anything
 * else when the store did not answer. *member (when member is not NULL)
 * identifies the decision for its give-back. */
apr_status_t sl_store_decide(sl_store_t *st, request_rec *r,
                             const sl_budget_t *budgets, int n,
                             sl_decision_t *d, const char **member);

struct sl_allot_arg;
/* SlidingLimitAllotment: lua/sl_allot.lua on a Redis store (APR_ENOTIMPL
 * on the shm store) through its breaker, args as sl_redis_allot's; *id
 * the grant's (SL_ALLOT_ID_LEN bytes, in r's pool), *v the reply. */
apr_status_t sl_store_allot(sl_store_t *st, request_rec *r,
                            const sl_budget_t *budgets, int n,
                            const struct sl_allot_arg *args, int nargs,
                            const char **id, const long long **v,
                            apr_size_t *nv);

/* The give-back of count=: what the decision with member (from
 * sl_store_decide) at store time at consumed on budgets goes back. A store
 * that is down keeps the reservation until it expires. */
void sl_store_give_back(sl_store_t *st, request_rec *r,
                        const sl_budget_t *budgets, int n, const char *member,
                        apr_time_t at);

/* SlidingLimitConcurrent: the leases on budgets of the decision with
 * member, made (or renewed last) at *at, renewed from a child's renewer
 * (no request: s logs); *at becomes what the give-back names, 0 when
 * the leases were gone (expired before the renewal): nothing to renew or
 * give back any more. A store that is down lets them expire. */
apr_status_t sl_store_renew(sl_store_t *st, server_rec *s, apr_pool_t *p,
                            const sl_budget_t *budgets, int n,
                            const char *member, apr_time_t *at);
/* The charge of cost=after:: each budget's cost added, past the limit if
 * need be, after the response of the decision with member. Any status but
 * APR_SUCCESS with *err saying why (the charge is lost: the request was
 * served). */
apr_status_t sl_store_charge(sl_store_t *st, request_rec *r,
                             const sl_budget_t *budgets, int n,
                             const char *member, const char **err);

/* The operator's look at budgets, which changes nothing (*d the state now,
 * blocked[i] the microseconds until budget i's block ends), and their
 * reset. Any status but APR_SUCCESS with *err saying why. */
apr_status_t sl_store_peek(sl_store_t *st, request_rec *r,
                           const sl_budget_t *budgets, int n, sl_decision_t *d,
                           apr_int64_t **blocked, const char **err);
apr_status_t sl_store_reset(sl_store_t *st, request_rec *r,
                            const sl_budget_t *budgets, int n,
                            const char **err);

/* Time until the store is tried again, for a fail-closed Retry-After. */
apr_interval_time_t sl_store_wait(const sl_store_t *st, apr_time_t now);

/* Every Redis store of the configuration (main first) and its breaker's
 * state, for the status page; shared stores appear once per server. */
apr_array_header_t *sl_store_breakers(apr_pool_t *p, server_rec *main);

#endif
