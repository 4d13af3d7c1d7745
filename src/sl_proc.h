/* SPDX-License-Identifier: Apache-2.0 */
/* Per-process state, made in post_config (shared memory, before fork) and
 * child_init (connections, never before fork), in one place: sl_proc.c.
 * Reached through the server config records (sl_server_conf_t.proc): no
 * mutable globals. */
#ifndef SL_PROC_H
#define SL_PROC_H

#include "sl_breaker.h"
#include "sl_denycache.h"
#include "sl_memo.h"
#include "sl_prereq.h"
#include "sl_shm.h"
#include "sl_stats.h"

typedef struct sl_proc {
    sl_shm_t *shm;
    sl_stats_t *stats;
    sl_breaker_t *breaker;   /* the main server's store's (status page) */
    sl_breakers_t *breakers; /* one per other Redis store (sl_store.c) */
    sl_prereqs_t *prereqs;   /* which store nodes were asked INFO */
    sl_denycache_shm_t *denycache_shm; /* shared by the generation's children */
    sl_denycache_t *denycache;
    sl_memo_t *memo;                      /* the identities this child made */
    struct sl_store *shm_store;           /* the shm store (child) */
    struct sl_leases *leases;             /* this child's leases (sl_lease.h) */
    struct sl_allot_shared *allot_shared; /* the children's allotments */
    struct sl_allot *allot; /* this child's view of them (sl_allot.h) */
    unsigned char seed[8];
    volatile apr_uint32_t counter;
    /* delay=: the requests this child holds now, and SlidingLimitDelayMax
     * when unset (sl_delay_max_default, child_init) */
    volatile apr_uint32_t delayed;
    int delay_max;
} sl_proc_t;

/* pre_config: the mutex types of the segments (the Mutex directive's). */
apr_status_t sl_proc_pre_config(apr_pool_t *pconf);

/* post_config: the segments every child shares (the shm store, the
 * statistics with the main store's breaker, the other stores' breakers,
 * the prerequisites' table, the deny cache), each kept across graceful
 * restarts, and every server record's proc. Logs what fails; APR_SUCCESS
 * unless the start must stop. */
apr_status_t sl_proc_create(apr_pool_t *pconf, apr_pool_t *ptemp,
                            server_rec *s);

/* child_init: this child's part of proc (the shm store's mutex, the seed
 * of its decisions, its deny cache) and its stores. */
void sl_proc_child_init(apr_pool_t *pchild, server_rec *s, sl_proc_t *proc);

#endif
