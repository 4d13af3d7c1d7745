/* SPDX-License-Identifier: Apache-2.0 */
/* The decision math of lua/sl_check.lua, line for line. The script's numbers
 * are doubles, so every formula below computes in doubles in the script's
 * order: rounding is part of the contract, both stores must round alike. */
/* What apr-1-config --cppflags gives the real build: apr.h needs it for
 * PATH_MAX under a strict -std=c99. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sl_algo.h"

#include "sl_limit.h"

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

void sl_log_evaluate(apr_int64_t now, apr_int64_t limit, apr_int64_t win,
                     apr_int64_t cost, apr_int64_t units, sl_log_at_fn *at,
                     void *ctx, sl_eval_t *ev)
{
    ev->ok = units + cost <= limit;
    if (ev->ok && units == 0) {
        /* More quota comes back when this request's own entry expires. */
        ev->remaining = limit - cost;
        ev->remaining0 = limit;
        ev->reset = win;
        ev->reset0 = 0;
        return;
    }
    if (ev->ok) {
        /* The oldest entry is the first to expire, read before the
         * insertion as the script's deferred write does. */
        ev->remaining0 = limit - units;
        ev->remaining = ev->remaining0 - cost;
        ev->reset = ev->reset0 = at(ctx, 0) + win - now;
        return;
    }
    /* The request fits once unit units + cost - limit - 1 has expired:
     * the earliest time enough weight has left the window. */
    ev->remaining = ev->remaining0 = 0;
    ev->reset = ev->reset0 = at(ctx, units + cost - limit - 1) + win - now;
}

void sl_lease_evaluate(apr_int64_t now, apr_int64_t limit, apr_int64_t lease,
                       apr_int64_t units, sl_log_at_fn *at, void *ctx,
                       sl_eval_t *ev)
{
    sl_log_evaluate(now, limit, lease, 1, units, at, ctx, ev);
    if (ev->reset > SL_LEASE_WAIT) {
        ev->reset = SL_LEASE_WAIT;
    }
    if (ev->reset0 > SL_LEASE_WAIT) {
        ev->reset0 = SL_LEASE_WAIT;
    }
}

/* The entries are walked from the oldest: a refusal's wait reads as many
 * as their weights take to cover what must expire, never one per unit, and
 * never more than SL_LOG_WALK. */
apr_int64_t sl_log_array_at(void *ctx, apr_int64_t i)
{
    const sl_log_t *log = ctx;
    apr_int64_t k, acc = 0;

    for (k = 0; k < log->count && k < SL_LOG_WALK; k++) {
        acc += log->w[k];
        if (acc > i) {
            return log->ts[k];
        }
    }
    return log->count ? log->ts[log->count - 1] : 0;
}

apr_int64_t sl_log_expire(sl_log_t *log, apr_int64_t now, apr_int64_t win)
{
    apr_int64_t horizon = sl_log_horizon(now, win), n = 0, i;

    while (n < log->count && log->ts[n] <= horizon) {
        log->units -= log->w[n];
        n++;
    }
    for (i = n; i < log->count; i++) {
        log->ts[i - n] = log->ts[i];
        log->w[i - n] = log->w[i];
    }
    log->count -= n;
    return n;
}

apr_int64_t sl_log_expires(apr_int64_t now, apr_int64_t win)
{
    return sl_px_deadline(now, (double) win);
}

apr_int64_t sl_log_apply(sl_log_t *log, apr_int64_t now, apr_int64_t win,
                         apr_int64_t cost)
{
    apr_int64_t i = log->count;

    /* A sorted set: callers' clocks may hand in times slightly out of
     * order (the lock decides who goes first), so insert, not append. */
    while (i > 0 && log->ts[i - 1] > now) {
        log->ts[i] = log->ts[i - 1];
        log->w[i] = log->w[i - 1];
        i--;
    }
    log->ts[i] = now;
    log->w[i] = cost;
    log->count++;
    log->units += cost;
    return sl_log_expires(now, win);
}

apr_int64_t sl_log_give_back(sl_log_t *log, apr_int64_t at, apr_int64_t cost)
{
    apr_int64_t i = 0, k;

    while (i < log->count &&
           (log->ts[i] < at || (log->ts[i] == at && log->w[i] != cost))) {
        i++;
    }
    if (i == log->count || log->ts[i] != at) {
        return 0;
    }
    for (k = i + 1; k < log->count; k++) {
        log->ts[k - 1] = log->ts[k];
        log->w[k - 1] = log->w[k];
    }
    log->count--;
    log->units -= cost;
    return cost;
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
                         apr_int64_t cost, const sl_counter_t *stored,
                         sl_eval_t *ev)
{
    sl_counter_t st;
    double dnow = (double) now, dlim = (double) limit, dwin = (double) win;
    double dcost = (double) cost;
    double idx, cur, prev, r;

    sl_counter_load(now, win, stored, &st);
    idx = (double) st.idx;
    cur = (double) st.cur;
    prev = (double) st.prev;
    ev->ok = sl_counter_estimate(dnow, dwin, idx, cur, prev) + dcost <= dlim;
    if (ev->ok) {
        sl_counter_rem_reset(dnow, dlim, dwin, idx, cur, prev, &ev->remaining0,
                             &ev->reset0);
        sl_counter_rem_reset(dnow, dlim, dwin, idx, cur + dcost, prev,
                             &ev->remaining, &ev->reset);
        return;
    }
    /* Refused: the wait until the request fits (estimate <= limit - cost). */
    ev->remaining = ev->remaining0 = 0;
    ev->reset = ev->reset0 = 0;
    r = floor(dlim - sl_counter_estimate(dnow, dwin, idx, cur, prev));
    if (r < 0) {
        r = 0;
    }
    if (r < dlim) {
        ev->reset = ev->reset0 = (apr_int64_t) ceil(
            sl_counter_until(dnow, dlim - dcost, idx, cur, prev, dwin));
    }
}

apr_int64_t sl_counter_apply(apr_int64_t now, apr_int64_t win, apr_int64_t cost,
                             sl_counter_t *st)
{
    sl_counter_t loaded;

    sl_counter_load(now, win, st, &loaded);
    loaded.cur += cost;
    *st = loaded;
    /* Kept until the window after the next one starts: by then neither
     * count weighs anything. */
    return sl_px_deadline(now, (double) (loaded.idx + 2) * (double) win -
                                   (double) now);
}

apr_int64_t sl_counter_give_back(apr_int64_t now, apr_int64_t win,
                                 apr_int64_t at, apr_int64_t cost,
                                 sl_counter_t *st)
{
    apr_int64_t idx = (apr_int64_t) floor((double) now / (double) win);
    apr_int64_t ridx = (apr_int64_t) floor((double) at / (double) win);
    apr_int64_t *count, back;

    /* The stored current window as the script reads it: this one or the
     * one before (older state weighs nothing and its key has expired). */
    if (ridx > idx || idx - ridx > 1 ||
        (st->idx != idx && st->idx != idx - 1)) {
        return 0;
    }
    if (st->idx == ridx) {
        count = &st->cur;
    }
    else if (st->idx == ridx + 1) {
        count = &st->prev;
    }
    else {
        return 0;
    }
    back = *count < cost ? *count : cost;
    *count -= back;
    return back;
}

apr_int64_t sl_counter_charge(apr_int64_t now, apr_int64_t win,
                              apr_int64_t cost, sl_counter_t *st)
{
    sl_counter_t loaded;

    sl_counter_load(now, win, st, &loaded);
    if (loaded.cur + cost > SL_COUNTER_MAX) {
        cost = SL_COUNTER_MAX - loaded.cur;
    }
    return sl_counter_apply(now, win, cost, st);
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
                      apr_int64_t burst, apr_int64_t cost, const sl_gcra_t *st,
                      sl_eval_t *ev)
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
    new_tat = tat + (double) cost * T;
    ev->ok = new_tat - dnow <= tau + 0.5;
    if (ev->ok) {
        sl_gcra_rem_reset(dnow, T, tau, tat, &ev->remaining0, &ev->reset0);
        sl_gcra_rem_reset(dnow, T, tau, new_tat, &ev->remaining, &ev->reset);
        return;
    }
    /* The request fits when the TAT is cost intervals inside the
     * tolerance. */
    ev->remaining = ev->remaining0 = 0;
    ev->reset = ev->reset0 =
        (apr_int64_t) ceil(tat - tau + (double) cost * T - dnow);
}

apr_int64_t sl_gcra_apply(apr_int64_t now, apr_int64_t limit, apr_int64_t win,
                          apr_int64_t burst, apr_int64_t cost, sl_gcra_t *st)
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
    st->tat = tat + (double) cost * T;
    return sl_px_deadline(now, st->tat - dnow);
}

apr_int64_t sl_gcra_give_back(apr_int64_t now, apr_int64_t limit,
                              apr_int64_t win, apr_int64_t at, apr_int64_t cost,
                              sl_gcra_t *st)
{
    double dnow = (double) now;
    double T = (double) win / (double) limit;
    double tat = st->tat;
    double back = (double) cost * T;
    double left = (double) at + back - dnow;

    if (!(tat > dnow) || !(left > 0)) {
        return 0;
    }
    if (left < back) {
        back = left;
    }
    if (tat - back < dnow) {
        back = tat - dnow;
    }
    st->tat = tat - back;
    return (apr_int64_t) ceil(back / T);
}

apr_int64_t sl_gcra_charge(apr_int64_t now, apr_int64_t limit, apr_int64_t win,
                           apr_int64_t burst, apr_int64_t cost, sl_gcra_t *st)
{
    double dnow = (double) now;
    double T = (double) win / (double) limit;
    double tau = (double) burst * T;
    double tat = st->tat;
    double new_tat;

    /* A stored 0 (no state) or NaN reads as now, as the script's tonumber
     * of a missing key does. */
    if (!(tat >= dnow)) {
        tat = dnow;
    }
    else if (tat > dnow + tau + 1) {
        tat = dnow + tau - T;
    }
    new_tat = tat + (double) cost * T;
    if (new_tat > dnow + tau) {
        new_tat = dnow + tau;
    }
    if (!(new_tat > tat)) {
        return 0;
    }
    st->tat = new_tat;
    return sl_px_deadline(now, new_tat - dnow);
}

/* ---- blocks ---- */

int sl_block_active(apr_int64_t now, apr_int64_t block, apr_int64_t until,
                    sl_eval_t *ev)
{
    if (until <= now) {
        return 0;
    }
    if (until > now + block) {
        until = now + block;
    }
    ev->ok = 0;
    ev->remaining = ev->remaining0 = 0;
    ev->reset = ev->reset0 = until - now;
    return 1;
}

apr_int64_t sl_block_begin(apr_int64_t now, apr_int64_t block, sl_eval_t *ev)
{
    if (ev->reset < block) {
        ev->reset = ev->reset0 = block;
    }
    return now + block;
}

apr_int64_t sl_block_expires(apr_int64_t now, apr_int64_t block)
{
    return sl_px_deadline(now, (double) block);
}
