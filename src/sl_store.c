/* Which store decides for each server record in this child, and the store
 * call with its circuit breaker (see sl_store.h). */
#include "sl_store.h"

#include "http_config.h"
#include "http_log.h"

#include "apr_atomic.h"
#include "apr_strings.h"

#include "sl_config.h"
#include "sl_prereq.h"

#include "http_core.h"

#include <string.h>

APLOG_USE_MODULE(slidinglimit);

static sl_server_conf_t *sl_server_conf(server_rec *s)
{
    return ap_get_module_config(s->module_config, &slidinglimit_module);
}

const char *sl_store_id(apr_pool_t *p, const sl_store_url_t *u)
{
    if (!u) {
        return "shm";
    }
    return apr_pstrcat(p, u->display, "\n", u->user ? u->user : "", "\n",
                       u->password ? u->password : "", NULL);
}

/* The main server's store uses the breaker the status page reports; any
 * other store its own, so that one host's outage leaves the others' stores
 * alone. The slot is found by the URL with its credentials. */
static sl_breaker_t *sl_store_breaker(apr_pool_t *p, sl_proc_t *proc,
                                      server_rec *main, server_rec *vs,
                                      const sl_store_url_t *u)
{
    const char *id;
    sl_breaker_t *b;

    if (vs == main) {
        return proc->breaker;
    }
    id = sl_store_id(p, u);
    b = sl_breakers_get(proc->breakers, id, strlen(id));
    if (!b) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, vs,
                     "mod_slidinglimit: more than %d stores; %s shares the "
                     "main server's circuit breaker",
                     SL_BREAKER_SLOTS, u->display);
        return proc->breaker;
    }
    return b;
}

/* A Redis store's prerequisites (sl_prereq.h): asked of each of its nodes
 * once per generation, by whichever child connects first, and every
 * problem logged as one line by that child. */
typedef struct sl_prereq_ctx {
    server_rec *s;
    const sl_store_url_t *url;
    sl_prereqs_t *table;
    apr_uint32_t gen;
} sl_prereq_ctx_t;

/* A cluster's nodes, and a Sentinel store's masters, are each asked; a
 * plain store once, on its first connection, which goes to its one node
 * (a node that redirects it to others is told by that answer). */
static const char *sl_prereq_key(sl_prereq_ctx_t *c, const char *node)
{
    int many =
        c->url->kind == SL_STORE_CLUSTER || c->url->kind == SL_STORE_SENTINEL;

    return many ? node : "";
}

static int sl_prereq_ask(void *data, const char *node)
{
    sl_prereq_ctx_t *c = data;

    return sl_prereqs_claim(c->table, c->url->display, sl_prereq_key(c, node),
                            c->gen);
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
                     "mod_slidinglimit: store %s: node %s runs Redis %s; "
                     "prerequisites met",
                     c->url->display, node, info.version);
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
                           c->gen);
    }
    else if (apr_pool_create_unmanaged_ex(&p, NULL, NULL) == APR_SUCCESS) {
        sl_prereq_log(c, p, node, text, len);
        apr_pool_destroy(p);
    }
}

/* A Redis store's client and breaker. */
static sl_store_t *sl_store_redis(apr_pool_t *pchild, server_rec *s,
                                  server_rec *vs, sl_proc_t *proc, int threads)
{
    sl_server_conf_t *sc = sl_server_conf(vs);
    sl_store_t *st = apr_pcalloc(pchild, sizeof(*st));

    apr_status_t rv;

    st->url = sc->store;
    rv = sl_redis_create(pchild, sc->store,
                         SL_OR(sc->connect_timeout, SL_DEFAULT_CONNECT_TIMEOUT),
                         SL_OR(sc->command_timeout, SL_DEFAULT_COMMAND_TIMEOUT),
                         threads, &st->redis);
    if (rv != APR_SUCCESS) {
        /* A store that does not answer, never the shm store in its place:
         * local limits are not what the section asked for. */
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, vs,
                     "mod_slidinglimit: cannot set up the client for %s; "
                     "the fail mode applies to every request it decides",
                     sc->store->display);
        st->redis = NULL;
        return st;
    }
    sl_redis_tls_set(st->redis, sc->tls);
    sl_redis_sentinel_auth(st->redis, sc->sentinel_user, sc->sentinel_password);
    st->breaker = sl_store_breaker(pchild, proc, s, vs, sc->store);
    sl_redis_breaker_set(st->redis, st->breaker);
    if (proc->prereqs) {
        sl_prereq_ctx_t *c = apr_pcalloc(pchild, sizeof(*c));
        c->s = vs;
        c->url = sc->store;
        c->table = proc->prereqs;
        c->gen = (apr_uint32_t) ap_state_query(AP_SQ_CONFIG_GEN);
        sl_redis_prereq_set(st->redis, sl_prereq_ask, sl_prereq_info, c);
    }
    return st;
}

void sl_store_child_init(apr_pool_t *pchild, server_rec *s, sl_proc_t *proc,
                         int threads)
{
    sl_store_t *shm = apr_pcalloc(pchild, sizeof(*shm));
    server_rec *vs, *other;

    /* One Redis client per server record with its own store; virtual hosts
     * that inherit the main server's store share its pool. */
    for (vs = s; vs; vs = vs->next) {
        sl_server_conf_t *sc = sl_server_conf(vs);
        sc->backend = NULL;
        if (!sc->store || sc->store->kind == SL_STORE_SHM) {
            sc->backend = shm;
            continue;
        }
        for (other = s; other != vs; other = other->next) {
            sl_server_conf_t *oc = sl_server_conf(other);
            if (oc->store == sc->store && oc->tls == sc->tls &&
                oc->sentinel_password == sc->sentinel_password && oc->backend) {
                sc->backend = oc->backend;
                break;
            }
        }
        if (!sc->backend) {
            sc->backend = sl_store_redis(pchild, s, vs, proc, threads);
        }
    }
}

sl_store_t *sl_store_of(server_rec *s)
{
    return sl_server_conf(s)->backend;
}

void sl_store_refund(sl_store_t *st, request_rec *r, sl_proc_t *proc,
                     const sl_budget_t *budgets, int n, const char *member,
                     apr_time_t at)
{
    const char *err = NULL;

    if (!st->url) {
        sl_shm_refund(proc->shm, r->pool, budgets, n, at, apr_time_now());
        return;
    }
    /* A store that is down keeps the reservation until it expires: more
     * counted than happened, never less. */
    if (!member || !st->redis ||
        sl_redis_refund(st->redis, r->pool, budgets, n, member, 12, at, &err) !=
            APR_SUCCESS) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                      "mod_slidinglimit: give-back not done: %s",
                      err ? err : "store unavailable");
    }
}

apr_interval_time_t sl_store_wait(const sl_store_t *st, apr_time_t now)
{
    return st->breaker ? sl_breaker_wait(st->breaker, now) : 0;
}

apr_status_t sl_store_decide(sl_store_t *st, request_rec *r, sl_proc_t *proc,
                             const sl_budget_t *budgets, int n,
                             sl_decision_t *d, const char **member_out)
{
    apr_status_t rv;
    const char *err = NULL;
    apr_time_t start = apr_time_now();
    unsigned char member[12];
    apr_uint32_t c;
    int trips = 0;

    if (!st->url) {
        rv = sl_shm_decide(proc->shm, r->pool, budgets, n, start, d);
        if (rv != APR_SUCCESS) {
            /* sl_shm_decide logs each change of its state once (full,
             * emptied): not once per request. */
            ap_log_rerror(APLOG_MARK, APLOG_DEBUG, rv, r,
                          "mod_slidinglimit: the shared memory store did not "
                          "decide; applying the fail mode");
        }
        return rv;
    }
    if (!st->redis) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                      "mod_slidinglimit: store %s has no client in this "
                      "child; applying the fail mode",
                      st->url->display);
        return APR_EINIT;
    }
    if (!sl_breaker_allow(st->breaker, start)) {
        return APR_EAGAIN;
    }
    /* Unique per request across servers: a random per-child seed and a
     * counter; never the time, which two requests can share. */
    c = apr_atomic_inc32(&proc->counter);
    memcpy(member, proc->seed, 8);
    memcpy(member + 8, &c, 4);
    if (member_out) {
        *member_out = apr_pmemdup(r->pool, member, sizeof(member));
    }
    rv = sl_redis_decide(st->redis, r->pool, budgets, n, (const char *) member,
                         sizeof(member), d, &err, &trips);
    sl_stats_store(proc->stats, st->url->display, apr_time_now() - start,
                   rv != APR_SUCCESS, trips);
    if (rv == APR_SUCCESS) {
        if (sl_breaker_success(st->breaker, start, apr_time_now())) {
            ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, r->server,
                         "mod_slidinglimit: store %s is answering again",
                         st->url->display);
        }
        return APR_SUCCESS;
    }
    /* A cluster slot whose master is down while other nodes answer takes
     * the fail mode alone: the store's breaker stays as it is. */
    if (rv != SL_REDIS_SLOT_DOWN &&
        sl_breaker_failure(st->breaker, start, apr_time_now())) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, r->server,
                     "mod_slidinglimit: store %s failed (%s); "
                     "applying the fail mode until it answers again",
                     st->url->display, err ? err : "unknown error");
    }
    else {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, rv, r,
                      "mod_slidinglimit: store %s: %s", st->url->display,
                      err ? err : "unknown error");
    }
    return rv;
}

apr_array_header_t *sl_store_breakers(apr_pool_t *p, server_rec *main)
{
    apr_array_header_t *out =
        apr_array_make(p, 4, sizeof(sl_stats_breaker_state_t));
    server_rec *s;

    /* The main server's first: a store shared with it is shown once. */
    for (s = main; s; s = s->next) {
        const sl_store_t *st = sl_server_conf(s)->backend;
        sl_stats_breaker_state_t *b;
        if (!st || !st->url || !st->breaker) {
            continue;
        }
        b = apr_array_push(out);
        b->store = st->url->display;
        b->open = sl_breaker_is_open(st->breaker);
    }
    return out;
}
