/* SPDX-License-Identifier: Apache-2.0 */
/* distinct= in the shm store's table (src/sl_table_distinct.c), in a
 * malloc'd region: N values pass, a new one beyond is refused and written
 * nowhere, a known one passes, the wait is when the oldest value leaves,
 * values that left free their slots, and the cells a set takes. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sl_table.h"
#include "sl_expect.h"

#include <apr_general.h>
#include <apr_strings.h>

#include <stdlib.h>
#include <string.h>

#define SEC ((apr_time_t) APR_USEC_PER_SEC)
#define T0  ((apr_time_t) 1700000000 * SEC)
#define W   (600 * SEC)

static apr_pool_t *pool;

static sl_table_t *table_new(apr_size_t size)
{
    sl_table_t *t = NULL;
    int kept = -1;

    EXPECT(sl_table_attach(pool, calloc(1, size), size, 0, &kept, &t) ==
               APR_SUCCESS,
           "attach %lu bytes", (unsigned long) size);
    return t;
}

/* One request of key bringing value (NULL: a look's none) under a limit of
 * n distinct values per W. */
static apr_status_t see(sl_table_t *t, const char *key, const char *value,
                        apr_int64_t n, apr_time_t now, sl_quota_t *q,
                        int *admitted)
{
    sl_budget_t b;
    sl_decision_t d;
    sl_shm_op_t *ops;
    sl_table_news_t news;
    apr_status_t rv;

    memset(&b, 0, sizeof(b));
    b.key = key;
    b.key_len = strlen(key);
    b.algorithm = SL_ALG_DISTINCT;
    b.requests = n;
    b.window = W;
    b.cost = 1;
    b.distinct = value;
    if ((rv = sl_table_prepare(pool, t, &b, 1, &ops)) != APR_SUCCESS) {
        return rv;
    }
    d.quota = q;
    rv = sl_table_decide(t, ops, 1, now, &d, &news);
    *admitted = d.admitted;
    return rv;
}

static const char *name(int i)
{
    return apr_psprintf(pool, "value-%d-as-16ch", i);
}

static void test_five(void)
{
    sl_table_t *t = table_new(64 * 1024);
    sl_quota_t q;
    int ok, i;
    apr_uint32_t free0 = sl_table_free(t);

    for (i = 0; i < 5; i++) {
        EXPECT(see(t, "k", name(i), 5, T0 + i * SEC, &q, &ok) == APR_SUCCESS &&
                   ok && q.remaining == 4 - i,
               "value %d passes with %d left (got ok %d, r %lld)", i, 4 - i, ok,
               (long long) q.remaining);
    }
    EXPECT(q.reset == W - 4 * SEC,
           "after five, more room when the oldest "
           "leaves (%lld)",
           (long long) q.reset);
    EXPECT(sl_table_free(t) == free0 - 3,
           "five values: the entry and two chunks (%u cells)",
           free0 - sl_table_free(t));
    see(t, "k", name(5), 5, T0 + 10 * SEC, &q, &ok);
    EXPECT(!ok && q.remaining == 0 && q.reset == W - 10 * SEC,
           "the sixth is refused until the oldest leaves (ok %d, reset %lld)",
           ok, (long long) q.reset);
    EXPECT(sl_table_free(t) == free0 - 3, "a refused value takes no cell");
    see(t, "k", name(3), 5, T0 + 11 * SEC, &q, &ok);
    EXPECT(ok && q.remaining == 0, "a known value passes");
    /* The oldest seen again: the wait is the next oldest's. */
    see(t, "k", name(0), 5, T0 + 12 * SEC, &q, &ok);
    EXPECT(ok && q.reset == SEC + W - 12 * SEC,
           "the oldest seen again: more room when the next leaves (%lld)",
           (long long) q.reset);
    see(t, "k", name(6), 5, T0 + W + SEC, &q, &ok);
    EXPECT(ok && q.remaining == 0,
           "once value 1 left (seen at T0+1s), a new one passes (ok %d, r "
           "%lld)",
           ok, (long long) q.remaining);
    EXPECT(sl_table_free(t) == free0 - 3, "and takes the slot it left");
    see(t, "k", name(7), 5, T0 + W + SEC + 1, &q, &ok);
    EXPECT(!ok, "the window is full again");
    see(t, "k", name(8), 5, T0 + W + 12 * SEC + 1, &q, &ok);
    EXPECT(ok, "value 0, seen again at 12 s, left a window later");
    /* One window after the last value was seen the whole set is gone. */
    see(t, "k", name(9), 5, T0 + 2 * W + 13 * SEC, &q, &ok);
    EXPECT(ok && q.remaining == 4, "a window after the last, one value");
    EXPECT(free0 - sl_table_free(t) == 2,
           "in a new entry and one chunk: the old ones are free (%u taken)",
           free0 - sl_table_free(t));
}

static void test_bounds(void)
{
    sl_table_t *t = table_new(256 * 1024);
    apr_uint32_t free0 = sl_table_free(t);
    sl_quota_t q;
    int ok, i, admitted = 0;

    for (i = 0; i < 1200; i++) {
        see(t, "big", name(i), SL_DISTINCT_MAX, T0 + i, &q, &ok);
        admitted += ok;
    }
    EXPECT(admitted == SL_DISTINCT_MAX, "%d values of 1200 pass a limit of %d",
           admitted, SL_DISTINCT_MAX);
    EXPECT(free0 - sl_table_free(t) == 1 + (SL_DISTINCT_MAX + 2) / 3,
           "%d values: the entry and %d chunks of 64 bytes (%u cells)",
           SL_DISTINCT_MAX, (SL_DISTINCT_MAX + 2) / 3,
           free0 - sl_table_free(t));
    EXPECT(q.reset == W - 1199,
           "refused at T0 + 1199 us: the oldest (at T0) leaves a window "
           "after it (%lld)",
           (long long) q.reset);
    EXPECT(see(t, "over", "v", SL_DISTINCT_MAX + 1, T0, &q, &ok) == APR_EINVAL,
           "a limit above %d is refused", SL_DISTINCT_MAX);
    /* Two keys, one value each: apart. */
    see(t, "a", "same", 1, T0, &q, &ok);
    EXPECT(ok, "key a: its value");
    see(t, "b", "same", 1, T0, &q, &ok);
    EXPECT(ok, "key b: the same value is its own");
    see(t, "a", "other", 1, T0, &q, &ok);
    EXPECT(!ok, "key a: a second value is refused");
}

int main(void)
{
    apr_initialize();
    apr_pool_create(&pool, NULL);
    test_five();
    test_bounds();
    printf("sl_distinct_test: %d passed, %d failed\n", passed, failed);
    apr_pool_destroy(pool);
    apr_terminate();
    return failed ? 1 : 0;
}
