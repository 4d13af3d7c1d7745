/* SPDX-License-Identifier: Apache-2.0 */
/* How far the approximated sliding window (algorithm=counter) strays from
 * the exact sliding log, on synthetic traces replayed with the same
 * timestamps through both.
 *
 * The decisions are those of src/sl_algo.c, linked in: the shm store's
 * math, which repeats lua/sl_check.lua operation for operation in doubles
 * (the Redis script cannot be replayed on synthetic time: TIME is real).
 *
 * Two measures per trace:
 *  - against the truth: each counter decision is judged by an exact log of
 *    the requests the counter itself admitted. A request the counter admits
 *    while that log already holds N entries in the rolling window is
 *    wrongly allowed (the limit is exceeded); one it refuses while the log
 *    holds fewer than N is wrongly denied.
 *  - side by side: an exact log and a counter each run on the trace with
 *    their own admissions; how many requests each admits, and on how many
 *    requests they decide differently.
 *
 *   bench/accuracy [SEED]      (make accuracy; deterministic per seed)
 */
#include "sl_algo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEC ((apr_int64_t) 1000000)
/* A realistic store time: at 1.8e15 microseconds doubles are spaced 0.25
 * apart, as in production. */
#define T0 ((apr_int64_t) 1796018400 * SEC)

/* xorshift64*: deterministic, the same on every platform. */
static apr_uint64_t sl_rng;

static double unif(void)
{
    sl_rng ^= sl_rng >> 12;
    sl_rng ^= sl_rng << 25;
    sl_rng ^= sl_rng >> 27;
    return (double) ((sl_rng * 2685821657736338717ULL) >> 11) /
           9007199254740992.0;
}

/* Exponential gap with the given mean, in microseconds (at least 1). */
static apr_int64_t expo(double mean)
{
    double u = unif();
    apr_int64_t d = (apr_int64_t) (-log(1.0 - u) * mean);
    return d < 1 ? 1 : d;
}

typedef struct {
    apr_int64_t requests;
    apr_int64_t wrong_allowed; /* counter admitted beyond N in a window */
    apr_int64_t wrong_denied;  /* counter refused with room in the window */
    apr_int64_t counter_admits;
    apr_int64_t log_admits;   /* the exact log on its own */
    apr_int64_t differ;       /* side by side: different decisions */
    apr_int64_t max_over;     /* most counter admissions in a window - N */
    apr_int64_t beyond_bound; /* admissions beyond N + N*f: must be 0 */
} sl_tally_t;

/* One key: both limiters and the truth log. */
typedef struct {
    sl_counter_t counter;
    sl_log_t truth; /* admissions of the counter, exact window */
    sl_log_t exact; /* the exact log run on its own */
} sl_key_t;

static void key_init(sl_key_t *k, apr_int64_t cap)
{
    memset(k, 0, sizeof(*k));
    k->truth.ts = malloc(sizeof(apr_int64_t) * (size_t) cap);
    k->truth.w = malloc(sizeof(apr_int64_t) * (size_t) cap);
    k->exact.ts = malloc(sizeof(apr_int64_t) * (size_t) cap);
    k->exact.w = malloc(sizeof(apr_int64_t) * (size_t) cap);
}

static void key_free(sl_key_t *k)
{
    free(k->truth.ts);
    free(k->truth.w);
    free(k->exact.ts);
    free(k->exact.w);
}

/* Capacity of the truth log: the counter may admit up to 2N per window. */
static void request(sl_key_t *k, apr_int64_t now, apr_int64_t limit,
                    apr_int64_t win, sl_tally_t *t)
{
    sl_eval_t c, e;
    int truth_room;

    t->requests++;
    sl_counter_evaluate(now, limit, win, 1, &k->counter, &c);
    sl_log_expire(&k->truth, now, win);
    truth_room = k->truth.count < limit;
    if (c.ok) {
        t->counter_admits++;
        if (!truth_room) {
            t->wrong_allowed++;
        }
        sl_counter_apply(now, win, 1, &k->counter);
        sl_log_apply(&k->truth, now, win, 1);
        if (k->truth.count - limit > t->max_over) {
            t->max_over = k->truth.count - limit;
        }
        /* The bound of docs/ALGORITHMS.md: at fraction f of its window an
         * admission leaves at most N + N*f in the rolling window. */
        {
            double f = (double) (now % win) / (double) win;
            if ((double) k->truth.count > (double) limit + (double) limit * f) {
                t->beyond_bound++;
            }
        }
    }
    else if (truth_room) {
        t->wrong_denied++;
    }

    sl_log_expire(&k->exact, now, win);
    sl_log_evaluate(now, limit, win, 1, k->exact.count, sl_log_array_at,
                    &k->exact, &e);
    if (e.ok) {
        t->log_admits++;
        sl_log_apply(&k->exact, now, win, 1);
    }
    if (e.ok != c.ok) {
        t->differ++;
    }
}

/* The traces. rate is relative to the limit (1.0: N per window on average);
 * 100 per 60 s unless named. */
typedef enum { TR_STEADY, TR_ONOFF, TR_MANY } sl_trace_kind;

typedef struct {
    const char *name;
    sl_trace_kind kind;
    double rate;
    apr_int64_t limit;
    apr_int64_t win;
    int keys;
    apr_int64_t duration;
} sl_trace_t;

static void run(const sl_trace_t *tr, sl_tally_t *t)
{
    int i;
    apr_int64_t cap = 2 * tr->limit + 2;

    memset(t, 0, sizeof(*t));
    for (i = 0; i < tr->keys; i++) {
        sl_key_t k;
        apr_int64_t now = T0 + (apr_int64_t) (unif() * (double) tr->win);
        apr_int64_t end = now + tr->duration;
        double mean = (double) tr->win / ((double) tr->limit * tr->rate);

        key_init(&k, cap);
        if (tr->kind == TR_MANY) {
            /* Popularity 1/rank (Zipf, s = 1) over the keys, scaled so the
             * tenth most popular key runs at the given rate. */
            mean = mean * (double) (i + 1) / 10.0;
        }
        if (tr->kind == TR_ONOFF) {
            /* On for 1/4 of a window on average, at 4x the rate, then
             * silent as long again on average: the mean rate is 2x the
             * given one while bursts are 4x. */
            while (now < end) {
                apr_int64_t on_end = now + expo((double) tr->win / 4);
                while (now < on_end && now < end) {
                    request(&k, now, tr->limit, tr->win, t);
                    now += expo(mean / 4);
                }
                now += expo((double) tr->win / 4);
            }
        }
        else {
            while (now < end) {
                request(&k, now, tr->limit, tr->win, t);
                now += expo(mean);
            }
        }
        key_free(&k);
    }
}

static double pct(apr_int64_t a, apr_int64_t b)
{
    return b ? 100.0 * (double) a / (double) b : 0;
}

int main(int argc, char **argv)
{
    unsigned long long seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
    static const sl_trace_t traces[] = {
        {"steady 0.5x", TR_STEADY, 0.5, 100, 60 * SEC, 50, 3600 * SEC},
        {"steady 0.9x", TR_STEADY, 0.9, 100, 60 * SEC, 50, 3600 * SEC},
        {"steady 1.0x", TR_STEADY, 1.0, 100, 60 * SEC, 50, 3600 * SEC},
        {"steady 1.1x", TR_STEADY, 1.1, 100, 60 * SEC, 50, 3600 * SEC},
        {"steady 2.0x", TR_STEADY, 2.0, 100, 60 * SEC, 50, 3600 * SEC},
        {"on/off: mean 1x, bursts 2x", TR_ONOFF, 0.5, 100, 60 * SEC, 50,
         3600 * SEC},
        {"on/off: mean 2x, bursts 4x", TR_ONOFF, 1.0, 100, 60 * SEC, 50,
         3600 * SEC},
        {"steady 1.0x, 10 per 1 s", TR_STEADY, 1.0, 10, 1 * SEC, 50,
         3600 * SEC},
        {"on/off 2x/4x, 10 per 1 s", TR_ONOFF, 1.0, 10, 1 * SEC, 50,
         3600 * SEC},
        {"10000 keys, Zipf (top 10x)", TR_MANY, 1.0, 100, 60 * SEC, 10000,
         600 * SEC},
    };
    size_t i;
    sl_tally_t sum;

    sl_rng = seed ? seed : 1;
    memset(&sum, 0, sizeof(sum));
    printf("seed %llu; counter (approximated sliding window) against the "
           "exact sliding log\n\n",
           seed);
    printf("%-28s %9s | %8s %8s %5s | %8s %8s %7s\n", "trace (rate/limit)",
           "requests", "wrong+", "wrong-", "over", "counter", "log", "differ");
    printf("%-28s %9s | %8s %8s %5s | %8s %8s %7s\n", "", "", "%", "%", "max",
           "admits", "admits", "%");
    for (i = 0; i < sizeof(traces) / sizeof(traces[0]); i++) {
        sl_tally_t t;

        run(&traces[i], &t);
        printf("%-28s %9" APR_INT64_T_FMT " | %8.4f %8.4f %5" APR_INT64_T_FMT
               " | %8" APR_INT64_T_FMT " %8" APR_INT64_T_FMT " %7.3f\n",
               traces[i].name, t.requests, pct(t.wrong_allowed, t.requests),
               pct(t.wrong_denied, t.requests), t.max_over, t.counter_admits,
               t.log_admits, pct(t.differ, t.requests));
        sum.requests += t.requests;
        sum.wrong_allowed += t.wrong_allowed;
        sum.wrong_denied += t.wrong_denied;
        sum.differ += t.differ;
        sum.beyond_bound += t.beyond_bound;
        if (t.max_over > sum.max_over) {
            sum.max_over = t.max_over;
        }
    }
    printf("%-28s %9" APR_INT64_T_FMT " | %8.4f %8.4f %5" APR_INT64_T_FMT
           " | %17s %7.3f\n",
           "all", sum.requests, pct(sum.wrong_allowed, sum.requests),
           pct(sum.wrong_denied, sum.requests), sum.max_over, "",
           pct(sum.differ, sum.requests));
    printf("\nwrong+: admitted by the counter although its own admissions "
           "already filled\n        the rolling window (the limit was "
           "exceeded)\nwrong-: refused by the counter although the rolling "
           "window had room\nover:   most counter admissions in one rolling "
           "window beyond the limit\ndiffer: an exact log run on its own "
           "decides the request differently\n");
    printf(
        "\nadmissions beyond the bound N + N*f (must be 0): %" APR_INT64_T_FMT
        "\n",
        sum.beyond_bound);
    return sum.beyond_bound ? 1 : 0;
}
