/* The decision math of lua/sl_check.lua, line for line. The script's numbers
 * are doubles, so every formula below computes in doubles in the script's
 * order: rounding is part of the contract, both stores must round alike. */
/* What apr-1-config --cppflags gives the real build: apr.h needs it for
 * PATH_MAX under a strict -std=c99. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sl_algo.h"

#include <math.h>

void sl_eval_quota(const sl_eval_t *ev, int admitted, sl_quota_t *res)
{
    res->ok = ev->ok;
    res->remaining = admitted ? ev->remaining : ev->remaining0;
    res->reset = admitted ? ev->reset : ev->reset0;
}

/* Redis keeps a key PX milliseconds: the script's ceil(us / 1000) + 1. */
static apr_int64_t sl_px_deadline(apr_int64_t now, double ttl_us)
{
    return now + ((apr_int64_t) ceil(ttl_us / 1000) + 1) * 1000;
}

/* ---- sliding log ---- */

apr_int64_t sl_log_horizon(apr_int64_t now, apr_int64_t win)
{
    return now - win;
}

/* The time until the entry whose expiry lets one more request in expires,
 * for a log of c entries: the script's reset(c). */
static apr_int64_t sl_log_reset(apr_int64_t now, apr_int64_t limit,
                                apr_int64_t win, apr_int64_t c,
                                sl_log_at_fn *at, void *ctx)
{
    apr_int64_t idx;

    if (c == 0) {
        return 0;
    }
    idx = c - limit;
    if (idx < 0) {
        idx = 0;
    }
    return at(ctx, idx) + win - now;
}

void sl_log_evaluate(apr_int64_t now, apr_int64_t limit, apr_int64_t win,
                     apr_int64_t count, sl_log_at_fn *at, void *ctx,
                     sl_eval_t *ev)
{
    ev->ok = count < limit;
    if (ev->ok) {
        /* After admission the oldest entry is the first to expire, or this
         * request's own when the log was empty. reset(count + 1) reads the
         * log before the insertion, as the script's deferred write does. */
        ev->remaining = limit - count - 1;
        ev->remaining0 = ev->remaining + 1;
        ev->reset = count == 0
                        ? win
                        : sl_log_reset(now, limit, win, count + 1, at, ctx);
        ev->reset0 = sl_log_reset(now, limit, win, count, at, ctx);
        return;
    }
    ev->remaining = ev->remaining0 = 0;
    ev->reset = ev->reset0 = sl_log_reset(now, limit, win, count, at, ctx);
}

apr_int64_t sl_log_array_at(void *ctx, apr_int64_t i)
{
    return ((const sl_log_t *) ctx)->ts[i];
}

apr_int64_t sl_log_expire(sl_log_t *log, apr_int64_t now, apr_int64_t win)
{
    apr_int64_t horizon = sl_log_horizon(now, win), n = 0, i;

    while (n < log->count && log->ts[n] <= horizon) {
        n++;
    }
    for (i = n; i < log->count; i++) {
        log->ts[i - n] = log->ts[i];
    }
    log->count -= n;
    return n;
}

apr_int64_t sl_log_expires(apr_int64_t now, apr_int64_t win)
{
    return sl_px_deadline(now, (double) win);
}

apr_int64_t sl_log_apply(sl_log_t *log, apr_int64_t now, apr_int64_t win)
{
    apr_int64_t i = log->count;

    /* A sorted set: callers' clocks may hand in times slightly out of
     * order (the lock decides who goes first), so insert, not append. */
    while (i > 0 && log->ts[i - 1] > now) {
        log->ts[i] = log->ts[i - 1];
        i--;
    }
    log->ts[i] = now;
    log->count++;
    return sl_log_expires(now, win);
}

/* ---- approximated sliding window ---- */

void sl_counter_load(apr_int64_t now, apr_int64_t win,
                     const sl_counter_t *stored, sl_counter_t *st)
{
    st->idx = (apr_int64_t) floor((double) now / (double) win);
    st->cur = 0;
    st->prev = 0;
    if (stored) {
        if (stored->idx == st->idx) {
            st->cur = stored->cur;
            st->prev = stored->prev;
        }
        else if (stored->idx == st->idx - 1) {
            st->prev = stored->cur;
        }
    }
}

/* The count in the rolling window, estimated: the previous window weighted
 * by how much of it still overlaps. */
static double sl_counter_estimate(double now, double win, double idx,
                                  double cur, double prev)
{
    return prev * (win - (now - idx * win)) / win + cur;
}

/* Earliest time (microseconds from now) at which the estimate is <= x. The
 * estimate only falls while nothing is admitted, so this is exact. */
static double sl_counter_until(double now, double x, double idx, double cur,
                               double prev, double win)
{
    double start = idx * win;

    if (prev * (win - (now - start)) / win + cur <= x) {
        return 0;
    }
    /* Relative to now: absolute times near 1.8e15 us are only 0.25 us apart
     * as doubles, which could round the answer a microsecond early. */
    if (cur <= x) {
        /* Within this window: prev * (1 - f) + cur <= x. */
        return ceil((start - now) + win - win * (x - cur) / prev);
    }
    /* In the next window the current count becomes the weighted one. */
    return ceil((start - now) + 2 * win - win * x / cur);
}

static void sl_counter_rem_reset(double now, double limit, double win,
                                 double idx, double c, double prev,
                                 apr_int64_t *rem, apr_int64_t *reset)
{
    double e = sl_counter_estimate(now, win, idx, c, prev);
    double r = floor(limit - e);

    if (r < 0) {
        r = 0;
    }
    *rem = (apr_int64_t) r;
    if (r >= limit) {
        *reset = 0;
        return;
    }
    *reset = (apr_int64_t) ceil(
        sl_counter_until(now, limit - r - 1, idx, c, prev, win));
}

void sl_counter_evaluate(apr_int64_t now, apr_int64_t limit, apr_int64_t win,
                         const sl_counter_t *stored, sl_eval_t *ev)
{
    sl_counter_t st;
    double dnow = (double) now, dlim = (double) limit, dwin = (double) win;
    double idx, cur, prev;

    sl_counter_load(now, win, stored, &st);
    idx = (double) st.idx;
    cur = (double) st.cur;
    prev = (double) st.prev;
    sl_counter_rem_reset(dnow, dlim, dwin, idx, cur, prev, &ev->remaining0,
                         &ev->reset0);
    ev->ok = sl_counter_estimate(dnow, dwin, idx, cur, prev) + 1 <= dlim;
    if (ev->ok) {
        sl_counter_rem_reset(dnow, dlim, dwin, idx, cur + 1, prev,
                             &ev->remaining, &ev->reset);
    }
    else {
        ev->remaining = 0;
        ev->reset = ev->reset0;
    }
}

apr_int64_t sl_counter_apply(apr_int64_t now, apr_int64_t win, sl_counter_t *st)
{
    sl_counter_t loaded;

    sl_counter_load(now, win, st, &loaded);
    loaded.cur++;
    *st = loaded;
    /* Kept until the window after the next one starts: by then neither
     * count weighs anything. */
    return sl_px_deadline(now, (double) (loaded.idx + 2) * (double) win -
                                   (double) now);
}

/* ---- GCRA ---- */

static void sl_gcra_rem_reset(double now, double T, double tau, double tt,
                              apr_int64_t *rem, apr_int64_t *reset)
{
    /* Half a microsecond of slack absorbs the rounding of fractional
     * intervals without letting one more request through. */
    double r = floor((tau - (tt - now)) / T + 0.5 / T);

    if (r < 0) {
        r = 0;
    }
    *rem = (apr_int64_t) r;
    if (tt <= now || r * T >= tau) {
        *reset = 0;
        return;
    }
    *reset = (apr_int64_t) ceil(tt - tau + (r + 1) * T - now);
}

void sl_gcra_evaluate(apr_int64_t now, apr_int64_t limit, apr_int64_t win,
                      apr_int64_t burst, const sl_gcra_t *st, sl_eval_t *ev)
{
    double dnow = (double) now;
    double T = (double) win / (double) limit;
    double tau = (double) burst * T;
    double tat = st ? st->tat : 0;
    double new_tat;

    /* As in the script: a TAT beyond what an admission can leave (this
     * host's clock stepped back) counts as one request left, not as a full
     * bucket that a refusal, which writes nothing, would keep for ever. */
    if (tat < dnow) {
        tat = dnow;
    }
    else if (tat > dnow + tau + 1) {
        tat = dnow + tau - T;
    }
    sl_gcra_rem_reset(dnow, T, tau, tat, &ev->remaining0, &ev->reset0);
    new_tat = tat + T;
    ev->ok = new_tat - dnow <= tau + 0.5;
    if (ev->ok) {
        sl_gcra_rem_reset(dnow, T, tau, new_tat, &ev->remaining, &ev->reset);
    }
    else {
        ev->remaining = 0;
        ev->reset = ev->reset0;
    }
}

apr_int64_t sl_gcra_apply(apr_int64_t now, apr_int64_t limit, apr_int64_t win,
                          apr_int64_t burst, sl_gcra_t *st)
{
    double dnow = (double) now;
    double T = (double) win / (double) limit;
    double tau = (double) burst * T;
    double tat = st->tat;

    if (tat < dnow) {
        tat = dnow;
    }
    else if (tat > dnow + tau + 1) {
        tat = dnow + tau - T;
    }
    st->tat = tat + T;
    return sl_px_deadline(now, st->tat - dnow);
}
