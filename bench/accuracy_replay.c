/* SPDX-License-Identifier: Apache-2.0 */
/* Replays decisions that lua/sl_check.lua took in Redis through
 * src/sl_algo.c (the shm store's math) at the same store times, and
 * reports every answer that differs: both stores must agree to the
 * microsecond, rounding included.
 *
 * Input, one script call per line (t/17-script-vs-c.t writes it):
 *   KEY ALG LIMIT WINDOW BURST COST BLOCK NOW OK REMAINING RESET
 * KEY is any token naming an independent budget; ALG is l, c, g or n; COST
 * and BLOCK the call's cost= and block= (microseconds, 0 for none); NOW is
 * the store time the script returned; OK, REMAINING and RESET its reply
 * for the (single) limit. Prints "N calls, M mismatches"; exit status 1 on
 * any mismatch or bad line. */
#include "sl_algo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KEYS 64
#define LOG_CAP  100000

typedef struct {
    char name[64];
    sl_counter_t counter;
    int has_counter;
    sl_gcra_t gcra;
    sl_log_t log;
    apr_int64_t block_until; /* the block entry, 0 when none */
    apr_int64_t block_expires;
} sl_replay_key_t;

static sl_replay_key_t *budget(sl_replay_key_t *b, int *n, const char *name)
{
    int i;

    for (i = 0; i < *n; i++) {
        if (!strcmp(b[i].name, name)) {
            return &b[i];
        }
    }
    if (*n == MAX_KEYS) {
        return NULL;
    }
    memset(&b[*n], 0, sizeof(b[*n]));
    snprintf(b[*n].name, sizeof(b[*n].name), "%s", name);
    b[*n].log.ts = malloc(sizeof(apr_int64_t) * LOG_CAP);
    b[*n].log.w = malloc(sizeof(apr_int64_t) * LOG_CAP);
    return &b[(*n)++];
}

int main(void)
{
    static sl_replay_key_t budgets[MAX_KEYS];
    int nb = 0;
    char line[512];
    long calls = 0, bad = 0, lineno = 0;

    while (fgets(line, sizeof(line), stdin)) {
        char key[64], alg;
        long long limit, win, burst, cost, block, now, ok, rem, reset;
        sl_replay_key_t *b;
        sl_eval_t ev;
        sl_quota_t res;

        lineno++;
        if (sscanf(line, "%63s %c %lld %lld %lld %lld %lld %lld %lld %lld %lld",
                   key, &alg, &limit, &win, &burst, &cost, &block, &now, &ok,
                   &rem, &reset) != 11 ||
            !(b = budget(budgets, &nb, key))) {
            printf("line %ld: cannot read '%s'\n", lineno, line);
            return 1;
        }
        calls++;
        if (b->block_expires <= now) {
            b->block_until = 0;
        }
        if (block && sl_block_active(now, block, b->block_until, &ev)) {
            /* refused by the block: the algorithm's state is not read */
        }
        else if (alg == 'l') {
            sl_log_expire(&b->log, now, win);
            sl_log_evaluate(now, limit, win, cost, b->log.units,
                            sl_log_array_at, &b->log, &ev);
        }
        else if (alg == 'n') {
            /* SlidingLimitConcurrent: the log of its leases. */
            sl_log_expire(&b->log, now, win);
            sl_lease_evaluate(now, limit, win, b->log.units, sl_log_array_at,
                              &b->log, &ev);
        }
        else if (alg == 'c') {
            sl_counter_evaluate(now, limit, win, cost,
                                b->has_counter ? &b->counter : NULL, &ev);
        }
        else {
            sl_gcra_evaluate(now, limit, win, burst, cost, &b->gcra, &ev);
        }
        if (!ev.ok && block && b->block_until <= now) {
            b->block_until = sl_block_begin(now, block, &ev);
            b->block_expires = sl_block_expires(now, block);
        }
        /* One limit per call: the call admits exactly when it has room. */
        sl_eval_quota(&ev, ev.ok, &res);
        if (res.ok != ok || res.remaining != rem || res.reset != reset) {
            if (bad++ < 20) {
                printf("line %ld (%s %c %lld/%lld burst %lld at %lld): "
                       "script %lld %lld %lld, C %d %" APR_INT64_T_FMT
                       " %" APR_INT64_T_FMT "\n",
                       lineno, key, alg, limit, win, burst, now, ok, rem, reset,
                       res.ok, res.remaining, res.reset);
            }
        }
        /* Follow the script's decision, so that one difference does not
         * cascade into the lines after it. */
        if (ok) {
            if (alg == 'l' || alg == 'n') {
                if (b->log.count < LOG_CAP) {
                    sl_log_apply(&b->log, now, win, cost);
                }
            }
            else if (alg == 'c') {
                sl_counter_apply(now, win, cost, &b->counter);
                b->has_counter = 1;
            }
            else {
                sl_gcra_apply(now, limit, win, burst, cost, &b->gcra);
            }
        }
    }
    printf("%ld calls, %ld mismatches\n", calls, bad);
    return bad || !calls ? 1 : 0;
}
