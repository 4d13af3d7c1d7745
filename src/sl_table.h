/* SPDX-License-Identifier: Apache-2.0 */
/* The shm store's table: one stripe's budgets in a plain memory region,
 * APR only, no httpd.h, no lock and no logging (sl_shm.c maps the regions,
 * locks them and logs what the status codes here report). Layout, eviction
 * and sizing are described at the top of sl_table.c. */
#ifndef SL_TABLE_H
#define SL_TABLE_H

#include <apr_pools.h>

#include "sl_algo.h"
#include "sl_limit.h"
#include "sl_reply.h"
#include "sl_siphash.h"

/* Sizing, for the documentation and the size directive: every store key
 * takes one cell, and a sliding log also one cell per SL_TABLE_LOG_PER_CELL
 * live requests (whatever each one cost). */
#define SL_TABLE_CELL_BYTES   64
#define SL_TABLE_LOG_PER_CELL 4

typedef struct sl_table sl_table_t;

/* One budget of the request being decided, prepared before the lock. */
typedef struct sl_shm_op sl_shm_op_t;

/* The smallest region a table fits in. */
apr_size_t sl_table_min_size(void);

/* A table in the region of size bytes at base. A region that already holds
 * a table of this size is kept as it is (its budgets survive), unless fresh
 * is set; any other is formatted empty with a new hash secret. *kept says
 * which. APR_EINVAL when the region is too small. */
apr_status_t sl_table_attach(apr_pool_t *p, void *base, apr_size_t size,
                             int fresh, int *kept, sl_table_t **out);

/* Which of n tables (stripes) a budget key belongs to: a keyed hash of its
 * hash tag, so every key of one identity goes to one stripe and nobody
 * without the secret can choose a key that lands in a given stripe. */
#define SL_TABLE_STRIPE_KEY SL_SIPHASH_KEY
unsigned int sl_table_stripe(const unsigned char key[SL_TABLE_STRIPE_KEY],
                             const char *budget_key, apr_size_t len,
                             unsigned int n);

/* The table's cell and hash chain counts (for the log). */
void sl_table_geometry(const sl_table_t *t, apr_uint32_t *ncells,
                       apr_uint32_t *nchains);

/* Validates and hashes the budgets (n >= 1); no lock needed: the hash
 * secret never changes while the region lives. APR_EINVAL for arguments
 * the script would refuse. */
apr_status_t sl_table_prepare(apr_pool_t *p, const sl_table_t *t,
                              const sl_budget_t *budgets, int n,
                              sl_shm_op_t **ops);

/* What a decision did besides answering, for the caller to log. */
typedef struct sl_table_news {
    int evicted;  /* live budgets evicted for room */
    int full;     /* this admission found no room */
    int was_full; /* the previous admission found no room */
    int emptied;  /* the table was inconsistent and has been emptied */
} sl_table_news_t;

/* One atomic decision over the prepared budgets at now (microseconds),
 * under the caller's lock: the answer of lua/sl_check.lua into *d (whose
 * quota array has room for n), APR_SUCCESS. When the table cannot hold the
 * state of an admission, the request is refused (news->full; the budgets
 * that needed room answer ok 0, remaining 0), never admitted for want of
 * space. APR_EGENERAL when a link led nowhere (the table has been
 * emptied). */
apr_status_t sl_table_decide(sl_table_t *t, sl_shm_op_t *ops, int n,
                             apr_time_t now, sl_decision_t *d,
                             sl_table_news_t *news);

/* The charge of cost=after: (lua/sl_charge.lua): each prepared budget's
 * cost added at now whatever room is left (sl_*_charge); a new key or a
 * log's new chunk takes a cell, evicting as an admission does. APR_ENOSPC
 * when no cell could be had, APR_EGENERAL when a link led nowhere (the
 * table has been emptied). */
apr_status_t sl_table_charge(sl_table_t *t, sl_shm_op_t *ops, int n,
                             apr_time_t now);

/* The give-back of count= (lua/sl_give_back.lua): each prepared budget's
 * cost, admitted at the store time at, goes back as sl_algo.c's
 * sl_*_give_back says. */
void sl_table_give_back(sl_table_t *t, sl_shm_op_t *ops, int n, apr_time_t at,
                        apr_time_t now);

/* SlidingLimitConcurrent's leases (lua/sl_renew.lua): each prepared
 * budget's lease of the request admitted (or renewed last) at at moves to
 * now, unless it expired already. Returns how many were renewed. */
int sl_table_renew(sl_table_t *t, sl_shm_op_t *ops, int n, apr_time_t at,
                   apr_time_t now);

/* The operator's look (lua/sl_check.lua's peek): the state of each
 * prepared budget at now as its next request would find it, into *d (the
 * quota array has room for n; admitted: whether that request would be),
 * and blocked[i], the microseconds left in budget i's block (0: none).
 * Nothing in the table changes. APR_EGENERAL when a link led nowhere. */
apr_status_t sl_table_peek(sl_table_t *t, sl_shm_op_t *ops, int n,
                           apr_time_t now, sl_decision_t *d,
                           apr_int64_t *blocked);

/* The operator's reset: every prepared budget's entry and block go (the
 * script's DEL KEY KEY.b); its next request starts afresh. */
void sl_table_reset(sl_table_t *t, sl_shm_op_t *ops, int n, apr_time_t now);

/* The region the table lives in (sl_shm.c writes it out at a stop). */
void *sl_table_base(const sl_table_t *t);

/* Live budgets and free cells (the unit tests). */
apr_uint32_t sl_table_entries(const sl_table_t *t);
apr_uint32_t sl_table_free(const sl_table_t *t);

#endif
