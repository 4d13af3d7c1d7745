#include "sl_wire.h"

#include <apr_lib.h>
#include <apr_strings.h>

#include <string.h>
#include <strings.h>

int sl_is_token(const char *s)
{
    if (!*s) {
        return 0;
    }
    for (; *s; s++) {
        /* Not strchr: it would take the terminating NUL as a match. */
        if (!apr_isalnum(*s) && !memchr("!#$%&'*+-.^_`|~", *s, 15)) {
            return 0;
        }
    }
    return 1;
}

int sl_decision_pick(const sl_decision_t *d)
{
    int best = 0, i;

    for (i = 1; i < d->n; i++) {
        const sl_quota_t *a = &d->quota[i], *b = &d->quota[best];
        if (!d->admitted) {
            /* The request waits for the slowest refusing limit. */
            if (!a->ok && (b->ok || a->reset > b->reset)) {
                best = i;
            }
        }
        else if (a->remaining < b->remaining ||
                 (a->remaining == b->remaining && a->reset > b->reset)) {
            best = i;
        }
    }
    return best;
}

apr_int64_t sl_ceil_seconds(apr_int64_t us)
{
    apr_int64_t s = (us + APR_USEC_PER_SEC - 1) / APR_USEC_PER_SEC;
    return s < 1 ? 1 : s;
}

apr_int64_t sl_retry_after(const sl_decision_t *d)
{
    return sl_ceil_seconds(d->quota[sl_decision_pick(d)].reset);
}

const char *sl_sf_string(apr_pool_t *p, const char *s)
{
    /* RFC 8941 sf-string: printable ASCII, '"' and '\' escaped. */
    char *out = apr_palloc(p, 2 * strlen(s) + 3), *o = out;

    *o++ = '"';
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') {
            *o++ = '\\';
        }
        *o++ = (*s >= 0x20 && *s < 0x7f) ? *s : '_';
    }
    *o++ = '"';
    *o = '\0';
    return out;
}

const char *sl_json_string(apr_pool_t *p, const char *s)
{
    char *out = apr_palloc(p, 6 * strlen(s) + 3), *o = out;

    *o++ = '"';
    for (; *s; s++) {
        unsigned char c = (unsigned char) *s;
        if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char) c;
        }
        else if (c < 0x20 || c == 0x7f) {
            o += apr_snprintf(o, 7, "\\u%04x", c);
        }
        else {
            *o++ = (char) c;
        }
    }
    *o++ = '"';
    *o = '\0';
    return out;
}

apr_int64_t sl_reset_seconds(apr_int64_t us)
{
    return us <= 0 ? 0 : sl_ceil_seconds(us);
}

/* Every request with a limit carries these headers, so they are built with
 * apr_pstrcat and apr_off_t_toa: apr_psprintf's formatter took a third of
 * the request path's instructions (bench/profile.sh). apr_off_t is 64 bits
 * (large-file builds, as sl_redis.c also assumes). */
const char *sl_i64toa(apr_pool_t *p, apr_int64_t v)
{
    return apr_off_t_toa(p, (apr_off_t) v);
}

/* What the header sets read of one decision. */
typedef struct sl_quota_view {
    apr_pool_t *p;
    const sl_limit_t *const *l;
    const sl_decision_t *d;
    const sl_quota_t *r; /* the quota the headers describe (l[pick]'s) */
    int pick;
    apr_int64_t t; /* its reset, in whole seconds */
    sl_header_fn *add;
    void *ctx;
} sl_quota_view_t;

/* draft-ietf-httpapi-ratelimit-headers: every policy, then the one that
 * binds. */
static void sl_headers_ietf(const sl_quota_view_t *v)
{
    apr_pool_t *p = v->p;
    char *policy = NULL;
    int i;

    for (i = 0; i < v->d->n; i++) {
        char *one = apr_pstrcat(
            p, sl_sf_string(p, v->l[i]->name),
            ";q=", sl_i64toa(p, v->l[i]->requests),
            ";w=", sl_i64toa(p, sl_ceil_seconds(v->l[i]->window)), NULL);
        policy = policy ? apr_pstrcat(p, policy, ", ", one, NULL) : one;
    }
    v->add(v->ctx, "RateLimit-Policy", policy);
    v->add(v->ctx, "RateLimit",
           apr_pstrcat(p, sl_sf_string(p, v->l[v->pick]->name),
                       ";r=", sl_i64toa(p, v->r->remaining),
                       ";t=", sl_i64toa(p, v->t), NULL));
}

/* The draft's third version, still what many clients read. */
static void sl_headers_draft03(const sl_quota_view_t *v)
{
    v->add(v->ctx, "RateLimit-Limit", sl_i64toa(v->p, v->l[v->pick]->requests));
    v->add(v->ctx, "RateLimit-Remaining", sl_i64toa(v->p, v->r->remaining));
    v->add(v->ctx, "RateLimit-Reset", sl_i64toa(v->p, v->t));
}

/* The de facto X-RateLimit-*: its reset is an absolute Unix time. */
static void sl_headers_xrl(const sl_quota_view_t *v)
{
    apr_int64_t reset = v->r->reset > 0 ? v->r->reset : 0;

    v->add(v->ctx, "X-RateLimit-Limit",
           sl_i64toa(v->p, v->l[v->pick]->requests));
    v->add(v->ctx, "X-RateLimit-Remaining", sl_i64toa(v->p, v->r->remaining));
    v->add(v->ctx, "X-RateLimit-Reset",
           sl_i64toa(v->p, (v->d->now + reset + APR_USEC_PER_SEC - 1) /
                               APR_USEC_PER_SEC));
}

/* The header sets of SlidingLimitHeaders, in the order they are sent: a
 * new set is a row here and its bit in sl_wire.h. */
static const struct sl_header_set {
    const char *name;
    int flag;
    void (*emit)(const sl_quota_view_t *v);
} sl_header_sets[] = {
    {"ietf", SL_HDR_IETF, sl_headers_ietf},
    {"draft03", SL_HDR_DRAFT03, sl_headers_draft03},
    {"x-ratelimit", SL_HDR_XRL, sl_headers_xrl},
    {NULL, 0, NULL},
};

int sl_header_set(const char *name)
{
    const struct sl_header_set *h;

    for (h = sl_header_sets; h->name; h++) {
        if (!strcasecmp(name, h->name)) {
            return h->flag;
        }
    }
    return 0;
}

const char *sl_header_set_names(apr_pool_t *p)
{
    const struct sl_header_set *h;
    const char *names = NULL;

    for (h = sl_header_sets; h->name; h++) {
        names = names ? apr_pstrcat(p, names, ", ", h->name, NULL) : h->name;
    }
    return names;
}

void sl_quota_headers(apr_pool_t *p, int flags,
                      const apr_array_header_t *limits, const sl_decision_t *d,
                      sl_header_fn *add, void *ctx)
{
    const struct sl_header_set *h;
    sl_quota_view_t v;

    v.p = p;
    v.l = (const sl_limit_t *const *) limits->elts;
    v.d = d;
    v.pick = sl_decision_pick(d);
    v.r = &d->quota[v.pick];
    v.t = sl_reset_seconds(v.r->reset);
    v.add = add;
    v.ctx = ctx;
    for (h = sl_header_sets; h->name; h++) {
        if (flags & h->flag) {
            h->emit(&v);
        }
    }
}

const char *sl_json_cost_body(apr_pool_t *p, int why, const char *policy,
                              apr_int64_t max)
{
    /* A policy name is letters, digits and -_.:/@ (sl_valid_name): nothing
     * to escape. */
    if (why == SL_COST_BAD) {
        return apr_psprintf(p,
                            "{\"error\":{\"code\":\"BAD_COST\",\"message\":"
                            "\"The cost of this request is not a whole "
                            "number.\",\"policy\":\"%s\"}}\n",
                            policy);
    }
    return apr_psprintf(p,
                        "{\"error\":{\"code\":\"COST_EXCEEDS_LIMIT\","
                        "\"message\":\"This request costs more than the "
                        "limit holds (%" APR_INT64_T_FMT
                        " units); it can never be admitted.\",\"policy\":"
                        "\"%s\",\"limit\":%" APR_INT64_T_FMT "}}\n",
                        max, policy, max);
}

const char *sl_json_body(apr_pool_t *p, int unavailable, apr_int64_t retry)
{
    const char *unit = retry == 1 ? "second" : "seconds";

    if (unavailable) {
        return apr_psprintf(
            p,
            "{\"error\":{\"code\":\"SERVICE_UNAVAILABLE\",\"message\":"
            "\"Rate limiting is unavailable. Try again in %" APR_INT64_T_FMT
            " %s.\",\"retry_after_seconds\":%" APR_INT64_T_FMT "}}\n",
            retry, unit, retry);
    }
    return apr_psprintf(
        p,
        "{\"error\":{\"code\":\"TOO_MANY_REQUESTS\",\"message\":"
        "\"Rate limit exceeded. Try again in %" APR_INT64_T_FMT
        " %s.\",\"retry_after_seconds\":%" APR_INT64_T_FMT "}}\n",
        retry, unit, retry);
}
