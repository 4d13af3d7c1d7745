/* SPDX-License-Identifier: Apache-2.0 */
/* What an admission leaves to its request's end (sl_decide_private.h):
 * count= reservations given back when the status is not listed,
 * SlidingLimitConcurrent leases released with the request's pool, and
 * cost=after: charges made once the response is known. */
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

    /* Leases that expired before their renewal are not this request's
     * any more: what their time named may be another request's now. */
    if (!at) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, res->r,
                      "mod_slidinglimit: the request's leases had expired "
                      "before it ended; nothing given back");
        return APR_SUCCESS;
    }
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
    /* A pre-cleanup: the leases go back first, before APR destroys the
     * pool's subpools (mod_dir's look-ups and whatever other modules keep
     * there), whichever of them the request's end still reads. */
    apr_pool_pre_cleanup_register(r->pool, res, sl_release);
}

void sl_case_own(sl_case_t *c)
{
    apr_pool_t *p = c->r->pool;
    apr_array_header_t *own;
    int i;

    if (c->target == c->r) {
        return;
    }
    own = apr_array_make(p, c->n, sizeof(sl_limit_t *));
    for (i = 0; i < c->n; i++) {
        sl_limit_t *l =
            sl_limit_copy(p, APR_ARRAY_IDX(c->limits, i, sl_limit_t *));
        sl_budget_t *b = &c->budgets[i];
        APR_ARRAY_PUSH(own, sl_limit_t *) = l;
        /* As sl_budget.c points it: the copy's arguments, the same text. */
        if (b->script_args && l->script_args) {
            b->script_args = &l->script_args[b->algorithm];
        }
    }
    c->limits = own;
}

static apr_status_t sl_lookup_dropped(void *data);

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

/* An admission of limits with cost=after:: its charge, made after the
 * response (sl_after_charge). */
static void sl_charge_keep(const sl_case_t *c, sl_store_t *store)
{
    sl_note_t *note;
    sl_charge_t *ch;
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
    ch = apr_palloc(c->r->pool, sizeof(*ch));
    ch->store = store;
    ch->proc = c->proc;
    ch->limits = c->limits;
    ch->budgets = c->budgets;
    ch->n = c->n;
    ch->member = c->member;
    ch->next = note->charges;
    note->charges = ch;
}

void sl_after_keep(const sl_case_t *c, sl_store_t *store,
                   const sl_decision_t *d)
{
    request_rec *r = c->r;

    if (c->reserve) {
        sl_note_t *note = sl_note(r);
        sl_reserved_t *res = apr_palloc(r->pool, sizeof(*res));
        res->store = store;
        res->proc = c->proc;
        res->limits = c->limits;
        res->budgets = c->budgets;
        res->n = c->n;
        res->member = c->member;
        res->at = d->now;
        res->next = note->reserved;
        note->reserved = res;
        res->r = r;
        res->lookup = c->target == r ? NULL : c->target;
        if (sl_leases_taken(c)) {
            sl_leases_hold(res);
        }
        if (res->lookup) {
            apr_pool_cleanup_register(res->lookup->pool, res, sl_lookup_dropped,
                                      apr_pool_cleanup_null);
        }
    }
    sl_charge_keep(c, store);
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
        sl_stats_counted(res->proc->stats, l, counts);
        if (!counts) {
            back[k++] = res->budgets[i];
        }
    }
    if (!k) {
        return;
    }
    sl_store_give_back(res->store, r, back, k, res->member, res->at);
}

/* mod_dir destroys a look-up it does not take, before the request's end:
 * it serves the next index file, or answers the look-up's error itself.
 * A reservation that look-up made is judged then, by the look-up's status:
 * the look-up met the file's login, and the password was checked, whatever
 * the client is then served (with the next index file's 200, a count=401
 * would give back every guess, and the page served would tell the client
 * whether it was right). A look-up mod_dir takes ends with the request,
 * after log_transaction has judged its reservations. */
static apr_status_t sl_lookup_dropped(void *data)
{
    sl_reserved_t *res = data;
    sl_note_t *note =
        ap_get_module_config(res->r->request_config, &slidinglimit_module);
    sl_reserved_t **at;

    for (at = note ? &note->reserved : NULL; at && *at; at = &(*at)->next) {
        if (*at == res) {
            *at = res->next;
            sl_give_back(res->r, res, res->lookup->status);
            break;
        }
    }
    return APR_SUCCESS;
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

void sl_after_give_back(request_rec *r)
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

/* The header names a request's chain is charged by (NULL: none), and
 * whether it is charged by the bytes of its body (*BYTES). */
static apr_array_header_t *sl_charge_headers(request_rec *r, int *bytes)
{
    apr_array_header_t *names = NULL;
    request_rec *q;

    for (q = r; q; q = q->prev) {
        const sl_note_t *note =
            ap_get_module_config(q->request_config, &slidinglimit_module);
        const sl_charge_t *ch;
        int i;
        for (ch = note ? note->charges : NULL; ch; ch = ch->next) {
            for (i = 0; i < ch->n; i++) {
                const sl_limit_t *l =
                    APR_ARRAY_IDX(ch->limits, i, sl_limit_t *);
                const char *name = l->after_header;
                if (l->after == SL_AFTER_BYTES) {
                    *bytes = 1;
                }
                if (!name) {
                    continue;
                }
                if (!names) {
                    names = apr_array_make(r->pool, 2, sizeof(name));
                }
                APR_ARRAY_PUSH(names, const char *) = name;
            }
        }
    }
    return names;
}

/* Takes every charged cost=after:header: header out of f->r's response
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
        const sl_charge_t *ch;
        int i;
        for (ch = note ? note->charges : NULL; ch; ch = ch->next) {
            for (i = 0; i < ch->n; i++) {
                const char *name =
                    APR_ARRAY_IDX(ch->limits, i, sl_limit_t *)->after_header;
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

void sl_after_insert_filter(request_rec *r)
{
    apr_array_header_t *names;
    int bytes = 0;

    if (r->main) {
        return;
    }
    names = sl_charge_headers(r, &bytes);
    if (bytes) {
        sl_sent_watch(r, sl_note(sl_first(r)));
    }
    if (!names) {
        return;
    }
    ap_add_output_filter(SL_COST_FILTER, NULL, r, r->connection);
    sl_interim_watch(r, (const char **) names->elts, names->nelts);
}

void sl_after_register_filter(void)
{
    /* Before HTTP_HEADER (AP_FTYPE_PROTOCOL), which sends the headers. */
    ap_register_output_filter(SL_COST_FILTER, sl_cost_filter, NULL,
                              AP_FTYPE_PROTOCOL - 1);
    sl_interim_register();
    sl_sent_register();
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
        v = apr_off_t_toa(r->pool, sl_sent_body(r, first));
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

/* One charge: every cost=after: limit's extra units, each budget once. */
static void sl_charge_send(request_rec *r, const sl_note_t *first,
                           const sl_charge_t *ch)
{
    sl_budget_t *charged = apr_palloc(r->pool, sizeof(*charged) * ch->n);
    apr_int64_t units = 0;
    const char *err = NULL;
    apr_status_t rv;
    int i, j, k = 0;

    for (i = 0; i < ch->n; i++) {
        const sl_limit_t *l = APR_ARRAY_IDX(ch->limits, i, sl_limit_t *);
        const sl_budget_t *b = &ch->budgets[i];
        apr_int64_t extra;
        if (!l->after || (extra = sl_extra_of(r, first, l, b)) < 1) {
            continue;
        }
        for (j = 0; j < k; j++) {
            if (charged[j].key_len == b->key_len &&
                !memcmp(charged[j].key, b->key, b->key_len)) {
                break;
            }
        }
        if (j < k) {
            continue;
        }
        charged[k] = *b;
        charged[k].cost = extra;
        units += extra;
        k++;
    }
    if (!k) {
        return;
    }
    rv = sl_store_charge(ch->store, r, charged, k, ch->member, &err);
    sl_stats_charge(ch->proc->stats, rv != APR_SUCCESS, units);
    if (rv != APR_SUCCESS) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, rv, r,
                      "mod_slidinglimit: %" APR_INT64_T_FMT
                      " units after the response not charged (store %s: %s)",
                      units, sl_store_name(ch->store),
                      err ? err : "unknown error");
    }
    else {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                      "mod_slidinglimit: charged %" APR_INT64_T_FMT
                      " units after the response",
                      units);
    }
}

void sl_after_charge(request_rec *r)
{
    request_rec *q;
    const sl_note_t *first = sl_note(sl_first(r));
    sl_charge_t *ch;

    for (q = r; q; q = q->next) {
        sl_note_t *note =
            ap_get_module_config(q->request_config, &slidinglimit_module);
        if (!note) {
            continue;
        }
        for (ch = note->charges; ch; ch = ch->next) {
            sl_charge_send(r, first, ch);
        }
        note->charges = NULL;
    }
}
