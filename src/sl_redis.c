#include "sl_redis.h"
#include "sl_scripts.h"

#include <apr_reslist.h>
#include <apr_sha1.h>
#include <apr_strings.h>
#include <apr_thread_mutex.h>

#include <hiredis/hiredis.h>

#include <errno.h>
#include <string.h>

/* A misbehaving cluster cannot make a child open sockets without bound. */
#define SL_MAX_NODES 64
#define SL_MAX_REDIRECTS 3

typedef struct sl_conn {
    redisContext *ctx;
    int uses;
} sl_conn_t;

typedef struct sl_node {
    sl_redis_t *rs;
    const char *host; /* NULL for a unix socket */
    int port;
    apr_reslist_t *pool;
} sl_node_t;

struct sl_redis {
    apr_pool_t *pool;
    const sl_store_url_t *url;
    struct timeval connect_tv;
    struct timeval command_tv;
    apr_interval_time_t acquire_timeout;
    int max_connections;
    const char *sha;
    /* Guards nodes, slots and allocations from pool: threads of one child
     * share this structure, never a connection. */
    apr_thread_mutex_t *mutex;
    apr_array_header_t *nodes; /* sl_node_t * */
    apr_uint16_t *slots;       /* cluster: node index + 1, 0 unknown */
};

const char *sl_redis_script(void)
{
    return sl_script_check;
}

const char *sl_redis_script_sha(apr_pool_t *p)
{
    unsigned char digest[APR_SHA1_DIGESTSIZE];
    apr_sha1_ctx_t ctx;
    char *hex = apr_palloc(p, 2 * APR_SHA1_DIGESTSIZE + 1);
    int i;

    apr_sha1_init(&ctx);
    apr_sha1_update_binary(&ctx, (const unsigned char *) sl_script_check,
                           strlen(sl_script_check));
    apr_sha1_final(digest, &ctx);
    for (i = 0; i < APR_SHA1_DIGESTSIZE; i++) {
        apr_snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    }
    return hex;
}

static struct timeval sl_tv(apr_interval_time_t t)
{
    struct timeval tv;
    tv.tv_sec = (long) apr_time_sec(t);
    tv.tv_usec = (long) apr_time_usec(t);
    return tv;
}

static apr_status_t sl_ctx_status(const redisContext *c, int err_no)
{
    if (c->err == REDIS_ERR_IO &&
        (err_no == EAGAIN || err_no == EWOULDBLOCK || err_no == ETIMEDOUT ||
         err_no == EINPROGRESS)) {
        return APR_TIMEUP;
    }
    if (c->err == REDIS_ERR_EOF ||
        (c->err == REDIS_ERR_IO &&
         (err_no == ECONNRESET || err_no == EPIPE))) {
        return APR_ECONNRESET;
    }
    return APR_EGENERAL;
}

static int sl_reply_ok(const redisReply *r)
{
    return r && r->type != REDIS_REPLY_ERROR;
}

/* A connection is set up once (timeouts, AUTH, SELECT) so that the request
 * path sends nothing but the script. */
static apr_status_t sl_conn_construct(void **resource, void *params,
                                      apr_pool_t *pool)
{
    sl_node_t *node = params;
    sl_redis_t *rs = node->rs;
    sl_conn_t *conn;
    redisContext *c;
    redisReply *reply;
    (void) pool;

    c = node->host
            ? redisConnectWithTimeout(node->host, node->port, rs->connect_tv)
            : redisConnectUnixWithTimeout(rs->url->path, rs->connect_tv);
    if (!c) {
        return APR_ENOMEM;
    }
    if (c->err) {
        apr_status_t rv = sl_ctx_status(c, errno);
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
    if (rs->url->password) {
        reply = rs->url->user
                    ? redisCommand(c, "AUTH %s %s", rs->url->user,
                                   rs->url->password)
                    : redisCommand(c, "AUTH %s", rs->url->password);
        if (!sl_reply_ok(reply)) {
            if (reply) {
                freeReplyObject(reply);
            }
            redisFree(c);
            return APR_EACCES;
        }
        freeReplyObject(reply);
    }
    if (rs->url->db) {
        reply = redisCommand(c, "SELECT %d", rs->url->db);
        if (!sl_reply_ok(reply)) {
            if (reply) {
                freeReplyObject(reply);
            }
            redisFree(c);
            return APR_EINVAL;
        }
        freeReplyObject(reply);
    }
    conn = apr_pcalloc(pool, sizeof(*conn));
    conn->ctx = c;
    *resource = conn;
    return APR_SUCCESS;
}

static apr_status_t sl_conn_destruct(void *resource, void *params,
                                     apr_pool_t *pool)
{
    sl_conn_t *conn = resource;
    (void) params;
    (void) pool;

    if (conn->ctx) {
        redisFree(conn->ctx);
        conn->ctx = NULL;
    }
    return APR_SUCCESS;
}

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
    if (apr_reslist_create(&node->pool, 0, rs->max_connections,
                           rs->max_connections, 0, sl_conn_construct,
                           sl_conn_destruct, node, rs->pool) != APR_SUCCESS) {
        return NULL;
    }
    apr_reslist_timeout_set(node->pool, rs->acquire_timeout);
    APR_ARRAY_PUSH(rs->nodes, sl_node_t *) = node;
    return node;
}

apr_status_t sl_redis_create(apr_pool_t *p, const sl_store_url_t *url,
                             apr_interval_time_t connect_timeout,
                             apr_interval_time_t command_timeout,
                             int max_connections, sl_redis_t **out)
{
    sl_redis_t *rs = apr_pcalloc(p, sizeof(*rs));
    apr_status_t rv;
    int i;

    rs->pool = p;
    rs->url = url;
    rs->connect_tv = sl_tv(connect_timeout);
    rs->command_tv = sl_tv(command_timeout);
    rs->acquire_timeout = connect_timeout + command_timeout;
    rs->max_connections = max_connections > 0 ? max_connections : 1;
    rs->sha = sl_redis_script_sha(p);
    rs->nodes = apr_array_make(p, 4, sizeof(sl_node_t *));
    rv = apr_thread_mutex_create(&rs->mutex, APR_THREAD_MUTEX_DEFAULT, p);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (url->kind == SL_STORE_UNIX) {
        if (!sl_node_add(rs, NULL, 0)) {
            return APR_EGENERAL;
        }
    }
    else {
        for (i = 0; i < url->nodes->nelts; i++) {
            const sl_hostport_t *hp = &APR_ARRAY_IDX(url->nodes, i,
                                                     sl_hostport_t);
            if (!sl_node_add(rs, hp->host, hp->port)) {
                return APR_EGENERAL;
            }
        }
    }
    if (url->kind == SL_STORE_CLUSTER) {
        rs->slots = apr_pcalloc(p, 16384 * sizeof(*rs->slots));
    }
    *out = rs;
    return APR_SUCCESS;
}

static sl_node_t *sl_node_for(sl_redis_t *rs, unsigned int slot)
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
static sl_node_t *sl_node_redirect(sl_redis_t *rs, const char *msg, int moved)
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
        rs->slots[slot] = (apr_uint16_t)(i + 1);
    }
    apr_thread_mutex_unlock(rs->mutex);
    return node;
}

static const char *sl_reply_decision(apr_pool_t *p, const redisReply *r,
                                     int n, sl_decision_t *d)
{
    long long *v;
    size_t i;

    if (r->type != REDIS_REPLY_ARRAY) {
        return apr_psprintf(p, "unexpected reply type %d", r->type);
    }
    v = apr_palloc(p, sizeof(*v) * (r->elements + 1));
    for (i = 0; i < r->elements; i++) {
        if (r->element[i]->type != REDIS_REPLY_INTEGER) {
            return apr_psprintf(p, "reply element %lu is not an integer",
                                (unsigned long) i);
        }
        v[i] = r->element[i]->integer;
    }
    return sl_decision_parse(p, v, r->elements, n, d);
}

apr_status_t sl_redis_check(sl_redis_t *rs, apr_pool_t *p,
                            const sl_check_t *checks, int n,
                            const char *member, apr_size_t member_len,
                            sl_decision_t *d, const char **err)
{
    int argc = 4 + n + 4 * n, i, k, attempt;
    const char **argv = apr_palloc(p, sizeof(*argv) * argc);
    size_t *argvlen = apr_palloc(p, sizeof(*argvlen) * argc);
    sl_node_t *node = sl_node_for(rs, sl_key_slot(checks[0].key,
                                                  checks[0].key_len));
    int reload = 0, asking = 0, retried = 0, reloads = 0;

    /* Binary-safe arguments: no key or value can be read as a command. */
    argv[0] = "EVALSHA";
    argv[1] = rs->sha;
    argv[2] = apr_itoa(p, n);
    for (i = 0; i < n; i++) {
        argv[3 + i] = checks[i].key;
        argvlen[3 + i] = checks[i].key_len;
    }
    k = 3 + n;
    argv[k] = member;
    argvlen[k++] = member_len;
    for (i = 0; i < n; i++) {
        char code[2] = {sl_algorithm_code(checks[i].algorithm), '\0'};
        argv[k++] = apr_pstrdup(p, code);
        /* apr_off_t_toa, not apr_psprintf: a fifth of the request path's
         * instructions went to formatting these three numbers. */
        argv[k++] = apr_off_t_toa(p, (apr_off_t) checks[i].requests);
        argv[k++] = apr_off_t_toa(p, (apr_off_t) checks[i].window);
        argv[k++] = apr_off_t_toa(p, (apr_off_t) (checks[i].burst
                                                       ? checks[i].burst
                                                       : checks[i].requests));
    }
    for (i = 0; i < argc; i++) {
        if (i < 3 || i > 3 + n) {
            argvlen[i] = strlen(argv[i]);
        }
    }

    for (attempt = 0; attempt <= SL_MAX_REDIRECTS + 1; attempt++) {
        sl_conn_t *conn;
        redisReply *reply = NULL, *last = NULL;
        int replies = 1, ok = 1, e;
        apr_status_t rv;

        if (!node) {
            *err = "cluster redirection to an unusable node";
            return APR_EGENERAL;
        }
        rv = apr_reslist_acquire(node->pool, (void **) &conn);
        if (rv != APR_SUCCESS) {
            *err = rv == APR_TIMEUP     ? "connect timed out"
                   : rv == APR_EACCES   ? "authentication failed"
                   : rv == APR_EINVAL   ? "SELECT failed"
                   : rv == APR_ENOMEM   ? "out of memory"
                                        : "connection refused";
            return rv;
        }
        if (asking) {
            ok = redisAppendCommand(conn->ctx, "ASKING") == REDIS_OK;
            replies++;
        }
        if (reload) {
            ok = ok && redisAppendCommand(conn->ctx, "SCRIPT LOAD %s",
                                          sl_script_check) == REDIS_OK;
            replies++;
        }
        ok = ok && redisAppendCommandArgv(conn->ctx, argc, argv, argvlen) ==
                       REDIS_OK;
        /* Pipelined: read every reply, keep the last (the script's). */
        for (i = 0; ok && i < replies; i++) {
            if (redisGetReply(conn->ctx, (void **) &reply) != REDIS_OK ||
                !reply) {
                ok = 0;
                break;
            }
            if (last) {
                freeReplyObject(last);
            }
            last = reply;
        }
        if (!ok) {
            e = errno;
            rv = sl_ctx_status(conn->ctx, e);
            *err = apr_pstrdup(p, conn->ctx->errstr[0] ? conn->ctx->errstr
                                                       : "I/O error");
            if (last) {
                freeReplyObject(last);
            }
            e = conn->uses;
            apr_reslist_invalidate(node->pool, conn);
            /* A pooled connection that the server closed (restart, idle
             * timeout) fails on first use: one retry on a fresh one. Never
             * after a timeout, which may have run the script already. */
            if (rv == APR_ECONNRESET && e > 0 && !retried) {
                retried = 1;
                continue;
            }
            return rv == APR_TIMEUP ? APR_TIMEUP : APR_EGENERAL;
        }
        conn->uses++;
        apr_reslist_release(node->pool, conn);
        asking = 0;
        reload = 0;
        if (last->type == REDIS_REPLY_ERROR) {
            const char *msg = last->str ? last->str : "";
            if (!strncmp(msg, "NOSCRIPT", 8) && reloads++ < 2) {
                /* Redis restarted or SCRIPT FLUSH: load and run again in one
                 * round trip. */
                reload = 1;
            }
            else if (!strncmp(msg, "MOVED ", 6) || !strncmp(msg, "ASK ", 4)) {
                asking = msg[1] == 'S';
                node = sl_node_redirect(rs, msg, !asking);
            }
            else {
                *err = apr_pstrdup(p, msg);
                freeReplyObject(last);
                return APR_EGENERAL;
            }
            freeReplyObject(last);
            continue;
        }
        *err = sl_reply_decision(p, last, n, d);
        freeReplyObject(last);
        return *err ? APR_EGENERAL : APR_SUCCESS;
    }
    *err = "too many redirections";
    return APR_EGENERAL;
}
