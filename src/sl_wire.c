#include "sl_wire.h"

#include <apr_lib.h>
#include <apr_strings.h>

#include <string.h>

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

void sl_quota_headers(apr_pool_t *p, int flags,
                      const apr_array_header_t *limits, const sl_decision_t *d,
                      sl_header_fn *add, void *ctx)
{
    const sl_limit_t *const *l = (const sl_limit_t *const *) limits->elts;
    int pick = sl_decision_pick(d);
    const sl_quota_t *r = &d->quota[pick];
    apr_int64_t t = sl_reset_seconds(r->reset);
    int i;

    if (flags & SL_HDR_IETF) {
        char *policy = NULL;
        for (i = 0; i < d->n; i++) {
            char *one = apr_pstrcat(
                p, sl_sf_string(p, l[i]->name),
                ";q=", sl_i64toa(p, l[i]->requests),
                ";w=", sl_i64toa(p, sl_ceil_seconds(l[i]->window)), NULL);
            policy = policy ? apr_pstrcat(p, policy, ", ", one, NULL) : one;
        }
        add(ctx, "RateLimit-Policy", policy);
        add(ctx, "RateLimit",
            apr_pstrcat(p, sl_sf_string(p, l[pick]->name),
                        ";r=", sl_i64toa(p, r->remaining),
                        ";t=", sl_i64toa(p, t), NULL));
    }
    if (flags & SL_HDR_DRAFT03) {
        add(ctx, "RateLimit-Limit", sl_i64toa(p, l[pick]->requests));
        add(ctx, "RateLimit-Remaining", sl_i64toa(p, r->remaining));
        add(ctx, "RateLimit-Reset", sl_i64toa(p, t));
    }
    if (flags & SL_HDR_XRL) {
        add(ctx, "X-RateLimit-Limit", sl_i64toa(p, l[pick]->requests));
        add(ctx, "X-RateLimit-Remaining", sl_i64toa(p, r->remaining));
        add(ctx, "X-RateLimit-Reset",
            sl_i64toa(p, (d->now + (r->reset > 0 ? r->reset : 0) +
                          APR_USEC_PER_SEC - 1) /
                             APR_USEC_PER_SEC));
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
