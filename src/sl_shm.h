/* SPDX-License-Identifier: Apache-2.0 */
/* The embedded store: every algorithm, exact across all children of one
 * httpd, in stripes of shared memory (sl_table.h) each guarded by a global
 * mutex. It is the store of "SlidingLimitStore shm", and stands in for a
 * Redis store while it is away. Also the module's one way to keep shared memory
 * across restarts. */
#ifndef SL_SHM_H
#define SL_SHM_H

#include "httpd.h"
#include "sl_limit.h"
#include "sl_reply.h"

typedef struct sl_shm sl_shm_t;

/* The Mutex directive's name for the store's lock. */
#define SL_SHM_MUTEX "slidinglimit-shm"

/* pre_config: registers the mutex type. */
apr_status_t sl_shm_pre_config(apr_pool_t *pconf);

/* post_config: creates (or, across graceful restarts, keeps) the segment of
 * size bytes. */
/* The pconf note (apr_pool_userdata) a configuration with key= lines
 * sets: one request's budgets then carry several identities, so several
 * hash tags, and the store is one stripe of the whole size (one lock)
 * that a decision stays one atomic step in. */
#define SL_SHM_ONE_STRIPE "slidinglimit-shm-one-stripe"

apr_status_t sl_shm_create(apr_pool_t *pconf, server_rec *s, apr_size_t size,
                           sl_shm_t **out);

/* child_init: reattaches the mutex. */
apr_status_t sl_shm_child_init(sl_shm_t *shm, apr_pool_t *pchild,
                               server_rec *s);

/* One atomic decision, same semantics and reply as the Redis script; now is
 * this host's time. A request whose state the store cannot hold is
 * refused (see sl_table.h), never admitted. */
apr_status_t sl_shm_decide(sl_shm_t *shm, apr_pool_t *p,
                           const sl_budget_t *budgets, int n, apr_time_t now,
                           sl_decision_t *d);

/* The charge of cost=after: (lua/sl_charge.lua): each budget's cost added
 * at now, past the limit if need be (see sl_table_charge). */
apr_status_t sl_shm_charge(sl_shm_t *shm, apr_pool_t *p,
                           const sl_budget_t *budgets, int n, apr_time_t now);

/* The give-back of count=: the budgets' reservations admitted at the
 * store time at go back (see sl_table_give_back). */
void sl_shm_give_back(sl_shm_t *shm, apr_pool_t *p, const sl_budget_t *budgets,
                      int n, apr_time_t at, apr_time_t now);

/* SlidingLimitConcurrent: the leases on budgets of the request admitted
 * (or renewed last) at at are renewed at now (sl_table_renew); *renewed
 * says how many were still there. APR_SUCCESS, or the stripe could not be
 * locked (nothing done). */
apr_status_t sl_shm_renew(sl_shm_t *shm, apr_pool_t *p,
                          const sl_budget_t *budgets, int n, apr_time_t at,
                          apr_time_t now, int *renewed);

/* The operator's look at budgets and their reset (sl_table_peek,
 * sl_table_reset), under the stripe's lock. */
apr_status_t sl_shm_peek(sl_shm_t *shm, apr_pool_t *p,
                         const sl_budget_t *budgets, int n, apr_time_t now,
                         sl_decision_t *d, apr_int64_t **blocked);
apr_status_t sl_shm_reset(sl_shm_t *shm, apr_pool_t *p,
                          const sl_budget_t *budgets, int n, apr_time_t now);

/* post_config: a zeroed anonymous segment of size bytes, made once in the
 * parent and found again by its name on every graceful restart (made anew,
 * zeroed, when the size changes); *fresh says it was just made. */
apr_status_t sl_shm_retain(server_rec *s, const char *name, apr_size_t size,
                           void **base, int *fresh);

#endif
