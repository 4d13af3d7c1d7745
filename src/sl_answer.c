/* SPDX-License-Identifier: Apache-2.0 */
/* A request's answer once it is decided (sl_decide_private.h): its quota
 * headers, its environment variables, the statistics, and the refusal. */
#include "sl_decide_private.h"

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

/* Whether t holds a variable of ours. Ours all begin with the same four
 * letters, the whole of APR's table checksum, so each apr_table_setn of
 * one compares its name with every other of ours already there: without
 * any, adding is setting. */
#define SL_ENV_PREFIX "SLIDINGLIMIT_"

static int sl_env_has_ours(const apr_table_t *t)
{
    const apr_array_header_t *a = apr_table_elts(t);
    const apr_table_entry_t *e = (const apr_table_entry_t *) a->elts;
    int i;

    for (i = 0; i < a->nelts; i++) {
        if (e[i].key &&
            !strncasecmp(e[i].key, SL_ENV_PREFIX, sizeof(SL_ENV_PREFIX) - 1)) {
            return 1;
        }
    }
    return 0;
}

static void sl_set_env(request_rec *r, int result, const char *policy,
                       const char *remaining)
{
    void (*set)(apr_table_t *, const char *, const char *) =
        sl_env_has_ours(r->subprocess_env) ? apr_table_setn : apr_table_addn;

    set(r->subprocess_env, "SLIDINGLIMIT_RESULT", sl_result_name(result));
    if (policy) {
        set(r->subprocess_env, "SLIDINGLIMIT_POLICY", policy);
    }
    if (remaining) {
        set(r->subprocess_env, "SLIDINGLIMIT_REMAINING", remaining);
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

void sl_answer_carry_env(request_rec *r)
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
int sl_refuse_cost(const sl_case_t *c, const sl_mode_t *m, int why, int at)
{
    request_rec *r = c->r;
    const sl_limit_t *l = APR_ARRAY_IDX(c->limits, at, sl_limit_t *);
    int result = m->dry_run ? SL_RESULT_DRYRUN_DENIED : SL_RESULT_DENIED;
    int status =
        why == SL_COST_BAD ? HTTP_BAD_REQUEST : HTTP_REQUEST_ENTITY_TOO_LARGE;

    sl_stats_decision(c->proc->stats, l, result);
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
int sl_answer(const sl_case_t *c, const sl_outcome_t *o, const sl_decision_t *d)
{
    request_rec *r = c->r;
    const sl_limit_t *decider;
    const char *remaining;
    sl_header_sink_t sink;
    int pick;

    if (!o->quota) {
        sl_stats_decision(c->proc->stats, NULL, o->result);
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
    sl_stats_decision(c->proc->stats, decider, o->result);
    if (!o->status) {
        return DECLINED;
    }
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                  "mod_slidinglimit: refused by policy %s for %" APR_INT64_T_FMT
                  "us",
                  decider->name, d->quota[pick].reset);
    return sl_refuse(c, o->status, o->unavailable, sl_retry_after(d));
}
