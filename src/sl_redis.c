/* The Redis store's decision: the script's arguments, one round trip
 * (through the pipeline or direct), and what its reply means. Connections
 * are sl_conn.c's, the pipeline sl_pipe.c's, routing sl_topology.c's. */
#include "sl_redis_private.h"
#include "sl_scripts.h"

#include <apr_sha1.h>
#include <apr_strings.h>

#include <string.h>

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

apr_status_t sl_redis_create(apr_pool_t *p, const sl_store_url_t *url,
                             apr_interval_time_t connect_timeout,
                             apr_interval_time_t command_timeout,
                             int max_connections, sl_redis_t **out)
{
    sl_redis_t *rs = apr_pcalloc(p, sizeof(*rs));
    const char *argv[3] = {"SCRIPT", "LOAD", sl_script_check};
    size_t argvlen[3] = {6, 4, strlen(sl_script_check)};
    apr_status_t rv;

    rs->pool = p;
    rs->url = url;
    rs->connect_timeout = connect_timeout;
    rs->command_timeout = command_timeout;
    rs->max_connections = max_connections > 0 ? max_connections : 1;
#if APR_HAS_THREADS
    rs->pipeline = rs->max_connections > 1 && SL_PIPE_INFLIGHT > 0;
#endif
    rs->queue_timeout = connect_timeout + command_timeout;
    rs->sha = sl_redis_script_sha(p);
    rs->load = sl_resp_format(p, 3, argv, argvlen, &rs->load_len);
    rv = apr_thread_mutex_create(&rs->mutex, APR_THREAD_MUTEX_DEFAULT, p);
    if (rv == APR_SUCCESS && url->kind == SL_STORE_SENTINEL) {
        rs->master.sentinel.url = url;
        rs->master.sentinel.connect_timeout = connect_timeout;
        rs->master.sentinel.command_timeout = command_timeout;
        rv = apr_thread_mutex_create(&rs->master.lock, APR_THREAD_MUTEX_DEFAULT,
                                     p);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (rs->pipeline && sl_pipe_init(rs, p) != APR_SUCCESS) {
        rs->pipeline = 0;
    }
    rv = sl_topology_init(rs);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    *out = rs;
    return APR_SUCCESS;
}

void sl_redis_breaker_set(sl_redis_t *rs, sl_breaker_t *b)
{
    rs->breaker = b;
}

sl_breaker_t *sl_redis_breaker(const sl_redis_t *rs)
{
    return rs->breaker;
}

void sl_redis_tls_set(sl_redis_t *rs, struct sl_tls *tls)
{
    rs->tls = tls;
    rs->master.sentinel.tls = tls;
}

void sl_redis_sentinel_auth(sl_redis_t *rs, const char *user,
                            const char *password)
{
    rs->master.sentinel.user = user;
    rs->master.sentinel.password = password;
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
int sl_error_usable(const char *msg)
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
const char *sl_resp_format(apr_pool_t *p, int argc, const char **argv,
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

/* What a round trip's outcome asks of the request: the decision, a
 * second trip (load the script, follow a redirection, or send again on a
 * fresh connection), or a failure. One reading for the pipelined and the
 * direct trip. */
#define SL_REPLY_OK       0
#define SL_REPLY_NOSCRIPT 1
#define SL_REPLY_MOVED    2
#define SL_REPLY_ASK      3
#define SL_REPLY_RETRY    4
#define SL_REPLY_FATAL    5

static int sl_reply_classify(apr_status_t rv, int stale, const redisReply *r)
{
    const char *msg;

    if (rv != APR_SUCCESS) {
        return stale ? SL_REPLY_RETRY : SL_REPLY_FATAL;
    }
    if (r->type != REDIS_REPLY_ERROR) {
        return SL_REPLY_OK;
    }
    msg = r->str ? r->str : "";
    if (!strncmp(msg, "NOSCRIPT", 8)) {
        return SL_REPLY_NOSCRIPT;
    }
    if (!strncmp(msg, "MOVED ", 6)) {
        return SL_REPLY_MOVED;
    }
    if (!strncmp(msg, "ASK ", 4)) {
        return SL_REPLY_ASK;
    }
    return SL_REPLY_FATAL;
}

#define SL_RESP_ASKING "*1\r\n$6\r\nASKING\r\n"

/* One round trip on a connection of its own: ASKING and SCRIPT LOAD first
 * when asked, then the command, all written at once; the last reply is
 * the command's. */
static apr_status_t sl_direct(sl_redis_t *rs, sl_node_t *node, apr_pool_t *p,
                              const char *buf, apr_size_t len, int asking,
                              int reload, redisReply **reply, int *stale,
                              const char **err, int *trips)
{
    sl_conn_t *conn;
    redisReply *last = NULL, *r;
    char errbuf[128];
    int replies = 1 + !!asking + !!reload, i;
    apr_status_t rv = sl_conn_acquire(node, &conn);

    if (rv != APR_SUCCESS) {
        *err = apr_pstrdup(p, sl_conn_error(rv));
        return rv;
    }
    (*trips)++;
    if (asking) {
        rv = sl_conn_send(conn, SL_RESP_ASKING, sizeof(SL_RESP_ASKING) - 1);
    }
    if (rv == APR_SUCCESS && reload) {
        rv = sl_conn_send(conn, rs->load, rs->load_len);
    }
    if (rv == APR_SUCCESS) {
        rv = sl_conn_send(conn, buf, len);
    }
    for (i = 0; rv == APR_SUCCESS && i < replies; i++) {
        rv = sl_conn_read(conn, &r, errbuf, sizeof(errbuf));
        if (rv == APR_SUCCESS) {
            if (last) {
                freeReplyObject(last);
            }
            last = r;
        }
    }
    if (rv != APR_SUCCESS) {
        if (last) {
            freeReplyObject(last);
        }
        *err = rv == APR_ENOMEM ? "out of memory" : apr_pstrdup(p, errbuf);
        *stale = sl_conn_discard(node, conn, rv);
        return rv == APR_TIMEUP ? APR_TIMEUP : APR_EGENERAL;
    }
    if (last->type == REDIS_REPLY_ERROR &&
        !sl_error_usable(last->str ? last->str : "")) {
        sl_conn_error_reply(rs, last->str);
        sl_conn_destroy(conn);
    }
    else {
        sl_conn_release(node, conn);
    }
    *reply = last;
    return APR_SUCCESS;
}

/* The script's arguments, binary-safe: no key or value can be read as a
 * command. */
static const char *sl_decide_command(sl_redis_t *rs, apr_pool_t *p,
                                     const sl_budget_t *budgets, int n,
                                     const char *member, apr_size_t member_len,
                                     apr_size_t *len)
{
    int argc = 4 + n + 4 * n, i, k;
    const char **argv = apr_palloc(p, sizeof(*argv) * argc);
    size_t *argvlen = apr_palloc(p, sizeof(*argvlen) * argc);

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
    }
    for (i = 0; i < argc; i++) {
        if (i < 3 || i > 3 + n) {
            argvlen[i] = strlen(argv[i]);
        }
    }
    return sl_resp_format(p, argc, argv, argvlen, len);
}

apr_status_t sl_redis_decide(sl_redis_t *rs, apr_pool_t *p,
                             const sl_budget_t *budgets, int n,
                             const char *member, apr_size_t member_len,
                             sl_decision_t *d, const char **err, int *trips)
{
    apr_size_t len;
    const char *buf =
        sl_decide_command(rs, p, budgets, n, member, member_len, &len);
    sl_node_t *node =
        sl_node_for(rs, sl_key_slot(budgets[0].key, budgets[0].key_len));
    int asking = 0, reload = 0, reloads = 0, retried = 0, attempt;

    *trips = 0;
    for (attempt = 0; attempt <= SL_MAX_REDIRECTS + 1; attempt++) {
        redisReply *reply = NULL;
        apr_status_t rv = APR_ENOTIMPL;
        int stale = 0, cls;

        if (!node) {
            *err = "cluster redirection to an unusable node";
            return APR_EGENERAL;
        }
        /* The first trip shares a batch; a second one (reload, redirect,
         * retry on a fresh connection) goes the direct way. */
        if (attempt == 0 && rs->pipeline) {
            rv =
                sl_pipe_exec(rs, node, p, buf, len, &reply, &stale, err, trips);
        }
        if (rv == APR_ENOTIMPL) {
            rv = sl_direct(rs, node, p, buf, len, asking, reload, &reply,
                           &stale, err, trips);
        }
        asking = reload = 0;
        cls = sl_reply_classify(rv, stale, reply);
        if (cls == SL_REPLY_NOSCRIPT && reloads++ >= 2) {
            cls = SL_REPLY_FATAL;
        }
        switch (cls) {
        case SL_REPLY_OK:
            *err = sl_reply_decision(p, reply, n, d);
            freeReplyObject(reply);
            return *err ? APR_EGENERAL : APR_SUCCESS;
        case SL_REPLY_NOSCRIPT:
            /* Redis restarted or SCRIPT FLUSH: load and run again in one
             * round trip. */
            reload = 1;
            break;
        case SL_REPLY_MOVED:
        case SL_REPLY_ASK:
            asking = cls == SL_REPLY_ASK;
            node = sl_node_redirect(rs, reply->str, !asking);
            break;
        case SL_REPLY_RETRY:
            /* A stale pooled connection fails on first use: one retry on
             * a fresh one. */
            if (retried) {
                return rv;
            }
            retried = 1;
            break;
        default:
            if (!reply) {
                return rv;
            }
            *err = apr_pstrdup(p, reply->str ? reply->str : "");
            freeReplyObject(reply);
            return APR_EGENERAL;
        }
        if (reply) {
            freeReplyObject(reply);
        }
    }
    *err = "too many redirections";
    return APR_EGENERAL;
}
