/* SPDX-License-Identifier: Apache-2.0 */
/* Connections to one Redis node: made once (connect and command timeouts,
 * AUTH, SELECT) so that the request path sends nothing but the script (and,
 * once per generation, INFO for the store's prerequisites), kept in a
 * per-node idle stack, and dropped by node epoch when the server closed
 * them. The transport (sl_transport.c, over sl_socket.c's TCP, unix
 * socket or TLS, or the redis client's io) is used here only; a Sentinel
 * store's node is the master the Sentinels name (sl_sentinel.c). */
#include "sl_redis_private.h"
#include "sl_resp.h"
#include "sl_sentinel.h"

#include <apr_strings.h>

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Why this thread's last connection attempt failed, for sl_conn_error:
 * the transport's reason (a TLS verification, a name that did not
 * resolve, no master known) is what the error log must name. */
static __thread char sl_conn_why[160];

/* A setup command (AUTH, SELECT, PING): APR_SUCCESS, the I/O failure, or
 * fail_rv when the server refused it. The reply's text is not kept: an
 * AUTH error is no place to risk echoing a credential. */
static apr_status_t sl_setup_command(sl_transport_t *t, apr_status_t fail_rv,
                                     const char *what, const char *fmt, ...)
{
    redisReply *reply = NULL;
    apr_status_t rv;
    va_list ap;

    va_start(ap, fmt);
    rv = sl_transport_vcommand(t, &reply, fmt, ap);
    va_end(ap);
    if (rv != APR_SUCCESS) {
        apr_snprintf(sl_conn_why, sizeof(sl_conn_why), "%s: %s", what,
                     sl_transport_error(t));
        return rv == APR_TIMEUP ? APR_TIMEUP : APR_EGENERAL;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        apr_snprintf(sl_conn_why, sizeof(sl_conn_why), "%s refused",
                     fail_rv == APR_EACCES ? "authentication" : what);
        rv = fail_rv;
    }
    freeReplyObject(reply);
    return rv;
}

/* Sentinel stores: the master's address, asked of the Sentinels when none
 * is known or the known one failed. One thread of the child asks at a
 * time, at most every SL_SENTINEL_RETRY; the others fail at once (the
 * location's fail mode) rather than queue behind it. */
#define SL_SENTINEL_RETRY apr_time_from_msec(100)

static apr_status_t sl_conn_master(sl_node_t *node, char *host,
                                   apr_size_t hostlen, int *port,
                                   int *discovered)
{
    sl_redis_t *rs = node->rs;
    sl_master_t *m = &rs->master;
    apr_time_t now = apr_time_now();
    apr_status_t rv;
    char err[sizeof(m->why)];

    apr_thread_mutex_lock(m->lock);
    if (m->port && !m->doubted) {
        apr_cpystrn(host, m->host, hostlen);
        *port = m->port;
        apr_thread_mutex_unlock(m->lock);
        return APR_SUCCESS;
    }
    if (m->discovering || now - m->discovered_at < SL_SENTINEL_RETRY) {
        apr_snprintf(sl_conn_why, sizeof(sl_conn_why), "no master known%s%s",
                     m->why[0] ? ": " : "", m->why);
        apr_thread_mutex_unlock(m->lock);
        return APR_ECONNREFUSED;
    }
    m->discovering = 1;
    apr_thread_mutex_unlock(m->lock);
    *discovered = 1;

    rv = sl_sentinel_master(&m->sentinel,
                            now + rs->connect_timeout + rs->command_timeout,
                            host, hostlen, port, err, sizeof(err));

    apr_thread_mutex_lock(m->lock);
    m->discovering = 0;
    m->discovered_at = apr_time_now();
    if (rv == APR_SUCCESS) {
        if (m->port != *port || strcmp(m->host, host)) {
            /* A failover: the idle connections to the old master go. */
            apr_atomic_inc32(&node->epoch);
            apr_cpystrn(m->host, host, sizeof(m->host));
            m->port = *port;
        }
        m->doubted = 0;
        m->why[0] = '\0';
    }
    else {
        apr_cpystrn(m->why, err, sizeof(m->why));
        apr_snprintf(sl_conn_why, sizeof(sl_conn_why), "no master known: %s",
                     err);
    }
    apr_thread_mutex_unlock(m->lock);
    return rv == APR_SUCCESS  ? APR_SUCCESS
           : rv == APR_TIMEUP ? APR_TIMEUP
                              : APR_ECONNREFUSED;
}

void sl_conn_master_failed(sl_redis_t *rs)
{
    if (rs->url->kind == SL_URL_SENTINEL) {
        apr_thread_mutex_lock(rs->master.lock);
        rs->master.doubted = 1;
        apr_thread_mutex_unlock(rs->master.lock);
    }
}

void sl_conn_error_reply(sl_node_t *node, const char *msg)
{
    if (sl_error_demoted(msg)) {
        sl_conn_master_failed(node->rs);
        /* The idle connections are to the same server: none is used again
         * before the Sentinels are asked. */
        if (node->rs->url->kind == SL_URL_SENTINEL) {
            apr_atomic_inc32(&node->epoch);
        }
    }
}

/* INFO's reply, or NULL for none, to the store's prerequisites. */
static void sl_conn_answered(sl_conn_t *conn, const redisReply *r)
{
    const char *text = NULL, *error = NULL;
    apr_size_t len = 0;

    if (r && r->type == REDIS_REPLY_STRING) {
        text = r->str;
        len = r->len;
    }
    else if (r) {
        /* Not text: a proxy's answer, say; read as a refusal. */
        error = r->type == REDIS_REPLY_ERROR && r->str ? r->str : "NOT-TEXT";
    }
    conn->rs->prereq_info(conn->rs->prereq_ctx, conn->info_node, text, len,
                          error);
    free(conn->info_node);
    conn->info_node = NULL;
}

#define SL_RESP_INFO "*1\r\n$4\r\nINFO\r\n"

/* The store's prerequisites are read from INFO, asked by the connection
 * the store names (the first to each node in a generation). INFO goes out
 * with the connection's first command and its reply is read just before
 * that command's (sl_conn_read): no round trip of its own, and bounded by
 * that command's timeout. All of INFO, not sections: Redis before 7.0
 * takes one section only. */
static void sl_conn_send_info(sl_redis_t *rs, sl_conn_t *conn, const char *host,
                              int port)
{
    apr_size_t len = host ? strlen(host) + 16 : strlen(rs->url->path) + 1;
    char *node;

    if (!rs->prereq_claim || !(node = malloc(len))) {
        return;
    }
    if (host) {
        apr_snprintf(node, len, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host,
                     port);
    }
    else {
        memcpy(node, rs->url->path, len);
    }
    if (!rs->prereq_claim(rs->prereq_ctx, node)) {
        free(node);
        return;
    }
    conn->info_node = node;
    conn->rs = rs;
    if (sl_conn_send(conn, SL_RESP_INFO, sizeof(SL_RESP_INFO) - 1) !=
        APR_SUCCESS) {
        sl_conn_answered(conn, NULL);
    }
}

/* AUTH and SELECT on a new connection, or a PING over TLS where neither
 * is sent: APR_EACCES for a refused password, APR_EINVAL for a refused
 * database. */
static apr_status_t sl_conn_setup(sl_redis_t *rs, sl_transport_t *t)
{
    apr_status_t rv = APR_SUCCESS;

    if (rs->url->password) {
        rv = rs->url->user
                 ? sl_setup_command(t, APR_EACCES, "AUTH", "AUTH %s %s",
                                    rs->url->user, rs->url->password)
                 : sl_setup_command(t, APR_EACCES, "AUTH", "AUTH %s",
                                    rs->url->password);
    }
    if (rv == APR_SUCCESS && rs->url->db) {
        rv =
            sl_setup_command(t, APR_EINVAL, "SELECT", "SELECT %d", rs->url->db);
    }
    else if (rv == APR_SUCCESS && rs->tls && !rs->url->password) {
        rv = sl_setup_command(t, APR_EGENERAL, "PING", "PING");
    }
    return rv;
}

/* Connects to the node, or to the master the Sentinels name for it
 * (host then points into master): the transport, or the failure with
 * sl_conn_why set. */
static apr_status_t sl_conn_connect(sl_node_t *node, char *master,
                                    apr_size_t masterlen, const char **host,
                                    int *port, sl_transport_t **t)
{
    sl_redis_t *rs = node->rs;
    sl_transport_to_t to = {node->host, node->port, NULL, rs->tls,
                            rs->command_timeout};
    char failed[sizeof(rs->master.host)], failed_why[sizeof(sl_conn_why)];
    int failed_port = 0;
    apr_status_t rv, failed_rv = APR_SUCCESS;

    for (;;) {
        int discovered = 0;

        if (rs->url->kind == SL_URL_SENTINEL) {
            rv = sl_conn_master(node, master, masterlen, &to.port, &discovered);
            if (failed_port &&
                (rv != APR_SUCCESS ||
                 (failed_port == to.port && !strcmp(failed, master)))) {
                /* No other master named (another thread asks, or the
                 * Sentinels still name this one): the connect's error. */
                apr_cpystrn(sl_conn_why, failed_why, sizeof(sl_conn_why));
                return failed_rv;
            }
            if (rv != APR_SUCCESS) {
                return rv;
            }
            to.host = master;
        }
        to.path = to.host ? NULL : rs->url->path;
        rv = sl_transport_open(rs->io, &to, rs->connect_timeout, t, sl_conn_why,
                               sizeof(sl_conn_why));
        if (rv == APR_SUCCESS) {
            *host = to.host;
            *port = to.port;
            return APR_SUCCESS;
        }
        sl_conn_master_failed(rs);
        /* The master this child knew from before does not take
         * connections: after a failover the first request of a child that
         * was idle through it finds the old one. Ask the Sentinels again
         * now, and connect once more if they name another master. */
        if (rs->url->kind != SL_URL_SENTINEL || discovered || failed_port) {
            return rv;
        }
        apr_cpystrn(failed, master, sizeof(failed));
        apr_cpystrn(failed_why, sl_conn_why, sizeof(failed_why));
        failed_port = to.port;
        failed_rv = rv;
    }
}

/* A connection is set up once (connect, TLS, AUTH, SELECT) so that the
 * request path sends nothing but the script. */
static apr_status_t sl_conn_construct(sl_node_t *node, sl_conn_t **out)
{
    sl_redis_t *rs = node->rs;
    sl_transport_t *t;
    sl_conn_t *conn;
    const char *host = NULL;
    char master[sizeof(rs->master.host)];
    int port = 0;
    apr_status_t rv;

    sl_conn_why[0] = '\0';
    rv = sl_conn_connect(node, master, sizeof(master), &host, &port, &t);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    /* A server that accepts but does not answer (stopped, overloaded) times
     * out here under the command timeout, which must not read as a refused
     * password. Over TLS there is one round trip in any case: a server that
     * refuses the client's certificate says so after the handshake. */
    rv = sl_conn_setup(rs, t);
    if (rv == APR_SUCCESS && !(conn = calloc(1, sizeof(*conn)))) {
        rv = APR_ENOMEM;
    }
    if (rv != APR_SUCCESS) {
        sl_transport_close(t);
        if (rv != APR_EACCES && rv != APR_EINVAL) {
            sl_conn_master_failed(rs);
        }
        return rv;
    }
    conn->t = t;
    sl_reader_init(&conn->rd, sl_transport_reader(t));
    conn->node_epoch = apr_atomic_read32(&node->epoch);
    sl_conn_send_info(rs, conn, host, port);
    *out = conn;
    return APR_SUCCESS;
}

/* Closes a connection: one that failed (hiredis leaves a context that
 * failed mid-reply unusable: a late reply would be read as the next
 * command's), one of an old node epoch, or one more than the idle stack
 * holds. */
void sl_conn_destroy(sl_conn_t *conn)
{
    if (conn->info_node) {
        sl_conn_answered(conn, NULL);
    }
    sl_transport_close(conn->t);
    conn->t = NULL;
    free(conn->out);
    free(conn);
}

sl_node_t *sl_node_create(void *ctx, const char *host, apr_size_t hostlen,
                          int port)
{
    sl_redis_t *rs = ctx;
    sl_node_t *node = calloc(1, sizeof(*node));

    if (!node) {
        return NULL;
    }
    node->rs = rs;
    node->port = port;
    node->index = -1;
    sl_breaker_init(&node->health);
    if (apr_pool_create_unmanaged_ex(&node->pool, NULL, NULL) != APR_SUCCESS) {
        free(node);
        return NULL;
    }
    node->host = host ? apr_pstrmemdup(node->pool, host, hostlen) : NULL;
    node->idle =
        apr_pcalloc(node->pool, sizeof(*node->idle) * rs->max_connections);
    if (apr_thread_mutex_create(&node->lock, APR_THREAD_MUTEX_DEFAULT,
                                node->pool) != APR_SUCCESS ||
        (rs->pipeline &&
         apr_thread_mutex_create(&node->qlock, APR_THREAD_MUTEX_DEFAULT,
                                 node->pool) != APR_SUCCESS)) {
        apr_pool_destroy(node->pool);
        free(node);
        return NULL;
    }
    return node;
}

/* When no request uses the node any more (or at child exit, when the
 * workers are gone): its idle connections, then the node. */
void sl_node_destroy(sl_node_t *node)
{
    while (node->nidle > 0) {
        sl_conn_destroy(node->idle[--node->nidle]);
        node->idle[node->nidle] = NULL;
    }
    apr_pool_destroy(node->pool);
    free(node);
}

/* The most recently used idle connection of the node's current
 * epoch (idle ones from before a server restart are closed unused),
 * else a new one, made without holding the lock. */
apr_status_t sl_conn_acquire(sl_node_t *node, sl_conn_t **out)
{
    apr_uint32_t epoch = apr_atomic_read32(&node->epoch);
    sl_conn_t *conn = NULL, *old;

    apr_thread_mutex_lock(node->lock);
    while (!conn && node->nidle > 0) {
        old = node->idle[--node->nidle];
        node->idle[node->nidle] = NULL;
        if (old->node_epoch == epoch) {
            conn = old;
        }
        else {
            sl_conn_destroy(old);
        }
    }
    apr_thread_mutex_unlock(node->lock);
    if (conn) {
        *out = conn;
        return APR_SUCCESS;
    }
    return sl_conn_construct(node, out);
}

void sl_conn_release(sl_node_t *node, sl_conn_t *conn)
{
    conn->uses++;
    apr_thread_mutex_lock(node->lock);
    if (node->nidle < node->rs->max_connections) {
        node->idle[node->nidle++] = conn;
        conn = NULL;
    }
    apr_thread_mutex_unlock(node->lock);
    if (conn) {
        sl_conn_destroy(conn);
    }
}

const char *sl_conn_error(apr_status_t rv)
{
    if (sl_conn_why[0]) {
        return sl_conn_why;
    }
    switch (rv) {
    case APR_TIMEUP:
        return "connect or setup timed out";
    case APR_EACCES:
        return "authentication refused";
    case APR_EINVAL:
        return "SELECT refused";
    case APR_ENOMEM:
        return "out of memory";
    case APR_ECONNREFUSED:
        return "cannot connect";
    default:
        return "connection setup failed";
    }
}

/* Commands wait in conn->out until the next read writes them all at once:
 * a pipeline's batch is one write. */
apr_status_t sl_conn_send(sl_conn_t *conn, const char *buf, apr_size_t len)
{
    if (conn->outlen + len > conn->outcap) {
        apr_size_t cap = conn->outcap ? conn->outcap : 4096;
        char *out;
        while (cap < conn->outlen + len) {
            cap *= 2;
        }
        if (!(out = realloc(conn->out, cap))) {
            return APR_ENOMEM;
        }
        conn->out = out;
        conn->outcap = cap;
    }
    memcpy(conn->out + conn->outlen, buf, len);
    conn->outlen += len;
    return APR_SUCCESS;
}

apr_status_t sl_conn_read(sl_conn_t *conn, sl_ints_t *ints, redisReply **reply,
                          char *err, apr_size_t errlen)
{
    apr_status_t rv = APR_SUCCESS;

    if (conn->outlen) {
        rv = sl_transport_send(conn->t, conn->out, conn->outlen);
        conn->outlen = 0;
    }
    if (rv == APR_SUCCESS && conn->info_node) {
        redisReply *info;
        rv = sl_transport_reply(conn->t, &info);
        if (rv == APR_SUCCESS) {
            sl_conn_answered(conn, info);
            freeReplyObject(info);
        }
    }
    if (rv == APR_SUCCESS && ints) {
        int taken;
        conn->rd.target = ints;
        rv = sl_transport_take(conn->t, sl_resp_take_ints, ints, reply, &taken);
        conn->rd.target = NULL;
        if (rv == APR_SUCCESS && taken) {
            *reply = (redisReply *) &sl_reply_ints;
        }
    }
    else if (rv == APR_SUCCESS) {
        rv = sl_transport_reply(conn->t, reply);
    }
    if (rv != APR_SUCCESS) {
        apr_cpystrn(err, sl_transport_error(conn->t), errlen);
        return rv == APR_TIMEUP || rv == APR_ECONNRESET ? rv : APR_EGENERAL;
    }
    return APR_SUCCESS;
}

int sl_conn_discard(sl_node_t *node, sl_conn_t *conn, apr_status_t rv)
{
    /* A pooled connection that the server closed (restart, idle timeout):
     * the others from before are closed too. Never after a timeout, which
     * may have run the command. */
    int stale = rv == APR_ECONNRESET && conn->uses > 0;

    if (stale) {
        apr_atomic_cas32(&node->epoch, conn->node_epoch + 1, conn->node_epoch);
    }
    else {
        /* A master that fails or times out may be one no more. */
        sl_conn_master_failed(node->rs);
    }
    sl_conn_destroy(conn);
    return stale;
}
