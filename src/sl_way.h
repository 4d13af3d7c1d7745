/* SPDX-License-Identifier: Apache-2.0 */
/* One call's way through the Redis store: the node it asks, and what
 * each reply asks next (reload the script, follow MOVED or ASK, retry on
 * a fresh connection, wait out a migration, reroute after a failover),
 * within a bound of trips. The way reaches the network and the slot map
 * only through sl_way_ops_t: sl_redis.c fills it with the real Redis client,
 * tests/unit/sl_way_test.c with a scripted one. */
#ifndef SL_WAY_H
#define SL_WAY_H

#include "sl_redis_private.h"
#include "sl_resp.h"

/* Trips one call may take: redirections, a script load, a retry on a
 * fresh connection, a TRYAGAIN while a slot migrates. */
#define SL_MAX_TRIPS 6

typedef struct sl_way sl_way_t;

typedef struct sl_way_ops {
    /* One round trip to w->node: SCRIPT LOAD of w->script when w->reload,
     * ASKING when w->asking, then w->buf, all written at once; shared:
     * the call's first trip, which may share a batch with other threads'.
     * APR_SUCCESS with the command's *reply, else the failure with *err
     * and *stale (it failed on a pooled connection the server had
     * closed). *trips counts the round trips this thread made. */
    apr_status_t (*trip)(const sl_way_t *w, int shared, redisReply **reply,
                         int *stale, const char **err, int *trips);
    /* The node of slot, held (NULL: none); outdated: the caller's error says
     * the map is out of date, which loads it now if due. */
    sl_node_t *(*route)(void *ctx, apr_pool_t *p, unsigned int slot,
                        int outdated);
    /* Follows MOVED or ASK (msg) from from_node (let go of) to the node it
     * names, held (NULL: none). MOVED also says the map is out of date. */
    sl_node_t *(*redirect)(void *ctx, const char *msg, sl_node_t *from_node);
    /* Lets go of a held node (NULL: none). */
    void (*unref)(void *ctx, sl_node_t *node);
    /* TRYAGAIN: the map is out of date, and the next trip waits this
     * long. */
    void (*migrating)(void *ctx, apr_interval_time_t wait);
    /* A cluster's node failed with rv: SL_STORE_PART_DOWN while another
     * node answers, else rv (and *err). */
    apr_status_t (*down)(void *ctx, apr_status_t rv, const char **err);
} sl_way_ops_t;

struct sl_way {
    /* Set by the caller. */
    const sl_way_ops_t *ops;
    void *ctx; /* the ops' */
    apr_pool_t *p;
    unsigned int slot;
    int cluster;  /* a Redis Cluster: per-node health, reroutes */
    int sentinel; /* a Sentinel store: a demoted master is discovered again */
    const char *buf; /* the call, in RESP */
    apr_size_t len;
    const sl_script_t *script; /* what buf runs (loaded after NOSCRIPT) */
    /* An array reply is read into it (NULL: none): the trip's *reply is
     * then sl_reply_ints. */
    sl_ints_t *ints;
    /* The way's own: the node it sends to (held), what its next trip sends
     * before buf, and how often it reloaded, retried and waited. */
    sl_node_t *node;
    int asking, reload, reloads, retried, waits, rediscovered;
};

/* The way's call through the store, rerouted, redirected and retried as
 * its replies ask: APR_SUCCESS with the command's *reply (the caller frees
 * it), else the failure with *err. *trips: the round trips this thread
 * made. */
apr_status_t sl_way_run(sl_way_t *w, redisReply **reply, const char **err,
                        int *trips);

#endif
