/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the decision math (src/sl_algo.c), which both stores must
 * agree on: what each algorithm admits, and the remaining/reset values the
 * script lua/sl_check.lua defines. No server, no store. */
#include "sl_algo.h"
#include "sl_limit.h"

#include <apr_general.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_expect.h"

#define SEC APR_USEC_PER_SEC
#define I64 APR_INT64_T_FMT

/* A realistic store time, so that doubles round as they do in production:
 * at 1.8e15 microseconds the spacing of doubles is 0.25. */
#define T0 ((apr_int64_t) 1796018400 * SEC)

/* Deterministic pseudo-random numbers (no libc state, same on every run). */
static apr_uint64_t sl_rng = 88172645463325252ULL;

static apr_int64_t rnd(apr_int64_t n)
{
    sl_rng ^= sl_rng << 13;
    sl_rng ^= sl_rng >> 7;
    sl_rng ^= sl_rng << 17;
    return (apr_int64_t) (sl_rng % (apr_uint64_t) n);
}

/* ---- a store of one key per algorithm, as the shm store keeps it ---- */

#define LOG_CAP 4096

typedef struct {
    int alg;
    apr_int64_t limit, win, burst, cost;
    apr_int64_t ts[LOG_CAP], w[LOG_CAP];
    sl_log_t log;
    sl_counter_t counter;
    sl_gcra_t gcra;
} key_t_;

static void key_init(key_t_ *k, int alg, apr_int64_t limit, apr_int64_t win,
                     apr_int64_t burst)
{
    memset(k, 0, sizeof(*k));
    k->alg = alg;
    k->limit = limit;
    k->win = win;
    k->burst = burst ? burst : limit;
    k->cost = 1;
    k->log.ts = k->ts;
    k->log.w = k->w;
}

/* Evaluates without changing anything but the log's expired entries,
 * which the script drops on every call too. */
static void key_eval(key_t_ *k, apr_int64_t now, sl_eval_t *ev)
{
    switch (k->alg) {
    case SL_ALG_LOG:
        sl_log_expire(&k->log, now, k->win);
        sl_log_evaluate(now, k->limit, k->win, k->cost, k->log.units,
                        sl_log_array_at, &k->log, ev);
        break;
    case SL_ALG_COUNTER:
        sl_counter_evaluate(now, k->limit, k->win, k->cost, &k->counter, ev);
        break;
    default:
        sl_gcra_evaluate(now, k->limit, k->win, k->burst, k->cost, &k->gcra,
                         ev);
        break;
    }
}

/* Would it admit at now? Leaves the state as it was (a copy is asked). */
static int key_would(const key_t_ *k, apr_int64_t now)
{
    static key_t_ copy;
    sl_eval_t ev;

    memcpy(&copy, k, sizeof(copy));
    copy.log.ts = copy.ts;
    copy.log.w = copy.w;
    key_eval(&copy, now, &ev);
    return ev.ok;
}

/* One request: evaluate, and apply when admitted. */
static int key_hit(key_t_ *k, apr_int64_t now, sl_eval_t *ev)
{
    key_eval(k, now, ev);
    if (ev->ok) {
        switch (k->alg) {
        case SL_ALG_LOG:
            sl_log_apply(&k->log, now, k->win, k->cost);
            break;
        case SL_ALG_COUNTER:
            sl_counter_apply(now, k->win, k->cost, &k->counter);
            break;
        default:
            sl_gcra_apply(now, k->limit, k->win, k->burst, k->cost, &k->gcra);
            break;
        }
    }
    return ev->ok;
}

/* ---- table-driven request sequences with exact replies ---- */

typedef struct {
    apr_int64_t at; /* microseconds after the sequence's start */
    int ok;
    apr_int64_t remaining, reset;   /* as replied when the call admits */
    apr_int64_t remaining0, reset0; /* as replied when another refuses */
} step_t;

typedef struct {
    const char *name;
    int alg;
    apr_int64_t limit, win, burst;
    apr_int64_t start; /* absolute store time of "at" 0 */
    step_t steps[16];
    int nsteps;
} seq_t;

/* Counter windows are aligned to multiples of WINDOW: W60 is the start of
 * a 60 s window. */
#define W60 ((T0 / (60 * SEC)) * 60 * SEC)

static const seq_t seqs[] = {
    {"log 3/10s",
     SL_ALG_LOG,
     3,
     10 * SEC,
     0,
     T0,
     {{0, 1, 2, 10 * SEC, 3, 0},
      {1 * SEC, 1, 1, 9 * SEC, 2, 9 * SEC},
      {2 * SEC, 1, 0, 8 * SEC, 1, 8 * SEC},
      /* full: the oldest entry's expiry is the exact retry time */
      {3 * SEC, 0, 0, 7 * SEC, 0, 7 * SEC},
      {10 * SEC - 1, 0, 0, 1, 0, 1},
      /* now - win is outside the window (ZREMRANGEBYSCORE -inf now-win) */
      {10 * SEC, 1, 0, 1 * SEC, 1, 1 * SEC},
      {10 * SEC, 0, 0, 1 * SEC, 0, 1 * SEC},
      {11 * SEC, 1, 0, 1 * SEC, 1, 1 * SEC},
      /* all expired: the whole quota again */
      {30 * SEC, 1, 2, 10 * SEC, 3, 0}},
     9},
    {"log 1/1s",
     SL_ALG_LOG,
     1,
     1 * SEC,
     0,
     T0 + 123457,
     {{0, 1, 0, 1 * SEC, 1, 0},
      {1 * SEC - 1, 0, 0, 1, 0, 1},
      {1 * SEC, 1, 0, 1 * SEC, 1, 0}},
     3},
    /* 3 at the end of a window, then at the start of the next: the
     * previous window weighs (1 - f) and nothing passes until the estimate
     * allows one, at the exact time it does. */
    {"counter 3/60s boundary",
     SL_ALG_COUNTER,
     3,
     60 * SEC,
     0,
     W60 - 1 * SEC,
     /* after the 1st: remaining 2 until the estimate <= 0, when this
      * window's count stops weighing: 61 s */
     {{0, 1, 2, 61 * SEC, 3, 0},
      /* 2 in this window: remaining back to 2 when 2 * (1 - f) <= 1,
       * 30 s into the next window */
      {0, 1, 1, 31 * SEC, 2, 61 * SEC},
      {0, 1, 0, 21 * SEC, 1, 31 * SEC},
      {0, 0, 0, 21 * SEC, 0, 21 * SEC},
      /* next window, 1 s in: 3 * 59/60 = 2.95, no room until 3 * (1 - f)
       * <= 2 at f = 1/3: 20 s into it */
      {2 * SEC, 0, 0, 19 * SEC, 0, 19 * SEC},
      {21 * SEC - 1, 0, 0, 1, 0, 1},
      /* 2 + 1 <= 3: one more, then remaining 0 until 3 * (1 - f) + 1 <= 2
       * at f = 2/3 */
      {21 * SEC, 1, 0, 20 * SEC, 1, 20 * SEC},
      {21 * SEC, 0, 0, 20 * SEC, 0, 20 * SEC}},
     8},
    {"counter 10/60s boundary",
     SL_ALG_COUNTER,
     10,
     60 * SEC,
     0,
     W60 + 1 * SEC,
     /* prev 0, cur 0 in a fresh window: remaining 9, back to 10 when the
      * next window's weight of this one reaches 0 */
     {{0, 1, 9, 119 * SEC, 10, 0}},
     1},
    /* rate 1/s, burst 10: ten at once, then one a second */
    {"gcra 10/10s",
     SL_ALG_GCRA,
     10,
     10 * SEC,
     0,
     T0,
     {{0, 1, 9, 1 * SEC, 10, 0},
      {0, 1, 8, 1 * SEC, 9, 1 * SEC},
      {0, 1, 7, 1 * SEC, 8, 1 * SEC},
      {0, 1, 6, 1 * SEC, 7, 1 * SEC},
      {0, 1, 5, 1 * SEC, 6, 1 * SEC},
      {0, 1, 4, 1 * SEC, 5, 1 * SEC},
      {0, 1, 3, 1 * SEC, 4, 1 * SEC},
      {0, 1, 2, 1 * SEC, 3, 1 * SEC},
      {0, 1, 1, 1 * SEC, 2, 1 * SEC},
      {0, 1, 0, 1 * SEC, 1, 1 * SEC},
      {0, 0, 0, 1 * SEC, 0, 1 * SEC},
      {1 * SEC - 1, 0, 0, 1, 0, 1},
      {1 * SEC, 1, 0, 1 * SEC, 1, 1 * SEC},
      {1 * SEC, 0, 0, 1 * SEC, 0, 1 * SEC},
      /* idle for the whole window: full burst again */
      {30 * SEC, 1, 9, 1 * SEC, 10, 0}},
     15},
    /* A fractional interval (333333.67 us): the half microsecond of slack
     * keeps remaining from losing one to rounding (values from the script
     * itself, run in Redis). */
    {"gcra 3/1.000001s",
     SL_ALG_GCRA,
     3,
     1000001,
     0,
     T0,
     {{0, 1, 2, 333334, 3, 0},
      {0, 1, 1, 333334, 2, 333334},
      {0, 1, 0, 333334, 1, 333334},
      {0, 0, 0, 333334, 0, 333334},
      {333333, 0, 0, 1, 0, 1},
      {333334, 1, 0, 333334, 1, 333334}},
     6},
    /* Retry times that are no whole number of microseconds: rounded up
     * (values from the script itself, run in Redis). */
    {"counter 7/60s",
     SL_ALG_COUNTER,
     7,
     60 * SEC,
     0,
     W60 - 1 * SEC,
     {{0, 1, 6, 61 * SEC, 7, 0},
      {0, 1, 5, 31 * SEC, 6, 61 * SEC},
      {0, 1, 4, 21 * SEC, 5, 31 * SEC},
      {0, 1, 3, 16 * SEC, 4, 21 * SEC},
      {0, 1, 2, 13 * SEC, 3, 16 * SEC},
      {0, 1, 1, 11 * SEC, 2, 13 * SEC},
      {0, 1, 0, 9571429, 1, 11 * SEC},
      {0, 0, 0, 9571429, 0, 9571429},
      {2 * SEC, 0, 0, 7571429, 0, 7571429},
      {9571428, 0, 0, 1, 0, 1},
      {9571429, 1, 0, 8571429, 1, 8571429}},
     11},
    /* burst 2 at rate 5/s: two at once, then one per 200 ms */
    {"gcra 5/1s burst=2",
     SL_ALG_GCRA,
     5,
     1 * SEC,
     2,
     T0,
     {{0, 1, 1, 200000, 2, 0},
      {0, 1, 0, 200000, 1, 200000},
      {0, 0, 0, 200000, 0, 200000},
      {199999, 0, 0, 1, 0, 1},
      {200000, 1, 0, 200000, 1, 200000},
      {400000, 1, 0, 200000, 1, 200000},
      {400001, 0, 0, 199999, 0, 199999}},
     7},
};

static void test_sequences(void)
{
    size_t s;
    int i;

    for (s = 0; s < sizeof(seqs) / sizeof(seqs[0]); s++) {
        static key_t_ k;
        const seq_t *q = &seqs[s];

        key_init(&k, q->alg, q->limit, q->win, q->burst);
        for (i = 0; i < q->nsteps; i++) {
            const step_t *st = &q->steps[i];
            sl_eval_t ev;
            sl_quota_t a, r;

            key_hit(&k, q->start + st->at, &ev);
            sl_eval_quota(&ev, 1, &a);
            sl_eval_quota(&ev, 0, &r);
            EXPECT(ev.ok == st->ok && a.remaining == st->remaining &&
                       a.reset == st->reset && r.remaining == st->remaining0 &&
                       r.reset == st->reset0 && a.ok == ev.ok && r.ok == ev.ok,
                   "%s step %d: got ok=%d r=%" I64 " rs=%" I64 " r0=%" I64
                   " rs0=%" I64 ", want ok=%d r=%" I64 " rs=%" I64 " r0=%" I64
                   " rs0=%" I64,
                   q->name, i, ev.ok, ev.remaining, ev.reset, ev.remaining0,
                   ev.reset0, st->ok, st->remaining, st->reset, st->remaining0,
                   st->reset0);
        }
    }
}

/* ---- log: never more than N in any rolling window, retry exact ---- */

static void test_log_rolling(void)
{
    static const struct {
        apr_int64_t limit, win, maxgap;
    } t[] = {{5, 10 * SEC, 2 * SEC},
             {100, 60 * SEC, 700000},
             {1, 1 * SEC, 1500000},
             {7, 999, 300}};
    size_t c;

    for (c = 0; c < sizeof(t) / sizeof(t[0]); c++) {
        static key_t_ k;
        static apr_int64_t adm[20000];
        int nadm = 0, i, j, worst = 0, burst = 0, retry_bad = 0, denied = 0;
        int rem_bad = 0;
        apr_int64_t now = T0 + rnd(SEC);

        key_init(&k, SL_ALG_LOG, t[c].limit, t[c].win, 0);
        /* A burst of N + 1 at one instant: exactly N pass. */
        for (i = 0; i <= t[c].limit; i++) {
            sl_eval_t ev;
            burst += key_hit(&k, now, &ev);
        }
        EXPECT(burst == t[c].limit, "log %" I64 ": burst admitted %d",
               t[c].limit, burst);
        for (i = 0; i < burst; i++) {
            adm[nadm++] = now;
        }
        for (i = 0; i < 5000; i++) {
            sl_eval_t ev;
            now += rnd(t[c].maxgap) + (rnd(4) == 0 ? 0 : 1);
            if (key_hit(&k, now, &ev)) {
                adm[nadm++] = now;
                /* remaining: what the window holds besides */
                if (ev.remaining != t[c].limit - k.log.units) {
                    rem_bad++;
                }
            }
            else {
                denied++;
                if (key_would(&k, now + ev.reset - 1) ||
                    !key_would(&k, now + ev.reset)) {
                    retry_bad++;
                }
            }
        }
        for (i = 0; i < nadm; i++) {
            int in = 0;
            for (j = i; j >= 0 && adm[j] > adm[i] - t[c].win; j--) {
                in++;
            }
            if (in > worst) {
                worst = in;
            }
        }
        EXPECT(worst == t[c].limit,
               "log %" I64 "/%" I64 ": %d in one rolling window", t[c].limit,
               t[c].win, worst);
        EXPECT(denied > 0 && retry_bad == 0,
               "log %" I64 ": %d of %d retries not exact", t[c].limit,
               retry_bad, denied);
        EXPECT(rem_bad == 0, "log %" I64 ": %d wrong remaining", t[c].limit,
               rem_bad);
    }
}

static void test_log_order(void)
{
    apr_int64_t ts[8], w[8];
    sl_log_t log = {ts, w, 0, 0};
    apr_int64_t in[] = {100, 300, 200, 300, 50, 400},
                want[] = {50, 100, 200, 300, 300, 400};
    size_t i;
    int sorted = 1;

    /* Times from children whose turn at the lock came late. */
    for (i = 0; i < 6; i++) {
        sl_log_apply(&log, in[i], 1000, 1);
    }
    for (i = 0; i < 6; i++) {
        sorted = sorted && ts[i] == want[i];
    }
    EXPECT(log.count == 6 && sorted, "out-of-order times are kept sorted");
    EXPECT(sl_log_expire(&log, 350, 250) == 2 && log.count == 4 && ts[0] == 200,
           "entries at or before now - win are dropped");
}

/* ---- counter ---- */

/* N at the very end of a window, then a burst at the start of the next:
 * a fixed window would pass 2N, the estimate passes N plus what the
 * elapsed part of the new window allows (N * d / WINDOW). */
static void test_counter_boundary(void)
{
    static const struct {
        apr_int64_t limit, win, spread;
    } t[] = {{10, 60 * SEC, 1 * SEC},
             {100, 60 * SEC, 6 * SEC},
             {1000, 1 * SEC, 10000},
             {3, 10 * SEC, 100000}};
    size_t c;

    for (c = 0; c < sizeof(t) / sizeof(t[0]); c++) {
        static key_t_ k;
        apr_int64_t start = (T0 / t[c].win + 1) * t[c].win, now;
        apr_int64_t bound = t[c].limit + t[c].limit * t[c].spread / t[c].win;
        int first = 0, second = 0, i;
        sl_eval_t ev;

        key_init(&k, SL_ALG_COUNTER, t[c].limit, t[c].win, 0);
        for (i = 0; i < 2 * t[c].limit; i++) {
            first += key_hit(&k, start - 1, &ev);
        }
        EXPECT(first == t[c].limit, "counter %" I64 ": %d at the end",
               t[c].limit, first);
        for (now = start; now <= start + t[c].spread;
             now += t[c].spread / 50 ? t[c].spread / 50 : 1) {
            for (i = 0; i < t[c].limit; i++) {
                second += key_hit(&k, now, &ev);
            }
        }
        EXPECT(first + second <= bound && first + second >= t[c].limit,
               "counter %" I64 "/%" I64 ": %d + %d in one rolling window "
               "(bound %" I64 ")",
               t[c].limit, t[c].win, first, second, bound);
    }
}

/* Retry-After comes from this: the first time the estimate allows one
 * more, never earlier. Drawn at a small store time, where doubles are
 * exact enough for the script's formula to be exact, and at a realistic
 * one (base T0). */
static void test_counter_retry(apr_int64_t base)
{
    int i, denied = 0, late = 0, early = 0, one_us = 0, rem_bad = 0;

    for (i = 0; i < 100000; i++) {
        static key_t_ k;
        apr_int64_t win = (1 + rnd(3600)) * SEC + (rnd(2) ? rnd(SEC) : 0);
        apr_int64_t limit = 1 + rnd(200);
        apr_int64_t now = base + win + rnd((apr_int64_t) 100 * 86400 * SEC);
        sl_eval_t ev;

        key_init(&k, SL_ALG_COUNTER, limit, win, 0);
        k.cost = rnd(2) ? 1 : 1 + rnd(limit);
        k.counter.idx = now / win - rnd(2);
        k.counter.cur = rnd(limit + 1);
        k.counter.prev = rnd(2 * limit + 1);
        key_eval(&k, now, &ev);
        if (ev.ok) {
            /* remaining is what the estimate leaves after this one */
            sl_counter_t st = k.counter;
            sl_eval_t after;
            sl_counter_apply(now, win, k.cost, &st);
            sl_counter_evaluate(now, limit, win, 1, &st, &after);
            if (after.remaining0 != ev.remaining) {
                rem_bad++;
            }
            continue;
        }
        denied++;
        if (!key_would(&k, now + ev.reset)) {
            /* at most 1 us: see below */
            if (key_would(&k, now + ev.reset + 1)) {
                one_us++;
            }
            else {
                early++;
            }
        }
        if (ev.reset > 0 && key_would(&k, now + ev.reset - 1)) {
            late++;
        }
    }
    EXPECT(denied > 10000, "enough refusals drawn: %d", denied);
    EXPECT(late == 0, "counter retry later than needed in %d of %d", late,
           denied);
    EXPECT(early == 0, "counter retry early by more than 1 us in %d of %d",
           early, denied);
    EXPECT(rem_bad == 0, "counter remaining wrong in %d", rem_bad);
    /* The reset is computed relative to now, so even at realistic times
     * (1.8e15 us, where doubles are 0.25 us apart) it is never early. */
    EXPECT(one_us == 0, "counter retry 1 us early in %d of %d", one_us, denied);
}

/* ---- gcra ---- */

/* Steady demand: burst at once, then one per WINDOW / REQUESTS. */
static void test_gcra_rate(void)
{
    static const struct {
        apr_int64_t limit, win, burst, gap, span;
    } t[] = {{10, 10 * SEC, 0, 1000, 60 * SEC},
             {3, 1 * SEC, 0, 1000, 20 * SEC},
             {7, 1000003, 2, 97, 5 * SEC},
             {100, 60 * SEC, 1, 10000, 120 * SEC}};
    size_t c;

    for (c = 0; c < sizeof(t) / sizeof(t[0]); c++) {
        static key_t_ k;
        apr_int64_t burst = t[c].burst ? t[c].burst : t[c].limit, now;
        apr_int64_t at0 = 0, n = 0, want;
        double T = (double) t[c].win / (double) t[c].limit;
        int i, spacing_bad = 0;
        apr_int64_t last = 0;
        sl_eval_t ev;

        key_init(&k, SL_ALG_GCRA, t[c].limit, t[c].win, t[c].burst);
        for (i = 0; i < 2 * burst + 2; i++) {
            at0 += key_hit(&k, T0, &ev);
        }
        EXPECT(at0 == burst, "gcra %" I64 " burst %" I64 ": %" I64 " at once",
               t[c].limit, burst, at0);
        for (now = T0 + t[c].gap; now <= T0 + t[c].span; now += t[c].gap) {
            if (key_hit(&k, now, &ev)) {
                if (n > 0 && (double) (now - last) < T - t[c].gap - 1) {
                    spacing_bad++;
                }
                last = now;
                n++;
            }
        }
        /* one per interval: floor(span / T), give or take the sampling */
        want = (apr_int64_t) ((double) t[c].span / T);
        EXPECT(n >= want - 1 && n <= want + 1,
               "gcra %" I64 "/%" I64 ": %" I64 " after the burst, want %" I64,
               t[c].limit, t[c].win, n, want);
        EXPECT(spacing_bad == 0, "gcra %" I64 ": %d admissions too close",
               t[c].limit, spacing_bad);
    }
}

static void test_gcra_retry(void)
{
    int i, denied = 0, early = 0, late = 0, rem_bad = 0;

    for (i = 0; i < 100000; i++) {
        static key_t_ k;
        apr_int64_t win = (1 + rnd(3600)) * SEC + (rnd(2) ? rnd(SEC) : 0);
        apr_int64_t limit = 1 + rnd(200);
        apr_int64_t burst = 1 + rnd(2 * limit);
        apr_int64_t now = T0 + rnd((apr_int64_t) 100 * 86400 * SEC);
        sl_eval_t ev;

        key_init(&k, SL_ALG_GCRA, limit, win, burst);
        k.cost = rnd(2) ? 1 : 1 + rnd(burst);
        /* Up to the most an admission can leave (now + tau); beyond it the
         * state is capped (see test_gcra_cap). */
        k.gcra.tat =
            (double) now + ((double) rnd(1 << 30) / (1 << 30) * 1.1 - 0.1) *
                               ((double) win * (double) burst / (double) limit);
        key_eval(&k, now, &ev);
        if (ev.ok) {
            sl_gcra_t st = k.gcra;
            sl_eval_t after;
            sl_gcra_apply(now, limit, win, burst, k.cost, &st);
            sl_gcra_evaluate(now, limit, win, burst, 1, &st, &after);
            if (after.remaining0 != ev.remaining) {
                rem_bad++;
            }
            continue;
        }
        denied++;
        if (!key_would(&k, now + ev.reset)) {
            early++;
        }
        /* The script's reset leaves out the half microsecond of slack, so
         * it may be 1 us later than needed, never more. */
        if (key_would(&k, now + ev.reset - 2)) {
            late++;
        }
    }
    EXPECT(denied > 3000, "enough refusals drawn: %d", denied);
    EXPECT(early == 0, "gcra retry too early in %d of %d", early, denied);
    EXPECT(late == 0, "gcra retry late by more than 1 us in %d of %d", late,
           denied);
    EXPECT(rem_bad == 0, "gcra remaining wrong in %d", rem_bad);
}

/* A TAT beyond now + tau (the clock stepped back) counts as one request
 * left: admitted once, then the bucket is full (and written), so the key is
 * never refused for as long as the clock jumped. */
static void test_gcra_cap(void)
{
    sl_gcra_t st;
    sl_eval_t ev;
    apr_int64_t now = T0 + 1000 * SEC;

    st.tat = (double) now + 3600.0 * SEC;
    sl_gcra_evaluate(now, 10, 10 * SEC, 10, 1, &st, &ev);
    EXPECT(ev.ok && ev.remaining == 0 && ev.reset == SEC,
           "a far TAT leaves one request: ok %d, %" I64 " left, reset %" I64,
           ev.ok, ev.remaining, ev.reset);
    sl_gcra_apply(now, 10, 10 * SEC, 10, 1, &st);
    EXPECT(st.tat == (double) now + 10.0 * SEC, "... and is written capped");
    sl_gcra_evaluate(now + SEC / 2, 10, 10 * SEC, 10, 1, &st, &ev);
    EXPECT(!ev.ok, "then refused until one interval passed");
    sl_gcra_evaluate(now + SEC, 10, 10 * SEC, 10, 1, &st, &ev);
    EXPECT(ev.ok, "and admitted after it");
}

/* ---- cost, give-back, blocks ---- */

/* cost=3 on a limit of 10: three requests pass, the fourth is refused with
 * the wait until it fits, whatever the algorithm. */
static void test_cost(void)
{
    static key_t_ k;
    sl_eval_t ev_unused;
    int alg, i;

    for (alg = SL_ALG_LOG; alg <= SL_ALG_GCRA; alg++) {
        apr_int64_t now = W60 + SEC;
        sl_eval_t ev;
        int admitted = 0;

        key_init(&k, alg, 10, 10 * SEC, 0);
        k.cost = 3;
        for (i = 0; i < 4; i++) {
            if (key_hit(&k, now + i * 1000, &ev)) {
                admitted++;
                EXPECT(ev.remaining == 10 - 3 * admitted,
                       "%s cost 3: %" I64 " left after %d",
                       sl_algorithm_name(alg), ev.remaining, admitted);
            }
        }
        EXPECT(admitted == 3, "%s cost 3 of 10: %d admitted",
               sl_algorithm_name(alg), admitted);
        EXPECT(!ev.ok && ev.reset > 0 &&
                   !key_would(&k, now + 3000 + ev.reset - 2) &&
                   key_would(&k, now + 3000 + ev.reset),
               "%s cost 3: refused until exactly %" I64 " us later",
               sl_algorithm_name(alg), ev.reset);
    }
    /* The log: the fourth fits once two entries expired, the second of
     * the three written at 0. */
    key_init(&k, SL_ALG_LOG, 10, 10 * SEC, 0);
    k.cost = 3;
    key_hit(&k, T0, &ev_unused);
    key_hit(&k, T0 + SEC, &ev_unused);
    key_hit(&k, T0 + 2 * SEC, &ev_unused);
    key_eval(&k, T0 + 3 * SEC, &ev_unused);
    EXPECT(!ev_unused.ok && ev_unused.reset == 7 * SEC,
           "log cost 3: the entry at count + cost - limit - 1 decides (%" I64
           ")",
           ev_unused.reset);
}

/* Random logs and costs: a refusal's reset is the exact time it fits. */
static void test_log_cost_retry(void)
{
    int i, j, denied = 0, early = 0, late = 0;

    for (i = 0; i < 20000; i++) {
        static key_t_ k;
        apr_int64_t win = (1 + rnd(60)) * SEC;
        apr_int64_t limit = 1 + rnd(50);
        apr_int64_t now = T0 + rnd(86400 * SEC);
        apr_int64_t n = rnd(limit + 1);
        sl_eval_t ev;

        key_init(&k, SL_ALG_LOG, limit, win, 0);
        /* Requests of 1 to 4 units. */
        for (j = 0; j < n; j++) {
            apr_int64_t w = 1 + rnd(4);
            if (k.log.units + w <= limit) {
                sl_log_apply(&k.log, now - rnd(win), win, w);
            }
        }
        k.cost = 1 + rnd(limit);
        key_eval(&k, now, &ev);
        if (ev.ok) {
            continue;
        }
        denied++;
        if (!key_would(&k, now + ev.reset)) {
            early++;
        }
        if (key_would(&k, now + ev.reset - 1)) {
            late++;
        }
    }
    EXPECT(denied > 2000, "enough refusals drawn: %d", denied);
    EXPECT(early == 0 && late == 0, "log cost retry: %d early, %d late of %d",
           early, late, denied);
}

/* A refusal's wait reads at most SL_LOG_WALK entries: 2000 requests of one
 * unit 1 ms apart on a limit of 3000. A wait that passes fewer is exact
 * (the entry that covers the unit); one that passes more is the newest
 * entry's expiry, when everything has left: later, never earlier. */
static void test_log_walk(void)
{
    static key_t_ k;
    apr_int64_t now = T0, win = 3600 * SEC, at;
    sl_eval_t ev;
    int j;

    key_init(&k, SL_ALG_LOG, 3000, win, 0);
    for (j = 0; j < 2000; j++) {
        sl_log_apply(&k.log, now + j * 1000, win, 1);
    }
    at = now + 2000 * 1000;
    k.cost = 2000; /* unit 999: the 1000th entry */
    key_eval(&k, at, &ev);
    EXPECT(!ev.ok && ev.reset == now + 999 * 1000 + win - at,
           "log: a wait through 1000 entries is exact (%" I64 ")", ev.reset);
    k.cost = 2024; /* unit 1023: the last entry read */
    key_eval(&k, at, &ev);
    EXPECT(!ev.ok && ev.reset == now + 1023 * 1000 + win - at,
           "log: ... through 1024 too (%" I64 ")", ev.reset);
    k.cost = 2025; /* unit 1024: past the walk */
    key_eval(&k, at, &ev);
    EXPECT(!ev.ok && ev.reset == now + 1999 * 1000 + win - at,
           "log: past 1024 entries the newest one's expiry (%" I64 ")",
           ev.reset);
}

/* The give-back undoes the reservation: after reserve + give-back every
 * algorithm answers as if the request had never come. */
static void test_give_back(void)
{
    static key_t_ k, before;
    sl_eval_t a, b;
    apr_int64_t now = W60 + 59 * SEC;
    apr_int64_t w = 60 * SEC;
    int alg;

    for (alg = SL_ALG_LOG; alg <= SL_ALG_GCRA; alg++) {
        key_init(&k, alg, 10, w, 0);
        k.cost = 2;
        key_hit(&k, now - 10 * SEC, &a);
        memcpy(&before, &k, sizeof(k));
        before.log.ts = before.ts;
        before.log.w = before.w;
        key_hit(&k, now, &a);
        switch (alg) {
        case SL_ALG_LOG:
            EXPECT(sl_log_give_back(&k.log, now, 2) == 2 && k.log.count == 1,
                   "log: the entry of 2 units back");
            break;
        case SL_ALG_COUNTER:
            EXPECT(sl_counter_give_back(now, w, now, 2, &k.counter) == 2,
                   "counter: 2 units back");
            break;
        default:
            EXPECT(sl_gcra_give_back(now, 10, w, now, 2, &k.gcra) == 2,
                   "gcra: 2 units back");
            break;
        }
        key_eval(&k, now + 1, &a);
        key_eval(&before, now + 1, &b);
        EXPECT(a.ok == b.ok && a.remaining == b.remaining &&
                   a.reset == b.reset && a.remaining0 == b.remaining0 &&
                   a.reset0 == b.reset0,
               "%s: after the give-back as before the request (%" I64 "/%" I64
               " left)",
               sl_algorithm_name(alg), a.remaining, b.remaining);
    }

    /* Counter at a window boundary: reserved in window idx, given back in
     * idx + 1, where it is the previous count. */
    key_init(&k, SL_ALG_COUNTER, 10, w, 0);
    key_hit(&k, now, &a);
    key_hit(&k, now, &a);
    key_hit(&k, now + 2 * SEC, &a); /* the next window: prev 2, cur 1 */
    EXPECT(k.counter.prev == 2 && k.counter.cur == 1, "counter moved on");
    EXPECT(sl_counter_give_back(now + 2 * SEC, w, now, 1, &k.counter) == 1 &&
               k.counter.prev == 1 && k.counter.cur == 1,
           "counter: the give-back goes to the window it was reserved in");
    EXPECT(sl_counter_give_back(now + 2 * SEC, w, now + 2 * SEC, 5,
                                &k.counter) == 1 &&
               k.counter.cur == 0,
           "counter: never below zero");
    EXPECT(sl_counter_give_back(now + 2 * w, w, now, 1, &k.counter) == 0,
           "counter: nothing once the window weighs nothing");

    /* GCRA: never below now. */
    {
        sl_gcra_t g = {(double) now + 1.5 * SEC};
        EXPECT(sl_gcra_give_back(now, 10, 10 * SEC, now, 3, &g) == 2 &&
                   g.tat == (double) now,
               "gcra: the TAT goes back, never below now (1.5 units, "
               "rounded up)");
        EXPECT(sl_gcra_give_back(now, 10, 10 * SEC, now, 1, &g) == 0,
               "gcra: nothing to give back from an empty bucket");
    }
    /* GCRA at 1 per second: a and b, 2 units each, admitted at now into an
     * empty bucket (TAT now + 4 s). 1.5 s later a's charge has 0.5 s left
     * (b's is whole): only that goes back. After 2.5 s nothing is left of
     * a's: nothing goes back, b keeps its charge. */
    {
        sl_gcra_t g = {0};
        sl_gcra_apply(now, 10, 10 * SEC, 10, 2, &g);
        sl_gcra_apply(now, 10, 10 * SEC, 10, 2, &g);
        EXPECT(sl_gcra_give_back(now + 1500000, 10, 10 * SEC, now, 2, &g) ==
                       1 &&
                   g.tat == (double) now + 3.5 * SEC,
               "gcra: a give-back returns only what is still charged (TAT "
               "now + %.6f s)",
               (g.tat - (double) now) / SEC);
        g.tat = (double) now + 4 * SEC;
        EXPECT(sl_gcra_give_back(now + 2500000, 10, 10 * SEC, now, 2, &g) ==
                       0 &&
                   g.tat == (double) now + 4 * SEC,
               "gcra: nothing once the charge has decayed; later charges "
               "stay");
    }
    /* Log: only the entry of that time and weight. */
    {
        apr_int64_t ts[8] = {100, 200, 200, 300}, w[8] = {1, 2, 3, 1};
        sl_log_t log = {ts, w, 4, 7};
        EXPECT(sl_log_give_back(&log, 200, 3) == 3 && log.count == 3 &&
                   log.units == 4 && ts[1] == 200 && w[1] == 2 && ts[2] == 300,
               "log: only the admission's entry goes");
        EXPECT(sl_log_give_back(&log, 200, 5) == 0 && log.count == 3,
               "log: none of another weight");
        EXPECT(sl_log_give_back(&log, 250, 1) == 0 && log.count == 3,
               "log: none at another time");
    }
}

/* count=401 5: 50 concurrent requests reserve at the decision (5 pass the
 * limit, the others are refused); those whose status does not count give
 * back, so successes never use up the failures' budget. */
static void test_reservation(void)
{
    static key_t_ k;
    int alg, i;

    for (alg = SL_ALG_LOG; alg <= SL_ALG_GCRA; alg++) {
        apr_int64_t now = W60 + SEC;
        sl_eval_t ev;
        int passed = 0, more = 0;

        key_init(&k, alg, 5, 60 * SEC, 0);
        for (i = 0; i < 50; i++) {
            passed += key_hit(&k, now, &ev);
        }
        EXPECT(passed == 5, "%s: 50 at once, %d reserved",
               sl_algorithm_name(alg), passed);
        /* Successes give back: they did not count. */
        for (i = 0; i < 5; i++) {
            switch (alg) {
            case SL_ALG_LOG:
                sl_log_give_back(&k.log, now, 1);
                break;
            case SL_ALG_COUNTER:
                sl_counter_give_back(now + 1, 60 * SEC, now, 1, &k.counter);
                break;
            default:
                /* At once: nothing of the charge decayed (1 us later,
                 * 1 us of it is kept: sl_gcra_give_back). */
                sl_gcra_give_back(now, 5, 60 * SEC, now, 1, &k.gcra);
                break;
            }
        }
        for (i = 0; i < 50; i++) {
            more += key_hit(&k, now + 2, &ev);
        }
        EXPECT(more == 5, "%s: the budget is whole again (%d)",
               sl_algorithm_name(alg), more);
    }
}

static void test_block(void)
{
    sl_eval_t ev = {0, 0, 3 * SEC, 0, 3 * SEC};
    apr_int64_t until;

    until = sl_block_begin(T0, 60 * SEC, &ev);
    EXPECT(until == T0 + 60 * SEC && ev.reset == 60 * SEC &&
               ev.reset0 == 60 * SEC,
           "a refusal starts the block: reset is its end");
    EXPECT(sl_block_expires(T0, 60 * SEC) == T0 + 60 * SEC + 1000,
           "the block entry lives until the block ends");
    ev.reset = ev.reset0 = 90 * SEC;
    sl_block_begin(T0, 60 * SEC, &ev);
    EXPECT(ev.reset == 90 * SEC, "a longer wait of the limit itself stays");
    memset(&ev, 0, sizeof(ev));
    ev.ok = 1;
    EXPECT(sl_block_active(T0 + 10 * SEC, 60 * SEC, until, &ev) && !ev.ok &&
               ev.remaining == 0 && ev.reset == 50 * SEC &&
               ev.reset0 == 50 * SEC,
           "during the block: refused, reset the block's end");
    EXPECT(!sl_block_active(until, 60 * SEC, until, &ev),
           "at its end the block is over");
    EXPECT(sl_block_active(T0, 60 * SEC, T0 + 3600 * SEC, &ev) &&
               ev.reset == 60 * SEC,
           "an end beyond one block (clock stepped back) ends one block "
           "from now");
}

/* ---- keys' lifetimes (the script's PEXPIRE / PX) ---- */

static void test_expiry(void)
{
    sl_counter_t c = {0, 0, 0};
    sl_gcra_t g = {0};
    apr_int64_t e, now = W60 + 15 * SEC + 1;

    EXPECT(sl_log_expires(T0, 10 * SEC) == T0 + 10 * SEC + 1000,
           "log key: ceil(win / 1ms) + 1 ms");
    EXPECT(sl_log_expires(T0, 1500) == T0 + 3000, "log key: rounded up");
    e = sl_counter_apply(now, 60 * SEC, 1, &c);
    /* (idx + 2) * win - now = 105 s - 1 us, rounded up to ms, + 1 ms */
    EXPECT(e == now + 105 * SEC + 1000 - 0 && c.cur == 1 && c.prev == 0 &&
               c.idx == W60 / (60 * SEC),
           "counter key lives until its window no longer weighs: %" I64,
           e - now);
    e = sl_gcra_apply(T0, 4, 10 * SEC, 4, 1, &g);
    EXPECT(g.tat == (double) T0 + 2500000 && e == T0 + 2500000 + 1000,
           "gcra key lives until its TAT");
    /* An expired state counts as no state. */
    c.idx -= 2;
    c.cur = 1000;
    {
        sl_eval_t ev;
        sl_counter_evaluate(now + 60 * SEC, 5, 60 * SEC, 1, &c, &ev);
        EXPECT(ev.ok && ev.remaining0 == 5 && ev.reset0 == 0,
               "a counter two windows old weighs nothing");
    }
}

/* cost=after:'s charge (lua/sl_charge.lua): past the limit for the
 * counter, to an empty bucket at most for gcra. */
static void test_charge(void)
{
    apr_int64_t now = T0 + 1000, w = 10 * SEC, exp;
    sl_counter_t c = {0, 0, 0};
    sl_gcra_t g = {0};
    sl_eval_t ev;

    exp = sl_counter_apply(now, w, 1, &c);
    exp = sl_counter_charge(now + 1, w, 14, &c);
    EXPECT(c.cur == 15 && c.idx == now / w && exp > now,
           "counter: the charge goes past the limit (15 on 10): %" I64, c.cur);
    sl_counter_evaluate(now + 2, 10, w, 1, &c, &ev);
    EXPECT(!ev.ok, "counter: an overdrawn window refuses");
    sl_counter_charge(now + w, w, 3, &c);
    EXPECT(c.cur == 3 && c.prev == 15,
           "counter: a charge in the next window is that window's");
    c.cur = SL_COUNTER_MAX - 2;
    sl_counter_charge(now + w, w, 5, &c);
    EXPECT(c.cur == SL_COUNTER_MAX, "counter: kept within nine digits");

    /* GCRA at 1 per second, burst 10. */
    EXPECT(sl_gcra_apply(now, 10, w, 10, 1, &g) > now &&
               g.tat == (double) now + SEC,
           "gcra: one admission");
    exp = sl_gcra_charge(now, 10, w, 10, 4, &g);
    EXPECT(g.tat == (double) now + 5 * SEC && exp > now,
           "gcra: the charge moves the TAT by its intervals");
    sl_gcra_charge(now, 10, w, 10, 50, &g);
    EXPECT(g.tat == (double) now + 10 * SEC,
           "gcra: at most to an empty bucket (now + tau)");
    EXPECT(sl_gcra_charge(now, 10, w, 10, 1, &g) == 0 &&
               g.tat == (double) now + 10 * SEC,
           "gcra: nothing more to charge on an empty bucket");
    sl_gcra_evaluate(now, 10, w, 10, 1, &g, &ev);
    EXPECT(!ev.ok && ev.reset == SEC,
           "gcra: the next request waits one interval: %" I64, ev.reset);
    g.tat = 0;
    sl_gcra_charge(now, 10, w, 10, 2, &g);
    EXPECT(g.tat == (double) now + 2 * SEC,
           "gcra: no state reads as now, as a missing key");
}

int main(void)
{
    apr_initialize();
    test_charge();
    test_sequences();
    test_log_rolling();
    test_log_order();
    test_counter_boundary();
    test_counter_retry(0);
    test_counter_retry(T0);
    test_gcra_rate();
    test_gcra_retry();
    test_gcra_cap();
    test_expiry();
    test_cost();
    test_log_cost_retry();
    test_log_walk();
    test_give_back();
    test_reservation();
    test_block();
    apr_terminate();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
