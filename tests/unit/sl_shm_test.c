/* SPDX-License-Identifier: Apache-2.0 */
/* The shm store's table (src/sl_table.c) in a malloc'd region: its answers
 * against the algorithms' plain-array model, eviction order, a full table,
 * out-of-order log inserts, corruption. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sl_algo.h"
#include "sl_table.h"
#include "sl_expect.h"

#include <apr_general.h>
#include <apr_strings.h>

#include <stdlib.h>
#include <string.h>

#define SEC  APR_USEC_PER_SEC
#define T0   ((apr_time_t) 1700000000 * SEC)
#define HOUR (3600 * SEC)

static apr_pool_t *pool;

static sl_table_t *table_new(apr_size_t size, void **region)
{
    sl_table_t *t = NULL;
    int kept = -1;

    *region = calloc(1, size);
    EXPECT(sl_table_attach(pool, *region, size, 0, &kept, &t) == APR_SUCCESS,
           "attach %lu bytes", (unsigned long) size);
    EXPECT(kept == 0, "a zeroed region is formatted");
    return t;
}

static sl_budget_t budget(const char *key, int alg, apr_int64_t requests,
                          apr_int64_t window)
{
    sl_budget_t b;

    memset(&b, 0, sizeof(b));
    b.key = key;
    b.key_len = strlen(key);
    b.algorithm = alg;
    b.requests = requests;
    b.window = window;
    return b;
}

/* One decision over n budgets; the status, with *d filled on success. */
static apr_status_t decide_n(sl_table_t *t, const sl_budget_t *b, int n,
                             apr_time_t now, sl_decision_t *d,
                             sl_table_news_t *news)
{
    sl_shm_op_t *ops;
    sl_table_news_t ignored;
    apr_status_t rv = sl_table_prepare(pool, t, b, n, &ops);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    d->quota = apr_pcalloc(pool, sizeof(*d->quota) * n);
    return sl_table_decide(t, ops, n, now, d, news ? news : &ignored);
}

static apr_status_t decide(sl_table_t *t, sl_budget_t b, apr_time_t now,
                           sl_decision_t *d, sl_table_news_t *news)
{
    return decide_n(t, &b, 1, now, d, news);
}

/* The remaining quota of a counter key after one more admission at now. */
static apr_int64_t remaining(sl_table_t *t, const char *key, apr_time_t now)
{
    sl_decision_t d;

    if (decide(t, budget(key, SL_ALG_COUNTER, 100, HOUR), now, &d, NULL) !=
        APR_SUCCESS) {
        return -1;
    }
    return d.quota[0].remaining;
}

static void test_attach(void)
{
    void *region;
    sl_table_t *t, *again = NULL;
    sl_decision_t d;
    int kept = -1;

    EXPECT(sl_table_attach(pool, calloc(1, 64), 64, 0, &kept, &t) == APR_EINVAL,
           "a region smaller than sl_table_min_size is refused");
    t = table_new(64 * 1024, &region);
    EXPECT(remaining(t, "k", T0) == 99, "first admission");
    /* A graceful restart maps the same region again: the budget stays. */
    EXPECT(sl_table_attach(pool, region, 64 * 1024, 0, &kept, &again) ==
                   APR_SUCCESS &&
               kept == 1,
           "a region holding a table of its size is kept");
    EXPECT(remaining(again, "k", T0 + 1) == 98, "the budget survived");
    EXPECT(sl_table_attach(pool, region, 32 * 1024, 0, &kept, &again) ==
                   APR_SUCCESS &&
               kept == 0,
           "another size formats the region");
    EXPECT(remaining(again, "k", T0 + 2) == 99, "and empties it");
    /* A region another build formatted (the layout word after the magic):
     * its hashes are not this build's, so it starts afresh. */
    EXPECT(remaining(again, "k", T0 + 3) == 98, "counted again");
    ((apr_uint32_t *) region)[1] -= 1;
    EXPECT(sl_table_attach(pool, region, 32 * 1024, 0, &kept, &again) ==
                   APR_SUCCESS &&
               kept == 0,
           "another layout formats the region");
    EXPECT(remaining(again, "k", T0 + 4) == 99, "and empties it too");
    EXPECT(decide(again, budget("k", 7, 1, HOUR), T0, &d, NULL) == APR_EINVAL,
           "an unknown algorithm is refused");
    EXPECT(decide(again, budget("k", SL_ALG_LOG, 0, HOUR), T0, &d, NULL) ==
               APR_EINVAL,
           "a zero limit is refused");
    free(region);
}

/* The smallest table, full: one counter key per cell, k0 the least
 * recently used; key "k<short>" has a one-second window. Returns n. */
static apr_uint32_t fill(sl_table_t *t, apr_uint32_t short_one)
{
    apr_uint32_t n = sl_table_free(t), i;
    sl_decision_t d;
    char key[32];

    for (i = 0; i < n; i++) {
        apr_snprintf(key, sizeof(key), "k%u", i);
        decide(t, budget(key, SL_ALG_COUNTER, 100, i == short_one ? SEC : HOUR),
               T0 + i, &d, NULL);
    }
    return n;
}

/* Every key takes one cell: fill the smallest table, then watch who goes. */
static void test_eviction_order(void)
{
    void *region;
    sl_table_t *t = table_new(sl_table_min_size(), &region);
    apr_uint32_t n = fill(t, (apr_uint32_t) -1);
    sl_table_news_t news;
    sl_decision_t d;

    EXPECT(sl_table_free(t) == 0 && sl_table_entries(t) == n,
           "%u keys fill %u cells", n, n);
    /* k0 is used again: k1 is now the least recently used. */
    EXPECT(remaining(t, "k0", T0 + n) == 98, "k0 kept its count");
    EXPECT(decide(t, budget("new", SL_ALG_COUNTER, 100, HOUR), T0 + n + 1, &d,
                  &news) == APR_SUCCESS,
           "a new key in a full table");
    EXPECT(news.evicted == 1, "one live budget evicted (%d)", news.evicted);
    EXPECT(remaining(t, "k0", T0 + n + 2) == 97, "the recently used k0 stayed");
    /* That evicted k2, the next least recently used. */
    EXPECT(remaining(t, "k1", T0 + n + 3) == 99, "k1 was evicted first");
    EXPECT(remaining(t, "k3", T0 + n + 4) == 98, "k3 stayed");
    EXPECT(remaining(t, "k2", T0 + n + 5) == 99, "k2 was evicted next");
    free(region);
}

/* An expired key is reused before any live one is evicted. */
static void test_expired_first(void)
{
    void *region;
    sl_table_t *t = table_new(sl_table_min_size(), &region);
    sl_table_news_t news;
    sl_decision_t d;

    /* k3 has a one-second window: its key is gone after ~2 s. */
    fill(t, 3);
    EXPECT(decide(t, budget("new", SL_ALG_COUNTER, 100, HOUR), T0 + 10 * SEC,
                  &d, &news) == APR_SUCCESS &&
               news.evicted == 0,
           "the expired key made room, nothing live evicted (%d)",
           news.evicted);
    EXPECT(remaining(t, "k0", T0 + 11 * SEC) == 98,
           "the least recently used live key stayed");
    free(region);
}

/* One client's sliding log longer than the whole table: once it cannot
 * grow, the request is refused (never admitted for want of space, which
 * the module used to treat as a store failure and fail open), and nothing
 * changes. */
static void test_full_refuses(void)
{
    void *region;
    sl_table_t *t = table_new(sl_table_min_size(), &region);
    sl_budget_t log = budget("long", SL_ALG_LOG, 100000, HOUR);
    sl_table_news_t news;
    sl_decision_t d;
    apr_status_t rv = APR_SUCCESS;
    apr_uint32_t nfree;
    int i, admitted = 0;

    for (i = 0; i < 10000 && rv == APR_SUCCESS && admitted == i; i++) {
        rv = decide(t, log, T0 + i, &d, &news);
        admitted += rv == APR_SUCCESS && d.admitted;
    }
    EXPECT(rv == APR_SUCCESS && !d.admitted,
           "the log outgrew the table: "
           "refused (status %d, %d admitted)",
           rv, admitted);
    EXPECT(admitted > 0 && admitted <= (int) sl_table_free(t) + 7 * 64,
           "after about a table's worth (%d)", admitted);
    EXPECT(!d.quota[0].ok && d.quota[0].remaining == 0 &&
               d.quota[0].reset > 0 && d.quota[0].reset <= HOUR,
           "no room: nothing remaining, a wait of at most the window "
           "(%ld us)",
           (long) d.quota[0].reset);
    EXPECT(news.full && !news.was_full, "the first refusal says so once");
    nfree = sl_table_free(t);
    EXPECT(decide(t, log, T0 + i, &d, &news) == APR_SUCCESS && !d.admitted &&
               news.full && news.was_full,
           "and it stays full");
    EXPECT(sl_table_free(t) == nfree, "a refusal changes nothing");
    EXPECT(sl_table_entries(t) == 1, "the log is still there");
    /* Once its oldest times leave the window, it is admitted again. */
    EXPECT(decide(t, log, T0 + HOUR + 10 * SEC, &d, &news) == APR_SUCCESS &&
               d.admitted && !news.full && news.was_full,
           "room again after the window");
    free(region);
}

/* Filling the table never evicts a budget that is refusing: evicting it
 * would hand its quota back. */
static void test_refusing_kept(void)
{
    void *region;
    sl_table_t *t = table_new(sl_table_min_size(), &region);
    sl_budget_t victim = budget("victim", SL_ALG_COUNTER, 5, HOUR);
    sl_table_news_t news;
    sl_decision_t d;
    char key[32];
    int i, refused = 0;

    for (i = 0; i < 6; i++) {
        decide(t, victim, T0 + i, &d, NULL);
    }
    EXPECT(!d.admitted, "the victim used up its 5");
    /* Many new clients: the victim is the least recently used entry. */
    for (i = 0; i < 3 * (int) sl_table_free(t) + 200; i++) {
        apr_snprintf(key, sizeof(key), "flood%d", i);
        if (decide(t, budget(key, SL_ALG_COUNTER, 5, HOUR), T0 + 10 + i, &d,
                   &news) != APR_SUCCESS ||
            !d.admitted) {
            refused++;
        }
    }
    EXPECT(refused == 0, "idle live budgets made room (%d refused)", refused);
    EXPECT(decide(t, victim, T0 + 100000, &d, NULL) == APR_SUCCESS &&
               !d.admitted && d.quota[0].remaining == 0,
           "the victim is still refused (remaining %ld)",
           (long) d.quota[0].remaining);
    free(region);
}

/* An entry that holds live leases (SlidingLimitConcurrent) is never
 * evicted, whatever room is left in it (issue 36): evicted, its requests
 * in flight would no longer count, and a flood of new clients would let
 * one client hold more than N at once. Once its leases are given back it
 * is an idle budget like any other. */
static void test_leases_kept(void)
{
    void *region;
    sl_table_t *t = table_new(sl_table_min_size(), &region);
    sl_budget_t held = budget("{held}.n", SL_ALG_CONCURRENT, 2, 60 * SEC);
    sl_budget_t half = budget("{half}.n", SL_ALG_CONCURRENT, 2, 60 * SEC);
    apr_time_t now = T0 + 2 * SEC;
    sl_shm_op_t *ops;
    sl_table_news_t news;
    sl_decision_t d;
    char key[32];
    int i, refused = 0, evicted = 0;

    decide(t, held, T0, &d, NULL);
    decide(t, held, T0 + 1, &d, NULL);
    EXPECT(decide(t, held, T0 + 2, &d, NULL) == APR_SUCCESS && !d.admitted,
           "two of two in flight: a third is refused");
    EXPECT(decide(t, half, T0 + 3, &d, NULL) == APR_SUCCESS && d.admitted &&
               d.quota[0].remaining == 1,
           "one of two in flight elsewhere");
    /* Past the refusal's one-second wait, many new clients: both lease
     * entries are the least recently used. */
    for (i = 0; i < 3 * (int) sl_table_free(t) + 200; i++) {
        apr_snprintf(key, sizeof(key), "{flood%d}.c", i);
        if (decide(t, budget(key, SL_ALG_COUNTER, 5, HOUR), now + i, &d,
                   &news) != APR_SUCCESS ||
            !d.admitted) {
            refused++;
        }
        evicted += news.evicted;
    }
    now += i;
    EXPECT(refused == 0 && evicted > 0,
           "idle budgets made room (%d refused, %d evicted)", refused, evicted);
    EXPECT(decide(t, held, now, &d, NULL) == APR_SUCCESS && !d.admitted &&
               d.quota[0].remaining == 0,
           "the full lease entry was kept: still refused (remaining %ld)",
           (long) d.quota[0].remaining);
    EXPECT(decide(t, half, now + 1, &d, NULL) == APR_SUCCESS && d.admitted &&
               d.quota[0].remaining == 0,
           "the half-full one too: one more admitted, none after");
    EXPECT(decide(t, half, now + 2, &d, NULL) == APR_SUCCESS && !d.admitted,
           "and then refused");

    /* Given back, the leases pin nothing: the flood may evict the entry. */
    sl_table_prepare(pool, t, &held, 1, &ops);
    sl_table_give_back(t, ops, 1, T0, now + 3);
    sl_table_prepare(pool, t, &held, 1, &ops);
    sl_table_give_back(t, ops, 1, T0 + 1, now + 3);
    for (i = 0; i < 3 * (int) sl_table_entries(t); i++) {
        apr_snprintf(key, sizeof(key), "{again%d}.c", i);
        decide(t, budget(key, SL_ALG_COUNTER, 5, HOUR), now + 4 + i, &d, NULL);
    }
    sl_table_prepare(pool, t, &held, 1, &ops);
    d.quota = apr_pcalloc(pool, sizeof(*d.quota));
    {
        apr_int64_t blocked;
        EXPECT(sl_table_peek(t, ops, 1, now + 4 + i, &d, &blocked) ==
                       APR_SUCCESS &&
                   d.quota[0].remaining == 2,
               "the leases given back: two places free");
    }
    free(region);
}

/* A table whose every entry holds leases: a new client finds no room and
 * is refused (as in a table of refusing budgets), nobody is evicted, and
 * it is admitted once leases end. */
static void test_all_leased(void)
{
    void *region;
    sl_table_t *t = table_new(sl_table_min_size(), &region);
    apr_uint32_t n = sl_table_free(t), i;
    apr_time_t now = T0 + n + 2 * SEC;
    sl_table_news_t news;
    sl_shm_op_t *ops;
    sl_decision_t d;
    sl_budget_t b;
    char key[32];

    for (i = 0; i < n; i++) {
        apr_snprintf(key, sizeof(key), "{l%u}.n", i);
        decide(t, budget(key, SL_ALG_CONCURRENT, 3, 60 * SEC), T0 + i, &d,
               NULL);
    }
    EXPECT(sl_table_free(t) == 0, "every cell taken (%u entries)",
           sl_table_entries(t));
    EXPECT(decide(t, budget("{new}.c", SL_ALG_COUNTER, 5, HOUR), now, &d,
                  &news) == APR_SUCCESS &&
               !d.admitted && news.full && news.evicted == 0 &&
               d.quota[0].remaining == 0,
           "a new client finds no room: refused, nobody evicted");
    EXPECT(sl_table_entries(t) == n / 2, "every lease kept (%u of %u)",
           sl_table_entries(t), n / 2);
    /* One request ends: its entry may go. */
    b = budget("{l0}.n", SL_ALG_CONCURRENT, 3, 60 * SEC);
    sl_table_prepare(pool, t, &b, 1, &ops);
    sl_table_give_back(t, ops, 1, T0, now + 1);
    EXPECT(decide(t, budget("{new}.c", SL_ALG_COUNTER, 5, HOUR), now + 2, &d,
                  &news) == APR_SUCCESS &&
               d.admitted,
           "a lease given back: the new client is admitted in its place");
    EXPECT(decide(t, budget("{new2}.c", SL_ALG_COUNTER, 5, HOUR),
                  T0 + 61 * SEC + n, &d, &news) == APR_SUCCESS &&
               d.admitted,
           "and once the leases expire, room for anyone");
    free(region);
}

/* A table full of spent budgets: a new client is refused rather than
 * given room at a spent client's expense, until the refusals end. */
static void test_all_refusing(void)
{
    void *region;
    sl_table_t *t = table_new(sl_table_min_size(), &region);
    apr_uint32_t n = sl_table_free(t), i;
    sl_table_news_t news;
    sl_decision_t d;
    char key[32];

    for (i = 0; i < n; i++) {
        apr_snprintf(key, sizeof(key), "spent%u", i);
        decide(t, budget(key, SL_ALG_GCRA, 1, HOUR), T0 + i, &d, NULL);
    }
    EXPECT(decide(t, budget("new", SL_ALG_GCRA, 1, HOUR), T0 + n, &d, &news) ==
                   APR_SUCCESS &&
               !d.admitted && news.full && news.evicted == 0,
           "a new client finds no room: refused, nobody evicted");
    EXPECT(sl_table_entries(t) == n, "every spent budget kept");
    EXPECT(decide(t, budget("spent0", SL_ALG_GCRA, 1, HOUR), T0 + n + 1, &d,
                  NULL) == APR_SUCCESS &&
               !d.admitted,
           "and still spent");
    EXPECT(decide(t, budget("new", SL_ALG_GCRA, 1, HOUR), T0 + 2 * HOUR, &d,
                  &news) == APR_SUCCESS &&
               d.admitted,
           "room again once the refusals are over");
    free(region);
}

/* The stripe of an identity depends on a secret: nobody can aim at
 * another client's stripe without it. */
static void test_stripe_keyed(void)
{
    unsigned char k1[SL_TABLE_STRIPE_KEY], k2[SL_TABLE_STRIPE_KEY];
    char key[32];
    int i, moved = 0, stable = 0, spread[8] = {0}, empty = 0;

    memset(k1, 1, sizeof(k1));
    memset(k2, 2, sizeof(k2));
    for (i = 0; i < 800; i++) {
        apr_size_t n =
            (apr_size_t) apr_snprintf(key, sizeof(key), "p:{id%d}pol.L", i);
        unsigned int a = sl_table_stripe(k1, key, n, 8);
        moved += a != sl_table_stripe(k2, key, n, 8);
        spread[a % 8]++;
        stable += a == sl_table_stripe(k1, key, n, 8);
    }
    EXPECT(stable == 800, "the same key, the same stripe");
    for (i = 0; i < 8; i++) {
        empty += spread[i] < 50;
    }
    EXPECT(moved > 600, "another secret, other stripes (%d of 800 moved)",
           moved);
    EXPECT(empty == 0, "spread over all 8 stripes");
    EXPECT(sl_table_stripe(k1, "a:{t}x", 6, 8) ==
               sl_table_stripe(k1, "b:{t}y", 6, 8),
           "one hash tag, one stripe");
}

/* Times handed in slightly out of order (callers take them before the
 * lock) land in time order, across chunks: the table answers as the
 * sorted-array model does at every step. */
static void test_out_of_order(void)
{
    void *region;
    sl_table_t *t = table_new(64 * 1024, &region);
    sl_budget_t b = budget("log", SL_ALG_LOG, 40, 2 * SEC);
    apr_int64_t ts[64], w[64];
    sl_log_t model = {ts, w, 0, 0};
    unsigned int seed = 12345;
    int i, same = 0, steps = 3000;

    for (i = 0; i < steps; i++) {
        sl_decision_t d;
        sl_eval_t ev;
        sl_quota_t q;
        apr_time_t now;

        seed = seed * 1103515245u + 12345u;
        /* Up to 40 ms late against a clock advancing 10 ms a step. */
        now = T0 + (apr_time_t) i * 10000 - (apr_time_t) (seed >> 8) % 40000;
        sl_log_expire(&model, now, b.window);
        sl_log_evaluate(now, b.requests, b.window, 1, model.units,
                        sl_log_array_at, &model, &ev);
        if (ev.ok) {
            sl_log_apply(&model, now, b.window, 1);
        }
        sl_eval_quota(&ev, ev.ok, &q);
        if (decide(t, b, now, &d, NULL) == APR_SUCCESS && d.admitted == ev.ok &&
            d.quota[0].remaining == q.remaining &&
            d.quota[0].reset == q.reset) {
            same++;
        }
        else if (steps - same < 5) {
            printf("step %d: table %d/%ld/%ld, model %d/%ld/%ld\n", i,
                   d.admitted, (long) d.quota[0].remaining,
                   (long) d.quota[0].reset, ev.ok, (long) q.remaining,
                   (long) q.reset);
        }
    }
    EXPECT(same == steps, "%d of %d out-of-order steps as the model", same,
           steps);
    free(region);
}

/* Links that lead nowhere: the table notices, empties itself, and works
 * again from the next request. */
static void test_corruption(void)
{
    void *region;
    apr_size_t size = 64 * 1024;
    sl_table_t *t = table_new(size, &region);
    sl_table_news_t news;
    sl_decision_t d;
    char key[32];
    int i;

    for (i = 0; i < 50; i++) {
        apr_snprintf(key, sizeof(key), "k%d", i);
        remaining(t, key, T0 + i);
    }
    /* Everything after the header: buckets, cells, links. */
    memset((char *) region + 256, 0x5a, size - 256);
    EXPECT(decide(t, budget("k7", SL_ALG_COUNTER, 100, HOUR), T0 + 100, &d,
                  &news) == APR_EGENERAL,
           "a scribbled table is noticed");
    EXPECT(news.emptied, "and reported emptied");
    EXPECT(sl_table_entries(t) == 0, "nothing survived");
    EXPECT(remaining(t, "k7", T0 + 101) == 99,
           "the next request starts afresh");
    free(region);
}

/* Keys of every length up to past a few hash words, and keys that differ
 * in one byte anywhere (the first, the last, a whole word's length in):
 * each is a budget of its own. */
static void test_key_hash(void)
{
    void *region;
    sl_table_t *t = table_new(256 * 1024, &region);
    char key[80];
    int len, at, ok = 1;

    memset(key, 'a', sizeof(key));
    for (len = 1; len < 72 && ok; len++) {
        key[len] = '\0';
        ok = remaining(t, key, T0 + len) == 99 &&
             remaining(t, key, T0 + len) == 98;
        key[len] = 'a';
    }
    EXPECT(ok, "every length its own budget (stopped at %d)", len - 1);
    key[40] = '\0';
    for (at = 0; at < 40 && ok; at++) {
        key[at] = 'b';
        ok = remaining(t, key, T0 + 100 + at) == 99;
        key[at] = 'a';
    }
    EXPECT(ok, "one byte changed anywhere, another budget (at %d)", at - 1);
    EXPECT(remaining(t, key, T0 + 200) == 97, "the key itself kept its count");
    free(region);
}

/* Two budgets of one request are decided together: either both count the
 * request or neither does. */
static void test_atomic(void)
{
    void *region;
    sl_table_t *t = table_new(64 * 1024, &region);
    sl_budget_t b[2];
    sl_decision_t d;

    b[0] = budget("short", SL_ALG_LOG, 2, HOUR);
    b[1] = budget("long", SL_ALG_GCRA, 10, HOUR);
    EXPECT(decide_n(t, b, 2, T0, &d, NULL) == APR_SUCCESS && d.admitted,
           "first");
    EXPECT(decide_n(t, b, 2, T0 + 1, &d, NULL) == APR_SUCCESS && d.admitted,
           "second");
    EXPECT(decide_n(t, b, 2, T0 + 2, &d, NULL) == APR_SUCCESS && !d.admitted &&
               !d.quota[0].ok && d.quota[1].ok,
           "the log refuses the third");
    EXPECT(d.quota[1].remaining == 8,
           "and the refusal did not count against gcra (%ld)",
           (long) d.quota[1].remaining);
    free(region);
}

/* cost= and the give-back of count=: a log of several costs spans chunks;
 * giving back the middle admission's entries leaves the others in order
 * (the oldest still decides the reset) and frees the chunks left empty;
 * counter and GCRA give back their units. */
static void test_cost_give_back(void)
{
    void *region;
    sl_table_t *t = table_new(64 * 1024, &region);
    sl_budget_t b = budget("log", SL_ALG_LOG, 30, 60 * SEC);
    apr_uint32_t free0 = sl_table_free(t);
    sl_shm_op_t *ops;
    sl_decision_t d;
    int alg;

    b.cost = 3;
    decide(t, b, T0, &d, NULL);
    b.cost = 10;
    decide(t, b, T0 + SEC, &d, NULL);
    b.cost = 4;
    decide(t, b, T0 + 2 * SEC, &d, NULL);
    EXPECT(d.admitted && d.quota[0].remaining == 13,
           "log: costs 3 + 10 + 4 of 30 leave 13: %" APR_INT64_T_FMT,
           d.quota[0].remaining);
    b.cost = 10;
    sl_table_prepare(pool, t, &b, 1, &ops);
    sl_table_give_back(t, ops, 1, T0 + SEC, T0 + 3 * SEC);
    b.cost = 1;
    decide(t, b, T0 + 3 * SEC, &d, NULL);
    EXPECT(d.admitted && d.quota[0].remaining == 22 &&
               d.quota[0].reset == 57 * SEC,
           "log: the 10 given back, the oldest still first (%" APR_INT64_T_FMT
           " left, reset %" APR_INT64_T_FMT ")",
           d.quota[0].remaining, d.quota[0].reset);
    b.cost = 3;
    sl_table_prepare(pool, t, &b, 1, &ops);
    sl_table_give_back(t, ops, 1, T0, T0 + 3 * SEC);
    b.cost = 4;
    sl_table_prepare(pool, t, &b, 1, &ops);
    sl_table_give_back(t, ops, 1, T0 + 2 * SEC, T0 + 3 * SEC);
    b.cost = 1;
    sl_table_prepare(pool, t, &b, 1, &ops);
    sl_table_give_back(t, ops, 1, T0 + 3 * SEC, T0 + 3 * SEC);
    EXPECT(sl_table_free(t) == free0 - 1,
           "log: every chunk back when all went (the entry stays)");
    /* A second give-back (late, or of a request trimmed meanwhile) finds
     * the log empty: a no-op, not a broken link that empties the table. */
    b.cost = 3;
    sl_table_prepare(pool, t, &b, 1, &ops);
    sl_table_give_back(t, ops, 1, T0, T0 + 4 * SEC);
    EXPECT(sl_table_entries(t) == 1 && sl_table_free(t) == free0 - 1,
           "log: a give-back on an empty log changes nothing (%u budgets)",
           sl_table_entries(t));

    for (alg = SL_ALG_COUNTER; alg <= SL_ALG_GCRA; alg++) {
        sl_budget_t c =
            budget(alg == SL_ALG_GCRA ? "g" : "c", alg, 10, 3600 * SEC);
        c.cost = 4;
        decide(t, c, T0, &d, NULL);
        sl_table_prepare(pool, t, &c, 1, &ops);
        sl_table_give_back(t, ops, 1, T0, T0 + 1);
        c.cost = 1;
        decide(t, c, T0 + 2, &d, NULL);
        EXPECT(d.admitted && d.quota[0].remaining == 9,
               "%s: 4 units given back (%" APR_INT64_T_FMT " left)",
               sl_algorithm_name(alg), d.quota[0].remaining);
    }
}

/* A million units on the log are one request in the table: two of them
 * take its entry and one chunk, and a refusal waits for the first to leave
 * the window. (One timestamp per unit needed 142858 chunks: refused for
 * want of room.) */
static void test_cost_million(void)
{
    void *region;
    sl_table_t *t = table_new(64 * 1024, &region);
    sl_budget_t b = budget("big", SL_ALG_LOG, 2000000, 600 * SEC);
    apr_uint32_t free0 = sl_table_free(t);
    sl_decision_t d;
    apr_int64_t left[2];
    int i;

    b.cost = 1000000;
    for (i = 0; i < 2; i++) {
        EXPECT(decide(t, b, T0 + i * SEC, &d, NULL) == APR_SUCCESS &&
                   d.admitted,
               "log: cost 1000000 admitted (%d)", i);
        left[i] = d.quota[0].remaining;
    }
    EXPECT(left[0] == 1000000 && left[1] == 0,
           "log: ... leaving 1000000, then 0");
    EXPECT(sl_table_free(t) == free0 - 2, "log: one entry and one chunk");
    b.cost = 1;
    EXPECT(decide(t, b, T0 + 2 * SEC, &d, NULL) == APR_SUCCESS && !d.admitted &&
               d.quota[0].reset == 598 * SEC,
           "log: one unit more waits for the first million (%" APR_INT64_T_FMT
           " us)",
           d.quota[0].reset);
    EXPECT(decide(t, b, T0 + 600 * SEC + 1, &d, NULL) == APR_SUCCESS &&
               d.admitted && d.quota[0].remaining == 999999,
           "log: ... and fits once it left");
}

/* One look (sl_table_peek) at one budget: the status, *d and *blocked. */
static apr_status_t peek(sl_table_t *t, sl_budget_t b, apr_time_t now,
                         sl_decision_t *d, apr_int64_t *blocked)
{
    sl_shm_op_t *ops;
    apr_status_t rv = sl_table_prepare(pool, t, &b, 1, &ops);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    d->quota = apr_pcalloc(pool, sizeof(*d->quota));
    return sl_table_peek(t, ops, 1, now, d, blocked);
}

/* The operator's look changes nothing and agrees with the decision; the
 * reset empties a budget and its block, and only that budget. */
static void test_peek_reset(void)
{
    void *region;
    sl_table_t *t = table_new(64 * 1024, &region);
    sl_budget_t lg = budget("{a}log", SL_ALG_LOG, 3, 60 * SEC);
    sl_budget_t other = budget("{b}log", SL_ALG_LOG, 3, 60 * SEC);
    sl_budget_t blk = budget("{a}blk", SL_ALG_COUNTER, 1, 10 * SEC);
    sl_decision_t d, e;
    apr_int64_t blocked = -1;
    apr_uint32_t free0;
    sl_shm_op_t *ops;
    int alg, i;

    EXPECT(peek(t, lg, T0, &d, &blocked) == APR_SUCCESS && d.admitted &&
               d.quota[0].remaining == 3 && d.quota[0].reset == 0 &&
               blocked == 0,
           "log: no state: the whole quota, no reset, no block");
    decide(t, lg, T0, &d, NULL);
    decide(t, lg, T0 + SEC, &d, NULL);
    decide(t, lg, T0 + 2 * SEC, &d, NULL);
    decide(t, other, T0, &d, NULL);
    free0 = sl_table_free(t);
    EXPECT(peek(t, lg, T0 + 3 * SEC, &d, &blocked) == APR_SUCCESS &&
               !d.admitted && !d.quota[0].ok && d.quota[0].remaining == 0 &&
               d.quota[0].reset == 57 * SEC,
           "log: exhausted, more in 57 s (%" APR_INT64_T_FMT
           " left, reset %" APR_INT64_T_FMT ")",
           d.quota[0].remaining, d.quota[0].reset);
    EXPECT(decide(t, lg, T0 + 3 * SEC, &e, NULL) == APR_SUCCESS &&
               !e.admitted && e.quota[0].reset == d.quota[0].reset,
           "log: the decision refuses with the same reset");
    /* The first time is out of the window: a look counts it out without
     * removing it (the free cells stay as they are). */
    EXPECT(peek(t, lg, T0 + 60 * SEC + 1, &d, &blocked) == APR_SUCCESS &&
               d.admitted && d.quota[0].remaining == 1 &&
               d.quota[0].reset == SEC - 1 && sl_table_free(t) == free0,
           "log: one expired, counted out in place (%" APR_INT64_T_FMT
           " left, reset %" APR_INT64_T_FMT ")",
           d.quota[0].remaining, d.quota[0].reset);
    EXPECT(peek(t, lg, T0 + 3 * SEC, &d, &blocked) == APR_SUCCESS &&
               d.quota[0].remaining == 0 && d.quota[0].reset == 57 * SEC,
           "log: ... and still there for a look at an earlier time");

    sl_table_prepare(pool, t, &lg, 1, &ops);
    sl_table_reset(t, ops, 1, T0 + 4 * SEC);
    EXPECT(peek(t, lg, T0 + 4 * SEC, &d, &blocked) == APR_SUCCESS &&
               d.quota[0].remaining == 3 && d.quota[0].reset == 0 &&
               sl_table_entries(t) == 1,
           "reset: the budget starts afresh, its entry gone");
    EXPECT(peek(t, other, T0 + 4 * SEC, &d, &blocked) == APR_SUCCESS &&
               d.quota[0].remaining == 2,
           "reset: another identity's budget is untouched");

    /* A block: shown with the time left, reset with the budget. */
    blk.block = 3600 * SEC;
    decide(t, blk, T0, &d, NULL);
    decide(t, blk, T0 + 1, &d, NULL);
    EXPECT(peek(t, blk, T0 + SEC, &d, &blocked) == APR_SUCCESS &&
               !d.quota[0].ok && blocked == 3600 * SEC - SEC + 1 &&
               d.quota[0].reset == blocked,
           "block: shown running (%" APR_INT64_T_FMT " us left)", blocked);
    sl_table_prepare(pool, t, &blk, 1, &ops);
    sl_table_reset(t, ops, 1, T0 + SEC);
    EXPECT(peek(t, blk, T0 + SEC, &d, &blocked) == APR_SUCCESS &&
               d.quota[0].ok && d.quota[0].remaining == 1 && blocked == 0 &&
               sl_table_entries(t) == 1,
           "block: reset clears the budget and its block");

    /* Counter and GCRA: a look at an exhausted budget gives what the
     * refusal gives, and changes nothing. */
    for (alg = SL_ALG_COUNTER; alg <= SL_ALG_GCRA; alg++) {
        sl_budget_t c =
            budget(alg == SL_ALG_GCRA ? "{c}g" : "{c}c", alg, 4, 60 * SEC);
        for (i = 0; i < 4; i++) {
            decide(t, c, T0 + i * SEC, &d, NULL);
        }
        peek(t, c, T0 + 5 * SEC, &d, &blocked);
        peek(t, c, T0 + 5 * SEC, &e, &blocked);
        EXPECT(!d.quota[0].ok && d.quota[0].remaining == 0 &&
                   e.quota[0].reset == d.quota[0].reset,
               "%s: exhausted, twice the same look", sl_algorithm_name(alg));
        decide(t, c, T0 + 5 * SEC, &e, NULL);
        EXPECT(!e.admitted && e.quota[0].reset == d.quota[0].reset &&
                   d.quota[0].reset > 0,
               "%s: the refusal's reset (%" APR_INT64_T_FMT
               ") is the look's (%" APR_INT64_T_FMT ")",
               sl_algorithm_name(alg), e.quota[0].reset, d.quota[0].reset);
    }
    free(region);
}

/* cost=after:'s charge (lua/sl_charge.lua): past the limit under the log
 * and the counter (the next request is refused until the window frees
 * it), to an empty bucket under gcra; a new key takes its cell. */
static void test_charge(void)
{
    void *region;
    sl_table_t *t = table_new(64 * 1024, &region);
    static const int algs[] = {SL_ALG_LOG, SL_ALG_COUNTER, SL_ALG_GCRA};
    sl_shm_op_t *ops;
    sl_decision_t d;
    size_t i;

    for (i = 0; i < sizeof(algs) / sizeof(algs[0]); i++) {
        char key[8];
        sl_budget_t b;
        snprintf(key, sizeof(key), "ch%d", algs[i]);
        b = budget(key, algs[i], 10, HOUR);
        EXPECT(decide(t, b, T0, &d, NULL) == APR_SUCCESS && d.admitted &&
                   d.quota[0].remaining == 9,
               "%s: admitted for one unit", sl_algorithm_name(algs[i]));
        b.cost = 9;
        sl_table_prepare(pool, t, &b, 1, &ops);
        EXPECT(sl_table_charge(t, ops, 1, T0 + 1) == APR_SUCCESS,
               "%s: charged 9 more", sl_algorithm_name(algs[i]));
        sl_table_prepare(pool, t, &b, 1, &ops);
        EXPECT(sl_table_charge(t, ops, 1, T0 + 2) == APR_SUCCESS,
               "%s: and 9 more, past the limit", sl_algorithm_name(algs[i]));
        b.cost = 1;
        EXPECT(decide(t, b, T0 + 3, &d, NULL) == APR_SUCCESS && !d.admitted,
               "%s: the next request is refused", sl_algorithm_name(algs[i]));
        if (algs[i] == SL_ALG_LOG) {
            /* 19 units: one more fits once the admission (T0) and the
             * first charge (T0 + 1) have left, 9 units remaining. */
            EXPECT(d.quota[0].reset == HOUR - 2,
                   "log: until the first charge leaves: %" APR_INT64_T_FMT,
                   d.quota[0].reset);
        }
        if (algs[i] == SL_ALG_GCRA) {
            /* An empty bucket: one interval (6 minutes) from the charge. */
            EXPECT(d.quota[0].reset == HOUR / 10 - 1,
                   "gcra: one interval: %" APR_INT64_T_FMT, d.quota[0].reset);
        }
    }
    /* A key the charge finds gone (its admission expired) is made. */
    {
        sl_budget_t b = budget("ch-new", SL_ALG_COUNTER, 10, HOUR);
        b.cost = 4;
        sl_table_prepare(pool, t, &b, 1, &ops);
        EXPECT(sl_table_charge(t, ops, 1, T0) == APR_SUCCESS,
               "a charge to a missing key");
        b.cost = 1;
        EXPECT(decide(t, b, T0 + 1, &d, NULL) == APR_SUCCESS && d.admitted &&
                   d.quota[0].remaining == 5,
               "... counts: 10 - 4 - 1 left: %" APR_INT64_T_FMT,
               d.quota[0].remaining);
    }
    free(region);
}

int main(void)
{
    apr_initialize();
    apr_pool_create(&pool, NULL);
    test_charge();
    test_attach();
    test_eviction_order();
    test_expired_first();
    test_full_refuses();
    test_refusing_kept();
    test_all_refusing();
    test_leases_kept();
    test_all_leased();
    test_stripe_keyed();
    test_out_of_order();
    test_corruption();
    test_key_hash();
    test_atomic();
    test_cost_give_back();
    test_cost_million();
    test_peek_reset();
    printf("sl_shm_test: %d passed, %d failed\n", passed, failed);
    apr_pool_destroy(pool);
    apr_terminate();
    return failed ? 1 : 0;
}
