/* SPDX-License-Identifier: Apache-2.0 */
/* delay=: which refusals may wait, and how long, from a store's reply. */
#include "sl_delay.h"

#include "sl_expect.h"

#include <apr_general.h>

#define MS 1000

static apr_pool_t *pool;

/* A limit with delay= (microseconds; 0: none) and block=. */
static sl_limit_t *limit(apr_int64_t delay, apr_int64_t block)
{
    sl_limit_t *l = apr_pcalloc(pool, sizeof(*l));
    l->requests = 1;
    l->window = 2000 * MS;
    l->delay = delay;
    l->block = block;
    return l;
}

/* A refused decision over n limits: ok[i], reset[i]. */
static sl_decision_t refused(int n, const int *ok, const apr_int64_t *reset)
{
    sl_decision_t d;
    int i;
    d.now = 0;
    d.admitted = 0;
    d.n = n;
    d.quota = apr_pcalloc(pool, sizeof(*d.quota) * n);
    for (i = 0; i < n; i++) {
        d.quota[i].ok = ok[i];
        d.quota[i].reset = reset[i];
    }
    return d;
}

static apr_array_header_t *limits(int n, sl_limit_t **ls)
{
    apr_array_header_t *a = apr_array_make(pool, n, sizeof(sl_limit_t *));
    int i;
    for (i = 0; i < n; i++) {
        APR_ARRAY_PUSH(a, sl_limit_t *) = ls[i];
    }
    return a;
}

int main(void)
{
    apr_initialize();
    apr_pool_create(&pool, NULL);
    {
        /* One limit: waits its reset when that fits in delay=. */
        sl_limit_t *ls[] = {limit(3000 * MS, 0)};
        int ok[] = {0};
        apr_int64_t reset[] = {1500 * MS};
        sl_decision_t d = refused(1, ok, reset);
        apr_array_header_t *a = limits(1, ls);
        EXPECT(sl_delay_wait(a, &d, 0, 0) == 1500 * MS, "fits: the reset");
        EXPECT(sl_delay_wait(a, &d, 1500 * MS, 1) == 1500 * MS,
               "exactly what is left");
        EXPECT(sl_delay_wait(a, &d, 1500 * MS + 1, 1) == 0,
               "a microsecond beyond what is left: refused");
        EXPECT(sl_delay_wait(a, &d, 0, SL_DELAY_ROUNDS) == 0,
               "after the last round: refused");
        EXPECT(sl_delay_wait(a, &d, -1, 0) == 0, "a clock gone back: refused");
        d.admitted = 1;
        EXPECT(sl_delay_wait(a, &d, 0, 0) == 0, "admitted: no wait");
    }
    {
        /* Without delay=, and with block=: never. */
        sl_limit_t *ls[] = {limit(0, 0)};
        sl_limit_t *lb[] = {limit(3000 * MS, 5000 * MS)};
        int ok[] = {0};
        apr_int64_t reset[] = {100 * MS};
        sl_decision_t d = refused(1, ok, reset);
        EXPECT(sl_delay_wait(limits(1, ls), &d, 0, 0) == 0, "no delay=");
        EXPECT(sl_delay_wait(limits(1, lb), &d, 0, 0) == 0,
               "block=: never waited through");
    }
    {
        /* Several limits: every refusing one must fit; the longest reset
         * is the wait; a limit with room plays no part, delay= or not. */
        sl_limit_t *ls[] = {limit(3000 * MS, 0), limit(0, 0),
                            limit(1000 * MS, 0)};
        int ok[] = {0, 1, 0};
        apr_int64_t reset[] = {2000 * MS, 0, 700 * MS};
        sl_decision_t d = refused(3, ok, reset);
        apr_array_header_t *a = limits(3, ls);
        EXPECT(sl_delay_wait(a, &d, 0, 0) == 2000 * MS, "the longest reset");
        EXPECT(sl_delay_wait(a, &d, 400 * MS, 1) == 0,
               "one limit's own delay= no longer fits: refused");
        d.quota[1].ok = 0;
        d.quota[1].reset = 10 * MS;
        EXPECT(sl_delay_wait(a, &d, 0, 0) == 0,
               "a refusing limit without delay=: refused");
    }
    {
        /* A reset of a few microseconds waits the floor, within bounds. */
        sl_limit_t *ls[] = {limit(2 * MS, 0)};
        int ok[] = {0};
        apr_int64_t reset[] = {3};
        sl_decision_t d = refused(1, ok, reset);
        apr_array_header_t *a = limits(1, ls);
        EXPECT(sl_delay_wait(a, &d, 0, 0) == SL_DELAY_MIN_WAIT,
               "a tiny reset: the floor");
        EXPECT(sl_delay_wait(a, &d, 1500, 1) == 0,
               "the floor beyond what is left: refused");
    }
    {
        /* More quota entries than limits: out of shape, refused. */
        sl_limit_t *ls[] = {limit(3000 * MS, 0)};
        int ok[] = {0, 0};
        apr_int64_t reset[] = {10 * MS, 10 * MS};
        sl_decision_t d = refused(2, ok, reset);
        EXPECT(sl_delay_wait(limits(1, ls), &d, 0, 0) == 0,
               "a reply longer than the limits: refused");
        EXPECT(sl_delay_wait(NULL, &d, 0, 0) == 0, "no limits: refused");
    }
    /* The cap's default. */
    EXPECT(sl_delay_max_default(1, 25) == 6, "25 threads: 6");
    EXPECT(sl_delay_max_default(1, 3) == 1, "3 threads: at least 1");
    EXPECT(sl_delay_max_default(0, 1) == 0, "prefork: none waits");
    printf("sl_delay_test: %d passed, %d failed\n", passed, failed);
    apr_pool_destroy(pool);
    apr_terminate();
    return failed != 0;
}
