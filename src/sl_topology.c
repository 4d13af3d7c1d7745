/* Redis Cluster routing: the nodes a child knows and the slot map. */
#include "sl_redis_private.h"

#include <apr_strings.h>

#include <stdlib.h>
#include <string.h>

/* A misbehaving cluster cannot make a child open sockets without bound. */
#define SL_MAX_NODES 64

/* Called with rs->mutex held. */
static sl_node_t *sl_node_add(sl_redis_t *rs, const char *host, int port)
{
    sl_node_t *node;

    if (rs->nodes->nelts >= SL_MAX_NODES) {
        return NULL;
    }
    node = apr_pcalloc(rs->pool, sizeof(*node));
    node->rs = rs;
    node->host = host ? apr_pstrdup(rs->pool, host) : NULL;
    node->port = port;
    if (sl_node_pool_init(node, rs->pool) != APR_SUCCESS) {
        return NULL;
    }
    APR_ARRAY_PUSH(rs->nodes, sl_node_t *) = node;
    return node;
}

apr_status_t sl_topology_init(sl_redis_t *rs)
{
    const sl_store_url_t *url = rs->url;
    int i;

    rs->nodes = apr_array_make(rs->pool, 4, sizeof(sl_node_t *));
    if (url->kind == SL_STORE_UNIX) {
        return sl_node_add(rs, NULL, 0) ? APR_SUCCESS : APR_EGENERAL;
    }
    for (i = 0; i < url->nodes->nelts; i++) {
        const sl_hostport_t *hp = &APR_ARRAY_IDX(url->nodes, i, sl_hostport_t);
        if (!sl_node_add(rs, hp->host, hp->port)) {
            return APR_EGENERAL;
        }
    }
    if (url->kind == SL_STORE_CLUSTER) {
        rs->slots = apr_pcalloc(rs->pool, 16384 * sizeof(*rs->slots));
    }
    return APR_SUCCESS;
}

sl_node_t *sl_node_for(sl_redis_t *rs, unsigned int slot)
{
    sl_node_t *node;

    apr_thread_mutex_lock(rs->mutex);
    node = APR_ARRAY_IDX(rs->nodes, 0, sl_node_t *);
    if (rs->slots && rs->slots[slot]) {
        node = APR_ARRAY_IDX(rs->nodes, rs->slots[slot] - 1, sl_node_t *);
    }
    apr_thread_mutex_unlock(rs->mutex);
    return node;
}

/* "MOVED 3999 127.0.0.1:6381": the node that owns the slot now. */
sl_node_t *sl_node_redirect(sl_redis_t *rs, const char *msg, int moved)
{
    const char *addr = strchr(msg, ' ');
    const char *colon;
    char *host;
    sl_node_t *node = NULL;
    int i, port;
    long slot;

    if (!addr || !(addr = strchr(addr + 1, ' '))) {
        return NULL;
    }
    slot = strtol(strchr(msg, ' ') + 1, NULL, 10);
    addr++;
    colon = strrchr(addr, ':');
    if (!colon || slot < 0 || slot >= 16384) {
        return NULL;
    }
    port = atoi(colon + 1);
    if (port <= 0 || port > 65535) {
        return NULL;
    }
    apr_thread_mutex_lock(rs->mutex);
    host = apr_pstrmemdup(rs->pool, addr, colon - addr);
    if (!*host) {
        /* Redis leaves the host out when it is the one we asked. */
        host = apr_pstrdup(
            rs->pool, APR_ARRAY_IDX(rs->url->nodes, 0, sl_hostport_t).host);
    }
    for (i = 0; i < rs->nodes->nelts; i++) {
        sl_node_t *n = APR_ARRAY_IDX(rs->nodes, i, sl_node_t *);
        if (n->port == port && n->host && !strcmp(n->host, host)) {
            node = n;
            break;
        }
    }
    if (!node) {
        node = sl_node_add(rs, host, port);
        i = rs->nodes->nelts - 1;
    }
    if (node && moved && rs->slots) {
        rs->slots[slot] = (apr_uint16_t) (i + 1);
    }
    apr_thread_mutex_unlock(rs->mutex);
    return node;
}
