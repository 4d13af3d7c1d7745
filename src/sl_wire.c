/* SPDX-License-Identifier: Apache-2.0 */
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

/* Every request with a limit writes its headers and variables, and every
 * refusal its body, so they are written into buffers of known size with
 * these rather than with apr_psprintf, apr_pstrcat and apr_off_t_toa, which
 * cost the request path several times as much (bench/profile.sh). */
#define SL_PUT(o, lit) sl_put((o), (lit), sizeof(lit) - 1)

static char *sl_put(char *o, const char *s, apr_size_t n)
{
    memcpy(o, s, n);
    return o + n;
}

/* The bytes of a number's text, its NUL included. */
#define SL_I64_TEXT 21

/* Two digits at a time: half the divisions. */
static const char sl_digit_pairs[] = "00010203040506070809"
                                     "10111213141516171819"
                                     "20212223242526272829"
                                     "30313233343536373839"
                                     "40414243444546474849"
                                     "50515253545556575859"
                                     "60616263646566676869"
                                     "70717273747576777879"
                                     "80818283848586878889"
                                     "90919293949596979899";

/* The decimal text of v at o, without a NUL: at most SL_I64_TEXT - 1
 * bytes. Returns its end. */
static char *sl_put_i64(char *o, apr_int64_t v)
{
    apr_uint64_t u = v < 0 ? 0 - (apr_uint64_t) v : (apr_uint64_t) v, t = u;
    char *end;

    if (v < 0) {
        *o++ = '-';
    }
    for (end = o + 1; t >= 100; t /= 100) {
        end += 2;
    }
    end += t >= 10;
    for (o = end; u >= 100; u /= 100) {
        const char *pair = sl_digit_pairs + 2 * (u % 100);
        *--o = pair[1];
        *--o = pair[0];
    }
    if (u >= 10) {
        *--o = sl_digit_pairs[2 * u + 1];
        *--o = sl_digit_pairs[2 * u];
    }
    else {
        *--o = (char) ('0' + u);
    }
    return end;
}

/* RFC 8941 sf-string: printable ASCII, '"' and '\' escaped; at most
 * 2 * strlen(s) + 2 bytes, no NUL. */
static char *sl_put_sf(char *o, const char *s)
{
    *o++ = '"';
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') {
            *o++ = '\\';
        }
        *o++ = (*s >= 0x20 && *s < 0x7f) ? *s : '_';
    }
    *o++ = '"';
    return o;
}

const char *sl_sf_string(apr_pool_t *p, const char *s)
{
    char *out = apr_palloc(p, 2 * strlen(s) + 3);

    *sl_put_sf(out, s) = '\0';
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

const char *sl_i64toa(apr_pool_t *p, apr_int64_t v)
{
    char *out = apr_palloc(p, SL_I64_TEXT);

    *sl_put_i64(out, v) = '\0';
    return out;
}

#define SL_QU_CONCURRENT ";qu=\"concurrent-requests\""
#define SL_QU_BYTES      ";qu=\"content-bytes\""

/* A limit's RateLimit-Policy item, "\"api\";q=100;w=60": at most
 * sl_item_size(l) bytes, no NUL. */
static apr_size_t sl_item_size(const sl_limit_t *l)
{
    return l->policy_item
               ? l->policy_item_len
               : 2 * strlen(l->name) + 2 + 6 + 2 * SL_I64_TEXT +
                     sizeof(SL_QU_CONCURRENT) + sizeof(SL_QU_BYTES) - 1;
}

static char *sl_put_item(char *o, const sl_limit_t *l)
{
    if (l->policy_item) {
        return sl_put(o, l->policy_item, l->policy_item_len);
    }
    o = sl_put_sf(o, l->name);
    o = SL_PUT(o, ";q=");
    o = sl_put_i64(o, l->requests);
    if (l->algorithm == SL_ALG_CONCURRENT) {
        /* The draft's quota unit for in-flight requests; no w: the quota
         * is not per window (the lease only bounds a lost request). */
        return SL_PUT(o, SL_QU_CONCURRENT);
    }
    o = SL_PUT(o, ";w=");
    o = sl_put_i64(o, sl_ceil_seconds(l->window));
    /* The draft's quota unit, when q and r are bytes: cost=after:bytes of
     * one byte per unit (with a cost-unit= they are units of it, which the
     * draft has no word for). */
    if (l->after == SL_AFTER_BYTES && l->cost_unit == 1) {
        o = SL_PUT(o, SL_QU_BYTES);
    }
    return o;
}

void sl_wire_limit(apr_pool_t *p, sl_limit_t *l)
{
    char *item;

    l->sf_name = sl_sf_string(p, l->name);
    l->sf_name_len = strlen(l->sf_name);
    l->requests_text = sl_i64toa(p, l->requests);
    /* Written from the limit's values, as for a limit without it. */
    l->policy_item = NULL;
    item = apr_palloc(p, sl_item_size(l) + 1);
    l->policy_item_len = (apr_size_t) (sl_put_item(item, l) - item);
    item[l->policy_item_len] = '\0';
    l->policy_item = item;
    /* An expression's quota is each request's own: its texts are made for
     * each request (requests is only quota-default=). */
    if (l->quota_expr) {
        l->requests_text = NULL;
        l->policy_item = NULL;
    }
}

/* A number's text, made once for the header sets that show it. */
typedef struct sl_text {
    const char *s; /* NULL: not made yet */
    apr_size_t len;
} sl_text_t;

/* What the header sets read of one decision. */
typedef struct sl_quota_view {
    apr_pool_t *p;
    const sl_limit_t *const *l;
    const sl_decision_t *d;
    const sl_quota_t *r; /* the quota the headers describe (l[pick]'s) */
    int pick;
    apr_int64_t t; /* its reset, in whole seconds */
    sl_text_t remaining, reset;
    char *o; /* the room left for the texts below; NULL: not made yet */
    sl_header_fn *add;
    void *ctx;
} sl_quota_view_t;

/* The bytes of l's name as an sf-string. */
static apr_size_t sl_sf_size(const sl_limit_t *l)
{
    return l->sf_name ? l->sf_name_len : 2 * strlen(l->name) + 2;
}

/* The texts of one call share a buffer, made on first use: one RateLimit
 * value (the name and two numbers), and at most SL_VIEW_TEXTS numbers of
 * their own (the remaining, the reset, the absolute reset, and the limit's
 * quota once per set when the limit has no text of it). */
#define SL_VIEW_TEXTS 5

static char *sl_view_room(sl_quota_view_t *v)
{
    if (!v->o) {
        v->o = apr_palloc(v->p, sl_sf_size(v->l[v->pick]) + sizeof(";r=;t=") +
                                    (2 + SL_VIEW_TEXTS) * SL_I64_TEXT);
    }
    return v->o;
}

static const char *sl_view_num(sl_quota_view_t *v, apr_int64_t n,
                               apr_size_t *len)
{
    char *s = sl_view_room(v);

    v->o = sl_put_i64(s, n);
    *len = (apr_size_t) (v->o - s);
    *v->o++ = '\0';
    return s;
}

static const char *sl_text(sl_quota_view_t *v, sl_text_t *text, apr_int64_t n)
{
    if (!text->s) {
        text->s = sl_view_num(v, n, &text->len);
    }
    return text->s;
}

/* Every policy, ", " between them: one limit's is its item as it is. */
static const char *sl_policy_list(const sl_quota_view_t *v)
{
    apr_size_t size = 1;
    char *out, *o;
    int i;

    if (v->d->n == 1 && v->l[0]->policy_item) {
        return v->l[0]->policy_item;
    }
    for (i = 0; i < v->d->n; i++) {
        size += sl_item_size(v->l[i]) + 2;
    }
    out = o = apr_palloc(v->p, size);
    for (i = 0; i < v->d->n; i++) {
        if (i) {
            o = SL_PUT(o, ", ");
        }
        o = sl_put_item(o, v->l[i]);
    }
    *o = '\0';
    return out;
}

/* draft-ietf-httpapi-ratelimit-headers: every policy, then the one that
 * binds. */
static void sl_headers_ietf(sl_quota_view_t *v)
{
    const sl_limit_t *l = v->l[v->pick];
    char *out, *o;

    v->add(v->ctx, "RateLimit-Policy", sl_policy_list(v));
    sl_text(v, &v->remaining, v->r->remaining);
    sl_text(v, &v->reset, v->t);
    out = o = sl_view_room(v);
    o = l->sf_name ? sl_put(o, l->sf_name, l->sf_name_len)
                   : sl_put_sf(o, l->name);
    o = SL_PUT(o, ";r=");
    o = sl_put(o, v->remaining.s, v->remaining.len);
    o = SL_PUT(o, ";t=");
    o = sl_put(o, v->reset.s, v->reset.len);
    *o++ = '\0';
    v->o = o;
    v->add(v->ctx, "RateLimit", out);
}

/* The limit's text is the line's. */
static const char *sl_limit_text(sl_quota_view_t *v)
{
    const sl_limit_t *l = v->l[v->pick];
    apr_size_t len;

    return l->requests_text ? l->requests_text
                            : sl_view_num(v, l->requests, &len);
}

/* The draft's third version, still what many clients read. */
static void sl_headers_draft03(sl_quota_view_t *v)
{
    v->add(v->ctx, "RateLimit-Limit", sl_limit_text(v));
    v->add(v->ctx, "RateLimit-Remaining",
           sl_text(v, &v->remaining, v->r->remaining));
    v->add(v->ctx, "RateLimit-Reset", sl_text(v, &v->reset, v->t));
}

/* The de facto X-RateLimit-*: its reset is an absolute Unix time. */
static void sl_headers_xrl(sl_quota_view_t *v)
{
    apr_int64_t reset = v->r->reset > 0 ? v->r->reset : 0;
    apr_size_t len;

    v->add(v->ctx, "X-RateLimit-Limit", sl_limit_text(v));
    v->add(v->ctx, "X-RateLimit-Remaining",
           sl_text(v, &v->remaining, v->r->remaining));
    v->add(v->ctx, "X-RateLimit-Reset",
           sl_view_num(
               v, (v->d->now + reset + APR_USEC_PER_SEC - 1) / APR_USEC_PER_SEC,
               &len));
}

/* The header sets of SlidingLimitHeaders, in the order they are sent: a
 * new set is a row here and its bit in sl_wire.h. */
static const struct sl_header_set {
    const char *name;
    int flag;
    void (*emit)(sl_quota_view_t *v);
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

const char *sl_quota_headers(apr_pool_t *p, int flags,
                             const apr_array_header_t *limits,
                             const sl_decision_t *d, sl_header_fn *add,
                             void *ctx)
{
    const struct sl_header_set *h;
    sl_quota_view_t v;

    v.p = p;
    v.l = (const sl_limit_t *const *) limits->elts;
    v.d = d;
    v.pick = sl_decision_pick(d);
    v.r = &d->quota[v.pick];
    v.t = sl_reset_seconds(v.r->reset);
    v.remaining.s = NULL;
    v.reset.s = NULL;
    v.o = NULL;
    v.add = add;
    v.ctx = ctx;
    for (h = sl_header_sets; h->name; h++) {
        if (flags & h->flag) {
            h->emit(&v);
        }
    }
    return v.remaining.s;
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
    static const char busy[] =
        "{\"error\":{\"code\":\"SERVICE_UNAVAILABLE\",\"message\":"
        "\"Rate limiting is unavailable. Try again in ";
    static const char over[] = "{\"error\":{\"code\":\"TOO_MANY_REQUESTS\","
                               "\"message\":\"Rate limit exceeded. Try "
                               "again in ";
    static const char then[] = ".\",\"retry_after_seconds\":";
    char *out = apr_palloc(
             p, (sizeof(busy) > sizeof(over) ? sizeof(busy) : sizeof(over)) +
                    sizeof(" seconds") + sizeof(then) + 2 * SL_I64_TEXT +
                    sizeof("}}\n")),
         *o = out;

    o = unavailable ? SL_PUT(o, busy) : SL_PUT(o, over);
    o = sl_put_i64(o, retry);
    o = retry == 1 ? SL_PUT(o, " second") : SL_PUT(o, " seconds");
    o = SL_PUT(o, then);
    o = sl_put_i64(o, retry);
    o = SL_PUT(o, "}}\n");
    *o = '\0';
    return out;
}
