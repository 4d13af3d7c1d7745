/* SPDX-License-Identifier: Apache-2.0 */
/* Which store decides for each server record in this child, and every call
 * to it with its circuit breaker, its statistics and its log (see
 * sl_store.h); what each kind of store does is its own file
 * (sl_store_kind.h). */
#include "sl_store_kind.h"
#include "sl_redis.h"

#include "http_config.h"
#include "http_log.h"

#include "apr_atomic.h"
#include "apr_strings.h"

#include <string.h>

APLOG_USE_MODULE(slidinglimit);

/* A decision's member: the child's seed and a counter (sl_store_decide). */
#define SL_MEMBER_LEN 12

const char *sl_store_id(apr_pool_t *p, const sl_store_url_t *u)
{
    if (!u) {
        return "shm";
    }
    return apr_pstrcat(p, u->display, "\n", u->user ? u->user : "", "\n",
                       u->password ? u->password : "", NULL);
}

/* Pointers, not contents: a record that sets a directive has a value of
 * its own, one that does not inherits the main server's. */
int sl_store_shared(const sl_server_conf_t *a, const sl_server_conf_t *b)
{
    return a->store_url == b->store_url && a->tls_verify == b->tls_verify &&
           a->tls_ca == b->tls_ca && a->tls_cert == b->tls_cert &&
           a->sentinel_password == b->sentinel_password;
}

apr_status_t sl_store_post_config(apr_pool_t *pconf, apr_pool_t *ptemp,
                                  server_rec *s)
{
    sl_server_conf_t *msc = sl_config_server(s);
    server_rec *vs;

    for (vs = s; vs; vs = vs->next) {
        sl_server_conf_t *sc = sl_config_server(vs);
        const char *err;
        /* A virtual host that inherits the main server's store says
         * nothing new about it. */
        if (vs != s && sl_store_shared(sc, msc)) {
            sc->tls = msc->tls;
            continue;
        }
        if ((err = sl_config_store_check(ptemp, vs, sc)) ||
            (err = sl_config_tls_setup(pconf, sc))) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, 0, vs, "mod_slidinglimit: %s",
                         err);
            return APR_EGENERAL;
        }
    }
    return APR_SUCCESS;
}

/* The main server's store uses the breaker the status page reports; any
 * other store its own, so that one host's outage leaves the others' stores
 * alone. The cell is found by the URL with its credentials. */
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
                     SL_BREAKER_CELLS, u->display);
        return proc->breaker;
    }
    return b;
}

/* The one place that knows which kind a store URL names. */
static const sl_store_ops_t *sl_store_kind(const sl_store_url_t *u)
{
    return !u || u->kind == SL_URL_SHM ? &sl_store_shm_ops
                                       : &sl_store_redis_ops;
}

/* This child's shm store: of every record that names it, standing in for
 * the others' Redis store. */
static sl_store_t *sl_store_shm_make(apr_pool_t *pchild, server_rec *s,
                                     sl_proc_t *proc)
{
    sl_store_t *st = apr_pcalloc(pchild, sizeof(*st));

    st->ops = &sl_store_shm_ops;
    st->proc = proc;
    st->ops->make(st, pchild, s, sl_config_server(s), 1);
    return st;
}

/* The store of vs's record, which has a store of its own; main is the main
 * server. A Redis store has a breaker once its client is made. */
static sl_store_t *sl_store_make(apr_pool_t *pchild, server_rec *main,
                                 server_rec *vs, sl_proc_t *proc, int threads)
{
    const sl_server_conf_t *sc = sl_config_server(vs);
    sl_store_t *st = apr_pcalloc(pchild, sizeof(*st));
    apr_status_t rv;

    st->ops = sl_store_kind(sc->store_url);
    st->url = sc->store_url;
    st->proc = proc;
    rv = st->ops->make(st, pchild, vs, sc, threads);
    if (rv != APR_SUCCESS) {
        /* A store that does not answer, never the shm store in its place:
         * limits on this host alone are not what the section asked for. */
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, vs,
                     "mod_slidinglimit: cannot set up the client for %s; "
                     "the fail mode applies to every request it decides",
                     sc->store_url->display);
        st->ctx = NULL;
        return st;
    }
    st->breaker = sl_store_breaker(pchild, proc, main, vs, sc->store_url);
    return st;
}

void sl_store_child_init(apr_pool_t *pchild, server_rec *s, sl_proc_t *proc,
                         int threads)
{
    server_rec *vs, *other;

    proc->shm_store = sl_store_shm_make(pchild, s, proc);
    /* One store client per server record with its own store; virtual hosts that
     * inherit the main server's store share its pool. */
    for (vs = s; vs; vs = vs->next) {
        sl_server_conf_t *sc = sl_config_server(vs);
        sc->store = NULL;
        if (sl_store_kind(sc->store_url) == &sl_store_shm_ops) {
            sc->store = proc->shm_store;
            continue;
        }
        for (other = s; other != vs; other = other->next) {
            sl_server_conf_t *oc = sl_config_server(other);
            if (oc->store && sl_store_shared(oc, sc)) {
                sc->store = oc->store;
                break;
            }
        }
        if (!sc->store) {
            sc->store = sl_store_make(pchild, s, vs, proc, threads);
        }
    }
}

sl_store_t *sl_store_of(server_rec *s)
{
    return sl_config_server(s)->store;
}

sl_store_t *sl_store_shm_of(sl_proc_t *proc)
{
    return proc->shm_store;
}

int sl_store_remote(const sl_store_t *st)
{
    return st->url != NULL;
}

const char *sl_store_name(const sl_store_t *st)
{
    return st->url ? st->url->display : "shm";
}

/* One call to a store, from its start to its answer. */
typedef struct sl_call {
    sl_store_t *st;
    request_rec *r; /* NULL: a lease's renewal, of no request */
    server_rec *s;
    const char *what; /* the call, for the log */
    apr_time_t start;
    const char *err;
    int trips;
} sl_call_t;

/* Whether the call may go to the store: not without a client, nor while
 * the breaker is open and this call is not its probe (unlogged: the outage
 * was logged once, when it began). */
static apr_status_t sl_call_begin(sl_call_t *c, sl_store_t *st, request_rec *r,
                                  const char *what)
{
    c->st = st;
    c->r = r;
    c->s = r->server;
    c->what = what;
    c->start = apr_time_now();
    c->err = NULL;
    c->trips = 1;
    if (!st->ctx) {
        c->err = "the store has no client in this child";
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                      "mod_slidinglimit: store %s has no client in this "
                      "child; its %s fails",
                      sl_store_name(st), what);
        return APR_EINIT;
    }
    if (st->breaker && !sl_breaker_allow(st->breaker, c->start)) {
        c->err = "the store is unavailable (its circuit breaker is open)";
        return APR_EAGAIN;
    }
    return APR_SUCCESS;
}

/* The store's answer rv: counted for the status page (a Redis store's
 * series), told to the breaker, an outage and its end logged once by the
 * call that changed the breaker's state. */
static apr_status_t sl_call_end(sl_call_t *c, apr_status_t rv)
{
    sl_store_t *st = c->st;
    /* Read by a Redis store's statistics and breaker alone. */
    apr_time_t now = st->url || st->breaker ? apr_time_now() : c->start;

    if (st->url) {
        sl_stats_store(st->proc->stats, st->url->display, st->url->display_hash,
                       now - c->start, rv != APR_SUCCESS, c->trips);
    }
    if (rv == APR_SUCCESS) {
        if (st->breaker && sl_breaker_success(st->breaker, c->start, now)) {
            ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, c->s,
                         "mod_slidinglimit: store %s is answering again",
                         st->url->display);
        }
        return APR_SUCCESS;
    }
    /* A cluster slot whose master is down while other nodes answer takes
     * the fail mode alone: the store's breaker stays as it is. */
    if (st->breaker && rv != SL_STORE_PART_DOWN &&
        sl_breaker_failure(st->breaker, c->start, now)) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, c->s,
                     "mod_slidinglimit: store %s failed (%s); "
                     "applying the fail mode until it answers again",
                     st->url->display, c->err ? c->err : "unknown error");
    }
    else if (c->r) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, rv, c->r,
                      "mod_slidinglimit: store %s: %s failed: %s",
                      sl_store_name(st), c->what,
                      c->err ? c->err : "unknown error");
    }
    else {
        ap_log_error(APLOG_MARK, APLOG_DEBUG, rv, c->s,
                     "mod_slidinglimit: store %s: %s failed: %s",
                     sl_store_name(st), c->what,
                     c->err ? c->err : "unknown error");
    }
    return rv;
}

apr_status_t sl_store_decide(sl_store_t *st, request_rec *r,
                             const sl_budget_t *budgets, int n,
                             sl_decision_t *d, const char **member_out)
{
    sl_call_t c;
    unsigned char member[SL_MEMBER_LEN];
    apr_uint32_t k;
    apr_status_t rv;

    if ((rv = sl_call_begin(&c, st, r, "decision")) != APR_SUCCESS) {
        return rv;
    }
    /* Unique per request across servers: a random per-child seed and a
     * counter; never the time, which two requests can share. */
    k = apr_atomic_inc32(&st->proc->counter);
    memcpy(member, st->proc->seed, 8);
    memcpy(member + 8, &k, 4);
    if (member_out) {
        *member_out = apr_pmemdup(r->pool, member, sizeof(member));
    }
    c.trips = 0;
    rv = st->ops->decide(st, r->pool, budgets, n, (const char *) member,
                         sizeof(member), c.start, d, &c.err, &c.trips);
    return sl_call_end(&c, rv);
}

apr_status_t sl_store_allot(sl_store_t *st, request_rec *r,
                            const sl_budget_t *budgets, int n,
                            const sl_allot_arg_t *args, int nargs,
                            const char **id, const long long **v,
                            apr_size_t *nv)
{
    sl_call_t c;
    unsigned char member[SL_MEMBER_LEN];
    apr_uint32_t k;
    apr_status_t rv;

    if (!st->url) {
        return APR_ENOTIMPL;
    }
    if ((rv = sl_call_begin(&c, st, r, "allotment")) != APR_SUCCESS) {
        return rv;
    }
    /* The grant's id is unique as a decision's member is. */
    k = apr_atomic_inc32(&st->proc->counter);
    memcpy(member, st->proc->seed, 8);
    memcpy(member + 8, &k, 4);
    *id = apr_pmemdup(r->pool, member, sizeof(member));
    rv = sl_redis_allot(st->ctx, r->pool, budgets, n, *id, sizeof(member), args,
                        nargs, v, nv, &c.err);
    return sl_call_end(&c, rv);
}

void sl_store_give_back(sl_store_t *st, request_rec *r,
                        const sl_budget_t *budgets, int n, const char *member,
                        apr_time_t at)
{
    sl_call_t c;
    apr_status_t rv;

    /* A store that is down keeps the reservation until it expires: more
     * counted than happened, never less. */
    if (!member ||
        (rv = sl_call_begin(&c, st, r, "give-back")) != APR_SUCCESS) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                      "mod_slidinglimit: give-back not done: %s",
                      member ? c.err : "no decision to give back");
        return;
    }
    rv = st->ops->give_back(st, r->pool, budgets, n, member, SL_MEMBER_LEN, at,
                            &c.err);
    sl_call_end(&c, rv);
}

apr_status_t sl_store_renew(sl_store_t *st, server_rec *s, apr_pool_t *p,
                            const sl_budget_t *budgets, int n,
                            const char *member, apr_time_t *at)
{
    sl_call_t c = {st, NULL, s, "lease renewal", apr_time_now(), NULL, 1};

    if (!st->ctx || !member) {
        return APR_EINIT;
    }
    if (st->breaker && !sl_breaker_allow(st->breaker, c.start)) {
        return APR_EAGAIN;
    }
    return sl_call_end(&c, st->ops->renew(st, p, budgets, n, member,
                                          SL_MEMBER_LEN, c.start, at, &c.err));
}

apr_status_t sl_store_charge(sl_store_t *st, request_rec *r,
                             const sl_budget_t *budgets, int n,
                             const char *member, const char **err)
{
    sl_call_t c;
    apr_status_t rv;

    if (!member) {
        *err = "no decision to charge";
        return APR_EINVAL;
    }
    if ((rv = sl_call_begin(&c, st, r, "charge")) == APR_SUCCESS) {
        rv = sl_call_end(&c, st->ops->charge(st, r->pool, budgets, n, member,
                                             SL_MEMBER_LEN, &c.err));
    }
    *err = c.err;
    return rv;
}

apr_status_t sl_store_peek(sl_store_t *st, request_rec *r,
                           const sl_budget_t *budgets, int n, sl_decision_t *d,
                           apr_int64_t **blocked, const char **err)
{
    sl_call_t c;
    apr_status_t rv;

    if ((rv = sl_call_begin(&c, st, r, "look")) == APR_SUCCESS) {
        rv = sl_call_end(&c, st->ops->peek(st, r->pool, budgets, n, c.start, d,
                                           blocked, &c.err));
    }
    *err = c.err;
    return rv;
}

apr_status_t sl_store_reset(sl_store_t *st, request_rec *r,
                            const sl_budget_t *budgets, int n, const char **err)
{
    sl_call_t c;
    apr_status_t rv;

    if ((rv = sl_call_begin(&c, st, r, "reset")) == APR_SUCCESS) {
        rv = sl_call_end(
            &c, st->ops->reset(st, r->pool, budgets, n, c.start, &c.err));
    }
    *err = c.err;
    return rv;
}

apr_interval_time_t sl_store_wait(const sl_store_t *st, apr_time_t now)
{
    return st->breaker ? sl_breaker_wait(st->breaker, now) : 0;
}

apr_array_header_t *sl_store_breakers(apr_pool_t *p, server_rec *main)
{
    apr_array_header_t *out =
        apr_array_make(p, 4, sizeof(sl_stats_breaker_state_t));
    server_rec *s;

    /* The main server's first: a store shared with it is shown once. */
    for (s = main; s; s = s->next) {
        const sl_store_t *st = sl_config_server(s)->store;
        sl_stats_breaker_state_t *b;
        if (!st || !st->url || !st->breaker) {
            continue;
        }
        b = apr_array_push(out);
        b->name = st->url->display;
        b->open = sl_breaker_is_open(st->breaker);
    }
    return out;
}
