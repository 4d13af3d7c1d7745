/* SPDX-License-Identifier: Apache-2.0 */
/* SlidingLimitConcurrent's leases held by this child's requests, and
 * their renewer: a thread of the child, started with its first lease, that
 * renews each lease every third of its length while its request runs, so
 * that a request longer than its lease keeps its place, and the leases of
 * a child that died expire one lease after their last renewal. Made in
 * child_init (sl_proc.c), stopped at child exit. */
#ifndef SL_LEASE_H
#define SL_LEASE_H

#include "httpd.h"

#include "sl_limit.h"
#include "sl_store.h"

typedef struct sl_leases sl_leases_t;
typedef struct sl_lease sl_lease_t;

/* child_init: the registry of the child (NULL when it cannot be made,
 * logged: leases then are not renewed and bound a request's time). */
sl_leases_t *sl_leases_create(apr_pool_t *pchild, server_rec *s);

/* The leases on budgets (SL_ALG_CONCURRENT ones only) that the decision
 * with member at the store time at took from st, held until
 * sl_lease_drop; p is the request's pool, which must outlive the hold.
 * NULL: not renewed. */
sl_lease_t *sl_lease_hold(sl_leases_t *ls, apr_pool_t *p, sl_store_t *st,
                          const sl_budget_t *budgets, int n, const char *member,
                          apr_time_t at);

/* The request's end: its leases leave the registry, after a renewal
 * under way (at most a store call's timeout); returns the time that names
 * them for the give-back (the admission's or the last renewal's), 0 when
 * a renewal found them gone: nothing to give back. */
apr_time_t sl_lease_drop(sl_leases_t *ls, sl_lease_t *l);

#endif
