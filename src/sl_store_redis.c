/* SPDX-License-Identifier: Apache-2.0 */
/* The Redis store as a kind of store (sl_store_kind.h): the Redis client of one
 * SlidingLimitStore (sl_redis.h) with its TLS context, its Sentinel
 * credentials and the check of its nodes' prerequisites. */
#include "sl_store_kind.h"

#include "http_core.h"
#include "http_log.h"

#include "apr_strings.h"

#include "sl_prereq.h"
#include "sl_redis.h"

#include <string.h>

APLOG_USE_MODULE(slidinglimit);

/* A Redis store's prerequisites (sl_prereq.h): asked of each of its nodes
 * once per generation, by whichever child connects first, and every
 * problem logged as one line by that child. */
typedef struct sl_prereq_ctx {
    server_rec *s;
    const sl_store_url_t *url;
    sl_prereqs_t *table;
    apr_uint32_t config_gen;
} sl_prereq_ctx_t;

/* A cluster's nodes, and a Sentinel store's masters, are each asked; a
 * plain store once, on its first connection, which goes to its one node
 * (a node that redirects it to others is told by that answer). */
static const char *sl_prereq_key(sl_prereq_ctx_t *c, const char *node)
{
    int many =
        c->url->kind == SL_URL_CLUSTER || c->url->kind == SL_URL_SENTINEL;

    return many ? node : "";
}

static int sl_prereq_claim_node(void *data, const char *node)
{
    sl_prereq_ctx_t *c = data;

    return sl_prereqs_claim(c->table, c->url->display, sl_prereq_key(c, node),
                            c->config_gen);
}

static void sl_prereq_log(sl_prereq_ctx_t *c, apr_pool_t *p, const char *node,
                          const char *text, apr_size_t len)
{
    sl_prereq_t pr[SL_PREREQ_MAX];
    sl_info_t info;
    const char *why = sl_info_parse(p, text, len, &info);
    int n, i;

    if (why) {
        ap_log_error(
            APLOG_MARK, APLOG_DEBUG, 0, c->s,
            "mod_slidinglimit: store %s: INFO of node %s not understood "
            "(%s); prerequisites not checked",
            c->url->display, node, why);
        return;
    }
    n = sl_prereq_problems(p, &info, c->url, node, pr);
    for (i = 0; i < n; i++) {
        ap_log_error(APLOG_MARK,
                     pr[i].level == SL_PREREQ_ERROR ? APLOG_ERR : APLOG_WARNING,
                     0, c->s, "mod_slidinglimit: %s", pr[i].text);
    }
    if (!n) {
        ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, c->s,
                     "mod_slidinglimit: store %s: node %s runs %s; "
                     "prerequisites met",
                     c->url->display, node, info.server);
    }
}

static void sl_prereq_info(void *data, const char *node, const char *text,
                           apr_size_t len, const char *error)
{
    sl_prereq_ctx_t *c = data;
    apr_pool_t *p;

    if (error) {
        /* INFO renamed, disabled or denied by an ACL: the error's code
         * only, as its text may name the user. */
        ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, c->s,
                     "mod_slidinglimit: store %s: node %s refused INFO (%.*s); "
                     "prerequisites not checked",
                     c->url->display, node, (int) strcspn(error, " "), error);
    }
    else if (!text) {
        /* The connection failed before the answer: the next one asks. */
        sl_prereqs_release(c->table, c->url->display, sl_prereq_key(c, node),
                           c->config_gen);
    }
    else if (apr_pool_create_unmanaged_ex(&p, NULL, NULL) == APR_SUCCESS) {
        sl_prereq_log(c, p, node, text, len);
        apr_pool_destroy(p);
    }
}

static apr_status_t sl_redis_store_make(sl_store_t *st, apr_pool_t *pchild,
                                        server_rec *vs,
                                        const sl_server_conf_t *sc, int threads)
{
    sl_proc_t *proc = st->proc;
    sl_redis_t *rs;
    apr_status_t rv;

    rv = sl_redis_create(pchild, sc->store_url,
                         SL_OR(sc->connect_timeout, SL_DEFAULT_CONNECT_TIMEOUT),
                         SL_OR(sc->command_timeout, SL_DEFAULT_COMMAND_TIMEOUT),
                         threads, &rs);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    sl_redis_tls_set(rs, sc->tls);
    sl_redis_sentinel_auth(rs, sc->sentinel_user, sc->sentinel_password);
    if (proc->prereqs) {
        sl_prereq_ctx_t *c = apr_pcalloc(pchild, sizeof(*c));
        c->s = vs;
        c->url = sc->store_url;
        c->table = proc->prereqs;
        c->config_gen = (apr_uint32_t) ap_state_query(AP_SQ_CONFIG_GEN);
        sl_redis_prereq_set(rs, sl_prereq_claim_node, sl_prereq_info, c);
    }
    st->ctx = rs;
    return APR_SUCCESS;
}

static apr_status_t sl_redis_store_decide(sl_store_t *st, apr_pool_t *p,
                                          const sl_budget_t *budgets, int n,
                                          const char *member,
                                          apr_size_t member_len, apr_time_t now,
                                          sl_decision_t *d, const char **err,
                                          int *trips)
{
    (void) now;
    return sl_redis_decide(st->ctx, p, budgets, n, member, member_len, d, err,
                           trips);
}

static apr_status_t sl_redis_store_give_back(sl_store_t *st, apr_pool_t *p,
                                             const sl_budget_t *budgets, int n,
                                             const char *member,
                                             apr_size_t member_len,
                                             apr_time_t at, const char **err)
{
    return sl_redis_give_back(st->ctx, p, budgets, n, member, member_len, at,
                              err);
}

static apr_status_t sl_redis_store_peek(sl_store_t *st, apr_pool_t *p,
                                        const sl_budget_t *budgets, int n,
                                        apr_time_t now, sl_decision_t *d,
                                        apr_int64_t **blocked, const char **err)
{
    (void) now;
    return sl_redis_peek(st->ctx, p, budgets, n, d, blocked, err);
}

static apr_status_t sl_redis_store_reset(sl_store_t *st, apr_pool_t *p,
                                         const sl_budget_t *budgets, int n,
                                         apr_time_t now, const char **err)
{
    (void) now;
    return sl_redis_reset(st->ctx, p, budgets, n, err);
}

/* The member names the leases; their new time is the store's own. */
static apr_status_t sl_redis_store_renew(sl_store_t *st, apr_pool_t *p,
                                         const sl_budget_t *budgets, int n,
                                         const char *member,
                                         apr_size_t member_len, apr_time_t now,
                                         apr_time_t *at, const char **err)
{
    (void) now;
    (void) at;
    return sl_redis_renew(st->ctx, p, budgets, n, member, member_len, err);
}

static apr_status_t sl_redis_store_charge(sl_store_t *st, apr_pool_t *p,
                                          const sl_budget_t *budgets, int n,
                                          const char *member,
                                          apr_size_t member_len,
                                          const char **err)
{
    return sl_redis_charge(st->ctx, p, budgets, n, member, member_len, err);
}

const sl_store_ops_t sl_store_redis_ops = {
    "redis",
    sl_redis_store_make,
    sl_redis_store_decide,
    sl_redis_store_give_back,
    sl_redis_store_peek,
    sl_redis_store_reset,
    sl_redis_store_renew,
    sl_redis_store_charge,
};
