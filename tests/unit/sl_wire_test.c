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

static void test_json(apr_pool_t *p)
{
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
    test_json(p);
    printf("sl_wire: %d passed, %d failed\n", passed, failed);
    apr_terminate();
    return failed ? 1 : 0;
}
