/* SPDX-License-Identifier: Apache-2.0 */
/* A Redis Cluster's slot map and the network: CLUSTER SLOTS asked of the
 * nodes when the map is due, and the slot map's part of a call's way
 * (sl_way.h): route, redirect, a migration's wait, a node that is down.
 * The map itself is sl_topology.c's, pure; everything here takes the
 * Redis client's mutex around it, never across a round trip. */
#include "sl_redis_private.h"

#include <string.h>

void sl_slots_unref(void *ctx, sl_node_t *node)
{
    sl_redis_t *rs = ctx;

    if (node && rs->topo.slots) {
        apr_thread_mutex_lock(rs->mutex);
        sl_topo_unref(&rs->topo, node);
        apr_thread_mutex_unlock(rs->mutex);
    }
}

#define SL_RESP_CLUSTER_SLOTS "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n"

/* The map from one node's CLUSTER SLOTS: 1 when loaded. */
static int sl_load_from(sl_redis_t *rs, sl_node_t *node)
{
    apr_time_t start = apr_time_now();
    sl_conn_t *conn;
    redisReply *r = NULL;
    char errbuf[128];
    const char *why = "";
    apr_status_t rv = sl_conn_acquire(node, &conn);

    if (rv == APR_SUCCESS) {
        rv = sl_conn_send(conn, SL_RESP_CLUSTER_SLOTS,
                          sizeof(SL_RESP_CLUSTER_SLOTS) - 1);
        if (rv == APR_SUCCESS) {
            rv = sl_conn_read(conn, NULL, &r, errbuf, sizeof(errbuf));
        }
        if (rv != APR_SUCCESS) {
            if (sl_conn_discard(node, conn, rv)) {
                return 0; /* a pooled connection the server closed */
            }
        }
    }
    if (rv != APR_SUCCESS) {
        sl_breaker_failure(&node->health, start, apr_time_now());
        return 0;
    }
    sl_breaker_success(&node->health, start, apr_time_now());
    if (r->type == REDIS_REPLY_ERROR) {
        sl_conn_destroy(conn);
        why = "error";
    }
    else {
        sl_conn_release(node, conn);
        apr_thread_mutex_lock(rs->mutex);
        why = sl_topo_load(&rs->topo, r, node);
        apr_thread_mutex_unlock(rs->mutex);
    }
    freeReplyObject(r);
    return !why;
}

/* One pass of a load: the table's nodes, or the seeds (made when not in
 * the table), each that is up or due for a probe, asked in turn until one
 * answers or connect + command timeouts since start have passed. */
static int sl_refresh_pass(sl_redis_t *rs, apr_pool_t *p, int seeds,
                           apr_time_t start)
{
    const sl_store_url_t *url = rs->url;
    sl_node_t **candidates;
    int n, loaded = 0, i;

    apr_thread_mutex_lock(rs->mutex);
    n = seeds ? url->nodes->nelts : rs->topo.nnodes;
    candidates = apr_pcalloc(p, sizeof(*candidates) * (n ? n : 1));
    for (i = 0; i < n; i++) {
        sl_node_t *node;
        if (seeds) {
            const sl_hostport_t *hp =
                &APR_ARRAY_IDX(url->nodes, i, sl_hostport_t);
            node =
                sl_topo_node(&rs->topo, hp->host, strlen(hp->host), hp->port);
        }
        else {
            node = rs->topo.nodes[i];
        }
        if (node && sl_breaker_allow(&node->health, start)) {
            sl_topo_ref(node);
            candidates[i] = node;
        }
    }
    apr_thread_mutex_unlock(rs->mutex);
    for (i = 0; i < n && !loaded; i++) {
        if (candidates[i] && apr_time_now() - start < rs->queue_timeout) {
            loaded = sl_load_from(rs, candidates[i]);
        }
    }
    apr_thread_mutex_lock(rs->mutex);
    for (i = 0; i < n; i++) {
        if (candidates[i]) {
            sl_topo_unref(&rs->topo, candidates[i]);
        }
    }
    apr_thread_mutex_unlock(rs->mutex);
    return loaded;
}

/* Loads the cluster's slot map from the nodes it knows, else from the
 * seeds. Run by the one thread that claimed it; the others route with the
 * map they have meanwhile. */
static void sl_refresh(sl_redis_t *rs, apr_pool_t *p)
{
    apr_time_t start = apr_time_now();
    int loaded =
        sl_refresh_pass(rs, p, 0, start) || sl_refresh_pass(rs, p, 1, start);

    apr_thread_mutex_lock(rs->mutex);
    sl_topo_refresh_done(&rs->topo, apr_time_now(), loaded);
    apr_thread_mutex_unlock(rs->mutex);
}

/* A cluster whose map is due (first use, an error, or the period) is
 * loaded first by this thread if no other is loading it. */
sl_node_t *sl_slots_route(void *ctx, apr_pool_t *p, unsigned int slot,
                          int outdated)
{
    sl_redis_t *rs = ctx;
    sl_node_t *node;

    /* Only a cluster's map drops nodes from the table (sl_topo_load): a
     * store that is not one keeps its nodes, the table's references, until
     * the child exits, and sends every call to the first. No lock and no
     * reference of the call's own: two lock round trips a request, which
     * the threads of a child all took. */
    if (!rs->topo.slots) {
        return rs->single;
    }
    apr_thread_mutex_lock(rs->mutex);
    if (outdated) {
        rs->topo.outdated = 1;
    }
    if (sl_topo_refresh_claim(&rs->topo, apr_time_now())) {
        apr_thread_mutex_unlock(rs->mutex);
        sl_refresh(rs, p);
        apr_thread_mutex_lock(rs->mutex);
    }
    node = sl_topo_route(&rs->topo, slot);
    if (node) {
        sl_topo_ref(node);
    }
    apr_thread_mutex_unlock(rs->mutex);
    return node;
}

sl_node_t *sl_slots_redirect(void *ctx, const char *msg, sl_node_t *from_node)
{
    sl_redis_t *rs = ctx;
    sl_node_t *node;

    apr_thread_mutex_lock(rs->mutex);
    node = sl_topo_redirect(&rs->topo, msg, from_node);
    /* As in sl_slots_route, a store that is not a cluster holds none. */
    if (rs->topo.slots) {
        if (node) {
            sl_topo_ref(node);
        }
        sl_topo_unref(&rs->topo, from_node);
    }
    apr_thread_mutex_unlock(rs->mutex);
    return node;
}

/* A cluster's node did not answer: only its slots take the fail mode,
 * unless no node of the cluster answers (then the store's breaker opens,
 * as for a single server). */
apr_status_t sl_slots_down(void *ctx, apr_status_t rv, const char **err)
{
    sl_redis_t *rs = ctx;
    int up;

    if (!rs->topo.slots) {
        return rv;
    }
    apr_thread_mutex_lock(rs->mutex);
    up = sl_topo_any_up(&rs->topo);
    apr_thread_mutex_unlock(rs->mutex);
    if (!up) {
        *err = "no node of the cluster answers";
        return rv;
    }
    return SL_STORE_PART_DOWN;
}

/* TRYAGAIN: the map is loaded again at the next route that is due, and
 * the call waits before its next trip. */
void sl_slots_migrating(void *ctx, apr_interval_time_t wait)
{
    sl_redis_t *rs = ctx;

    apr_thread_mutex_lock(rs->mutex);
    rs->topo.outdated = 1;
    apr_thread_mutex_unlock(rs->mutex);
    apr_sleep(wait);
}
