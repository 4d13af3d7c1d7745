/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of what a client sees (src/sl_wire.c): the quota headers,
 * the limit they describe, Retry-After, the JSON bodies and strings, and
 * header names as tokens. No server needed. */
#include "sl_wire.h"

#include <apr_general.h>
#include <apr_strings.h>

#include <stdio.h>
#include <string.h>

#include "sl_expect.h"

static void test_tokens(void)
{
    EXPECT(sl_is_token("X-Api-Key") && sl_is_token("a!#$%&'*+-.^_`|~9"),
           "header names are tokens");
    EXPECT(!sl_is_token("") && !sl_is_token("X Y") && !sl_is_token("a:b") &&
               !sl_is_token("a\"b"),
           "empty, space, colon, quote are no tokens");
}

static void test_pick(apr_pool_t *p)
{
    sl_decision_t d;
    const long long ok[] = {1796018400, 5, 1, 1, 41, 12000000, 1, 3, 500000};
    const long long denied[] = {1796018400, 0, 0, 1, 41, 0, 0, 0, 17200000};

    sl_decision_parse(p, ok, 9, 2, &d);
    EXPECT(sl_decision_pick(&d) == 1, "fewest remaining decides");
    sl_decision_parse(p, denied, 9, 2, &d);
    EXPECT(sl_decision_pick(&d) == 1, "the refusing limit decides");
    EXPECT(sl_retry_after(&d) == 18, "Retry-After rounds up: %ld",
           (long) sl_retry_after(&d));
    EXPECT(sl_ceil_seconds(1) == 1 && sl_ceil_seconds(1000000) == 1 &&
               sl_ceil_seconds(1000001) == 2 && sl_ceil_seconds(0) == 1,
           "ceil seconds");
    EXPECT(sl_reset_seconds(0) == 0 && sl_reset_seconds(-1) == 0 &&
               sl_reset_seconds(1) == 1 && sl_reset_seconds(1000001) == 2,
           "a reset rounds up the same, and 0 stays 0");
}

struct hdrs {
    apr_pool_t *p;
    const char *all;
};

static void collect(void *ctx, const char *name, const char *value)
{
    struct hdrs *h = ctx;
    h->all = apr_pstrcat(h->p, h->all, name, ": ", value, "\n", NULL);
}

static void test_headers(apr_pool_t *p)
{
    apr_array_header_t *limits = apr_array_make(p, 2, sizeof(sl_limit_t *));
    /* SlidingLimit 100 60s name=api, SlidingLimit 1000 1h name=hourly */
    sl_limit_t api = {
        .name = "api", .requests = 100, .window = 60 * APR_USEC_PER_SEC};
    sl_limit_t hourly = {
        .name = "hourly", .requests = 1000, .window = 3600 * APR_USEC_PER_SEC};
    sl_decision_t d;
    struct hdrs h = {p, ""};
    const long long v[] = {1796018400, 0, 1, 1, 41, 12000000, 1, 90, 100};

    APR_ARRAY_PUSH(limits, sl_limit_t *) = &api;
    APR_ARRAY_PUSH(limits, sl_limit_t *) = &hourly;
    sl_decision_parse(p, v, 9, 2, &d);
    sl_quota_headers(p, SL_HDR_IETF | SL_HDR_DRAFT03 | SL_HDR_XRL, limits, &d,
                     collect, &h);
    EXPECT(strstr(h.all, "RateLimit-Policy: \"api\";q=100;w=60, "
                         "\"hourly\";q=1000;w=3600\n") != NULL,
           "policy header:\n%s", h.all);
    EXPECT(strstr(h.all, "RateLimit: \"api\";r=41;t=12\n") != NULL,
           "ratelimit header:\n%s", h.all);
    EXPECT(strstr(h.all, "RateLimit-Reset: 12\n") != NULL, "draft03 reset");
    EXPECT(strstr(h.all, "X-RateLimit-Reset: 1796018412\n") != NULL,
           "x-ratelimit reset");
    EXPECT(!strcmp(sl_sf_string(p, "a\"b\\c"), "\"a\\\"b\\\\c\""), "sf-string");
    EXPECT(strstr(sl_json_body(p, 0, 18), "\"retry_after_seconds\":18}") !=
               NULL,
           "json body");
    EXPECT(strstr(sl_json_body(p, 0, 1), "Try again in 1 second.") != NULL,
           "one second, not one seconds: %s", sl_json_body(p, 0, 1));
    EXPECT(strstr(sl_json_body(p, 1, 1), "Try again in 1 second.") != NULL,
           "one second (unavailable): %s", sl_json_body(p, 1, 1));
    EXPECT(strstr(sl_json_body(p, 0, 2), "Try again in 2 seconds.") != NULL,
           "two seconds");
}

/* The header sets by name, in the order they are sent, each alone. */
static void test_header_sets(apr_pool_t *p)
{
    apr_array_header_t *limits = apr_array_make(p, 1, sizeof(sl_limit_t *));
    sl_limit_t api = {
        .name = "api", .requests = 100, .window = 60 * APR_USEC_PER_SEC};
    const long long v[] = {1796018400, 0, 1, 1, 41, 12000000};
    sl_decision_t d;
    struct hdrs h = {p, ""};

    EXPECT(sl_header_set("ietf") == SL_HDR_IETF &&
               sl_header_set("Draft03") == SL_HDR_DRAFT03 &&
               sl_header_set("X-RATELIMIT") == SL_HDR_XRL,
           "each set by its name, in any case");
    EXPECT(!sl_header_set("off") && !sl_header_set("") &&
               !sl_header_set("ietf2"),
           "no set for another word");
    EXPECT(!strcmp(sl_header_set_names(p), "ietf, draft03, x-ratelimit"),
           "the names for a message: %s", sl_header_set_names(p));
    APR_ARRAY_PUSH(limits, sl_limit_t *) = &api;
    sl_decision_parse(p, v, 6, 1, &d);
    sl_quota_headers(p, SL_HDR_XRL | SL_HDR_IETF, limits, &d, collect, &h);
    EXPECT(!strcmp(h.all, "RateLimit-Policy: \"api\";q=100;w=60\n"
                          "RateLimit: \"api\";r=41;t=12\n"
                          "X-RateLimit-Limit: 100\n"
                          "X-RateLimit-Remaining: 41\n"
                          "X-RateLimit-Reset: 1796018412\n"),
           "ietf then x-ratelimit, no draft03:\n%s", h.all);
    h.all = "";
    sl_quota_headers(p, 0, limits, &d, collect, &h);
    EXPECT(!*h.all, "off: no header");
}

/* A limit's texts made when its line is read say what the ones made per
 * request say, byte for byte. */
static void test_prepared(apr_pool_t *p)
{
    sl_limit_t api = {
        .name = "a\"pi", .requests = 100, .window = 60 * APR_USEC_PER_SEC};
    sl_limit_t day = {.name = "day",
                      .requests = 100000000,
                      .window = 86400 * APR_USEC_PER_SEC + 1};
    sl_limit_t bare_api = api, bare_day = day;
    const long long v[] = {1796018400, 1, 1, 1, 0, 0, 1, 99999999, 1};
    const int all = SL_HDR_IETF | SL_HDR_DRAFT03 | SL_HDR_XRL;
    apr_array_header_t *prepared = apr_array_make(p, 2, sizeof(sl_limit_t *));
    apr_array_header_t *bare = apr_array_make(p, 2, sizeof(sl_limit_t *));
    struct hdrs a = {p, ""}, b = {p, ""};
    sl_decision_t d;

    sl_wire_limit(p, &api);
    sl_wire_limit(p, &day);
    EXPECT(!strcmp(api.policy_item, "\"a\\\"pi\";q=100;w=60") &&
               api.policy_item_len == strlen(api.policy_item) &&
               !strcmp(api.sf_name, "\"a\\\"pi\"") &&
               api.sf_name_len == strlen(api.sf_name) &&
               !strcmp(api.requests_text, "100"),
           "the texts of a line: %s %s", api.policy_item, api.sf_name);
    EXPECT(!strcmp(day.policy_item, "\"day\";q=100000000;w=86401"),
           "a window rounds up: %s", day.policy_item);
    APR_ARRAY_PUSH(prepared, sl_limit_t *) = &api;
    APR_ARRAY_PUSH(prepared, sl_limit_t *) = &day;
    APR_ARRAY_PUSH(bare, sl_limit_t *) = &bare_api;
    APR_ARRAY_PUSH(bare, sl_limit_t *) = &bare_day;
    sl_decision_parse(p, v, 9, 2, &d);
    sl_quota_headers(p, all, prepared, &d, collect, &a);
    sl_quota_headers(p, all, bare, &d, collect, &b);
    EXPECT(!strcmp(a.all, b.all), "the same headers:\n%s\n%s", a.all, b.all);
    EXPECT(!strcmp(a.all, "RateLimit-Policy: \"a\\\"pi\";q=100;w=60, "
                          "\"day\";q=100000000;w=86401\n"
                          "RateLimit: \"a\\\"pi\";r=0;t=0\n"
                          "RateLimit-Limit: 100\n"
                          "RateLimit-Remaining: 0\n"
                          "RateLimit-Reset: 0\n"
                          "X-RateLimit-Limit: 100\n"
                          "X-RateLimit-Remaining: 0\n"
                          "X-RateLimit-Reset: 1796018401\n"),
           "every set, two limits:\n%s", a.all);
    EXPECT(!strcmp(sl_quota_headers(p, SL_HDR_XRL, prepared, &d, collect, &a),
                   "0"),
           "the remaining quota's text comes back");
    EXPECT(!sl_quota_headers(p, 0, prepared, &d, collect, &a),
           "no set, no text");
    d.n = 1;
    a.all = "";
    sl_quota_headers(p, SL_HDR_IETF, prepared, &d, collect, &a);
    EXPECT(!strcmp(a.all, "RateLimit-Policy: \"a\\\"pi\";q=100;w=60\n"
                          "RateLimit: \"a\\\"pi\";r=0;t=0\n"),
           "one limit:\n%s", a.all);
}

/* An expr: quota's limit keeps no text of its quota (quota-default=): a
 * request's copy with its own quota says that one. */
static void test_expr_quota(apr_pool_t *p)
{
    sl_limit_t plan = {.name = "plan",
                       .requests = 5,
                       .window = 60 * APR_USEC_PER_SEC,
                       .quota_expr = "%{HTTP:X-Quota}"};
    sl_limit_t mine;
    const long long v[] = {1796018400, 1, 1, 1, 40, 0};
    apr_array_header_t *limits = apr_array_make(p, 1, sizeof(sl_limit_t *));
    struct hdrs h = {p, ""};
    sl_decision_t d;

    sl_wire_limit(p, &plan);
    EXPECT(!plan.policy_item && !plan.requests_text && plan.sf_name,
           "expr: no quota text made once, the name's is");
    mine = plan;
    mine.requests = 41;
    APR_ARRAY_PUSH(limits, sl_limit_t *) = &mine;
    sl_decision_parse(p, v, 6, 1, &d);
    sl_quota_headers(p, SL_HDR_IETF | SL_HDR_XRL, limits, &d, collect, &h);
    EXPECT(strstr(h.all, "RateLimit-Policy: \"plan\";q=41;w=60\n") &&
               strstr(h.all, "X-RateLimit-Limit: 41\n"),
           "the request's quota:\n%s", h.all);
}

/* What sl_i64toa writes is what "%" APR_INT64_T_FMT writes. */
static void test_numbers(apr_pool_t *p)
{
    const apr_int64_t v[] = {0,
                             1,
                             9,
                             10,
                             -1,
                             -10,
                             1796018412,
                             APR_INT64_C(9223372036854775807),
                             -APR_INT64_C(9223372036854775807) - 1};
    size_t i;

    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        const char *want = apr_psprintf(p, "%" APR_INT64_T_FMT, v[i]);
        EXPECT(!strcmp(sl_i64toa(p, v[i]), want), "%s: %s", want,
               sl_i64toa(p, v[i]));
    }
}

static void test_json(apr_pool_t *p)
{
    EXPECT(!strcmp(sl_json_body(p, 0, 18),
                   "{\"error\":{\"code\":\"TOO_MANY_REQUESTS\",\"message\":"
                   "\"Rate limit exceeded. Try again in 18 seconds.\","
                   "\"retry_after_seconds\":18}}\n"),
           "the refusal's body: %s", sl_json_body(p, 0, 18));
    EXPECT(!strcmp(sl_json_body(p, 1, 1),
                   "{\"error\":{\"code\":\"SERVICE_UNAVAILABLE\",\"message\":"
                   "\"Rate limiting is unavailable. Try again in 1 second.\","
                   "\"retry_after_seconds\":1}}\n"),
           "the outage's body: %s", sl_json_body(p, 1, 1));
    EXPECT(strstr(sl_json_body(p, 1, APR_INT64_C(9223372036854775807)),
                  "in 9223372036854775807 seconds.\",\"retry_after_seconds\":"
                  "9223372036854775807}}\n") != NULL,
           "the longest number fits");
    EXPECT(strstr(sl_json_cost_body(p, SL_COST_OVER, "api", 10),
                  "\"code\":\"COST_EXCEEDS_LIMIT\"") &&
               strstr(sl_json_cost_body(p, SL_COST_BAD, "api", 10),
                      "\"code\":\"BAD_COST\""),
           "the refusals' bodies name their reason");
    EXPECT(!strcmp(sl_json_string(p, "a\"b\\c\n\x01\xc3\xa9"),
                   "\"a\\\"b\\\\c\\u000a\\u0001\xc3\xa9\""),
           "JSON string: quotes, backslash, control characters escaped: %s",
           sl_json_string(p, "a\"b\\c\n\x01\xc3\xa9"));
}

int main(void)
{
    apr_pool_t *p;

    apr_initialize();
    apr_pool_create(&p, NULL);
    test_tokens();
    test_pick(p);
    test_headers(p);
    test_header_sets(p);
    test_prepared(p);
    test_expr_quota(p);
    test_numbers(p);
    test_json(p);
    printf("sl_wire: %d passed, %d failed\n", passed, failed);
    apr_terminate();
    return failed ? 1 : 0;
}
