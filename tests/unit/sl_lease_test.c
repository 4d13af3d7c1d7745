/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of SlidingLimitConcurrent's pure parts: its line
 * (src/sl_limit.c), its math (src/sl_algo.c, as lua/sl_check.lua's 'n'),
 * its leases in the shm table (src/sl_table*.c) and its RateLimit-Policy
 * item (src/sl_wire.c). No server needed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sl_algo.h"
#include "sl_limit.h"
#include "sl_table.h"
#include "sl_wire.h"

#include <apr_general.h>
#include <apr_strings.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_expect.h"

#define SEC APR_USEC_PER_SEC
#define T0  ((apr_time_t) 1700000000 * SEC)

static apr_pool_t *pool;

static sl_limit_t *line(const char *text, const char **err)
{
    char **argv;
    sl_limit_t *l = NULL;
    int argc;

    apr_tokenize_to_argv(text, &argv, pool);
    for (argc = 0; argv[argc]; argc++) {
    }
    *err = sl_parse_concurrent(pool, argc, argv, "<Location /api>", &l);
    return l;
}

static void test_parse(void)
{
    static const struct {
        const char *line;
        const char *token; /* what the error names */
    } bad[] = {
        {"0", "'0'"},
        {"-1", "'-1'"},
        {"two", "'two'"},
        {"100000001", "'100000001'"},
        {"2 lease=500ms", "lease=500ms"},
        {"2 lease=2h", "lease=2h"},
        {"2 lease=0", "'0'"},
        {"2 lease=x", "'x'"},
        {"2 lease=", "''"},
        {"2 cost=2", "cost=2"},
        {"2 count=401", "count=401"},
        {"2 algorithm=log", "algorithm=log"},
        {"2 60s", "60s"},
        {"2 name=a{b}", "name=a{b}"},
    };
    const char *err;
    sl_limit_t *l, *r;
    size_t i;
    char **argv;
    int alg;

    l = line("10", &err);
    EXPECT(!err && l->algorithm == SL_ALG_CONCURRENT && l->requests == 10 &&
               l->window == SL_LEASE_DEFAULT && l->cost == 1 &&
               !strcmp(l->name, "10-in-flight") && !l->named,
           "N alone: a 60 s lease, named after N: %s", err ? err : "");
    EXPECT(sl_algorithm_code(SL_ALG_CONCURRENT) == 'n' &&
               !strcmp(sl_algorithm_name(SL_ALG_CONCURRENT), "concurrent"),
           "its letter in the script is n");
    l = line("3 name=uploads lease=5m", &err);
    EXPECT(!err && l->named && !strcmp(l->name, "uploads") &&
               l->window == 300 * SEC,
           "name= and lease=: %s", err ? err : "");
    EXPECT(line("1 lease=1s", &err) && !err, "lease=1s is the least");
    EXPECT(line("1 lease=1h", &err) && !err, "lease=1h is the most");
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        line(bad[i].line, &err);
        EXPECT(err && strstr(err, bad[i].token), "'%s' refused naming %s: %s",
               bad[i].line, bad[i].token, err ? err : "(accepted)");
    }
    EXPECT(sl_parse_concurrent(pool, 0, NULL, "", &l) != NULL,
           "no N is refused");
    EXPECT(sl_parse_algorithm(pool, "concurrent", &alg) != NULL,
           "concurrent is not an algorithm= value");

    /* N in flight is another budget than N per lease-long window. */
    l = line("5 lease=60s", &err);
    apr_tokenize_to_argv("5 60s", &argv, pool);
    sl_parse_limit(pool, 2, argv, "<Location /api>", &r);
    EXPECT(strcmp(l->id, r->id) != 0, "its id is not SlidingLimit 5 60s's");
    EXPECT(!strcmp(line("5 lease=60s", &err)->id, l->id),
           "the same line, the same id (stable across servers)");
}

static void test_math(void)
{
    apr_int64_t ts[3] = {T0, T0 + SEC, T0 + 2 * SEC}, w[3] = {1, 1, 1};
    sl_log_t log = {ts, w, 2, 2};
    sl_eval_t ev;

    /* Two in flight of two: refused, told to come back within a second
     * (the oldest lease would expire only after 60 s). */
    sl_lease_evaluate(T0 + 3 * SEC, 2, 60 * SEC, 2, sl_log_array_at, &log, &ev);
    EXPECT(!ev.ok && ev.remaining0 == 0 && ev.reset0 == SL_LEASE_WAIT,
           "full: refused, reset %" APR_INT64_T_FMT, ev.reset0);
    sl_lease_evaluate(T0 + 3 * SEC, 3, 60 * SEC, 2, sl_log_array_at, &log, &ev);
    EXPECT(ev.ok && ev.remaining == 0 && ev.remaining0 == 1 &&
               ev.reset == SL_LEASE_WAIT,
           "one place left: admitted, none after");
    sl_lease_evaluate(T0, 3, 60 * SEC, 0, sl_log_array_at, &log, &ev);
    EXPECT(ev.ok && ev.remaining == 2 && ev.reset0 == 0, "none in flight");
    /* Near its end a lease's own expiry is the sooner answer. */
    sl_lease_evaluate(T0 + 59800000, 2, 60 * SEC, 2, sl_log_array_at, &log,
                      &ev);
    EXPECT(!ev.ok && ev.reset0 == 200000,
           "a lease 0.2 s from its expiry: %" APR_INT64_T_FMT, ev.reset0);
}

static apr_status_t decide(sl_table_t *t, sl_budget_t *b, apr_time_t now,
                           sl_decision_t *d)
{
    sl_shm_op_t *ops;
    sl_table_news_t news;
    apr_status_t rv = sl_table_prepare(pool, t, b, 1, &ops);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    d->quota = apr_pcalloc(pool, sizeof(*d->quota));
    return sl_table_decide(t, ops, 1, now, d, &news);
}

static void test_table(void)
{
    apr_size_t size = 64 * 1024;
    void *region = calloc(1, size);
    sl_table_t *t = NULL;
    sl_budget_t b;
    sl_shm_op_t *ops;
    sl_decision_t d;
    int kept = -1, ok = 1, i;

    EXPECT(sl_table_attach(pool, region, size, 0, &kept, &t) == APR_SUCCESS,
           "attach");
    memset(&b, 0, sizeof(b));
    b.key = "k.n";
    b.key_len = 3;
    b.algorithm = SL_ALG_CONCURRENT;
    b.requests = 2;
    b.window = 3 * SEC;
    b.cost = 1;
    for (i = 0; i < 2; i++) {
        ok = ok && decide(t, &b, T0 + i, &d) == APR_SUCCESS && d.admitted;
    }
    EXPECT(ok, "two leases taken");
    EXPECT(decide(t, &b, T0 + 2, &d) == APR_SUCCESS && !d.admitted &&
               d.quota[0].reset == SL_LEASE_WAIT,
           "a third refused for a second");
    /* The end of the first request gives its lease back. */
    sl_table_prepare(pool, t, &b, 1, &ops);
    sl_table_give_back(t, ops, 1, T0, T0 + 3);
    EXPECT(decide(t, &b, T0 + 4, &d) == APR_SUCCESS && d.admitted &&
               d.quota[0].remaining == 0,
           "released: one more admitted");
    EXPECT(decide(t, &b, T0 + 5, &d) == APR_SUCCESS && !d.admitted,
           "and full again");
    /* A killed child gives nothing back: its leases expire with the lease. */
    EXPECT(decide(t, &b, T0 + 3 * SEC, &d) == APR_SUCCESS && !d.admitted,
           "not before the lease ends");
    EXPECT(decide(t, &b, T0 + 3 * SEC + 4, &d) == APR_SUCCESS && d.admitted &&
               d.quota[0].remaining == 1,
           "expired with the lease: admitted, one place left");

    /* Renewed: a lease taken at T1 and renewed 2 s later still holds its
     * place 3 s after T1, and the give-back names the renewed time. */
    {
        apr_time_t t1 = T0 + 10 * SEC;
        b.requests = 1;
        b.key = "r.n";
        EXPECT(decide(t, &b, t1, &d) == APR_SUCCESS && d.admitted,
               "a lease taken");
        sl_table_prepare(pool, t, &b, 1, &ops);
        sl_table_renew(t, ops, 1, t1, t1 + 2 * SEC);
        EXPECT(decide(t, &b, t1 + 3 * SEC + 1, &d) == APR_SUCCESS &&
                   !d.admitted,
               "renewed: still in flight after its first lease");
        sl_table_prepare(pool, t, &b, 1, &ops);
        sl_table_renew(t, ops, 1, t1, t1 + 5 * SEC + 2);
        EXPECT(decide(t, &b, t1 + 5 * SEC + 3, &d) == APR_SUCCESS && d.admitted,
               "a renewal that came after the lease expired brings nothing "
               "back (and the old time names nothing)");
        sl_table_prepare(pool, t, &b, 1, &ops);
        sl_table_give_back(t, ops, 1, t1 + 5 * SEC + 3, t1 + 5 * SEC + 4);
        EXPECT(decide(t, &b, t1 + 5 * SEC + 5, &d) == APR_SUCCESS && d.admitted,
               "given back by its time");
    }
    free(region);
}

/* The renewals and give-backs of leases that are no longer there (a child
 * stopped longer than its lease, issue 36): each is a no-op that says so,
 * and never touches another budget, even when its budget's entry is still
 * there with an empty log. */
static void test_late_renewal(void)
{
    apr_size_t size = 64 * 1024;
    void *region = calloc(1, size);
    sl_table_t *t = NULL;
    sl_budget_t lease, keep;
    sl_shm_op_t *ops;
    sl_decision_t d;
    apr_time_t t1 = T0 + 100 * SEC, t2;
    apr_int64_t blocked[1];
    int kept = -1, i, ok = 1;

    EXPECT(sl_table_attach(pool, region, size, 0, &kept, &t) == APR_SUCCESS,
           "attach");
    memset(&keep, 0, sizeof(keep));
    keep.key = "{c}.keep";
    keep.key_len = strlen(keep.key);
    keep.algorithm = SL_ALG_COUNTER;
    keep.requests = 3;
    keep.window = 60 * SEC;
    lease = keep;
    lease.key = "{c}.lease";
    lease.key_len = strlen(lease.key);
    lease.algorithm = SL_ALG_CONCURRENT;
    lease.window = 3 * SEC;
    lease.cost = 1;
    for (i = 0; i < 2; i++) {
        ok = ok && decide(t, &keep, t1 + i, &d) == APR_SUCCESS && d.admitted;
    }
    EXPECT(ok, "two of the rate limit's 3 spent");

    /* Three leases; the child that holds them stops for 4.5 s. */
    for (i = 0; i < 3; i++) {
        ok = ok && decide(t, &lease, t1 + 10 + i, &d) == APR_SUCCESS &&
             d.admitted;
    }
    EXPECT(ok, "three leases taken");
    t2 = t1 + 4500 * 1000;
    sl_table_prepare(pool, t, &lease, 1, &ops);
    EXPECT(sl_table_renew(t, ops, 1, t1 + 10, t2) == 0,
           "a renewal after the lease expired renews nothing");
    /* Another request of the client takes a lease and gives it back: the
     * entry stays, its log empty. */
    EXPECT(decide(t, &lease, t2 + 1, &d) == APR_SUCCESS && d.admitted &&
               d.quota[0].remaining == 2,
           "the expired leases hold no place");
    sl_table_prepare(pool, t, &lease, 1, &ops);
    sl_table_give_back(t, ops, 1, t2 + 1, t2 + 2);
    EXPECT(sl_table_entries(t) == 2, "both budgets stored");
    sl_table_prepare(pool, t, &lease, 1, &ops);
    d.quota = apr_pcalloc(pool, sizeof(*d.quota));
    EXPECT(sl_table_peek(t, ops, 1, t2 + 3, &d, blocked) == APR_SUCCESS &&
               d.admitted && d.quota[0].remaining == 3,
           "an empty log is read as empty, not as a broken link");
    sl_table_prepare(pool, t, &lease, 1, &ops);
    EXPECT(sl_table_renew(t, ops, 1, t2, t2 + SEC) == 0,
           "a renewal naming a time no lease has renews nothing");
    sl_table_prepare(pool, t, &lease, 1, &ops);
    sl_table_give_back(t, ops, 1, t1 + 11, t2 + SEC);
    EXPECT(sl_table_entries(t) == 2,
           "and neither it nor a late give-back empties the table (%u "
           "budgets left)",
           sl_table_entries(t));
    EXPECT(decide(t, &keep, t2 + 2 * SEC, &d) == APR_SUCCESS && d.admitted &&
               d.quota[0].remaining == 0,
           "the rate limit still has 1 of 3 left (remaining %ld after it)",
           (long) d.quota[0].remaining);
    EXPECT(decide(t, &keep, t2 + 2 * SEC + 1, &d) == APR_SUCCESS && !d.admitted,
           "and then refuses");

    /* A live lease is renewed, and says so. */
    EXPECT(decide(t, &lease, t2 + 3 * SEC, &d) == APR_SUCCESS && d.admitted,
           "a lease taken");
    sl_table_prepare(pool, t, &lease, 1, &ops);
    EXPECT(sl_table_renew(t, ops, 1, t2 + 3 * SEC, t2 + 4 * SEC) == 1,
           "a live lease is renewed");
    free(region);
}

static void test_wire(void)
{
    const char *err;
    sl_limit_t *l = line("4 name=up", &err);

    sl_wire_limit(pool, l);
    EXPECT(!strcmp(l->policy_item, "\"up\";q=4;qu=\"concurrent-requests\""),
           "RateLimit-Policy item: %s", l->policy_item);
}

int main(void)
{
    apr_initialize();
    apr_pool_create(&pool, NULL);
    test_parse();
    test_math();
    test_table();
    test_late_renewal();
    test_wire();
    printf("sl_lease: %d passed, %d failed\n", passed, failed);
    apr_terminate();
    return failed ? 1 : 0;
}
