/* The decision of one request (see sl_decide.h): build the budgets, decide,
 * answer. */
#include "sl_decide.h"

#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "http_protocol.h"
#include "http_request.h"
#include "mod_core.h"

#include "apr_atomic.h"
#include "apr_lib.h"
#include "apr_strings.h"
#include "apr_time.h"

#include "sl_budget.h"
#include "sl_delay.h"
#include "sl_ident.h"
#include "sl_key.h"
#include "sl_lease.h"
#include "sl_outcome.h"
#include "sl_quota.h"
#include "sl_reply.h"
#include "sl_store.h"
#include "sl_wire.h"

#include <string.h>

APLOG_USE_MODULE(slidinglimit);

/* One request's limits, as the stores see them. */
typedef struct sl_case {
    request_rec *r;      /* the client's request: note, headers, answer */
    request_rec *target; /* whose section and key: r, or mod_dir's look-up
                          * of r's target */
    const sl_dir_conf_t *dc;
    sl_proc_t *proc;
    sl_store_t *store;
    const apr_array_header_t *limits; /* sl_limit_t *, one per budget */
    sl_budget_t *budgets;
    int n;
    apr_interval_time_t wait; /* for another request's store call */
    int reserve;              /* some limit has count= */
    const char *member;       /* of the store call, for a give-back */
    apr_interval_time_t held; /* delay=: how long it waited; -1: never */
} sl_case_t;

/* A count= decision's reservation, given back after the response when the
 * status the client got is not listed. */
typedef struct sl_reserved {
    struct sl_reserved *next;
    sl_store_t *store; /* the store that admitted: its own, or the fallback */
    sl_proc_t *proc;
    const apr_array_header_t *limits;
    sl_budget_t *budgets;
    int n;
    const char *member;
    apr_time_t at;
    request_rec *r;      /* the client's request, whose pool ends the leases */
    sl_budget_t *leases; /* its SlidingLimitConcurrent budgets */
    int nleases;
    sl_lease_t *held; /* renewed while it runs; NULL: not renewed */
} sl_reserved_t;

/* A cost=after: decision's bill: its limits are charged their real cost
 * once the response is known (log_transaction). */
typedef struct sl_owed {
    struct sl_owed *next;
    sl_store_t *store; /* the store that admitted */
    sl_proc_t *proc;
    const apr_array_header_t *limits;
    sl_budget_t *budgets;
    int n;
    const char *member;
} sl_owed_t;

/* One decision's budgets (its sl_case_t's, which only their costs change
 * after). */
typedef struct sl_seen {
    struct sl_seen *next;
    const sl_budget_t *budgets;
    int n;
} sl_seen_t;

/* What was decided for a request: r->request_config. */
typedef struct sl_note {
    /* The per-directory configuration it was last decided under: a fast
     * redirect (mod_dir) gives it its target's, which the fixups after it
     * decide. */
    const ap_conf_vector_t *dir;
    /* Every budget decided for it, one list entry per decision: neither a
     * second decision of the same request nor a later internal redirect of
     * the same client request decides them again. */
    struct sl_seen *seen;
    /* Between the first fixups and the last: mod_dir's look-ups of its
     * target may decide for it. */
    int resolving;
    sl_reserved_t *reserved;
    sl_owed_t *owed;
    /* cost=after:header:NAME: the values the cost filter took out of the
     * response, by NAME. */
    apr_table_t *after_values;
    /* The limits its quota headers describe, and their quota. */
    const apr_array_header_t *shown_limits;
    sl_decision_t shown;
} sl_note_t;

/* The request's note, made on first use. */
static sl_note_t *sl_note(request_rec *r)
{
    sl_note_t *note =
        ap_get_module_config(r->request_config, &slidinglimit_module);

    if (!note) {
        note = apr_pcalloc(r->pool, sizeof(*note));
        ap_set_module_config(r->request_config, &slidinglimit_module, note);
    }
    return note;
}

static void sl_budgets_of(sl_case_t *c, const sl_server_conf_t *sc)
{
    /* A section with count= decides before authentication (and in fixups
     * only an internal redirect that skipped it): its user is the name
     * attempted in every phase, so the redirect finds the budgets already
     * decided, and the give-back returns the budgets taken here. */
    const char *identity =
        sl_key_identity(c->target, c->dc, sl_budget_counts(c->dc));

    c->n = c->limits->nelts;
    c->budgets =
        sl_budgets_build(c->r->pool, sc, c->dc, c->limits, identity,
                         sc->proc ? sc->proc->memo : NULL, &c->reserve);
}

/* cost=expr:: each such limit's cost for this request. Returns
 * SL_COST_OK, or how the value of the first limit (*at) that cannot take it
 * fails: the request is then refused before any store call, so it consumes
 * nothing from any limit. */
static int sl_budgets_cost(sl_case_t *c, int *at)
{
    request_rec *r = c->r;
    int i, why;

    for (i = 0; i < c->n; i++) {
        const sl_limit_t *l = APR_ARRAY_IDX(c->limits, i, sl_limit_t *);
        sl_budget_t *b = &c->budgets[i];
        const char *v, *err = NULL;

        /* A fixed cost= was checked at start-up against quota-default=;
         * an expression's quota may be lower. */
        if (!l->cost_prog && l->quota_prog && b->cost > sl_budget_capacity(b)) {
            *at = i;
            return SL_COST_OVER;
        }
        if (!l->cost_prog) {
            continue;
        }
        v = ap_expr_str_exec(c->target, l->cost_prog, &err);
        why =
            err ? SL_COST_BAD
                : sl_cost_of(v, l->cost_unit, sl_budget_capacity(b), &b->cost);
        if (why != SL_COST_OK) {
            /* The value is the client's: escaped, and cut short. */
            ap_log_rerror(
                APLOG_MARK, APLOG_DEBUG, 0, r,
                "mod_slidinglimit: policy %s: cost '%s' %s", l->name,
                err ? err
                    : ap_escape_logitem(r->pool, apr_pstrndup(r->pool, v, 32)),
                why == SL_COST_BAD ? "is not a whole number"
                                   : "is more than the limit holds");
            *at = i;
            return why;
        }
    }
    return SL_COST_OK;
}

static int sl_budget_decided(const request_rec *r, const sl_budget_t *b)
{
    const request_rec *q;
    int i;

    for (q = r; q; q = q->prev) {
        const sl_note_t *note =
            ap_get_module_config(q->request_config, &slidinglimit_module);
        const sl_seen_t *seen;
        for (seen = note ? note->seen : NULL; seen; seen = seen->next) {
            for (i = 0; i < seen->n; i++) {
                const sl_budget_t *o = &seen->budgets[i];
                if (o->store_tag == b->store_tag && o->key_len == b->key_len &&
                    !memcmp(o->key, b->key, b->key_len)) {
                    return 1;
                }
            }
        }
    }
    return 0;
}

static void sl_budgets_remember(const sl_case_t *c)
{
    sl_note_t *note = sl_note(c->r);
    sl_seen_t *seen = apr_palloc(c->r->pool, sizeof(*seen));

    seen->budgets = c->budgets;
    seen->n = c->n;
    seen->next = note->seen;
    note->seen = seen;
}

/* A fast redirect (DirectoryIndex, FallbackResource) and an internal
 * redirect (a per-directory rewrite, a CGI's local Location:, an
 * ErrorDocument, Action) are the same client request: the budgets it or an
 * earlier request of its chain was decided for are left out, the target's
 * others are decided here. Returns how many remain. */
static int sl_budgets_undecided(sl_case_t *c)
{
    apr_array_header_t *limits;
    int i, k = 0;

    /* Most requests are decided once: nothing to leave out. */
    for (i = 0; i < c->n && !sl_budget_decided(c->r, &c->budgets[i]); i++) {
    }
    if (i == c->n) {
        return c->n;
    }
    limits = apr_array_make(c->r->pool, c->n, sizeof(sl_limit_t *));
    for (i = 0; i < c->n; i++) {
        if (!sl_budget_decided(c->r, &c->budgets[i])) {
            c->budgets[k++] = c->budgets[i];
            APR_ARRAY_PUSH(limits, sl_limit_t *) =
                APR_ARRAY_IDX(c->limits, i, sl_limit_t *);
        }
    }
    if (k < c->n) {
        c->limits = limits;
        c->n = k;
    }
    return k;
}

static void sl_mode_of(const sl_case_t *c, sl_mode_t *m)
{
    const sl_dir_conf_t *dc = c->dc;

    m->fail_closed = SL_OR(dc->fail_mode, SL_FAIL_OPEN) == SL_FAIL_CLOSED;
    m->fallback = sl_store_remote(c->store) && SL_OR(dc->local_fallback, 1);
    m->dry_run = SL_OR(dc->dry_run, 0);
    m->deny_status = SL_OR(dc->status, SL_DEFAULT_STATUS);
    m->fail_status = SL_OR(dc->fail_status, SL_DEFAULT_FAIL_STATUS);
}

static int sl_step(apr_status_t rv, const sl_decision_t *d)
{
    if (rv != APR_SUCCESS) {
        return SL_STEP_FAILED;
    }
    return d->admitted ? SL_STEP_ADMITTED : SL_STEP_DENIED;
}

/* The answer for a refusal from the deny cache: every refusing limit as the
 * store gave it (the headers and Retry-After then describe the longest
 * wait, as for the store's own refusal), the others unknown (and not shown:
 * the headers describe a refusing one). */
static void sl_decision_cached(const sl_case_t *c, const apr_time_t *retry_at,
                               apr_time_t now, sl_decision_t *d)
{
    int i;

    d->now = now;
    d->admitted = 0;
    d->n = c->n;
    d->quota = apr_pcalloc(c->r->pool, sizeof(*d->quota) * c->n);
    for (i = 0; i < c->n; i++) {
        d->quota[i].ok = !retry_at[i];
        d->quota[i].remaining = retry_at[i] ? 0 : c->budgets[i].requests;
        d->quota[i].reset = retry_at[i] ? retry_at[i] - now : 0;
    }
}

/* expr: quotas of 0: the request is refused without a store call (a
 * budget of no requests has no state to ask about), every limit of 0 until
 * a window from now, when its quota may have changed; the others unknown
 * (and not shown). */
static void sl_decision_zero(const sl_case_t *c, sl_decision_t *d)
{
    int i;

    d->now = apr_time_now();
    d->admitted = 0;
    d->n = c->n;
    d->quota = apr_pcalloc(c->r->pool, sizeof(*d->quota) * c->n);
    for (i = 0; i < c->n; i++) {
        const sl_limit_t *l = APR_ARRAY_IDX(c->limits, i, sl_limit_t *);
        d->quota[i].ok = !(l->quota_prog && !l->requests);
        d->quota[i].remaining = d->quota[i].ok ? c->budgets[i].requests : 0;
        d->quota[i].reset = d->quota[i].ok ? 0 : c->budgets[i].window;
    }
}

/* The refusals of a store's answer that started a limit's block. The store
 * raises a starting block's reset to the whole block (lua/sl_check.lua,
 * sl_block_begin) and answers a running one with the time left in it,
 * which is shorter by the store time since it began. */
static int sl_block_starts(const sl_case_t *c, const sl_decision_t *d, int i)
{
    return c->budgets[i].block > 0 && !d->quota[i].ok &&
           d->quota[i].reset >= c->budgets[i].block;
}

static int sl_blocks_started(const sl_case_t *c, const sl_decision_t *d)
{
    int i, started = 0;

    for (i = 0; i < c->n && i < d->n; i++) {
        started += sl_block_starts(c, d, i);
    }
    return started;
}

/* One warning per block that starts, for fail2ban, CrowdSec and the like
 * at the default LogLevel (notice is filtered out by "LogLevel warn" in
 * httpd 2.4): a fixed order of key=value fields, README "For logs and back
 * ends". Only the starting refusal gets here: the blocked requests after it
 * are answered from the deny cache or with the time left, shorter than the
 * block. */
static void sl_blocks_log(const sl_case_t *c, const sl_decision_t *d)
{
    request_rec *r = c->r;
    int i;

    for (i = 0; i < c->n && i < d->n; i++) {
        const sl_limit_t *l;
        if (!sl_block_starts(c, d, i)) {
            continue;
        }
        l = APR_ARRAY_IDX(c->limits, i, sl_limit_t *);
        ap_log_rerror(
            APLOG_MARK, APLOG_WARNING, 0, r,
            "mod_slidinglimit: block started: client=%s policy=%s "
            "seconds=%" APR_INT64_T_FMT " vhost=%s:%u uri=%s",
            r->useragent_ip, ap_escape_logitem(r->pool, l->name),
            sl_ceil_seconds(c->budgets[i].block),
            ap_escape_logitem(r->pool, r->server->server_hostname
                                           ? r->server->server_hostname
                                           : "-"),
            (unsigned) ap_get_server_port(r),
            ap_escape_logitem(r->pool, r->uri));
    }
}

/* The blocks that a store's answer started: counted, and each logged. */
static void sl_blocks_note(const sl_case_t *c, const sl_decision_t *d)
{
    int started = sl_blocks_started(c, d);

    if (started) {
        sl_stats_blocks(c->proc->stats, started);
        sl_blocks_log(c, d);
    }
}

/* The deny cache, else the store. */
static int sl_decide_by_store(sl_case_t *c, sl_decision_t *d)
{
    apr_pool_t *p = c->r->pool;
    apr_time_t *retry_at, sent = apr_time_now();
    apr_uint32_t *flights;
    apr_status_t rv;

    if (!sl_store_remote(c->store)) {
        rv = sl_store_decide(c->store, c->r, c->budgets, c->n, d, &c->member);
        if (rv == APR_SUCCESS) {
            sl_blocks_note(c, d);
        }
        return sl_step(rv, d);
    }
    /* A key refused until T stays refused until T whatever happens (nothing
     * frees quota earlier), so it is answered here without a store call. */
    retry_at = apr_pcalloc(p, sizeof(*retry_at) * c->n);
    flights = apr_pcalloc(p, sizeof(*flights) * c->n);
    if (sl_denycache_find(c->proc->denycache, c->budgets, c->n, c->wait, &sent,
                          retry_at, flights)) {
        sl_stats_deny_cached(c->proc->stats);
        sl_decision_cached(c, retry_at, sent, d);
        return SL_STEP_DENIED;
    }
    rv = sl_store_decide(c->store, c->r, c->budgets, c->n, d, &c->member);
    /* The store ran after "sent" and before now: sent + reset is never
     * later than the store's own end of a refusal (when the cache stops
     * answering), now + reset never earlier (what the client is told to
     * wait for). Settled whatever the outcome: other threads may be
     * waiting for this answer. */
    sl_denycache_settle(c->proc->denycache, c->budgets, c->n,
                        rv == APR_SUCCESS ? d : NULL, sent, apr_time_now(),
                        flights);
    if (rv == APR_SUCCESS) {
        sl_blocks_note(c, d);
    }
    return sl_step(rv, d);
}

/* While the store is down, the same limits on this server's own traffic. */
static int sl_decide_by_fallback(sl_case_t *c, sl_decision_t *d)
{
    if (sl_store_decide(sl_store_fallback(c->proc), c->r, c->budgets, c->n, d,
                        &c->member) != APR_SUCCESS) {
        return SL_STEP_FAILED;
    }
    sl_stats_fallback(c->proc->stats);
    sl_blocks_note(c, d);
    return sl_step(APR_SUCCESS, d);
}

/* delay=: may this child hold one more request (the section's
 * SlidingLimitDelayMax, or the MPM's default)? Counted when it may. */
static int sl_delay_enter(const sl_case_t *c)
{
    int max = SL_OR(c->dc->delay_max, c->proc->delay_max);

    if (apr_atomic_inc32(&c->proc->delayed) >= (apr_uint32_t) max) {
        apr_atomic_dec32(&c->proc->delayed);
        sl_stats_delay_full(c->proc->stats);
        return 0;
    }
    sl_stats_delay_waiting(c->proc->stats, 1);
    return 1;
}

/* delay=: a refusal whose every refusing limit would admit the request
 * within what is left of its delay= is held until then and decided again,
 * by the same atomic call (or the deny cache, which knows the same time),
 * so that a delay admits no more than the limits do: a retry that others
 * beat to the room waits again, within the same bound. */
static int sl_decide_delayed(sl_case_t *c, sl_decision_t *d, apr_time_t start)
{
    int step = SL_STEP_DENIED, rounds = 0;
    apr_int64_t wait;

    while ((wait = sl_delay_wait(c->limits, d, apr_time_now() - start,
                                 rounds)) > 0) {
        if (!rounds && !sl_delay_enter(c)) {
            return step;
        }
        rounds++;
        /* The reset counts from the store's decision, which ran before
         * its answer came back: waiting it from now is never too early. */
        apr_sleep(wait);
        step = sl_decide_by_store(c, d);
        if (step != SL_STEP_DENIED) {
            break;
        }
    }
    if (rounds) {
        c->held = apr_time_now() - start;
        apr_atomic_dec32(&c->proc->delayed);
        sl_stats_delay_waiting(c->proc->stats, -1);
        sl_stats_delayed(c->proc->stats, c->held, step == SL_STEP_ADMITTED);
    }
    return step;
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

/* A look-up's decision is the client request's; the look-up gets the
 * variables too, as a fast redirect puts its copy of them first. */
static void sl_case_env(const sl_case_t *c, int result, const char *policy,
                        const char *remaining)
{
    sl_set_env(c->r, result, policy, remaining);
    if (c->target != c->r) {
        sl_set_env(c->target, result, policy, remaining);
    }
    /* delay=: microseconds held, for the access log. */
    if (c->held >= 0) {
        const char *us = sl_i64toa(c->r->pool, c->held);
        apr_table_setn(c->r->subprocess_env, "SLIDINGLIMIT_DELAY", us);
        if (c->target != c->r) {
            apr_table_setn(c->target->subprocess_env, "SLIDINGLIMIT_DELAY", us);
        }
    }
}

void sl_decide_carry_env(request_rec *r)
{
    static const char *const names[] = {
        "SLIDINGLIMIT_RESULT", "SLIDINGLIMIT_POLICY", "SLIDINGLIMIT_REMAINING",
        "SLIDINGLIMIT_DELAY"};
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

/* Where the quota headers go: err_headers_out, as they must survive a 429
 * and an ErrorDocument. fresh: the table held nothing when they began, so
 * none of their names is there yet (sl_quota_headers writes each once)
 * and adding is setting, without setn's compare against every entry of
 * the same first letters ("RateLimit...", "X-RateLimit-..."). */
typedef struct sl_header_sink {
    apr_table_t *t;
    int fresh;
} sl_header_sink_t;

static void sl_add_header(void *ctx, const char *name, const char *value)
{
    sl_header_sink_t *s = ctx;

    if (s->fresh) {
        apr_table_addn(s->t, name, value);
    }
    else {
        apr_table_setn(s->t, name, value);
    }
}

/* Answers the refused request here. The JSON body is ours unless the admin
 * set an ErrorDocument for the status, which httpd then serves. A look-up
 * refuses with the status alone, which mod_dir sends for the client's
 * request (its headers are on that request already). */
static int sl_respond(const sl_case_t *c, int status, const char *body)
{
    request_rec *r = c->r;

    if (c->target != r ||
        ap_response_code_string(r, ap_index_of_response(status))) {
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
    ap_rputs(body, r);
    return DONE;
}

static int sl_refuse(const sl_case_t *c, int status, int unavailable,
                     apr_int64_t retry)
{
    request_rec *r = c->r;

    apr_table_setn(r->err_headers_out, "Retry-After",
                   sl_i64toa(r->pool, retry));
    return sl_respond(c, status, sl_json_body(r->pool, unavailable, retry));
}

/* A cost that limit at cannot take, refused before the store: 400 for a
 * value that is no whole number (the client's doing), 413 for one larger
 * than the limit holds. Waiting never admits either, so neither is a 429
 * with a Retry-After that clients would retry on. Both close the
 * connection, so a body is not read to be discarded. A dry run lets the
 * request through, consuming nothing, like any refusal of a dry run. */
static int sl_refuse_cost(const sl_case_t *c, const sl_mode_t *m, int why,
                          int at)
{
    request_rec *r = c->r;
    const sl_limit_t *l = APR_ARRAY_IDX(c->limits, at, sl_limit_t *);
    int result = m->dry_run ? SL_RESULT_DRYRUN_DENIED : SL_RESULT_DENIED;
    int status =
        why == SL_COST_BAD ? HTTP_BAD_REQUEST : HTTP_REQUEST_ENTITY_TOO_LARGE;

    sl_stats_decision(c->proc->stats, sl_limit_label(l), result);
    sl_case_env(c, result, l->name, NULL);
    if (m->dry_run) {
        return DECLINED;
    }
    /* Before sl_respond discards the body: a status that drops the
     * connection reads none. */
    if (c->target == r) {
        r->status = status;
    }
    return sl_respond(c, status,
                      sl_json_cost_body(r->pool, why, l->name,
                                        sl_budget_capacity(&c->budgets[at])));
}

/* The limits and quota an admitted request's headers describe: with a
 * decision before this one for the same request (the URL asked for, before
 * a fast redirect to its target), both decisions' limits, as one section's
 * several lines are. A refusal's describe the refusing decision, so that
 * the headers say what Retry-After says. */
static void sl_shown(const sl_case_t *c, const sl_decision_t *d,
                     const apr_array_header_t **limits, sl_decision_t *shown)
{
    apr_pool_t *p = c->r->pool;
    sl_note_t *note = sl_note(c->r);
    apr_array_header_t *all;
    int n;

    *limits = c->limits;
    *shown = *d;
    if (note->shown_limits) {
        n = note->shown.n + d->n;
        all = apr_array_copy(p, note->shown_limits);
        apr_array_cat(all, c->limits);
        shown->n = n;
        shown->quota = apr_palloc(p, sizeof(*shown->quota) * n);
        memcpy(shown->quota, note->shown.quota,
               sizeof(*shown->quota) * note->shown.n);
        memcpy(shown->quota + note->shown.n, d->quota,
               sizeof(*shown->quota) * d->n);
        *limits = all;
    }
    note->shown_limits = *limits;
    note->shown = *shown;
}

/* Headers, environment and statistics, then the refusal if there is one. */
static int sl_answer(const sl_case_t *c, const sl_outcome_t *o,
                     const sl_decision_t *d)
{
    request_rec *r = c->r;
    const sl_limit_t *decider;
    const char *remaining;
    sl_header_sink_t sink;
    int pick;

    if (!o->quota) {
        sl_stats_decision(c->proc->stats, "-", o->result);
        sl_case_env(c, o->result, NULL, NULL);
        return o->status ? sl_refuse(c, o->status, o->unavailable,
                                     sl_ceil_seconds(sl_store_wait(
                                         c->store, apr_time_now())))
                         : DECLINED;
    }
    pick = sl_decision_pick(d);
    decider = APR_ARRAY_IDX(c->limits, pick, sl_limit_t *);
    sink.t = r->err_headers_out;
    sink.fresh = apr_is_empty_table(sink.t);
    if (o->status) {
        remaining =
            sl_quota_headers(r->pool, SL_OR(c->dc->headers, SL_DEFAULT_HEADERS),
                             c->limits, d, sl_add_header, &sink);
    }
    else {
        const apr_array_header_t *limits;
        sl_decision_t shown;
        sl_shown(c, d, &limits, &shown);
        remaining =
            sl_quota_headers(r->pool, SL_OR(c->dc->headers, SL_DEFAULT_HEADERS),
                             limits, &shown, sl_add_header, &sink);
        if (shown.quota[sl_decision_pick(&shown)].remaining !=
            d->quota[pick].remaining) {
            remaining = NULL;
        }
    }
    /* The variable is the headers' text when they show the same number. */
    sl_case_env(c, o->result, decider->name,
                remaining ? remaining
                          : sl_i64toa(r->pool, d->quota[pick].remaining));
    sl_stats_decision(c->proc->stats, sl_limit_label(decider), o->result);
    if (!o->status) {
        return DECLINED;
    }
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                  "mod_slidinglimit: refused by policy %s for %" APR_INT64_T_FMT
                  "us",
                  decider->name, d->quota[pick].reset);
    return sl_refuse(c, o->status, o->unavailable, sl_retry_after(d));
}

/* The end of a request admitted under SlidingLimitConcurrent, however it
 * ends (answered, the client gone, a handler failed, the connection lost):
 * its pool goes, and its leases go back with one small script. An
 * internal redirect shares the pool and a subrequest never takes a lease
 * (only the client's request is decided), so this runs once per lease. A
 * store that does not answer keeps the lease until it expires. */
static apr_status_t sl_release(void *data)
{
    sl_reserved_t *res = data;
    apr_time_t at =
        res->held ? sl_lease_drop(res->proc->leases, res->held) : res->at;

    sl_store_give_back(res->store, res->r, res->leases, res->nleases,
                       res->member, at);
    return APR_SUCCESS;
}

/* The leases a reservation took, held in the child's registry (renewed
 * while the request runs) and given back when its pool goes. */
static void sl_leases_hold(sl_reserved_t *res)
{
    request_rec *r = res->r;
    int i;

    res->leases = apr_palloc(r->pool, sizeof(*res->leases) * res->n);
    res->nleases = 0;
    for (i = 0; i < res->n; i++) {
        if (res->budgets[i].algorithm == SL_ALG_CONCURRENT) {
            res->leases[res->nleases++] = res->budgets[i];
        }
    }
    res->held = sl_lease_hold(res->proc->leases, r->pool, res->store,
                              res->leases, res->nleases, res->member, res->at);
    apr_pool_cleanup_register(r->pool, res, sl_release, apr_pool_cleanup_null);
}

static int sl_leases_taken(const sl_case_t *c)
{
    int i;

    for (i = 0; i < c->n; i++) {
        if (c->budgets[i].algorithm == SL_ALG_CONCURRENT) {
            return 1;
        }
    }
    return 0;
}

/* An admission of limits with cost=after:: the bill, charged after the
 * response (sl_decide_charge). */
static void sl_owe(const sl_case_t *c, sl_store_t *store)
{
    sl_note_t *note;
    sl_owed_t *owed;
    int i;

    for (i = 0; i < c->n; i++) {
        if (APR_ARRAY_IDX(c->limits, i, sl_limit_t *)->after) {
            break;
        }
    }
    if (i == c->n) {
        return;
    }
    note = sl_note(c->r);
    owed = apr_palloc(c->r->pool, sizeof(*owed));
    owed->store = store;
    owed->proc = c->proc;
    owed->limits = c->limits;
    owed->budgets = c->budgets;
    owed->n = c->n;
    owed->member = c->member;
    owed->next = note->owed;
    note->owed = owed;
}

/* The decision for the client's request r under target's section dc:
 * target is r, or mod_dir's look-up of r's target. */
static int sl_decide_for(request_rec *r, request_rec *target,
                         sl_server_conf_t *sc, sl_dir_conf_t *dc)
{
    sl_case_t c;
    sl_mode_t m;
    sl_outcome_t o;
    sl_decision_t d;
    apr_time_t start;
    int store_step, fallback = SL_STEP_FAILED, why, at, zero;

    c.r = r;
    c.target = target;
    c.dc = dc;
    c.proc = sc->proc;
    c.store = sc->store;
    c.limits = dc->limits;
    c.wait = SL_OR(sc->command_timeout, SL_DEFAULT_COMMAND_TIMEOUT);
    c.reserve = 0;
    c.member = NULL;
    c.held = -1;
    if (!c.store) {
        return DECLINED;
    }
    if (target == r) {
        sl_note(r)->dir = r->per_dir_config;
    }
    sl_budgets_of(&c, sc);
    if (!sl_budgets_undecided(&c)) {
        if (r->prev) {
            sl_decide_carry_env(r);
        }
        return DECLINED;
    }
    sl_budgets_remember(&c);
    sl_mode_of(&c, &m);
    zero = sl_quota_apply(r, target, &c.limits, c.budgets, c.n);
    if ((why = sl_budgets_cost(&c, &at)) != SL_COST_OK) {
        return sl_refuse_cost(&c, &m, why, at);
    }
    if (zero) {
        /* A quota of 0 never frees: nothing to wait for. */
        sl_decision_zero(&c, &d);
        store_step = SL_STEP_DENIED;
    }
    else {
        start = apr_time_now();
        store_step = sl_decide_by_store(&c, &d);
        /* A dry run refuses nothing, so nothing waits. */
        if (store_step == SL_STEP_DENIED && !m.dry_run) {
            store_step = sl_decide_delayed(&c, &d, start);
        }
    }
    if (sl_outcome_wants_fallback(&m, store_step)) {
        fallback = sl_decide_by_fallback(&c, &d);
    }
    sl_outcome_of(&m, store_step, fallback, &o);
    /* A dry run's admissions consume like any other, so they give back
     * too; its refusals consumed nothing. */
    if (c.reserve &&
        (store_step == SL_STEP_ADMITTED || fallback == SL_STEP_ADMITTED)) {
        sl_note_t *note = sl_note(r);
        sl_reserved_t *res = apr_palloc(r->pool, sizeof(*res));
        res->store = store_step == SL_STEP_ADMITTED ? c.store
                                                    : sl_store_fallback(c.proc);
        res->proc = c.proc;
        res->limits = c.limits;
        res->budgets = c.budgets;
        res->n = c.n;
        res->member = c.member;
        res->at = d.now;
        res->next = note->reserved;
        note->reserved = res;
        res->r = r;
        if (sl_leases_taken(&c)) {
            sl_leases_hold(res);
        }
    }
    if (store_step == SL_STEP_ADMITTED || fallback == SL_STEP_ADMITTED) {
        sl_owe(&c, store_step == SL_STEP_ADMITTED ? c.store
                                                  : sl_store_fallback(c.proc));
    }
    return sl_answer(&c, &o, &d);
}

int sl_decide(request_rec *r, sl_server_conf_t *sc, sl_dir_conf_t *dc)
{
    return sl_decide_for(r, r, sc, dc);
}

int sl_decide_lookup(request_rec *rr, sl_server_conf_t *sc, sl_dir_conf_t *dc)
{
    const sl_note_t *note =
        ap_get_module_config(rr->main->request_config, &slidinglimit_module);

    if (!note || !note->resolving) {
        return DECLINED;
    }
    return sl_decide_for(rr->main, rr, sc, dc);
}

void sl_decide_resolving(request_rec *r, int on)
{
    sl_note_t *note =
        on ? sl_note(r)
           : ap_get_module_config(r->request_config, &slidinglimit_module);

    if (note) {
        note->resolving = on;
    }
}

int sl_decide_done(request_rec *r)
{
    const sl_note_t *note =
        ap_get_module_config(r->request_config, &slidinglimit_module);

    return note && note->dir == r->per_dir_config;
}

/* One reservation, judged by the status the client got. */
static void sl_give_back(request_rec *r, sl_reserved_t *res, int status)
{
    sl_budget_t *back;
    int i, k = 0;

    back = apr_palloc(r->pool, sizeof(*back) * res->n);
    for (i = 0; i < res->n; i++) {
        const sl_limit_t *l = APR_ARRAY_IDX(res->limits, i, sl_limit_t *);
        int counts;
        if (!l->count) {
            continue;
        }
        /* Failed and good logins are both "allowed" decisions: this tells
         * them apart on the status page. */
        counts = sl_limit_counts(l, status);
        sl_stats_counted(res->proc->stats, sl_limit_label(l), counts);
        if (!counts) {
            back[k++] = res->budgets[i];
        }
    }
    if (!k) {
        return;
    }
    sl_store_give_back(res->store, r, back, k, res->member, res->at);
}

/* The status a client request's response answered, as count= judges it.
 * An ErrorDocument is an internal redirect made for its request's error,
 * which keeps that status (and the redirect starts with it): that error is
 * the answer, whatever serving the document then gives (a missing page's
 * 404, after which httpd sends its own page with the error; a program's own
 * Status:). An ErrorDocument that is a URL elsewhere answers the error with
 * a 302 to that URL: still the error, or a count=403 would give back every
 * such refusal. */
static int sl_status_answered(const request_rec *r)
{
    const request_rec *q;
    const char *to;
    int s, i;

    for (q = r; q->next; q = q->next) {
        if (q->status != HTTP_OK) {
            return q->status;
        }
    }
    if (q->status != HTTP_MOVED_TEMPORARILY ||
        !(to = apr_table_get(q->headers_out, "Location"))) {
        return q->status;
    }
    for (s = 400; s < 600; s++) {
        const char *doc;
        /* Only the statuses httpd knows have an ErrorDocument of their
         * own; the others share their class's. */
        if ((i = ap_index_of_response(s)) < 0 ||
            atoi(ap_get_status_line(s)) != s) {
            continue;
        }
        doc = ap_response_code_string((request_rec *) q, i);
        if (doc && ap_is_url(doc) && !strcmp(doc, to)) {
            return s;
        }
    }
    return q->status;
}

void sl_decide_give_back(request_rec *r)
{
    request_rec *q;
    sl_reserved_t *res;
    int status = -1;

    /* What every request of the chain reserved (a redirect's target may
     * have limits of its own) is judged by the one answer. */
    for (q = r; q; q = q->next) {
        sl_note_t *note =
            ap_get_module_config(q->request_config, &slidinglimit_module);
        if (!note) {
            continue;
        }
        for (res = note->reserved; res; res = res->next) {
            if (status < 0) {
                status = sl_status_answered(r);
            }
            sl_give_back(q, res, status);
        }
        note->reserved = NULL;
    }
}

/* The first request of r's chain (the client's), whose note keeps what
 * the cost filter took. */
static request_rec *sl_first(request_rec *r)
{
    while (r->prev) {
        r = r->prev;
    }
    return r;
}

/* The header names a request's chain owes a charge by. */
static int sl_owes_header(request_rec *r)
{
    request_rec *q;

    for (q = r; q; q = q->prev) {
        const sl_note_t *note =
            ap_get_module_config(q->request_config, &slidinglimit_module);
        const sl_owed_t *owed;
        int i;
        for (owed = note ? note->owed : NULL; owed; owed = owed->next) {
            for (i = 0; i < owed->n; i++) {
                if (APR_ARRAY_IDX(owed->limits, i, sl_limit_t *)
                        ->after_header) {
                    return 1;
                }
            }
        }
    }
    return 0;
}

/* Takes every owed cost=after:header: header out of f->r's response
 * before the headers go (the client never sees what the back end told
 * us), once, on the first brigade: by then a handler, CGI or proxy has
 * set its headers. */
static apr_status_t sl_cost_filter(ap_filter_t *f, apr_bucket_brigade *bb)
{
    request_rec *r = f->r, *q;
    sl_note_t *first = sl_note(sl_first(r));

    for (q = r; q; q = q->prev) {
        const sl_note_t *note =
            ap_get_module_config(q->request_config, &slidinglimit_module);
        const sl_owed_t *owed;
        int i;
        for (owed = note ? note->owed : NULL; owed; owed = owed->next) {
            for (i = 0; i < owed->n; i++) {
                const char *name =
                    APR_ARRAY_IDX(owed->limits, i, sl_limit_t *)->after_header;
                const char *v;
                if (!name) {
                    continue;
                }
                v = apr_table_get(r->headers_out, name);
                if (!v) {
                    v = apr_table_get(r->err_headers_out, name);
                }
                if (v) {
                    if (!first->after_values) {
                        first->after_values = apr_table_make(r->pool, 2);
                    }
                    apr_table_set(first->after_values, name, v);
                }
                apr_table_unset(r->headers_out, name);
                apr_table_unset(r->err_headers_out, name);
            }
        }
    }
    ap_remove_output_filter(f);
    return ap_pass_brigade(f->next, bb);
}

void sl_decide_insert_filter(request_rec *r)
{
    if (!r->main && sl_owes_header(r)) {
        ap_add_output_filter(SL_COST_FILTER, NULL, r, r->connection);
    }
}

void sl_decide_register_filter(void)
{
    /* Before HTTP_HEADER (AP_FTYPE_PROTOCOL), which sends the headers. */
    ap_register_output_filter(SL_COST_FILTER, sl_cost_filter, NULL,
                              AP_FTYPE_PROTOCOL - 1);
}

/* What limit l of a decision of r's chain costs beyond its admission's
 * unit, by the response: the bytes of its body, or the back end's
 * header. */
static apr_int64_t sl_extra_of(request_rec *r, const sl_note_t *first,
                               const sl_limit_t *l, const sl_budget_t *b)
{
    const request_rec *last = r;
    const char *v = NULL;
    apr_int64_t extra = 0;
    int why;

    while (last->next) {
        last = last->next;
    }
    if (l->after == SL_AFTER_BYTES) {
        v = apr_off_t_toa(r->pool, last->bytes_sent > 0 ? last->bytes_sent : 0);
    }
    else if (first->after_values) {
        v = apr_table_get(first->after_values, l->after_header);
    }
    else {
        /* The filter never ran (no response body went out): the header as
         * the response has it, if it has one. */
        v = apr_table_get(last->headers_out, l->after_header);
        if (!v) {
            v = apr_table_get(last->err_headers_out, l->after_header);
        }
    }
    if (v && l->after == SL_AFTER_HEADER) {
        /* Surrounding whitespace is the field's, not the number's; inner
         * whitespace stays, and makes the value no number. */
        apr_size_t len;
        while (apr_isspace(*v)) {
            v++;
        }
        for (len = strlen(v); len && apr_isspace(v[len - 1]); len--) {
        }
        v = apr_pstrmemdup(r->pool, v, len);
    }
    why = sl_cost_after(v, l->cost_unit, sl_budget_capacity(b), &extra);
    if (why != SL_COST_OK && l->after == SL_AFTER_HEADER) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
                      "mod_slidinglimit: policy %s: header %s of the "
                      "response is '%s', %s: charged the most the limit "
                      "holds (%" APR_INT64_T_FMT ")",
                      l->name, l->after_header,
                      ap_escape_logitem(r->pool, apr_pstrndup(r->pool, v, 32)),
                      why == SL_COST_BAD ? "not a whole number"
                                         : "more than the limit holds",
                      sl_budget_capacity(b));
    }
    return extra;
}

/* One bill: every cost=after: limit's extra units, each budget once. */
static void sl_charge(request_rec *r, const sl_note_t *first,
                      const sl_owed_t *owed)
{
    sl_budget_t *bill = apr_palloc(r->pool, sizeof(*bill) * owed->n);
    apr_int64_t units = 0;
    const char *err = NULL;
    apr_status_t rv;
    int i, j, k = 0;

    for (i = 0; i < owed->n; i++) {
        const sl_limit_t *l = APR_ARRAY_IDX(owed->limits, i, sl_limit_t *);
        const sl_budget_t *b = &owed->budgets[i];
        apr_int64_t extra;
        if (!l->after || (extra = sl_extra_of(r, first, l, b)) < 1) {
            continue;
        }
        for (j = 0; j < k; j++) {
            if (bill[j].key_len == b->key_len &&
                !memcmp(bill[j].key, b->key, b->key_len)) {
                break;
            }
        }
        if (j < k) {
            continue;
        }
        bill[k] = *b;
        bill[k].cost = extra;
        units += extra;
        k++;
    }
    if (!k) {
        return;
    }
    rv = sl_store_charge(owed->store, r, bill, k, owed->member, &err);
    sl_stats_charge(owed->proc->stats, rv != APR_SUCCESS, units);
    if (rv != APR_SUCCESS) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, rv, r,
                      "mod_slidinglimit: %" APR_INT64_T_FMT
                      " units after the response not charged (store %s: %s)",
                      units, sl_store_name(owed->store),
                      err ? err : "unknown error");
    }
    else {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                      "mod_slidinglimit: charged %" APR_INT64_T_FMT
                      " units after the response",
                      units);
    }
}

void sl_decide_charge(request_rec *r)
{
    request_rec *q;
    const sl_note_t *first = sl_note(sl_first(r));
    sl_owed_t *owed;

    for (q = r; q; q = q->next) {
        sl_note_t *note =
            ap_get_module_config(q->request_config, &slidinglimit_module);
        if (!note) {
            continue;
        }
        for (owed = note->owed; owed; owed = owed->next) {
            sl_charge(r, first, owed);
        }
        note->owed = NULL;
    }
}
