/* Per-process state, made in post_config (shared memory, before fork) and
 * child_init (connections, never before fork). Reached through the server
 * config records (sl_server_conf_t.proc): no mutable globals. */
#ifndef SL_PROC_H
#define SL_PROC_H

#include "sl_breaker.h"
#include "sl_denycache.h"
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
    unsigned char seed[8];
    volatile apr_uint32_t counter;
} sl_proc_t;

#endif
