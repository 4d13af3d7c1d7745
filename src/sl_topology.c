/* SPDX-License-Identifier: Apache-2.0 */
/* Redis Cluster routing, without I/O: the node table, the slot map read
 * from CLUSTER SLOTS, MOVED and ASK, and when to load the map again.
 * Every function is called with the Redis client's mutex held; nodes are made
 * and freed through the table's callbacks, so that
 * tests/unit/sl_topology_test.c drives all of it without a server. */
#include "sl_redis_private.h"

#include <stdlib.h>
#include <string.h>

void sl_topo_ref(sl_node_t *node)
{
    node->refs++;
}

void sl_topo_unref(sl_topology_t *t, sl_node_t *node)
{
    if (--node->refs == 0) {
        t->node_free(node);
    }
}

/* A node of the table by address (host of hostlen bytes), or NULL. */
static sl_node_t *sl_topo_find(sl_topology_t *t, const char *host,
                               apr_size_t hostlen, int port)
{
    int i;

    for (i = 0; i < t->nnodes; i++) {
        sl_node_t *n = t->nodes[i];
        if (n && n->port == port && n->host && strlen(n->host) == hostlen &&
            !memcmp(n->host, host, hostlen)) {
            return n;
        }
    }
    return NULL;
}

sl_node_t *sl_topo_node(sl_topology_t *t, const char *host, apr_size_t hostlen,
                        int port)
{
    sl_node_t *node = sl_topo_find(t, host, hostlen, port);
    int i;

    if (node) {
        return node;
    }
    for (i = 0; i < t->nnodes && t->nodes[i]; i++) {
    }
    if (i == t->nnodes) {
        if (t->nnodes == t->cap) {
            int cap = t->cap ? 2 * t->cap : 8;
            sl_node_t **nodes;
            if (cap > 65535 ||
                !(nodes = realloc(t->nodes, cap * sizeof(*nodes)))) {
                return NULL;
            }
            t->nodes = nodes;
            t->cap = cap;
        }
        t->nnodes++;
    }
    /* A new slot holds what realloc left there until the node is made. */
    t->nodes[i] = NULL;
    node = t->node_new(t->ctx, host, hostlen, port);
    if (!node) {
        return NULL;
    }
    node->refs = 1; /* the table's */
    node->index = i;
    t->nodes[i] = node;
    return node;
}

/* Out of the table: freed when the last request using it lets go. */
static void sl_topo_drop(sl_topology_t *t, sl_node_t *node)
{
    t->nodes[node->index] = NULL;
    node->index = -1;
    while (t->nnodes > 0 && !t->nodes[t->nnodes - 1]) {
        t->nnodes--;
    }
    sl_topo_unref(t, node);
}

void sl_topo_clear(sl_topology_t *t)
{
    int i;

    for (i = t->nnodes - 1; i >= 0; i--) {
        if (t->nodes[i]) {
            sl_topo_drop(t, t->nodes[i]);
        }
    }
    free(t->nodes);
    t->nodes = NULL;
    t->cap = 0;
}

sl_node_t *sl_topo_route(sl_topology_t *t, unsigned int slot)
{
    int i;

    if (!t->slots) {
        return t->nnodes ? t->nodes[0] : NULL;
    }
    if (t->slots[slot]) {
        return t->nodes[t->slots[slot] - 1];
    }
    /* A slot the map does not cover yet: any node that is up answers
     * with MOVED. */
    for (i = 0; i < t->nnodes; i++) {
        if (t->nodes[i] && !sl_breaker_is_open(&t->nodes[i]->health)) {
            return t->nodes[i];
        }
    }
    return NULL;
}

int sl_topo_any_up(sl_topology_t *t)
{
    int i;

    for (i = 0; i < t->nnodes; i++) {
        if (t->nodes[i] && !sl_breaker_is_open(&t->nodes[i]->health)) {
            return 1;
        }
    }
    return 0;
}

/* "MOVED 3999 127.0.0.1:6381" or "ASK 3999 :6381" (Redis leaves the host
 * out when it is from_node, the node that answered). A known node costs
 * nothing; MOVED also moves the slot in the map, and says the map is out
 * of date (even when it names no node). NULL for a message that names no
 * node. */
sl_node_t *sl_topo_redirect(sl_topology_t *t, const char *msg,
                            const sl_node_t *from_node)
{
    const char *sp = strchr(msg, ' '), *addr, *colon;
    char *end;
    long slot, port;
    sl_node_t *node;

    if (msg[0] == 'M') {
        t->outdated = 1;
    }
    if (!sp || !(addr = strchr(sp + 1, ' '))) {
        return NULL;
    }
    slot = strtol(sp + 1, &end, 10);
    addr++;
    colon = strrchr(addr, ':');
    if (end != addr - 1 || !colon || slot < 0 || slot >= 16384) {
        return NULL;
    }
    port = strtol(colon + 1, &end, 10);
    if (*end || end == colon + 1 || port <= 0 || port > 65535) {
        return NULL;
    }
    if (colon == addr) {
        if (!from_node || !from_node->host) {
            return NULL;
        }
        addr = from_node->host;
        colon = addr + strlen(addr);
    }
    node = sl_topo_node(t, addr, (apr_size_t) (colon - addr), (int) port);
    if (node && msg[0] == 'M' && t->slots) {
        t->slots[slot] = (apr_uint16_t) (node->index + 1);
    }
    return node;
}

/* One master of a CLUSTER SLOTS entry: [from, to, [host, port, ...], ...]. */
static int sl_topo_entry(const redisReply *e, long long *from, long long *to,
                         const char **host, apr_size_t *hostlen, int *port)
{
    const redisReply *m;

    if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
        e->element[0]->type != REDIS_REPLY_INTEGER ||
        e->element[1]->type != REDIS_REPLY_INTEGER) {
        return 0;
    }
    *from = e->element[0]->integer;
    *to = e->element[1]->integer;
    m = e->element[2];
    if (*from < 0 || *to >= 16384 || *from > *to ||
        m->type != REDIS_REPLY_ARRAY || m->elements < 2 ||
        m->element[0]->type != REDIS_REPLY_STRING ||
        m->element[1]->type != REDIS_REPLY_INTEGER ||
        m->element[1]->integer <= 0 || m->element[1]->integer > 65535) {
        return 0;
    }
    *host = m->element[0]->str;
    *hostlen = m->element[0]->len;
    *port = (int) m->element[1]->integer;
    return 1;
}

const char *sl_topo_load(sl_topology_t *t, const redisReply *r,
                         const sl_node_t *from_node)
{
    long long from, to;
    const char *host;
    apr_size_t hostlen;
    int port, i;
    size_t k;

    if (r->type != REDIS_REPLY_ARRAY) {
        return "CLUSTER SLOTS: not an array";
    }
    if (!r->elements) {
        return "CLUSTER SLOTS: no slot is served";
    }
    for (k = 0; k < r->elements; k++) {
        if (!sl_topo_entry(r->element[k], &from, &to, &host, &hostlen, &port)) {
            return "CLUSTER SLOTS: malformed entry";
        }
    }
    memset(t->slots, 0, 16384 * sizeof(*t->slots));
    for (i = 0; i < t->nnodes; i++) {
        if (t->nodes[i]) {
            t->nodes[i]->mapped = 0;
        }
    }
    for (k = 0; k < r->elements; k++) {
        sl_node_t *node;
        sl_topo_entry(r->element[k], &from, &to, &host, &hostlen, &port);
        if (!hostlen && from_node && from_node->host) {
            /* An empty endpoint: the node that answered. */
            host = from_node->host;
            hostlen = strlen(host);
        }
        if (!hostlen || (hostlen == 1 && *host == '?')) {
            continue; /* endpoint unknown: the slots stay unmapped */
        }
        node = sl_topo_node(t, host, hostlen, port);
        if (!node) {
            continue;
        }
        node->mapped = 1;
        for (; from <= to; from++) {
            t->slots[from] = (apr_uint16_t) (node->index + 1);
        }
    }
    for (i = t->nnodes - 1; i >= 0; i--) {
        if (t->nodes[i] && !t->nodes[i]->mapped) {
            sl_topo_drop(t, t->nodes[i]);
        }
    }
    return NULL;
}

int sl_topo_refresh_claim(sl_topology_t *t, apr_time_t now)
{
    if (!t->slots || t->refreshing || now - t->tried_at < SL_TOPO_RETRY) {
        return 0;
    }
    if (t->loaded_at && !t->outdated && now - t->loaded_at < SL_TOPO_PERIOD) {
        return 0;
    }
    t->refreshing = 1;
    t->tried_at = now;
    return 1;
}

void sl_topo_refresh_done(sl_topology_t *t, apr_time_t now, int loaded)
{
    t->refreshing = 0;
    if (loaded) {
        t->loaded_at = now;
        t->outdated = 0;
    }
}
