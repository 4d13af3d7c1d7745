/* Connections to one Redis node: made once (connect and command timeouts,
 * AUTH, SELECT) so that the request path sends nothing but the script, kept
 * in a per-node idle stack, and dropped by generation when the server
 * closed them. The transport (hiredis' redisContext) is used here only. */
#include "sl_redis_private.h"

#include <apr_strings.h>

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static apr_status_t sl_ctx_status(const redisContext *c, int err_no)
{
    if (c->err == REDIS_ERR_IO &&
        (err_no == EAGAIN || err_no == EWOULDBLOCK || err_no == ETIMEDOUT ||
         err_no == EINPROGRESS)) {
        return APR_TIMEUP;
    }
    if (c->err == REDIS_ERR_EOF ||
        (c->err == REDIS_ERR_IO && (err_no == ECONNRESET || err_no == EPIPE))) {
        return APR_ECONNRESET;
    }
    return APR_EGENERAL;
}

/* A setup command (AUTH, SELECT): APR_SUCCESS, the I/O failure, or fail_rv
 * when the server refused it. The reply's text is not kept: an AUTH error
 * is no place to risk echoing a credential. */
static apr_status_t sl_setup_command(redisContext *c, apr_status_t fail_rv,
                                     const char *fmt, ...)
{
    redisReply *reply;
    apr_status_t rv = APR_SUCCESS;
    va_list ap;

    va_start(ap, fmt);
    reply = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (!reply) {
        rv = sl_ctx_status(c, errno);
        return rv == APR_TIMEUP ? APR_TIMEUP : APR_EGENERAL;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        rv = fail_rv;
    }
    freeReplyObject(reply);
    return rv;
}

static apr_status_t sl_conn_construct(sl_node_t *node, sl_conn_t **out)
{
    sl_redis_t *rs = node->rs;
    sl_conn_t *conn;
    redisContext *c;
    apr_status_t rv;

    c = node->host
            ? redisConnectWithTimeout(node->host, node->port, rs->connect_tv)
            : redisConnectUnixWithTimeout(rs->url->path, rs->connect_tv);
    if (!c) {
        return APR_ENOMEM;
    }
    if (c->err) {
        /* hiredis 0.14 reports a connect timeout as REDIS_ERR_IO with
         * errno ETIMEDOUT set just before it closes the socket. */
        rv = sl_ctx_status(c, errno);
        redisFree(c);
        return rv == APR_TIMEUP ? APR_TIMEUP : APR_ECONNREFUSED;
    }
    if (redisSetTimeout(c, rs->command_tv) != REDIS_OK) {
        redisFree(c);
        return APR_EGENERAL;
    }
    if (node->host) {
        redisEnableKeepAlive(c);
    }
    /* A server that accepts but does not answer (stopped, overloaded) times
     * out here under the command timeout, which must not read as a refused
     * password. */
    rv = APR_SUCCESS;
    if (rs->url->password) {
        rv = rs->url->user ? sl_setup_command(c, APR_EACCES, "AUTH %s %s",
                                              rs->url->user, rs->url->password)
                           : sl_setup_command(c, APR_EACCES, "AUTH %s",
                                              rs->url->password);
    }
    if (rv == APR_SUCCESS && rs->url->db) {
        rv = sl_setup_command(c, APR_EINVAL, "SELECT %d", rs->url->db);
    }
    if (rv == APR_SUCCESS && !(conn = calloc(1, sizeof(*conn)))) {
        rv = APR_ENOMEM;
    }
    if (rv != APR_SUCCESS) {
        redisFree(c);
        return rv;
    }
    conn->ctx = c;
    conn->gen = apr_atomic_read32(&node->gen);
    *out = conn;
    return APR_SUCCESS;
}

/* Closes a connection: one that failed (hiredis leaves a context that
 * failed mid-reply unusable: a late reply would be read as the next
 * command's), one of an old generation, or one more than the idle stack
 * holds. */
void sl_conn_destroy(sl_conn_t *conn)
{
    if (conn->ctx) {
        redisFree(conn->ctx);
        conn->ctx = NULL;
    }
    free(conn);
}

/* Child exit: the idle connections (the workers are gone by then). */
static apr_status_t sl_node_cleanup(void *data)
{
    sl_node_t *node = data;

    while (node->nidle > 0) {
        sl_conn_destroy(node->idle[--node->nidle]);
        node->idle[node->nidle] = NULL;
    }
    return APR_SUCCESS;
}

apr_status_t sl_node_pool_init(sl_node_t *node, apr_pool_t *p)
{
    apr_status_t rv;

    node->idle =
        apr_pcalloc(p, sizeof(*node->idle) * node->rs->max_connections);
    rv = apr_thread_mutex_create(&node->lock, APR_THREAD_MUTEX_DEFAULT, p);
    if (rv == APR_SUCCESS && node->rs->pipeline) {
        rv = apr_thread_mutex_create(&node->qlock, APR_THREAD_MUTEX_DEFAULT, p);
    }
    if (rv == APR_SUCCESS) {
        apr_pool_cleanup_register(p, node, sl_node_cleanup,
                                  apr_pool_cleanup_null);
    }
    return rv;
}

/* The most recently used idle connection of the node's current
 * generation (idle ones from before a server restart are closed unused),
 * else a new one, made without holding the lock. */
apr_status_t sl_conn_acquire(sl_node_t *node, sl_conn_t **out)
{
    apr_uint32_t gen = apr_atomic_read32(&node->gen);
    sl_conn_t *conn = NULL, *old;

    apr_thread_mutex_lock(node->lock);
    while (!conn && node->nidle > 0) {
        old = node->idle[--node->nidle];
        node->idle[node->nidle] = NULL;
        if (old->gen == gen) {
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

apr_status_t sl_conn_send(sl_conn_t *conn, const char *buf, apr_size_t len)
{
    return redisAppendFormattedCommand(conn->ctx, buf, len) == REDIS_OK
               ? APR_SUCCESS
               : APR_ENOMEM;
}

apr_status_t sl_conn_read(sl_conn_t *conn, redisReply **reply, char *err,
                          apr_size_t errlen)
{
    void *r = NULL;
    apr_status_t rv;
    int e;

    if (redisGetReply(conn->ctx, &r) == REDIS_OK && r) {
        *reply = r;
        return APR_SUCCESS;
    }
    e = errno;
    rv = sl_ctx_status(conn->ctx, e);
    apr_cpystrn(err,
                rv == APR_TIMEUP       ? "command timed out"
                : conn->ctx->errstr[0] ? conn->ctx->errstr
                                       : "I/O error",
                errlen);
    return rv;
}

int sl_conn_discard(sl_node_t *node, sl_conn_t *conn, apr_status_t rv)
{
    /* A pooled connection that the server closed (restart, idle timeout):
     * the others from before are closed too. Never after a timeout, which
     * may have run the command. */
    int stale = rv == APR_ECONNRESET && conn->uses > 0;

    if (stale) {
        apr_atomic_cas32(&node->gen, conn->gen + 1, conn->gen);
    }
    sl_conn_destroy(conn);
    return stale;
}
