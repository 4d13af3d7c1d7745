/* mod_slidinglimit: distributed sliding-window rate limits for httpd.
 *
 * This file is the glue: the module record, the hooks and the request path.
 * The pure core (limits, keys, wire formats) is src/sl_core.c, the stores are
 * src/sl_redis.c and src/sl_shm.c, the directives src/sl_config.c. */

#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "http_protocol.h"
#include "http_request.h"
#include "mod_core.h"
#include "mpm_common.h"
#include "ap_mpm.h"

#include "apr_atomic.h"
#include "apr_strings.h"

#include "src/sl_breaker.h"
#include "src/sl_config.h"
#include "src/sl_core.h"
#include "src/sl_denycache.h"
#include "src/sl_key.h"
#include "src/sl_redis.h"
#include "src/sl_shm.h"
#include "src/sl_stats.h"

APLOG_USE_MODULE(slidinglimit);

#define SL_HANDLER "slidinglimit-status"

/* Per-process state, made in post_config (shared memory, before fork) and
 * child_init (connections, never before fork). Reached through the main
 * server's config record: no mutable globals. */
typedef struct sl_proc {
    sl_shm_t *shm;
    sl_stats_t *stats;
    sl_breaker_t *breaker;
    sl_breakers_t *breakers; /* one per Redis store, see sl_store_breaker */
    sl_denycache_shm_t *denycache_shm; /* shared by the generation's children */
    sl_denycache_t *denycache;
    unsigned char seed[8];
    volatile apr_uint32_t counter;
} sl_proc_t;

typedef struct sl_req {
    sl_server_conf_t *sc;
    sl_dir_conf_t *dc;
    sl_proc_t *proc;
    apr_array_header_t *limits;
    sl_budget_t *budgets;
    int n;
} sl_req_t;

static sl_proc_t *sl_proc_of(server_rec *s)
{
    return ((sl_server_conf_t *) ap_get_module_config(s->module_config,
                                                      &slidinglimit_module))
        ->proc;
}

static int sl_pre_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp)
{
    (void) plog;
    (void) ptemp;
    return sl_shm_pre_config(pconf) == APR_SUCCESS ? OK
                                                   : HTTP_INTERNAL_SERVER_ERROR;
}

static int sl_post_config(apr_pool_t *pconf, apr_pool_t *plog,
                          apr_pool_t *ptemp, server_rec *s)
{
    sl_server_conf_t *msc =
        ap_get_module_config(s->module_config, &slidinglimit_module);
    sl_proc_t *proc;
    server_rec *vs;
    apr_status_t rv;
    (void) plog;
    (void) ptemp;

    /* The first pass of a start only budgets the configuration. */
    if (ap_state_query(AP_SQ_MAIN_STATE) == AP_SQ_MS_CREATE_PRE_CONFIG) {
        return OK;
    }
    proc = apr_pcalloc(pconf, sizeof(*proc));
    rv = sl_shm_create(pconf, s,
                       (apr_size_t) SL_OR(msc->shm_size, SL_DEFAULT_SHM_SIZE),
                       &proc->shm);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s,
                     "mod_slidinglimit: cannot create the shared memory store");
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    rv = sl_stats_create(pconf, s, &proc->stats);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s,
                     "mod_slidinglimit: cannot create the statistics segment");
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    proc->breaker = sl_stats_breaker(proc->stats);
    rv = sl_denycache_shm_create(pconf, &proc->denycache_shm);
    if (rv != APR_SUCCESS) {
        /* Only an optimisation: every decision goes to the store. */
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, s,
                     "mod_slidinglimit: cannot create the deny cache segment; "
                     "running without it");
    }
    rv = sl_breakers_create(s->process->pool, &proc->breakers);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s,
                     "mod_slidinglimit: cannot create the breaker segment");
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    for (vs = s; vs; vs = vs->next) {
        sl_server_conf_t *sc =
            ap_get_module_config(vs->module_config, &slidinglimit_module);
        const char *err;
        sc->proc = proc;
        /* A virtual host that inherits the main server's store says
         * nothing new about it. */
        if (vs != s && sc->store == msc->store &&
            sc->tls_verify == msc->tls_verify && sc->tls_ca == msc->tls_ca &&
            sc->tls_cert == msc->tls_cert &&
            sc->sentinel_password == msc->sentinel_password) {
            sc->tls = msc->tls;
            continue;
        }
        if ((err = sl_config_store_check(ptemp, vs, sc)) ||
            (err = sl_config_tls_setup(pconf, sc))) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, 0, vs, "mod_slidinglimit: %s",
                         err);
            return HTTP_INTERNAL_SERVER_ERROR;
        }
    }
    return OK;
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
    id = apr_pstrcat(p, u->display, "\n", u->user ? u->user : "", "\n",
                     u->password ? u->password : "", NULL);
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

static void sl_child_init(apr_pool_t *pchild, server_rec *s)
{
    sl_proc_t *proc = sl_proc_of(s);
    int threads = 1;
    server_rec *vs;

    if (!proc) {
        return;
    }
    if (sl_shm_child_init(proc->shm, pchild, s) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s,
                     "mod_slidinglimit: cannot attach the shared memory "
                     "store's mutex in this child");
    }
    apr_generate_random_bytes(proc->seed, sizeof(proc->seed));
    ap_mpm_query(AP_MPMQ_MAX_THREADS, &threads);
    if (threads < 1) {
        threads = 1;
    }
    proc->denycache =
        sl_denycache_create(pchild, proc->denycache_shm, threads > 1);
    /* One Redis client per server record with its own store; virtual hosts
     * that inherit the main server's store share its pool. */
    for (vs = s; vs; vs = vs->next) {
        sl_server_conf_t *sc =
            ap_get_module_config(vs->module_config, &slidinglimit_module);
        server_rec *other;
        sc->redis = NULL;
        if (!sc->store || sc->store->kind == SL_STORE_SHM) {
            continue;
        }
        for (other = s; other != vs; other = other->next) {
            sl_server_conf_t *oc = ap_get_module_config(other->module_config,
                                                        &slidinglimit_module);
            if (oc->store == sc->store && oc->redis) {
                sc->redis = oc->redis;
                break;
            }
        }
        if (!sc->redis &&
            sl_redis_create(
                pchild, sc->store,
                SL_OR(sc->connect_timeout, SL_DEFAULT_CONNECT_TIMEOUT),
                SL_OR(sc->command_timeout, SL_DEFAULT_COMMAND_TIMEOUT), threads,
                &sc->redis) != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, 0, vs,
                         "mod_slidinglimit: cannot set up the client for %s",
                         sc->store->display);
        }
        else if (!sl_redis_breaker(sc->redis)) {
            sl_redis_breaker_set(
                sc->redis, sl_store_breaker(pchild, proc, s, vs, sc->store));
        }
    }
}

static void sl_set_env(request_rec *r, int result, const char *policy,
                       const char *remaining)
{
    apr_table_setn(r->subprocess_env, "SLIDINGLIMIT_RESULT",
                   sl_result_name(result));
    if (policy) {
        apr_table_setn(r->subprocess_env, "SLIDINGLIMIT_POLICY", policy);
    }
    if (remaining) {
        apr_table_setn(r->subprocess_env, "SLIDINGLIMIT_REMAINING", remaining);
    }
}

/* An ErrorDocument's internal redirect is a new request: carry the decision
 * over under the same names, so that %{SLIDINGLIMIT_RESULT}e logs it. */
static void sl_copy_env(request_rec *r)
{
    static const char *const names[] = {
        "SLIDINGLIMIT_RESULT", "SLIDINGLIMIT_POLICY", "SLIDINGLIMIT_REMAINING"};
    request_rec *prev;
    size_t i;

    for (prev = r->prev; prev; prev = prev->prev) {
        if (apr_table_get(prev->subprocess_env, names[0])) {
            for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                const char *v = apr_table_get(prev->subprocess_env, names[i]);
                if (v) {
                    apr_table_setn(r->subprocess_env, names[i], v);
                }
            }
            return;
        }
    }
}

static void sl_add_header(void *ctx, const char *name, const char *value)
{
    request_rec *r = ctx;
    /* err_headers_out: they must survive a 429 and an ErrorDocument. */
    apr_table_setn(r->err_headers_out, name, value);
}

/* Answers the refused request here. The JSON body is ours unless the admin
 * set an ErrorDocument for the status, which httpd then serves. */
static int sl_refuse(request_rec *r, int status, int unavailable,
                     apr_int64_t retry)
{
    apr_table_setn(r->err_headers_out, "Retry-After",
                   apr_psprintf(r->pool, "%" APR_INT64_T_FMT, retry));
    if (ap_response_code_string(r, ap_index_of_response(status))) {
        return status;
    }
    ap_discard_request_body(r);
    r->status = status;
    /* As ap_send_error_response does for httpd's own error pages: what the
     * mapping phases chose for the resource (mod_mime's Content-Encoding
     * and Content-Language, headers_out) does not describe this body, and
     * the error filters ("Header always ...") apply to it. */
    apr_table_clear(r->headers_out);
    r->content_encoding = NULL;
    r->content_languages = NULL;
    ap_set_content_type(r, "application/json");
    ap_run_insert_error_filter(r);
    ap_rputs(sl_json_body(r->pool, unavailable, retry), r);
    return DONE;
}

/* Decide with the store; APR_SUCCESS with *d filled, or the store failed. */
static apr_status_t sl_decide_store(request_rec *r, sl_req_t *q,
                                    sl_decision_t *d)
{
    sl_proc_t *proc = q->proc;
    apr_status_t rv;
    const char *err = NULL;
    apr_time_t start = apr_time_now();
    sl_breaker_t *breaker;
    int trips = 0;

    if (!q->sc->redis) {
        rv = sl_shm_decide(proc->shm, r->pool, q->budgets, q->n, start, d);
        if (rv != APR_SUCCESS) {
            /* sl_shm_decide logs each change of its state once (full,
             * superseded by a restart, emptied): not once per request. */
            ap_log_rerror(APLOG_MARK, APLOG_DEBUG, rv, r,
                          "mod_slidinglimit: the shared memory store did not "
                          "decide; applying the fail mode");
        }
        return rv;
    }
    breaker = sl_redis_breaker(q->sc->redis);
    if (!sl_breaker_allow(breaker, start)) {
        return APR_EAGAIN;
    }
    {
        /* Unique per request across servers: a random per-child seed and a
         * counter; never the time, which two requests can share. */
        unsigned char member[12];
        apr_uint32_t c = apr_atomic_inc32(&proc->counter);
        memcpy(member, proc->seed, 8);
        memcpy(member + 8, &c, 4);
        rv = sl_redis_decide(q->sc->redis, r->pool, q->budgets, q->n,
                             (const char *) member, sizeof(member), d, &err,
                             &trips);
    }
    sl_stats_store(proc->stats, apr_time_now() - start, rv != APR_SUCCESS);
    sl_stats_round_trips(proc->stats, trips);
    if (rv == APR_SUCCESS) {
        if (sl_breaker_success(breaker, start, apr_time_now())) {
            ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, r->server,
                         "mod_slidinglimit: store %s is answering again",
                         q->sc->store->display);
        }
        return APR_SUCCESS;
    }
    if (sl_breaker_failure(breaker, start, apr_time_now())) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, r->server,
                     "mod_slidinglimit: store %s failed (%s); "
                     "applying the fail mode until it answers again",
                     q->sc->store->display, err ? err : "unknown error");
    }
    else {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, rv, r,
                      "mod_slidinglimit: store %s: %s", q->sc->store->display,
                      err ? err : "unknown error");
    }
    return rv;
}

/* The answer for a refusal from the deny cache: every refusing limit as the
 * store gave it (the headers and Retry-After then describe the longest
 * wait, as for the store's own refusal), the others unknown (and not shown:
 * the headers describe a refusing one). */
static void sl_decision_cached(apr_pool_t *p, const sl_req_t *q,
                               const apr_time_t *retry_at, apr_time_t now,
                               sl_decision_t *d)
{
    int i;

    d->now = now;
    d->admitted = 0;
    d->n = q->n;
    d->quota = apr_pcalloc(p, sizeof(*d->quota) * q->n);
    for (i = 0; i < q->n; i++) {
        d->quota[i].ok = !retry_at[i];
        d->quota[i].remaining = retry_at[i] ? 0 : q->budgets[i].requests;
        d->quota[i].reset = retry_at[i] ? retry_at[i] - now : 0;
    }
}

static int sl_fixups(request_rec *r)
{
    sl_req_t q;
    sl_decision_t d;
    const char *identity, *prefix;
    apr_status_t rv;
    int i, result, pick, status, cached;
    const sl_limit_t *decider;
    apr_time_t *retry_at = NULL, sent;
    apr_uint32_t *flights = NULL;

    if (r->prev) {
        sl_copy_env(r);
        return DECLINED;
    }
    /* Subrequests (DirectoryIndex, mod_include, look-ups) never count. */
    if (r->main) {
        return DECLINED;
    }
    q.dc = ap_get_module_config(r->per_dir_config, &slidinglimit_module);
    if (!q.dc->limits || !q.dc->limits->nelts) {
        return DECLINED;
    }
    q.sc = ap_get_module_config(r->server->module_config, &slidinglimit_module);
    q.proc = q.sc->proc;
    if (!q.proc) {
        return DECLINED;
    }
    q.limits = q.dc->limits;
    q.n = q.limits->nelts;
    q.budgets = apr_pcalloc(r->pool, sizeof(*q.budgets) * q.n);
    identity = sl_key_identity(r, q.dc);
    prefix = q.sc->prefix ? q.sc->prefix : SL_DEFAULT_PREFIX;
    for (i = 0; i < q.n; i++) {
        const sl_limit_t *l = APR_ARRAY_IDX(q.limits, i, sl_limit_t *);
        sl_budget_t *c = &q.budgets[i];
        c->algorithm = l->algorithm != SL_ALG_UNSET
                           ? l->algorithm
                           : SL_OR(q.dc->algorithm, SL_ALG_LOG);
        c->key = sl_store_key(r->pool, prefix, identity, l, c->algorithm);
        c->key_len = strlen(c->key);
        c->store = q.sc->store ? q.sc->store->tag : 0;
        c->requests = l->requests;
        c->window = l->window;
        c->burst = l->burst;
    }

    /* A key refused until T stays refused until T whatever happens (nothing
     * frees quota earlier), so it is answered here without a store call. */
    sent = apr_time_now();
    cached = 0;
    if (q.sc->redis) {
        retry_at = apr_pcalloc(r->pool, sizeof(*retry_at) * q.n);
        flights = apr_pcalloc(r->pool, sizeof(*flights) * q.n);
        cached = sl_denycache_find(
            q.proc->denycache, q.budgets, q.n,
            SL_OR(q.sc->command_timeout, SL_DEFAULT_COMMAND_TIMEOUT), &sent,
            retry_at, flights);
    }
    if (!cached) {
        rv = sl_decide_store(r, &q, &d);
        if (q.sc->redis) {
            /* The store ran after "sent" and before now: sent + reset is
             * never later than the store's own end of a refusal (when the
             * cache stops answering), now + reset never earlier (what the
             * client is told to wait for). Settled whatever the outcome:
             * other threads may be waiting for this answer. */
            sl_denycache_settle(q.proc->denycache, q.budgets, q.n,
                                rv == APR_SUCCESS ? &d : NULL, sent,
                                apr_time_now(), flights);
        }
    }
    if (cached) {
        sl_stats_deny_cached(q.proc->stats);
        sl_decision_cached(r->pool, &q, retry_at, sent, &d);
        result = SL_RESULT_DENIED;
    }
    else if (rv == APR_SUCCESS) {
        result = d.admitted ? SL_RESULT_ALLOWED : SL_RESULT_DENIED;
    }
    else {
        /* Also for the shm store (full, or this child outlived a
         * restart): a fail-closed login page stays closed. */
        if (SL_OR(q.dc->fail_mode, SL_FAIL_OPEN) == SL_FAIL_CLOSED) {
            sl_stats_decision(q.proc->stats, "-", SL_RESULT_FAILED_CLOSED);
            sl_set_env(r, SL_RESULT_FAILED_CLOSED, NULL, NULL);
            return sl_refuse(
                r, HTTP_SERVICE_UNAVAILABLE, 1,
                sl_ceil_seconds(
                    q.sc->redis ? sl_breaker_wait(sl_redis_breaker(q.sc->redis),
                                                  apr_time_now())
                                : 0));
        }
        if (!q.sc->redis || !SL_OR(q.dc->local_fallback, 1) ||
            sl_shm_decide(q.proc->shm, r->pool, q.budgets, q.n, apr_time_now(),
                          &d) != APR_SUCCESS) {
            sl_stats_decision(q.proc->stats, "-", SL_RESULT_FAILED_OPEN);
            sl_set_env(r, SL_RESULT_FAILED_OPEN, NULL, NULL);
            return DECLINED;
        }
        sl_stats_fallback(q.proc->stats);
        result = d.admitted ? SL_RESULT_FAILED_OPEN : SL_RESULT_DENIED;
    }
    if (!d.admitted && SL_OR(q.dc->dry_run, 0)) {
        result = SL_RESULT_DRYRUN_DENIED;
    }

    pick = sl_decision_pick(&d);
    decider = APR_ARRAY_IDX(q.limits, pick, sl_limit_t *);
    sl_quota_headers(r->pool, SL_OR(q.dc->headers, SL_DEFAULT_HEADERS),
                     q.limits, &d, sl_add_header, r);
    sl_set_env(r, result, decider->name,
               sl_i64toa(r->pool, d.quota[pick].remaining));
    sl_stats_decision(q.proc->stats, decider->name, result);
    if (d.admitted || result == SL_RESULT_DRYRUN_DENIED) {
        return DECLINED;
    }
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                  "mod_slidinglimit: refused by policy %s for %" APR_INT64_T_FMT
                  "us",
                  decider->name, d.quota[pick].reset);
    status = SL_OR(q.dc->status, SL_DEFAULT_STATUS);
    return sl_refuse(r, status, 0, sl_retry_after(&d));
}

static int sl_status_handler(request_rec *r)
{
    sl_proc_t *proc;

    if (!r->handler || strcmp(r->handler, SL_HANDLER)) {
        return DECLINED;
    }
    if (r->method_number != M_GET) {
        return HTTP_METHOD_NOT_ALLOWED;
    }
    proc = sl_proc_of(r->server);
    if (!proc) {
        return HTTP_SERVICE_UNAVAILABLE;
    }
    ap_set_content_type(r, "text/plain; version=0.0.4; charset=utf-8");
    if (!r->header_only) {
        sl_stats_write(proc->stats, r);
    }
    return OK;
}

static void sl_register_hooks(apr_pool_t *p)
{
    (void) p;
    ap_hook_pre_config(sl_pre_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_post_config(sl_post_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_child_init(sl_child_init, NULL, NULL, APR_HOOK_MIDDLE);
    /* Before mod_dir's fixup, which turns "/" into a subrequest. */
    ap_hook_fixups(sl_fixups, NULL, NULL, APR_HOOK_FIRST);
    ap_hook_handler(sl_status_handler, NULL, NULL, APR_HOOK_MIDDLE);
}

module AP_MODULE_DECLARE_DATA slidinglimit_module = {
    STANDARD20_MODULE_STUFF,    sl_create_dir_conf,   sl_merge_dir_conf,
    sl_create_server_conf,      sl_merge_server_conf, sl_cmds,
    sl_register_hooks,
#if defined(AP_MODULE_FLAG_ALWAYS_MERGE)
    AP_MODULE_FLAG_ALWAYS_MERGE
#endif
};
