#include "sl_redis.h"
#include "sl_scripts.h"

#include <apr_sha1.h>
#include <apr_strings.h>
#include <apr_thread_mutex.h>
#include <apr_thread_proc.h>

#include <hiredis/hiredis.h>

#include <apr_atomic.h>

#include <errno.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A misbehaving cluster cannot make a child open sockets without bound. */
#define SL_MAX_NODES     64
#define SL_MAX_REDIRECTS 3

/* Auto-pipelining (threaded MPMs): at most this many commands share one
 * write and one read, and at most SL_PIPE_INFLIGHT batches per node are in
 * flight at once, each on its own connection (0 turns pipelining off; a
 * build-time knob for measuring, see bench/NOTES.md). One: Redis is the
 * resource every server shares, and with two in flight batches are smaller
 * (a 16-client burst in the suite shared no trip at all) for a request
 * that arrives while the only batch is out, which waits for it, a round
 * trip sooner. */
#define SL_PIPE_BATCH 64
#ifndef SL_PIPE_INFLIGHT
#define SL_PIPE_INFLIGHT 1
#endif

/* Allocated with malloc, not from the child's pool: connections come and go
 * with every Redis restart for the life of the child, and a pool would keep
 * each one's memory until the child exits. */
typedef struct sl_conn {
    redisContext *ctx;
    int uses;
    apr_uint32_t gen; /* the node's generation when it was made */
} sl_conn_t;

typedef struct sl_node {
    sl_redis_t *rs;
    const char *host; /* NULL for a unix socket */
    int port;
    /* Idle connections, at most one per thread of the child. Not an
     * apr_reslist: apr-util 1.6 makes a new resource with the list's lock
     * held, so while one thread waits out a connect timeout every other
     * thread of the child, even one that only wants an idle connection,
     * waits behind it, and n concurrent requests take n connect timeouts.
     * Here the lock only guards the stack; connecting happens outside. */
    apr_thread_mutex_t *lock;
    sl_conn_t **idle;
    int nidle;
    /* Bumped when a pooled connection is found closed by the server (a
     * restart closes all of them): idle connections from before are
     * dropped when next acquired instead of each failing a request. */
    volatile apr_uint32_t gen;
    /* Auto-pipelining, under qlock (not lock, which the leaders take for
     * the idle stack): commands waiting for a batch (FIFO) and the
     * batches in flight. */
    apr_thread_mutex_t *qlock;
    struct sl_pcmd *qhead, *qtail;
    int inflight;
} sl_node_t;

/* What a thread waits on while another carries its command: one per thread
 * and client, made on the thread's first wait and handed back to the
 * client's spares when the thread exits (mod_http2 starts and ends worker
 * threads for the life of the child), so their number stays that of the
 * threads alive at once. A POSIX
 * semaphore rather than an APR mutex and condition variable: a waiter is
 * woken exactly once per wait (one futex wake, one futex wait), where the
 * condition variable cost the leader a lock, a signal and often a second
 * wake for every thread it answered (bench/NOTES.md). */
typedef struct sl_waiter {
    sem_t sem;
    struct sl_redis *rs;
    struct sl_waiter *next; /* in rs->spare */
} sl_waiter_t;

/* One request's command on its way through a node's pipeline. It lives on
 * the requesting thread's stack and its text in the request pool: once a
 * leader has taken it (SL_PCMD_TAKEN) the requester waits for the leader's
 * word (DONE, or LEAD when handed the pipeline) whatever its deadline, so
 * neither is freed while the leader still reads it. QUEUED becomes TAKEN
 * under the node's qlock; TAKEN becomes DONE or LEAD with one post of the
 * waiter's semaphore, after the leader wrote the outcome. */
#define SL_PCMD_QUEUED 0
#define SL_PCMD_TAKEN  1
#define SL_PCMD_LEAD   2 /* handed the node's pipeline: run the next batch */
#define SL_PCMD_DONE   3

typedef struct sl_pcmd {
    struct sl_pcmd *next;
    const char *buf;
    apr_size_t len;
    sl_waiter_t *waiter; /* NULL for the thread that led at once */
    volatile apr_uint32_t state;
    /* DONE: the reply, or NULL and rv, err (a copy: the context that said
     * it is gone) and stale (it failed on a pooled connection that the
     * server had closed, so one retry on a fresh one is safe). */
    redisReply *reply;
    apr_status_t rv;
    int stale;
    char err[128];
} sl_pcmd_t;

struct sl_redis {
    apr_pool_t *pool;
    const sl_store_url_t *url;
    struct timeval connect_tv;
    struct timeval command_tv;
    int max_connections;
    /* Threads of a child share round trips to a node (see sl_pipe_exec);
     * never under a single-threaded MPM. */
    int pipeline;
    apr_interval_time_t queue_timeout; /* connect + command timeouts */
    apr_threadkey_t *waiter_key;       /* this thread's sl_waiter_t */
    sl_waiter_t *spare;                /* of exited threads, under mutex */
    const char *sha;
    sl_breaker_t *breaker;
    /* Guards nodes, slots and allocations from pool: threads of one child
     * share this structure, never a connection. */
    apr_thread_mutex_t *mutex;
    apr_array_header_t *nodes; /* sl_node_t * */
    apr_uint16_t *slots;       /* cluster: node index + 1, 0 unknown */
};

static void sl_waiter_release(void *data);

static apr_status_t sl_waiter_key_cleanup(void *data)
{
    sl_redis_t *rs = data;

    apr_threadkey_private_delete(rs->waiter_key);
    return APR_SUCCESS;
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

/* A connection is set up once (timeouts, AUTH, SELECT) so that the request
 * path sends nothing but the script. */
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
 * failed mid-reply unusable), one of an old generation, or one more than
 * the idle stack holds. */
static void sl_conn_destroy(sl_conn_t *conn)
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
    node->idle =
        apr_pcalloc(rs->pool, sizeof(*node->idle) * rs->max_connections);
    if (apr_thread_mutex_create(&node->lock, APR_THREAD_MUTEX_DEFAULT,
                                rs->pool) != APR_SUCCESS) {
        return NULL;
    }
    if (rs->pipeline &&
        apr_thread_mutex_create(&node->qlock, APR_THREAD_MUTEX_DEFAULT,
                                rs->pool) != APR_SUCCESS) {
        return NULL;
    }
    apr_pool_cleanup_register(rs->pool, node, sl_node_cleanup,
                              apr_pool_cleanup_null);
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
    rs->max_connections = max_connections > 0 ? max_connections : 1;
#if APR_HAS_THREADS
    rs->pipeline = rs->max_connections > 1 && SL_PIPE_INFLIGHT > 0;
#endif
    rs->queue_timeout = connect_timeout + command_timeout;
    rs->sha = sl_redis_script_sha(p);
    rs->nodes = apr_array_make(p, 4, sizeof(sl_node_t *));
    rv = apr_thread_mutex_create(&rs->mutex, APR_THREAD_MUTEX_DEFAULT, p);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (rs->pipeline) {
        if (apr_threadkey_private_create(&rs->waiter_key, sl_waiter_release,
                                         p) == APR_SUCCESS) {
            /* Registered after the mutex, so run before its destruction:
             * no thread that exits later hands a waiter back. */
            apr_pool_cleanup_register(p, rs, sl_waiter_key_cleanup,
                                      apr_pool_cleanup_null);
        }
        else {
            rs->pipeline = 0;
        }
    }
    if (url->kind == SL_STORE_UNIX) {
        if (!sl_node_add(rs, NULL, 0)) {
            return APR_EGENERAL;
        }
    }
    else {
        for (i = 0; i < url->nodes->nelts; i++) {
            const sl_hostport_t *hp =
                &APR_ARRAY_IDX(url->nodes, i, sl_hostport_t);
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
        rs->slots[slot] = (apr_uint16_t) (i + 1);
    }
    apr_thread_mutex_unlock(rs->mutex);
    return node;
}

/* The most recently used idle connection of the node's current
 * generation (idle ones from before a server restart are closed unused),
 * else a new one, made without holding the lock. */
static apr_status_t sl_conn_acquire(sl_node_t *node, sl_conn_t **out)
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

static void sl_conn_release(sl_node_t *node, sl_conn_t *conn)
{
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

static const char *sl_acquire_error(apr_status_t rv)
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

void sl_redis_breaker_set(sl_redis_t *rs, sl_breaker_t *b)
{
    rs->breaker = b;
}

sl_breaker_t *sl_redis_breaker(const sl_redis_t *rs)
{
    return rs->breaker;
}

static const char *sl_reply_decision(apr_pool_t *p, const redisReply *r, int n,
                                     sl_decision_t *d)
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

/* Errors that leave the connection fine: the request's second trip
 * reloads the script or follows the redirection. Any other error may be
 * the connection's own state (NOAUTH after a restart with a password,
 * READONLY after a failover, LOADING): a new connection starts over, a
 * pooled one would fail every request it serves. */
static int sl_error_usable(const char *msg)
{
    return !strncmp(msg, "NOSCRIPT", 8) || !strncmp(msg, "MOVED ", 6) ||
           !strncmp(msg, "ASK ", 4);
}

static char *sl_resp_header(char *o, char type, apr_size_t n)
{
    char digits[24];
    int k = 0;

    *o++ = type;
    do {
        digits[k++] = (char) ('0' + n % 10);
        n /= 10;
    } while (n);
    while (k) {
        *o++ = digits[--k];
    }
    *o++ = '\r';
    *o++ = '\n';
    return o;
}

/* The command in RESP, as redisFormatCommandArgv makes it, but in the
 * request pool rather than malloc'd: it lives as long as its request. */
static const char *sl_resp_format(apr_pool_t *p, int argc, const char **argv,
                                  const size_t *argvlen, apr_size_t *len)
{
    apr_size_t total = 24 + 2;
    char *buf, *o;
    int i;

    for (i = 0; i < argc; i++) {
        total += 24 + 2 + argvlen[i] + 2;
    }
    buf = o = apr_palloc(p, total);
    o = sl_resp_header(o, '*', (apr_size_t) argc);
    for (i = 0; i < argc; i++) {
        o = sl_resp_header(o, '$', argvlen[i]);
        memcpy(o, argv[i], argvlen[i]);
        o += argvlen[i];
        *o++ = '\r';
        *o++ = '\n';
    }
    *len = (apr_size_t) (o - buf);
    return buf;
}

static apr_status_t sl_waiter_cleanup(void *data)
{
    sl_waiter_t *w = data;

    sem_destroy(&w->sem);
    return APR_SUCCESS;
}

/* Thread exit (the key's destructor): the waiter goes to the spares. Its
 * semaphore is at zero: a thread leaves sl_pipe_exec only after taking the
 * one post it was owed. */
static void sl_waiter_release(void *data)
{
    sl_waiter_t *w = data;
    sl_redis_t *rs = w->rs;

    apr_thread_mutex_lock(rs->mutex);
    w->next = rs->spare;
    rs->spare = w;
    apr_thread_mutex_unlock(rs->mutex);
}

/* This thread's waiter for rs: a spare, else a new one from the child's
 * pool (under rs->mutex); NULL if that failed. */
static sl_waiter_t *sl_waiter(sl_redis_t *rs)
{
    void *data = NULL;
    sl_waiter_t *w;

    if (apr_threadkey_private_get(&data, rs->waiter_key) == APR_SUCCESS &&
        data) {
        return data;
    }
    apr_thread_mutex_lock(rs->mutex);
    if ((w = rs->spare) != NULL) {
        rs->spare = w->next;
        w->next = NULL;
    }
    else {
        w = apr_pcalloc(rs->pool, sizeof(*w));
        w->rs = rs;
        if (sem_init(&w->sem, 0, 0) == 0) {
            apr_pool_cleanup_register(rs->pool, w, sl_waiter_cleanup,
                                      apr_pool_cleanup_null);
        }
        else {
            w = NULL;
        }
    }
    if (w && apr_threadkey_private_set(w, rs->waiter_key) != APR_SUCCESS) {
        w->next = rs->spare;
        rs->spare = w;
        w = NULL;
    }
    apr_thread_mutex_unlock(rs->mutex);
    return w;
}

/* Tells a waiting thread that its command is answered or that it leads
 * now: exactly one post per command taken from the queue, so the
 * semaphore is back at zero when its thread returns. The command may be
 * gone as soon as the post is made. */
static void sl_pcmd_post(sl_pcmd_t *c, apr_uint32_t state)
{
    sl_waiter_t *w = c->waiter;

    apr_atomic_set32(&c->state, state);
    sem_post(&w->sem);
}

/* The leader's round trip, entered with node->qlock held and one of the
 * node's in-flight batches counted for it, left with it released: its own
 * command, then as many queued ones as fit, all written at once (hiredis
 * flushes its output buffer in one write), then every reply in order on
 * the same connection. The pipeline then passes to the thread of the next
 * queued command, so no request waits for batches after its own, and each
 * command gets its reply or the batch's failure, as a direct call would
 * have seen it. */
static void sl_pipe_run(sl_node_t *node, sl_pcmd_t *own, int *trips)
{
    sl_pcmd_t *batch[SL_PIPE_BATCH], *next = NULL;
    sl_conn_t *conn = NULL;
    const char *err = NULL;
    apr_status_t rv;
    int n = 0, got = 0, ok = 1, keep = 1, stale = 0, i;

    batch[n++] = own;
    while (n < SL_PIPE_BATCH && node->qhead) {
        sl_pcmd_t *c = node->qhead;
        node->qhead = c->next;
        c->next = NULL;
        apr_atomic_set32(&c->state, SL_PCMD_TAKEN);
        batch[n++] = c;
    }
    if (!node->qhead) {
        node->qtail = NULL;
    }
    apr_thread_mutex_unlock(node->qlock);

    rv = sl_conn_acquire(node, &conn);
    if (rv != APR_SUCCESS) {
        err = sl_acquire_error(rv);
        conn = NULL;
    }
    else {
        (*trips)++;
        for (i = 0; ok && i < n; i++) {
            ok = redisAppendFormattedCommand(conn->ctx, batch[i]->buf,
                                             batch[i]->len) == REDIS_OK;
        }
        for (got = 0; ok && got < n; got++) {
            void *reply = NULL;
            if (redisGetReply(conn->ctx, &reply) != REDIS_OK || !reply) {
                ok = 0;
                break;
            }
            batch[got]->reply = reply;
            if (batch[got]->reply->type == REDIS_REPLY_ERROR &&
                !sl_error_usable(batch[got]->reply->str ? batch[got]->reply->str
                                                        : "")) {
                keep = 0;
            }
        }
        if (ok) {
            conn->uses++;
        }
        else {
            int e = errno;
            rv = sl_ctx_status(conn->ctx, e);
            err = rv == APR_TIMEUP       ? "command timed out"
                  : conn->ctx->errstr[0] ? conn->ctx->errstr
                                         : "I/O error";
            /* As in sl_redis_decide: a pooled connection that the server
             * closed marks its generation stale, and its commands may be
             * sent again; never after a timeout, which may have run them. */
            stale = rv == APR_ECONNRESET && conn->uses > 0;
            if (stale) {
                apr_atomic_cas32(&node->gen, conn->gen + 1, conn->gen);
            }
            rv = rv == APR_TIMEUP ? APR_TIMEUP : APR_EGENERAL;
            keep = 0;
        }
    }
    /* The commands without a reply; err copied before the context that
     * holds it is freed. */
    for (i = got; i < n; i++) {
        batch[i]->rv = rv;
        batch[i]->stale = stale;
        apr_cpystrn(batch[i]->err, err, sizeof(batch[i]->err));
    }
    if (conn) {
        if (keep) {
            sl_conn_release(node, conn);
        }
        else {
            sl_conn_destroy(conn);
        }
    }

    /* The next batch first: its commands have waited longest. */
    apr_thread_mutex_lock(node->qlock);
    if (node->qhead) {
        next = node->qhead;
        node->qhead = next->next;
        if (!node->qhead) {
            node->qtail = NULL;
        }
        next->next = NULL;
        apr_atomic_set32(&next->state, SL_PCMD_TAKEN);
    }
    else {
        node->inflight--;
    }
    apr_thread_mutex_unlock(node->qlock);
    if (next) {
        sl_pcmd_post(next, SL_PCMD_LEAD);
    }
    for (i = 1; i < n; i++) {
        sl_pcmd_post(batch[i], SL_PCMD_DONE);
    }
}

/* One request's command through the node's pipeline: the thread that finds
 * no batch in flight sends it at once (with whatever queues meanwhile);
 * the others queue and wait to be answered or handed the pipeline. A
 * command still queued at its deadline (the bound of a direct call:
 * connect and command timeouts) leaves the queue unsent and fails with
 * APR_TIMEUP. APR_SUCCESS with *reply, else the failure with *stale and
 * *err; APR_ENOTIMPL when this thread has no waiter (the caller then goes
 * the direct way). */
static apr_status_t sl_pipe_exec(sl_redis_t *rs, sl_node_t *node, apr_pool_t *p,
                                 const char *buf, apr_size_t len,
                                 redisReply **reply, int *stale,
                                 const char **err, int *trips)
{
    sl_pcmd_t cmd;
    sl_waiter_t *w;
    apr_uint32_t state;
    struct timespec ts;

    cmd.next = NULL;
    cmd.buf = buf;
    cmd.len = len;
    cmd.waiter = NULL;
    cmd.state = SL_PCMD_QUEUED;
    cmd.reply = NULL;
    cmd.rv = APR_SUCCESS;
    cmd.stale = 0;
    cmd.err[0] = '\0';

    w = sl_waiter(rs);
    apr_thread_mutex_lock(node->qlock);
    if (node->inflight < SL_PIPE_INFLIGHT && !node->qhead) {
        node->inflight++;
        sl_pipe_run(node, &cmd, trips);
    }
    else if (!w) {
        apr_thread_mutex_unlock(node->qlock);
        return APR_ENOTIMPL;
    }
    else {
        /* The wall clock, as sem_timedwait wants it (and as libfaketime
         * shifts both). */
        apr_time_t deadline = apr_time_now() + rs->queue_timeout;
        cmd.waiter = w;
        if (node->qtail) {
            node->qtail->next = &cmd;
        }
        else {
            node->qhead = &cmd;
        }
        node->qtail = &cmd;
        apr_thread_mutex_unlock(node->qlock);

        ts.tv_sec = (time_t) apr_time_sec(deadline);
        ts.tv_nsec = (long) apr_time_usec(deadline) * 1000;
        while (sem_timedwait(&w->sem, &ts) != 0) {
            if (errno == EINTR) {
                continue;
            }
            /* Deadline: leave the queue unsent, unless a leader has taken
             * the command already (then wait for its word, unbounded: the
             * leader is bounded by the command timeout). */
            apr_thread_mutex_lock(node->qlock);
            if (apr_atomic_read32(&cmd.state) == SL_PCMD_QUEUED) {
                sl_pcmd_t **pp = &node->qhead, *prev = NULL;
                while (*pp != &cmd) {
                    prev = *pp;
                    pp = &(*pp)->next;
                }
                *pp = cmd.next;
                if (node->qtail == &cmd) {
                    node->qtail = prev;
                }
                apr_thread_mutex_unlock(node->qlock);
                *err = "timed out waiting for a batch";
                return APR_TIMEUP;
            }
            apr_thread_mutex_unlock(node->qlock);
            while (sem_wait(&w->sem) != 0) {
                /* EINTR; anything else cannot happen to a valid
                 * semaphore, and leaving before the leader's word would
                 * free the command under it. */
            }
            break;
        }
        state = apr_atomic_read32(&cmd.state);
        if (state == SL_PCMD_LEAD) {
            apr_thread_mutex_lock(node->qlock);
            sl_pipe_run(node, &cmd, trips);
        }
    }
    if (cmd.reply) {
        *reply = cmd.reply;
        return APR_SUCCESS;
    }
    *stale = cmd.stale;
    *err = apr_pstrdup(p, cmd.err);
    return cmd.rv;
}

apr_status_t sl_redis_decide(sl_redis_t *rs, apr_pool_t *p,
                             const sl_budget_t *budgets, int n,
                             const char *member, apr_size_t member_len,
                             sl_decision_t *d, const char **err, int *trips)
{
    int argc = 4 + n + 6 * n, i, k, attempt;
    const char **argv = apr_palloc(p, sizeof(*argv) * argc);
    size_t *argvlen = apr_palloc(p, sizeof(*argvlen) * argc);
    sl_node_t *node =
        sl_node_for(rs, sl_key_slot(budgets[0].key, budgets[0].key_len));
    int reload = 0, asking = 0, retried = 0, reloads = 0, first = 0;

    /* Binary-safe arguments: no key or value can be read as a command. */
    argv[0] = "EVALSHA";
    argv[1] = rs->sha;
    argv[2] = apr_itoa(p, n);
    for (i = 0; i < n; i++) {
        argv[3 + i] = budgets[i].key;
        argvlen[3 + i] = budgets[i].key_len;
    }
    k = 3 + n;
    argv[k] = member;
    argvlen[k++] = member_len;
    for (i = 0; i < n; i++) {
        char code[2] = {sl_algorithm_code(budgets[i].algorithm), '\0'};
        argv[k++] = apr_pstrdup(p, code);
        /* apr_off_t_toa, not apr_psprintf: a fifth of the request path's
         * instructions went to formatting these three numbers. */
        argv[k++] = apr_off_t_toa(p, (apr_off_t) budgets[i].requests);
        argv[k++] = apr_off_t_toa(p, (apr_off_t) budgets[i].window);
        argv[k++] = apr_off_t_toa(p, (apr_off_t) (budgets[i].burst
                                                      ? budgets[i].burst
                                                      : budgets[i].requests));
        argv[k++] = budgets[i].cost > 1
                        ? apr_off_t_toa(p, (apr_off_t) budgets[i].cost)
                        : "1";
        argv[k++] = budgets[i].block
                        ? apr_off_t_toa(p, (apr_off_t) budgets[i].block)
                        : "0";
    }
    for (i = 0; i < argc; i++) {
        if (i < 3 || i > 3 + n) {
            argvlen[i] = strlen(argv[i]);
        }
    }
    *trips = 0;

    if (rs->pipeline && node) {
        /* The first trip shares a batch; a second one (reload, redirect,
         * retry on a fresh connection) goes the direct way below. */
        redisReply *reply = NULL;
        apr_size_t len;
        const char *buf = sl_resp_format(p, argc, argv, argvlen, &len);
        int stale = 0;
        apr_status_t rv =
            sl_pipe_exec(rs, node, p, buf, len, &reply, &stale, err, trips);

        if (rv == APR_SUCCESS) {
            const char *msg = reply->str ? reply->str : "";
            first = 1;
            if (reply->type != REDIS_REPLY_ERROR) {
                *err = sl_reply_decision(p, reply, n, d);
                freeReplyObject(reply);
                return *err ? APR_EGENERAL : APR_SUCCESS;
            }
            if (!strncmp(msg, "NOSCRIPT", 8)) {
                reload = 1;
                reloads++;
            }
            else if (!strncmp(msg, "MOVED ", 6) || !strncmp(msg, "ASK ", 4)) {
                asking = msg[1] == 'S';
                node = sl_node_redirect(rs, msg, !asking);
            }
            else {
                *err = apr_pstrdup(p, msg);
                freeReplyObject(reply);
                return APR_EGENERAL;
            }
            freeReplyObject(reply);
        }
        else if (rv != APR_ENOTIMPL) {
            if (!stale) {
                return rv;
            }
            first = 1;
            retried = 1;
        }
    }

    for (attempt = first; attempt <= SL_MAX_REDIRECTS + 1; attempt++) {
        sl_conn_t *conn;
        redisReply *reply = NULL, *last = NULL;
        int replies = 1, ok = 1, e;
        apr_status_t rv;

        if (!node) {
            *err = "cluster redirection to an unusable node";
            return APR_EGENERAL;
        }
        rv = sl_conn_acquire(node, &conn);
        if (rv != APR_SUCCESS) {
            *err = sl_acquire_error(rv);
            return rv;
        }
        (*trips)++;
        if (asking) {
            ok = redisAppendCommand(conn->ctx, "ASKING") == REDIS_OK;
            replies++;
        }
        if (reload) {
            ok = ok && redisAppendCommand(conn->ctx, "SCRIPT LOAD %s",
                                          sl_script_check) == REDIS_OK;
            replies++;
        }
        ok = ok &&
             redisAppendCommandArgv(conn->ctx, argc, argv, argvlen) == REDIS_OK;
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
            *err = rv == APR_TIMEUP
                       ? "command timed out"
                       : apr_pstrdup(p, conn->ctx->errstr[0] ? conn->ctx->errstr
                                                             : "I/O error");
            if (last) {
                freeReplyObject(last);
            }
            e = conn->uses;
            if (rv == APR_ECONNRESET && e > 0) {
                /* The server closed a pooled connection (restart, idle
                 * timeout): the others from before are closed too. */
                apr_atomic_cas32(&node->gen, conn->gen + 1, conn->gen);
            }
            /* hiredis leaves a context that failed mid-reply unusable (a
             * late reply would be read as the next command's): never back
             * into the pool. */
            sl_conn_destroy(conn);
            /* A stale pooled connection fails on first use: one retry on a
             * fresh one. Never after a timeout, which may have run the
             * script already. */
            if (rv == APR_ECONNRESET && e > 0 && !retried) {
                retried = 1;
                continue;
            }
            return rv == APR_TIMEUP ? APR_TIMEUP : APR_EGENERAL;
        }
        conn->uses++;
        asking = 0;
        reload = 0;
        if (last->type == REDIS_REPLY_ERROR) {
            const char *msg = last->str ? last->str : "";
            if (sl_error_usable(msg)) {
                sl_conn_release(node, conn);
            }
            else {
                sl_conn_destroy(conn);
            }
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
        sl_conn_release(node, conn);
        *err = sl_reply_decision(p, last, n, d);
        freeReplyObject(last);
        return *err ? APR_EGENERAL : APR_SUCCESS;
    }
    *err = "too many redirections";
    return APR_EGENERAL;
}
