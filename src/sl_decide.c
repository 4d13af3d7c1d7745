/* SPDX-License-Identifier: Apache-2.0 */
/* The decision of one request (see sl_decide.h): its budgets, the deny
 * cache, the store, a wait within delay=, the shm store standing in for a
 * Redis store that failed; the answer is sl_answer.c's, what the admission
 * leaves to the request's end sl_after.c's. */
#include "sl_decide_private.h"
#include "sl_distinct.h"

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
#include "sl_form.h"
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

sl_note_t *sl_note(request_rec *r)
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
    int counts = sl_budget_counts(c->dc);
    const char *identity = sl_key_identity(c->target, c->dc, counts);

    c->n = c->limits->nelts;
    c->budgets =
        sl_budgets_build(c->r->pool, sc, c->dc, c->limits, identity,
                         sc->proc ? sc->proc->memo : NULL, &c->reserve);
    /* Lines of their own key or a distinct= value: none in most sections
     * (c->limits is the section's until sl_budgets_undecided). */
    if (c->dc->needs & SL_NEEDS_KEY || c->limits != c->dc->limits) {
        sl_key_lines(c->r->pool, c->target, c->dc, c->limits, c->budgets,
                     counts);
    }
    if (c->dc->needs & SL_NEEDS_DISTINCT || c->limits != c->dc->limits) {
        sl_distinct_values(c->r->pool, c->target, c->dc, c->limits, c->budgets,
                           counts);
    }
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
 * httpd 2.4): a fixed order of key=value fields, docs/REFERENCE.md "For logs
 * and back ends". source= tells a tenant's limit (.htaccess) from the server's,
 * so that a firewall ban follows only the administrator's; the port is the
 * connection's (ap_get_server_port takes a client's Host header's). Only the
 * starting refusal gets here: the blocked requests after it are answered from
 * the deny cache or with the time left, shorter than the block. */
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
            "seconds=%" APR_INT64_T_FMT " source=%s vhost=%s:%u uri=%s",
            r->useragent_ip, ap_escape_logitem(r->pool, l->name),
            sl_ceil_seconds(c->budgets[i].block),
            l->htaccess ? "htaccess" : "server",
            ap_escape_logitem(r->pool, r->server->server_hostname
                                           ? r->server->server_hostname
                                           : "-"),
            (unsigned) r->connection->local_addr->port,
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
    apr_time_t *retry_at, sent;
    apr_uint32_t *flights;
    apr_status_t rv;

    if (!sl_store_remote(c->store)) {
        rv = sl_store_decide(c->store, c->r, c->budgets, c->n, d, &c->member);
        if (rv == APR_SUCCESS) {
            sl_blocks_note(c, d);
        }
        return sl_step(rv, d);
    }
    /* Asked here only where allotments are on: most sections never. */
    if (c->dc->allotment == 1 && sl_allot_decide(c, d) == SL_STEP_ADMITTED) {
        return SL_STEP_ADMITTED;
    }
    /* A key refused until T stays refused until T whatever happens (nothing
     * frees quota earlier), so it is answered here without a store call. */
    sent = apr_time_now();
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
static int sl_decide_by_shm_store(sl_case_t *c, sl_decision_t *d)
{
    if (sl_store_decide(sl_store_shm_of(c->proc), c->r, c->budgets, c->n, d,
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
    /* A form: key's field is read from the body before any budget. */
    if (sl_form_wanted(dc) && (why = sl_form_read(r, dc)) != OK) {
        return why;
    }
    if (target == r) {
        sl_note(r)->dir = r->per_dir_config;
    }
    sl_budgets_of(&c, sc);
    if (!sl_budgets_undecided(&c)) {
        if (r->prev) {
            sl_answer_carry_env(r);
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
        fallback = sl_decide_by_shm_store(&c, &d);
    }
    sl_outcome_of(&m, store_step, fallback, &o);
    sl_case_own(&c);
    /* A dry run's admissions consume like any other, so they give back
     * too; its refusals consumed nothing. */
    if (store_step == SL_STEP_ADMITTED || fallback == SL_STEP_ADMITTED) {
        sl_after_keep(&c,
                      store_step == SL_STEP_ADMITTED ? c.store
                                                     : sl_store_shm_of(c.proc),
                      &d);
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
