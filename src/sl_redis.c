/* SPDX-License-Identifier: Apache-2.0 */
/* The Redis store's decision: the script's arguments, one round trip
 * (through the pipeline or direct), and what its reply means. Connections
 * are sl_conn.c's, the pipeline sl_pipe.c's, the protocol sl_resp.c's, a
 * call's routing sl_way.c's, the slot map sl_topology.c's and
 * sl_slots.c's. */
#include "sl_redis_private.h"
#include "sl_distinct.h"
#include "sl_ident.h"
#include "sl_script_layout.h"
#include "sl_scripts.h"
#include "sl_way.h"

#include <apr_sha1.h>
#include <apr_strings.h>

#include <string.h>

/* The hex SHA-1 of a script's text: its name for EVALSHA. */
static const char *sl_sha1_hex(apr_pool_t *p, const char *text)
{
    unsigned char digest[APR_SHA1_DIGESTSIZE];
    apr_sha1_ctx_t ctx;
    char *hex = apr_palloc(p, 2 * APR_SHA1_DIGESTSIZE + 1);
    int i;

    apr_sha1_init(&ctx);
    apr_sha1_update_binary(&ctx, (const unsigned char *) text, strlen(text));
    apr_sha1_final(digest, &ctx);
    for (i = 0; i < APR_SHA1_DIGESTSIZE; i++) {
        apr_snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    }
    return hex;
}

static void sl_script_init(apr_pool_t *p, sl_script_t *sc, const char *text)
{
    const char *argv[3] = {"SCRIPT", "LOAD", text};
    size_t argvlen[3] = {6, 4, strlen(text)};

    char *head = apr_palloc(p, SL_RESP_ARG_MAX(7) +
                                   SL_RESP_ARG_MAX(2 * APR_SHA1_DIGESTSIZE));

    sc->sha = sl_sha1_hex(p, text);
    sc->head = head;
    sc->head_len = (apr_size_t) (sl_resp_arg(sl_resp_arg(head, "EVALSHA", 7),
                                             sc->sha, 2 * APR_SHA1_DIGESTSIZE) -
                                 head);
    sc->load = sl_resp_format(p, 3, argv, argvlen, &sc->load_len);
}

/* Child exit, the workers gone: every node and its idle connections. */
static apr_status_t sl_redis_cleanup(void *data)
{
    sl_redis_t *rs = data;

    sl_topo_clear(&rs->topo);
    return APR_SUCCESS;
}

/* The table starts with the seeds (the one server of a store that is not
 * a cluster); a cluster's first map replaces them with its masters. */
static apr_status_t sl_redis_seeds(sl_redis_t *rs, apr_pool_t *p)
{
    const sl_store_url_t *url = rs->url;
    int i;

    rs->topo.node_new = sl_node_create;
    rs->topo.node_free = sl_node_destroy;
    rs->topo.ctx = rs;
    apr_pool_cleanup_register(p, rs, sl_redis_cleanup, apr_pool_cleanup_null);
    if (url->kind == SL_URL_CLUSTER) {
        rs->topo.slots = apr_pcalloc(p, 16384 * sizeof(*rs->topo.slots));
    }
    if (url->kind == SL_URL_UNIX) {
        return sl_topo_node(&rs->topo, NULL, 0, 0) ? APR_SUCCESS : APR_ENOMEM;
    }
    for (i = 0; i < url->nodes->nelts; i++) {
        const sl_hostport_t *hp = &APR_ARRAY_IDX(url->nodes, i, sl_hostport_t);
        if (!sl_topo_node(&rs->topo, hp->host, strlen(hp->host), hp->port)) {
            return APR_ENOMEM;
        }
    }
    return APR_SUCCESS;
}

apr_status_t sl_redis_create(apr_pool_t *p, const sl_store_url_t *url,
                             apr_interval_time_t connect_timeout,
                             apr_interval_time_t command_timeout,
                             int max_connections, sl_redis_t **out)
{
    sl_redis_t *rs = apr_pcalloc(p, sizeof(*rs));
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
    sl_script_init(p, &rs->check, sl_script_check);
    sl_script_init(p, &rs->give_back, sl_script_give_back);
    sl_script_init(p, &rs->renew, sl_script_renew);
    sl_script_init(p, &rs->charge, sl_script_charge);
    sl_script_init(p, &rs->allot, sl_script_allot);
    rv = apr_thread_mutex_create(&rs->mutex, APR_THREAD_MUTEX_DEFAULT, p);
    if (rv == APR_SUCCESS && url->kind == SL_URL_SENTINEL) {
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
    rv = sl_redis_seeds(rs, p);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (!rs->topo.slots) {
        rs->single = rs->topo.nnodes ? rs->topo.nodes[0] : NULL;
    }
    *out = rs;
    return APR_SUCCESS;
}

void sl_redis_prereq_set(sl_redis_t *rs, sl_redis_claim_fn *claim,
                         sl_redis_info_fn *info, void *ctx)
{
    rs->prereq_claim = claim;
    rs->prereq_info = info;
    rs->prereq_ctx = ctx;
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

#define SL_RESP_ASKING "*1\r\n$6\r\nASKING\r\n"

/* One round trip on a connection of its own: SCRIPT LOAD and ASKING first
 * when asked, then the command, all written at once; the last reply is
 * the command's (read into ints when an array). */
static apr_status_t sl_direct(sl_redis_t *rs, sl_node_t *node, apr_pool_t *p,
                              const char *buf, apr_size_t len, int asking,
                              const sl_script_t *reload, sl_ints_t *ints,
                              redisReply **reply, int *stale, const char **err,
                              int *trips)
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
    /* ASKING holds for the next command only: the script's. */
    if (reload) {
        rv = sl_conn_send(conn, reload->load, reload->load_len);
    }
    if (rv == APR_SUCCESS && asking) {
        rv = sl_conn_send(conn, SL_RESP_ASKING, sizeof(SL_RESP_ASKING) - 1);
    }
    if (rv == APR_SUCCESS) {
        rv = sl_conn_send(conn, buf, len);
    }
    for (i = 0; rv == APR_SUCCESS && i < replies; i++) {
        rv = sl_conn_read(conn, i == replies - 1 ? ints : NULL, &r, errbuf,
                          sizeof(errbuf));
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
        sl_conn_error_reply(node, last->str);
        sl_conn_destroy(conn);
    }
    else {
        sl_conn_release(node, conn);
    }
    *reply = last;
    return APR_SUCCESS;
}

/* The real Redis client's trip (sl_way_ops_t): the first shares a batch when
 * the pipeline is on; any other, or one this thread cannot queue, goes
 * the direct way. */
static apr_status_t sl_redis_trip(const sl_way_t *w, int shared,
                                  redisReply **reply, int *stale,
                                  const char **err, int *trips)
{
    sl_redis_t *rs = w->ctx;
    apr_status_t rv = APR_ENOTIMPL;

    if (shared && rs->pipeline) {
        rv = sl_pipe_exec(rs, w->node, w->p, w->buf, w->len, w->ints, reply,
                          stale, err, trips);
    }
    if (rv == APR_ENOTIMPL) {
        rv = sl_direct(rs, w->node, w->p, w->buf, w->len, w->asking,
                       w->reload ? w->script : NULL, w->ints, reply, stale, err,
                       trips);
    }
    return rv;
}

static const sl_way_ops_t sl_redis_way = {
    .trip = sl_redis_trip,
    .route = sl_slots_route,
    .redirect = sl_slots_redirect,
    .unref = sl_slots_unref,
    .migrating = sl_slots_migrating,
    .down = sl_slots_down,
};

/* One call (buf, which runs script, NULL for a plain command) on the
 * master of the budgets' slot, as sl_way_run routes it; an array reply is
 * read into ints when given. */
static apr_status_t
sl_redis_call(sl_redis_t *rs, apr_pool_t *p, const sl_budget_t *budgets,
              const sl_script_t *script, const char *buf, apr_size_t len,
              sl_ints_t *ints, redisReply **reply, const char **err, int *trips)
{
    sl_way_t way = {.ops = &sl_redis_way,
                    .ctx = rs,
                    .p = p,
                    .cluster = rs->topo.slots != NULL,
                    .sentinel = rs->url->kind == SL_URL_SENTINEL,
                    .buf = buf,
                    .len = len,
                    .script = script,
                    .ints = ints};

    /* Only a cluster routes by slot: the CRC16 is not for one node. */
    if (way.cluster) {
        way.slot = sl_key_slot(budgets[0].key, budgets[0].key_len);
    }
    return sl_way_run(&way, reply, err, trips);
}

/* A script call's head, written into buf (sized by sl_script_size): the
 * argument count, EVALSHA, the script, the keys and the member, as
 * binary-safe arguments (no key or value can be read as a command).
 * Returns where the script's own arguments go. */
static char *sl_script_head(char *o, int argc, const sl_script_t *script,
                            const sl_budget_t *budgets, int n,
                            const char *member, apr_size_t member_len)
{
    int i;

    o = sl_resp_count(o, argc);
    memcpy(o, script->head, script->head_len);
    o += script->head_len;
    o = sl_resp_int(o, n);
    for (i = 0; i < n; i++) {
        o = sl_resp_arg(o, budgets[i].key, budgets[i].key_len);
    }
    return sl_resp_arg(o, member, member_len);
}

/* The bound of a script call's RESP: its head, then nints numbers and a
 * word of at most 8 bytes. */
static apr_size_t sl_script_size(const sl_budget_t *budgets, int n,
                                 apr_size_t member_len, int nints)
{
    apr_size_t size = SL_RESP_COUNT_MAX + SL_RESP_ARG_MAX(7) +
                      SL_RESP_ARG_MAX(2 * APR_SHA1_DIGESTSIZE) +
                      SL_RESP_INT_MAX + SL_RESP_ARG_MAX(member_len) +
                      SL_RESP_ARG_MAX(8) + (apr_size_t) nints * SL_RESP_INT_MAX;
    int i;

    for (i = 0; i < n; i++) {
        size += SL_RESP_ARG_MAX(budgets[i].key_len);
    }
    return size;
}

/* A call of script for n budgets: its buffer (into *buf), sized for the
 * script's layout (head and per, sl_script_layout.h), a word after them
 * and more bytes, and its head written with the RESP count of those
 * arguments and extra more. Returns where the arguments after the member
 * go. */
static APR_INLINE char *
sl_script_begin(apr_pool_t *p, const sl_script_t *script, int head, int per,
                int extra, apr_size_t more, const sl_budget_t *budgets, int n,
                const char *member, apr_size_t member_len, char **buf)
{
    *buf = apr_palloc(
        p, sl_script_size(budgets, n, member_len, head - 1 + per * n) + more);
    return sl_script_head(*buf, 3 + n + head + per * n + extra, script, budgets,
                          n, member, member_len);
}

/* A limit's first four arguments to lua/sl_check.lua, at o: its algorithm,
 * requests, window and burst. */
static char *sl_limit_head(char *o, int algorithm, apr_int64_t requests,
                           apr_int64_t window, apr_int64_t burst)
{
    char code = sl_algorithm_code(algorithm);

    o = sl_resp_arg(o, &code, 1);
    o = sl_resp_int(o, requests);
    o = sl_resp_int(o, window);
    return sl_resp_int(o, burst ? burst : requests);
}

void sl_redis_limit_args(apr_pool_t *p, sl_limit_t *l)
{
    sl_script_args_t *a = apr_palloc(p, SL_ALG_COUNT * sizeof(*a));
    int alg;

    for (alg = 0; alg < SL_ALG_COUNT; alg++) {
        char *buf = apr_palloc(p, SL_RESP_ARG_MAX(1) + 3 * SL_RESP_INT_MAX);
        a[alg].requests = l->requests;
        a[alg].window = l->window;
        a[alg].burst = l->burst;
        a[alg].text = buf;
        a[alg].len = (apr_size_t) (sl_limit_head(buf, alg, l->requests,
                                                 l->window, l->burst) -
                                   buf);
    }
    l->script_args = a;
}

/* lua/sl_check.lua's arguments: per budget its algorithm, requests,
 * window, burst, cost and block; then "peek" for a look that changes
 * nothing. Written straight into one buffer: formatting each number in
 * the pool and the command from an argv after was a fifth of the
 * request path's instructions. */
static const char *sl_decide_command(sl_redis_t *rs, apr_pool_t *p,
                                     const sl_budget_t *budgets, int n,
                                     const char *member, apr_size_t member_len,
                                     int peek, apr_size_t *len)
{
    char *buf;
    char *o = sl_script_begin(
        p, &rs->check, SL_CHECK_ARGV_HEAD, SL_CHECK_ARGV_PER, !!peek,
        sl_distinct_size(budgets, n), budgets, n, member, member_len, &buf);
    int i;

    for (i = 0; i < n; i++) {
        const sl_budget_t *b = &budgets[i];
        const sl_script_args_t *a = b->script_args;

        /* A distinct= budget's head carries the request's value: never
         * the limit's text written once. */
        if (b->algorithm == SL_ALG_DISTINCT) {
            o = sl_distinct_head(o, b);
        }
        else if (a && a->requests == b->requests && a->window == b->window &&
                 a->burst == b->burst) {
            memcpy(o, a->text, a->len);
            o += a->len;
        }
        else {
            o = sl_limit_head(o, b->algorithm, b->requests, b->window,
                              b->burst);
        }
        o = sl_resp_int(o, b->cost > 1 ? b->cost : 1);
        o = sl_resp_int(o, b->block);
    }
    if (peek) {
        o = sl_resp_arg(o, "peek", 4);
    }
    *len = (apr_size_t) (o - buf);
    return buf;
}

/* lua/sl_give_back.lua's arguments: the admission's store time, then per
 * budget its algorithm, requests, window and cost. EVALSHA like a
 * decision: under count=401,403 most requests are given back, and the
 * script's text would be most of each call's bytes. */
static const char *sl_give_back_command(sl_redis_t *rs, apr_pool_t *p,
                                        const sl_budget_t *budgets, int n,
                                        const char *member,
                                        apr_size_t member_len, apr_time_t at,
                                        apr_size_t *len)
{
    char *buf;
    char *o = sl_script_begin(p, &rs->give_back, SL_GIVE_BACK_ARGV_HEAD,
                              SL_GIVE_BACK_ARGV_PER, 0, 0, budgets, n, member,
                              member_len, &buf);
    int i;

    o = sl_resp_int(o, at);
    for (i = 0; i < n; i++) {
        const sl_budget_t *b = &budgets[i];
        char code = sl_algorithm_code(b->algorithm);

        o = sl_resp_arg(o, &code, 1);
        o = sl_resp_int(o, b->requests);
        o = sl_resp_int(o, b->window);
        o = sl_resp_int(o, b->cost > 1 ? b->cost : 1);
    }
    *len = (apr_size_t) (o - buf);
    return buf;
}

apr_status_t sl_redis_decide(sl_redis_t *rs, apr_pool_t *p,
                             const sl_budget_t *budgets, int n,
                             const char *member, apr_size_t member_len,
                             sl_decision_t *d, const char **err, int *trips)
{
    redisReply *reply = NULL;
    apr_size_t len;
    const char *buf =
        sl_decide_command(rs, p, budgets, n, member, member_len, 0, &len);
    sl_ints_t ints = {.cap = 3 + 3 * (apr_size_t) n};
    apr_status_t rv;

    ints.v = apr_palloc(p, sizeof(*ints.v) * ints.cap);
    rv = sl_redis_call(rs, p, budgets, &rs->check, buf, len, &ints, &reply, err,
                       trips);
    if (rv == APR_SUCCESS) {
        *err = sl_reply_decision(p, reply, &ints, n, d);
        rv = *err ? APR_EGENERAL : APR_SUCCESS;
        sl_reply_free(reply);
    }
    return rv;
}

apr_status_t sl_redis_give_back(sl_redis_t *rs, apr_pool_t *p,
                                const sl_budget_t *budgets, int n,
                                const char *member, apr_size_t member_len,
                                apr_time_t at, const char **err)
{
    redisReply *reply = NULL;
    apr_size_t len;
    const char *buf =
        sl_give_back_command(rs, p, budgets, n, member, member_len, at, &len);
    int trips;
    apr_status_t rv = sl_redis_call(rs, p, budgets, &rs->give_back, buf, len,
                                    NULL, &reply, err, &trips);

    if (reply) {
        freeReplyObject(reply);
    }
    return rv;
}

apr_status_t sl_redis_renew(sl_redis_t *rs, apr_pool_t *p,
                            const sl_budget_t *budgets, int n,
                            const char *member, apr_size_t member_len,
                            const char **err)
{
    redisReply *reply = NULL;
    char *buf;
    char *o =
        sl_script_begin(p, &rs->renew, SL_RENEW_ARGV_HEAD, SL_RENEW_ARGV_PER, 0,
                        0, budgets, n, member, member_len, &buf);
    int i, trips;
    apr_status_t rv;

    for (i = 0; i < n; i++) {
        o = sl_resp_int(o, budgets[i].window);
    }
    rv = sl_redis_call(rs, p, budgets, &rs->renew, buf, (apr_size_t) (o - buf),
                       NULL, &reply, err, &trips);
    if (reply) {
        freeReplyObject(reply);
    }
    return rv;
}

/* lua/sl_charge.lua's arguments: per budget its algorithm, requests,
 * window, burst and the units to charge (its cost). */
static const char *sl_charge_command(sl_redis_t *rs, apr_pool_t *p,
                                     const sl_budget_t *budgets, int n,
                                     const char *member, apr_size_t member_len,
                                     apr_size_t *len)
{
    char *buf;
    char *o =
        sl_script_begin(p, &rs->charge, SL_CHARGE_ARGV_HEAD, SL_CHARGE_ARGV_PER,
                        0, 0, budgets, n, member, member_len, &buf);
    int i;

    for (i = 0; i < n; i++) {
        const sl_budget_t *b = &budgets[i];

        o = sl_limit_head(o, b->algorithm, b->requests, b->window, b->burst);
        o = sl_resp_int(o, b->cost > 1 ? b->cost : 1);
    }
    *len = (apr_size_t) (o - buf);
    return buf;
}

apr_status_t sl_redis_charge(sl_redis_t *rs, apr_pool_t *p,
                             const sl_budget_t *budgets, int n,
                             const char *member, apr_size_t member_len,
                             const char **err)
{
    redisReply *reply = NULL;
    apr_size_t len;
    const char *buf =
        sl_charge_command(rs, p, budgets, n, member, member_len, &len);
    int trips;
    apr_status_t rv = sl_redis_call(rs, p, budgets, &rs->charge, buf, len, NULL,
                                    &reply, err, &trips);

    if (reply) {
        freeReplyObject(reply);
    }
    return rv;
}

apr_status_t sl_redis_peek(sl_redis_t *rs, apr_pool_t *p,
                           const sl_budget_t *budgets, int n, sl_decision_t *d,
                           apr_int64_t **blocked, const char **err)
{
    redisReply *reply = NULL;
    apr_size_t len, nv;
    const long long *v;
    int trips;
    const char *buf = sl_decide_command(rs, p, budgets, n, "-", 1, 1, &len);
    sl_ints_t ints = {.cap = 3 + 4 * (apr_size_t) n};
    apr_status_t rv;

    ints.v = apr_palloc(p, sizeof(*ints.v) * ints.cap);
    rv = sl_redis_call(rs, p, budgets, &rs->check, buf, len, &ints, &reply, err,
                       &trips);
    if (rv == APR_SUCCESS) {
        if (!(*err = sl_reply_values(p, reply, &ints, &v, &nv))) {
            *err = sl_peek_parse(p, v, nv, n, d, blocked);
        }
        rv = *err ? APR_EGENERAL : APR_SUCCESS;
        sl_reply_free(reply);
    }
    return rv;
}

apr_status_t sl_redis_reset(sl_redis_t *rs, apr_pool_t *p,
                            const sl_budget_t *budgets, int n, const char **err)
{
    int argc = 1 + 3 * n, i, trips;
    const char **argv = apr_palloc(p, sizeof(*argv) * argc);
    size_t *argvlen = apr_palloc(p, sizeof(*argvlen) * argc);
    redisReply *reply = NULL;
    apr_size_t len;
    const char *buf;
    apr_status_t rv;

    /* One DEL: every key of one identity shares a hash tag, hence a node,
     * and so do KEY.b (a block) and KEY.a (the epoch of its allotments:
     * without it, a grant made before the reset gives back nothing). */
    argv[0] = "DEL";
    argvlen[0] = 3;
    for (i = 0; i < n; i++) {
        argv[1 + 3 * i] = budgets[i].key;
        argvlen[1 + 3 * i] = budgets[i].key_len;
        argv[2 + 3 * i] = apr_pstrcat(p, budgets[i].key, ".b", NULL);
        argvlen[2 + 3 * i] = budgets[i].key_len + 2;
        argv[3 + 3 * i] = apr_pstrcat(p, budgets[i].key, ".a", NULL);
        argvlen[3 + 3 * i] = budgets[i].key_len + 2;
    }
    buf = sl_resp_format(p, argc, argv, argvlen, &len);
    rv = sl_redis_call(rs, p, budgets, NULL, buf, len, NULL, &reply, err,
                       &trips);
    if (rv == APR_SUCCESS) {
        if (reply->type != REDIS_REPLY_INTEGER) {
            *err = apr_psprintf(p, "unexpected reply type %d", reply->type);
            rv = APR_EGENERAL;
        }
        freeReplyObject(reply);
    }
    return rv;
}

/* lua/sl_allot.lua (sl_redis.h). */
apr_status_t sl_redis_allot(sl_redis_t *rs, apr_pool_t *p,
                            const sl_budget_t *budgets, int n,
                            const char *member, apr_size_t member_len,
                            const sl_allot_arg_t *args, int nargs,
                            const long long **v, apr_size_t *nv,
                            const char **err)
{
    redisReply *reply = NULL;
    apr_size_t size = sl_script_size(budgets, n, member_len, nargs);
    char *buf, *o;
    sl_ints_t ints = {.cap = 3 + 3 * (apr_size_t) n};
    int i, trips = 0;
    apr_status_t rv;

    for (i = 0; i < nargs; i++) {
        size += args[i].word ? SL_RESP_ARG_MAX(args[i].len) : 0;
    }
    buf = apr_palloc(p, size);
    o = sl_script_head(buf, 4 + n + nargs, &rs->allot, budgets, n, member,
                       member_len);
    for (i = 0; i < nargs; i++) {
        o = args[i].word ? sl_resp_arg(o, args[i].word, args[i].len)
                         : sl_resp_int(o, args[i].v);
    }
    ints.v = apr_palloc(p, sizeof(*ints.v) * ints.cap);
    rv = sl_redis_call(rs, p, budgets, &rs->allot, buf, (apr_size_t) (o - buf),
                       &ints, &reply, err, &trips);
    if (rv == APR_SUCCESS) {
        *err = sl_reply_values(p, reply, &ints, v, nv);
        rv = *err ? APR_EGENERAL : APR_SUCCESS;
        sl_reply_free(reply);
    }
    return rv;
}
