/* SPDX-License-Identifier: Apache-2.0 */
/* The operator's look at one client's budgets, and their reset (see
 * sl_inspect.h). */
#include "sl_inspect.h"

#include "http_config.h"
#include "http_log.h"
#include "http_protocol.h"
#include "http_request.h"

#include "apr_strings.h"

#include <arpa/inet.h>

#include "sl_budget.h"
#include "sl_config.h"
#include "sl_forgery.h"
#include "sl_key.h"
#include "sl_limit.h"
#include "sl_quota.h"
#include "sl_reply.h"
#include "sl_store.h"
#include "sl_wire.h"

#include <string.h>

APLOG_USE_MODULE(slidinglimit);

/* Marks the look-up's parent (notes), then the look-up that reached the
 * access checker. */
#define SL_LOOKUP_NOTE "slidinglimit-inspect-lookup"

/* What the query asks. */
typedef struct sl_query {
    const char *path;   /* the URL whose section's limits apply */
    const char *name;   /* only the limit of this name; NULL: all */
    const char *source; /* the key source, as SlidingLimitKey names it */
    const char *value;
    const char *address; /* ip= beside user=: a name paired with it */
    /* What only chooses the section, for an <If>: the client's address
     * where the identity is not (from=), and headers it sends that are not
     * its key (with:NAME=). */
    const char *from;
    apr_table_t *with;
    /* method=: the look-up's method, for an <If> on %{REQUEST_METHOD}
     * (a form login's limit holds POSTs only); NULL: GET. */
    const char *method;
} sl_query_t;

/* One client's budgets at one URL. */
typedef struct sl_client {
    request_rec *r;
    sl_proc_t *proc;
    sl_store_t *store;
    const sl_limit_t **limits;
    sl_budget_t *budgets;
    int n;
    const char *identity; /* the hashed identity of the store keys */
    /* expr: quotas: each limit's JSON about it ("" for a fixed quota),
     * read from the look-up, the request the query describes. */
    const char **quota;
} sl_client_t;

static int sl_source_param(const char *k)
{
    return !strcmp(k, "ip") || !strcmp(k, "user") || !strcmp(k, "expr") ||
           !strcmp(k, "none") || (!strncmp(k, "header:", 7) && k[7]) ||
           (!strncmp(k, "env:", 4) && k[4]) ||
           (!strncmp(k, "form:", 5) && k[5]);
}

/* One parameter k=v of the query into q: NULL, or what is wrong with it. */
static const char *sl_query_param(apr_pool_t *p, sl_query_t *q, const char *k,
                                  const char *v)
{
    const char **field;

    if (!strcmp(k, "path")) {
        field = &q->path;
    }
    else if (!strcmp(k, "from")) {
        field = &q->from;
    }
    else if (!strcmp(k, "method")) {
        if (!sl_is_token(v)) {
            return apr_psprintf(p,
                                "method='%s': a method is an RFC 9110 "
                                "token, as method=POST",
                                v);
        }
        field = &q->method;
    }
    else if (!strncmp(k, "with:", 5)) {
        if (!sl_is_token(k + 5)) {
            return apr_psprintf(p,
                                "'%s': with: names a header (an RFC "
                                "9110 token), as with:X-Plan=gold",
                                k);
        }
        if (!q->with) {
            q->with = apr_table_make(p, 2);
        }
        if (apr_table_get(q->with, k + 5)) {
            return apr_psprintf(p, "'%s' is given twice", k);
        }
        apr_table_setn(q->with, k + 5, v);
        return NULL;
    }
    else if (!strcmp(k, "name")) {
        field = &q->name;
    }
    else if (sl_source_param(k)) {
        if (!q->source) {
            q->source = k;
            field = &q->value;
        }
        /* user= with ip=: the pair a section with count= keys a name
         * attempted by (sl_key.c). */
        else if (!q->address && !strcmp(k, "ip") &&
                 !strcmp(q->source, "user")) {
            field = &q->address;
        }
        else if (!q->address && !strcmp(k, "user") &&
                 !strcmp(q->source, "ip")) {
            q->address = q->value;
            q->source = k;
            q->value = NULL;
            field = &q->value;
        }
        else {
            return "one identity only: a request's budget is that of "
                   "its first key source with a value";
        }
    }
    else {
        return apr_psprintf(p, "unknown parameter '%s'", k);
    }
    if (*field) {
        return apr_psprintf(p, "'%s' is given twice", k);
    }
    *field = v;
    return NULL;
}

/* What the parameters together must hold: NULL, or what they miss. */
static const char *sl_query_complete(apr_pool_t *p, const sl_query_t *q)
{
    if (!q->path && q->name) {
        return "name= picks one of the limits at path=, which is missing: "
               "a named budget's key depends on the key sources of the "
               "section that applies it";
    }
    if (!q->path || q->path[0] != '/') {
        return "path= must name the URL whose limits apply, such as /login";
    }
    if (!q->source) {
        return "no identity: give the client as the section's key source "
               "sees it (ip=, user=, header:NAME=, env:NAME=, expr=, "
               "or none= for the shared bucket)";
    }
    if (q->from && (q->address || !strcmp(q->source, "ip"))) {
        return "from= is the client's address where the identity is not "
               "one: ip= names it already";
    }
    if (q->with && !strncmp(q->source, "header:", 7) &&
        apr_table_get(q->with, q->source + 7)) {
        return apr_psprintf(p, "with:%s is the identity's %s", q->source + 7,
                            q->source);
    }
    return NULL;
}

/* The query, form-encoded (path=/login&ip=203.0.113.7): NULL, or what is
 * wrong with it. */
static const char *sl_query_parse(request_rec *r, sl_query_t *q)
{
    apr_pool_t *p = r->pool;
    char *args = apr_pstrdup(p, r->args ? r->args : ""), *tok, *last;

    memset(q, 0, sizeof(*q));
    for (tok = apr_strtok(args, "&", &last); tok;
         tok = apr_strtok(NULL, "&", &last)) {
        char *k = tok, *v = strchr(tok, '=');
        const char *err;

        if (!v) {
            return "every parameter needs a value (name=value)";
        }
        *v++ = '\0';
        if (ap_unescape_urlencoded(k) != OK ||
            ap_unescape_urlencoded(v) != OK) {
            return "malformed percent-encoding";
        }
        if ((err = sl_query_param(p, q, k, v)) != NULL) {
            return err;
        }
    }
    return sl_query_complete(p, q);
}

/* The client's address as the query names it: ip= (the identity, or the
 * address beside user=), else from=; NULL when it names none. */
static const char *sl_query_ip(const sl_query_t *q)
{
    return q->address                 ? q->address
           : !strcmp(q->source, "ip") ? q->value
                                      : q->from;
}

/* The look-up's request, which the lookup subrequest takes its headers,
 * address, user and variables from: a copy of the status request that is
 * the client's, not the operator's. */
static const char *sl_query_request(request_rec *r, const sl_query_t *q,
                                    request_rec **out)
{
    request_rec *as = apr_pmemdup(r->pool, r, sizeof(*r));
    const char *ip = sl_query_ip(q), *host;
    unsigned char raw[16];
    apr_sockaddr_t *sa;

    /* Without an address, one no network of an <If "-R ..."> holds but
     * 0.0.0.0/0: never the operator's own, which is often exempt. */
    if (!ip) {
        ip = "0.0.0.0";
    }
    /* A zone (fe80::1%eth0) is no part of the address, as for a key. */
    else if (strchr(ip, '%')) {
        ip = apr_pstrmemdup(r->pool, ip, strchr(ip, '%') - ip);
    }
    if (inet_pton(AF_INET, ip, raw) != 1 && inet_pton(AF_INET6, ip, raw) != 1) {
        return apr_psprintf(
            r->pool, "%s: '%s' is not an IP address",
            q->from && !q->address && strcmp(q->source, "ip") ? "from" : "ip",
            ip);
    }
    /* Numeric: no name is resolved. */
    if (apr_sockaddr_info_get(&sa, ip, APR_UNSPEC, 0, 0, r->pool) !=
        APR_SUCCESS) {
        return apr_psprintf(r->pool, "'%s' is not an IP address", ip);
    }
    as->useragent_ip = (char *) ip;
    as->useragent_addr = sa;

    /* Only the headers the query names, and the Host that chose this
     * virtual host: the operator's own (an X-Api-Key, its credentials)
     * would choose their tier. */
    as->headers_in = apr_table_make(r->pool, 4);
    if ((host = apr_table_get(r->headers_in, "Host"))) {
        apr_table_setn(as->headers_in, "Host", host);
    }
    if (q->with) {
        as->headers_in = apr_table_overlay(r->pool, as->headers_in, q->with);
    }
    as->subprocess_env = apr_table_make(r->pool, 2);
    as->user = NULL;
    if (!strncmp(q->source, "header:", 7)) {
        apr_table_setn(as->headers_in, q->source + 7, q->value);
    }
    else if (!strncmp(q->source, "env:", 4)) {
        apr_table_setn(as->subprocess_env, q->source + 4, q->value);
    }
    else if (!strcmp(q->source, "user")) {
        /* A user's requests carry credentials, which the recommended user
         * tier tests (-n req('Authorization')): these name the user with
         * no password, and are never checked, as the look-up ends before
         * authentication. with:Authorization= gives others. */
        as->user = (char *) q->value;
        if (!apr_table_get(as->headers_in, "Authorization")) {
            const char *up = apr_pstrcat(r->pool, q->value, ":", NULL);
            apr_table_setn(as->headers_in, "Authorization",
                           apr_pstrcat(r->pool, "Basic ",
                                       ap_pbase64encode(r->pool, (char *) up),
                                       NULL));
        }
    }
    as->notes = apr_table_make(r->pool, 1);
    apr_table_setn(as->notes, SL_LOOKUP_NOTE, "");
    *out = as;
    return NULL;
}

int sl_inspect_lookup_end(request_rec *r)
{
    if (!r->main || !apr_table_get(r->main->notes, SL_LOOKUP_NOTE)) {
        return DECLINED;
    }
    apr_table_setn(r->notes, SL_LOOKUP_NOTE, "walked");
    return DONE;
}

/* The section a request of the client for q->path gets. A subrequest,
 * because it walks and merges exactly as a request does
 * (ap_process_request_internal: <Location>, <If>, translate_name,
 * <Directory> and .htaccess, <Files>, <Location> and <If> again); made of
 * the client's copy of the status request (sl_query_request), because it
 * takes headers_in, useragent_ip/_addr and the variables from its parent
 * (ap_set_sub_req_protocol, make_sub_request), and those are what the
 * <If> expressions read. A prepared parent beats changing the subrequest
 * afterwards (its walks have run by then) or copying request.c's
 * sequence. It ends in the access checker (sl_inspect_lookup_end), where
 * the section is known: authentication and authorization would judge a
 * request the client never sent, and log its failures under the client's
 * address (what fail2ban reads). %{CONN_REMOTE_ADDR} stays the operator's
 * connection. */
static const char *sl_lookup(request_rec *r, const sl_query_t *q,
                             request_rec **rr)
{
    request_rec *as = NULL;
    const char *err = sl_query_request(r, q, &as);

    if (err) {
        return err;
    }
    /* path= may carry the URL's query (an <If> on %{QUERY_STRING}):
     * ap_sub_req_method_uri parses it into the look-up's args. */
    *rr =
        ap_sub_req_method_uri(q->method ? q->method : "GET", q->path, as, NULL);
    /* Not ended by us but not failed either: the look-up met the status
     * request's own sections, whose authentication httpd does not run
     * again (their limits are off, as the status page's should be). */
    if (!apr_table_get((*rr)->notes, SL_LOOKUP_NOTE) &&
        ap_is_HTTP_ERROR((*rr)->status)) {
        return apr_psprintf(r->pool,
                            "path=%s: its look-up ended with status %d "
                            "before its section was known",
                            q->path, (*rr)->status);
    }
    return NULL;
}

/* What the answer says of an expr: quota: its value, where it came from
 * and the expression. A look-up that got no quota from the expression
 * (why SL_QUOTA_BAD) shows quota-default=, but the client's own requests
 * may carry what it lacks (a header the query did not give, from which a
 * RewriteRule of the server configuration sets a variable; SetEnvIf,
 * which httpd does not run for a look-up): "request", not a claim that
 * the client gets quota-default=. */
static const char *sl_quota_json(apr_pool_t *p, const sl_limit_t *l, int why,
                                 apr_int64_t qv)
{
    return apr_pstrcat(
        p, ",\"quota\":", sl_i64toa(p, qv),
        ",\"quota_from\":", why == SL_QUOTA_BAD ? "\"request\"" : "\"expr\"",
        ",\"quota_expr\":", sl_json_string(p, l->quota_expr),
        why == SL_QUOTA_BAD
            ? ",\"quota_note\":\"the expression gave no quota for this "
              "look-up: the client's requests decide (a header, or a "
              "variable a rule such as RewriteRule sets from one: give the "
              "headers with with:NAME=VALUE; SetEnvIf is never run for a "
              "look-up). Shown: quota-default=\""
            : "",
        NULL);
}

/* why, and the key= of the section dc's lines that have one: what else
 * the query may name. */
static const char *sl_key_lines_said(apr_pool_t *p, const sl_dir_conf_t *dc,
                                     const char *why)
{
    const char *lines = NULL;
    int i;

    for (i = 0; i < dc->limits->nelts; i++) {
        const sl_limit_t *l = APR_ARRAY_IDX(dc->limits, i, sl_limit_t *);
        if (l->key) {
            const char *one = apr_pstrcat(p, l->name, " key=", l->key, NULL);
            lines = lines ? apr_pstrcat(p, lines, ", ", one, NULL) : one;
        }
    }
    return lines
               ? apr_pstrcat(p, why,
                             "; lines keyed by their own source: ", lines, NULL)
               : why;
}

/* The limits at q->path (the section a request for it gets: the same walk
 * and merge, as a subrequest) and the client's budgets under them. */
static const char *sl_client_make(sl_client_t *c, const sl_query_t *q)
{
    request_rec *r = c->r, *rr;
    const sl_server_conf_t *sc = sl_config_server(r->server);
    const sl_dir_conf_t *dc;
    const char *identity, *err, *names = NULL, *dc_err = NULL;
    int i, all;

    if ((err = sl_lookup(r, q, &rr))) {
        return err;
    }
    dc = ap_get_module_config(rr->per_dir_config, &slidinglimit_module);
    all = dc->limits ? dc->limits->nelts : 0;
    if (!all) {
        /* The commonest reason: the limit is in an <If> on the method. */
        return apr_psprintf(
            r->pool, "no SlidingLimit applies to %s for a %s%s", q->path,
            q->method ? q->method : "GET",
            q->method ? ""
                      : " (a limit inside <If> on %{REQUEST_METHOD} is "
                        "found with method=, as method=POST)");
    }
    c->limits = apr_palloc(r->pool, sizeof(*c->limits) * all);
    c->budgets = apr_pcalloc(r->pool, sizeof(*c->budgets) * all);
    c->quota = apr_pcalloc(r->pool, sizeof(*c->quota) * all);
    c->n = 0;
    for (i = 0; i < all; i++) {
        const sl_limit_t *l = APR_ARRAY_IDX(dc->limits, i, sl_limit_t *);
        sl_budget_t *b = &c->budgets[c->n];
        sl_dir_conf_t one;
        const sl_dir_conf_t *kc = sl_key_line_conf(dc, l, &one);

        names =
            names ? apr_pstrcat(r->pool, names, ", ", l->name, NULL) : l->name;
        if (q->name && strcmp(q->name, l->name)) {
            continue;
        }
        /* A line keyed otherwise than by the query's source (its own
         * key=, or the section's) counts other clients: not this one's
         * budget. Where no line is, the section's own message says why. */
        if (!sl_key_line_takes(dc, l, q->source)) {
            if (!l->key_keys && !dc_err) {
                sl_key_identity_of(r->pool, sc, dc, sl_budget_counts(dc),
                                   q->source, q->value ? q->value : "",
                                   q->address, &dc_err);
            }
            continue;
        }
        identity =
            sl_key_identity_of(r->pool, sc, kc, sl_budget_counts(dc), q->source,
                               q->value ? q->value : "", q->address, &err);
        if (!identity) {
            return l->key_keys ? apr_pstrcat(r->pool, "policy ", l->name,
                                             " (key=", l->key, "): ", err, NULL)
                               : err;
        }
        /* The identities the budgets were found under, each once. */
        if (!c->identity) {
            c->identity = identity;
        }
        else if (!strstr(c->identity, identity)) {
            c->identity =
                apr_pstrcat(r->pool, c->identity, ", ", identity, NULL);
        }
        sl_budget_look(r->pool, sc, dc, l, identity, b);
        c->quota[c->n] = "";
        if (l->quota_prog) {
            apr_int64_t qv;
            int why = sl_quota_eval(r, rr, l, &qv);
            /* A quota of 0 has no state: the peek reads quota-default=. */
            if (why == SL_QUOTA_OK) {
                b->requests = qv;
            }
            c->quota[c->n] = sl_quota_json(r->pool, l, why, qv);
        }
        c->limits[c->n++] = l;
    }
    if (!c->n && dc_err) {
        return sl_key_lines_said(r->pool, dc, dc_err);
    }
    if (!c->n && q->name) {
        return apr_psprintf(r->pool, "no limit named %s applies to %s (%s)",
                            q->name, q->path, names);
    }
    if (!c->n) {
        return sl_key_lines_said(r->pool, dc,
                                 apr_psprintf(r->pool,
                                              "%s is no key source of a "
                                              "limit at %s",
                                              q->source, q->path));
    }
    return NULL;
}

/* Deletes the budgets on the store, in this server's shm store (the store
 * itself, or what it decided while a Redis store was down) and in the deny
 * cache. The shm store and the deny cache are cleared whatever the store
 * does: while it is down they are what decides. */
static apr_status_t sl_client_reset(const sl_client_t *c, int *forgotten,
                                    const char **err)
{
    sl_store_t *shm = sl_store_shm_of(c->proc);
    apr_status_t rv = APR_SUCCESS;
    const char *lerr;

    *err = NULL;
    if (c->store != shm) {
        rv = sl_store_reset(c->store, c->r, c->budgets, c->n, err);
    }
    if (sl_store_reset(shm, c->r, c->budgets, c->n, &lerr) != APR_SUCCESS &&
        c->store == shm) {
        *err = lerr;
        rv = APR_EGENERAL;
    }
    /* After the store: a request that asks it from now on finds room, and
     * the cache no longer answers for it. */
    *forgotten = sl_denycache_clear(c->proc->denycache, c->budgets, c->n);
    return rv;
}

/* A window in seconds, as a JSON number (to the microsecond). */
static const char *sl_window(apr_pool_t *p, apr_int64_t us)
{
    char *s = apr_psprintf(p, "%" APR_INT64_T_FMT ".%06" APR_INT64_T_FMT,
                           us / APR_USEC_PER_SEC, us % APR_USEC_PER_SEC);
    char *e = s + strlen(s) - 1;

    while (*e == '0') {
        *e-- = '\0';
    }
    if (*e == '.') {
        *e = '\0';
    }
    return s;
}

static const char *sl_limit_json(apr_pool_t *p, const sl_limit_t *l,
                                 const sl_budget_t *b, const sl_quota_t *q,
                                 apr_int64_t blocked, const char *expr)
{
    apr_int64_t quota = sl_budget_capacity(b);
    apr_int64_t used = quota - q->remaining;

    return apr_pstrcat(
        p, "{\"name\":", sl_json_string(p, l->name),
        ",\"algorithm\":", sl_json_string(p, sl_algorithm_name(b->algorithm)),
        ",\"requests\":", sl_i64toa(p, b->requests),
        ",\"window\":", sl_window(p, b->window),
        ",\"burst\":", sl_i64toa(p, quota),
        ",\"used\":", sl_i64toa(p, used < 0 ? 0 : used),
        ",\"remaining\":", sl_i64toa(p, q->remaining),
        ",\"reset\":", sl_i64toa(p, sl_reset_seconds(q->reset)),
        ",\"blocked\":", sl_i64toa(p, sl_reset_seconds(blocked)),
        ",\"key\":", sl_json_string(p, b->key), expr ? expr : "", "}", NULL);
}

static int sl_answer_error(request_rec *r, int status, const char *why)
{
    r->status = status;
    ap_set_content_type(r, "application/json");
    if (!r->header_only) {
        ap_rputs(apr_pstrcat(r->pool, "{\"error\":",
                             sl_json_string(r->pool, why), "}\n", NULL),
                 r);
    }
    return OK;
}

static int sl_answer_state(const sl_client_t *c, const sl_query_t *q,
                           const sl_decision_t *d, const apr_int64_t *blocked,
                           int forgotten)
{
    request_rec *r = c->r;
    apr_pool_t *p = r->pool;
    const char *list = "";
    int i;

    for (i = 0; i < c->n; i++) {
        list = apr_pstrcat(p, list, i ? "," : "",
                           sl_limit_json(p, c->limits[i], &c->budgets[i],
                                         &d->quota[i], blocked[i],
                                         c->quota ? c->quota[i] : NULL),
                           NULL);
    }
    ap_set_content_type(r, "application/json");
    apr_table_setn(r->headers_out, "Cache-Control", "no-store");
    if (!r->header_only) {
        ap_rputs(
            apr_pstrcat(
                p, "{\"path\":", sl_json_string(p, q->path), ",\"identity\":",
                sl_json_string(
                    p, apr_pstrcat(p, q->source, "=", q->value ? q->value : "",
                                   q->address ? "&ip=" : "", q->address, NULL)),
                ",\"store\":", sl_json_string(p, sl_store_name(c->store)),
                ",\"action\":",
                r->method_number == M_POST ? "\"reset\"" : "\"show\"",
                r->method_number == M_POST
                    ? apr_pstrcat(p, ",\"deny_cache_cleared\":",
                                  sl_i64toa(p, forgotten), NULL)
                    : "",
                ",\"limits\":[", list, "]}\n", NULL),
            r);
    }
    return OK;
}

/* The configuration sections of a limit, on one line ("<Location /api>
 * <If ...>"); the server configuration outside any. */
static const char *sl_section_line(apr_pool_t *p, const sl_limit_t *l)
{
    char *s = apr_pstrdup(p, l->section ? l->section : ""), *e;

    for (e = s; *e; e++) {
        if (*e == '\n') {
            *e = ' ';
        }
    }
    while (e > s && e[-1] == ' ') {
        *--e = '\0';
    }
    return *s ? s : "the server configuration";
}

/* What a reset's log line says: who reset (the operator's address, and
 * user), which client (as the query named it: its key source, never the
 * value, as no log line of the module holds a client's address, name or
 * header, and the hashed identity its store keys hold), where (the
 * virtual host, the sections) and which policies. */
static const char *sl_reset_said(const sl_client_t *c, const sl_query_t *q)
{
    request_rec *r = c->r;
    apr_pool_t *p = r->pool;
    const server_rec *s = r->server;
    const char *client = q->address ? "user with ip" : q->source;
    const char *sections = NULL, *policies = NULL;
    int i;

    for (i = 0; i < c->n; i++) {
        const char *one = sl_section_line(p, c->limits[i]);

        policies =
            policies ? apr_pstrcat(p, policies, ", ", c->limits[i]->name, NULL)
                     : c->limits[i]->name;
        if (!sections) {
            sections = one;
        }
        else if (!strstr(sections, one)) {
            sections = apr_pstrcat(p, sections, "; ", one, NULL);
        }
    }
    return apr_psprintf(
        p,
        "reset by %s%s%s of the budgets of client %s (hashed identity %s) "
        "at %s on virtual host %s:%u, section %s, policies %s",
        r->useragent_ip, r->user ? " user " : "", r->user ? r->user : "",
        client, c->identity, q->path,
        s->server_hostname ? s->server_hostname : "-",
        (unsigned) (s->port    ? s->port
                    : s->addrs ? s->addrs->host_port
                               : 0),
        sections, policies);
}

/* Why a POST is not a reset an operator asked for (NULL: it is); the
 * request's own origin is the scheme, the host it asked for and that
 * host's port. */
static const char *sl_reset_refused(request_rec *r)
{
    apr_port_t port =
        r->parsed_uri.port_str ? r->parsed_uri.port : ap_default_port(r);

    return sl_reset_forged(r->pool,
                           apr_table_get(r->headers_in, SL_RESET_HEADER),
                           apr_table_get(r->headers_in, "Sec-Fetch-Site"),
                           apr_table_get(r->headers_in, "Origin"),
                           ap_http_scheme(r), r->hostname, port);
}

int sl_inspect(request_rec *r, sl_proc_t *proc, int level)
{
    sl_query_t q;
    sl_client_t c = {r,    proc, sl_store_of(r->server), NULL, NULL, 0,
                     NULL, NULL};
    sl_decision_t d;
    apr_int64_t *blocked;
    const char *err;
    int forgotten = 0;

    if (r->method_number == M_POST) {
        ap_discard_request_body(r);
        if ((err = sl_reset_refused(r))) {
            ap_log_rerror(APLOG_MARK, APLOG_NOTICE, 0, r,
                          "mod_slidinglimit: refused a reset: %s", err);
            return sl_answer_error(r, HTTP_FORBIDDEN, err);
        }
    }
    else if (level < SL_STATUS_PAGE_INSPECT) {
        return sl_answer_error(
            r, HTTP_FORBIDDEN,
            "this status page serves the counters only "
            "(SlidingLimitStatusPage metrics): a client's budgets need "
            "SlidingLimitStatusPage inspect in the server configuration");
    }
    if ((err = sl_query_parse(r, &q)) || (err = sl_client_make(&c, &q))) {
        return sl_answer_error(r, HTTP_BAD_REQUEST, err);
    }
    if (!c.store) {
        return sl_answer_error(r, HTTP_SERVICE_UNAVAILABLE,
                               "no store in this child yet");
    }
    if (r->method_number == M_POST) {
        apr_status_t rv = sl_client_reset(&c, &forgotten, &err);
        ap_log_rerror(APLOG_MARK, rv == APR_SUCCESS ? APLOG_NOTICE : APLOG_ERR,
                      rv, r, "mod_slidinglimit: %s: %s", sl_reset_said(&c, &q),
                      rv == APR_SUCCESS ? "done"
                      : err             ? err
                                        : "failed");
        if (rv != APR_SUCCESS) {
            return sl_answer_error(
                r, HTTP_SERVICE_UNAVAILABLE,
                apr_pstrcat(r->pool, "the store did not reset the budgets (",
                            err ? err : "unknown error",
                            "); the deny cache and the local fallback's "
                            "state were cleared",
                            NULL));
        }
    }
    if (sl_store_peek(c.store, r, c.budgets, c.n, &d, &blocked, &err) !=
        APR_SUCCESS) {
        return sl_answer_error(r, HTTP_SERVICE_UNAVAILABLE,
                               apr_pstrcat(r->pool,
                                           "the store did not answer: ",
                                           err ? err : "unknown error", NULL));
    }
    return sl_answer_state(&c, &q, &d, blocked, forgotten);
}
