/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the circuit breaker (src/sl_breaker.c): transitions, the
 * probe schedule, answers that arrive after a transition, and the table of
 * breakers with claims that a dying process left half-done. No server
 * needed (make unit). */
#include "sl_breaker.h"
#include "sl_claim.h"

#include <apr_general.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sl_expect.h"

#define MS(x) apr_time_from_msec(x)

static void test_transitions(void)
{
    sl_breaker_t b;
    apr_time_t t = apr_time_from_sec(1000);

    sl_breaker_init(&b);
    EXPECT(sl_breaker_allow(&b, t), "closed: every request may use the store");
    EXPECT(!sl_breaker_success(&b, t, t + 1),
           "success while closed: no change");
    EXPECT(sl_breaker_failure(&b, t, t + MS(50)), "first failure opens");
    EXPECT(sl_breaker_is_open(&b), "open");
    EXPECT(!sl_breaker_failure(&b, t + MS(1), t + MS(51)),
           "a second failure reports no transition");
    EXPECT(!sl_breaker_allow(&b, t + MS(60)), "no call before the probe time");
    EXPECT(sl_breaker_wait(&b, t + MS(60)) > 0, "a wait until the probe");
    EXPECT(sl_breaker_allow(&b, t + MS(150)), "the probe after 100 ms");
    EXPECT(!sl_breaker_allow(&b, t + MS(151)), "only one probe");
    EXPECT(!sl_breaker_failure(&b, t + MS(150), t + MS(200)),
           "failed probe: still open, nothing to log");
    EXPECT(!sl_breaker_allow(&b, t + MS(350)),
           "backoff doubled: not at 150 ms");
    EXPECT(sl_breaker_allow(&b, t + MS(401)), "the next probe 200 ms later");
    EXPECT(sl_breaker_success(&b, t + MS(401), t + MS(402)),
           "a successful probe closes, once");
    EXPECT(!sl_breaker_is_open(&b), "closed again");
    EXPECT(sl_breaker_allow(&b, t + MS(403)), "every request again");
}

static void test_backoff_cap(void)
{
    sl_breaker_t b;
    apr_time_t t = apr_time_from_sec(1000);
    int i;

    sl_breaker_init(&b);
    sl_breaker_failure(&b, t, t);
    for (i = 0; i < 20; i++) {
        t += apr_time_from_sec(3);
        EXPECT(sl_breaker_allow(&b, t), "a probe at least every 2 s (%d)", i);
        sl_breaker_failure(&b, t, t);
    }
    EXPECT(sl_breaker_wait(&b, t) <= SL_BREAKER_MAX_BACKOFF,
           "backoff capped at 2 s");
}

/* Under load, requests in flight when the store fails may succeed after
 * the first failure, and requests in flight when it returns may fail
 * after the probe succeeded: neither may flip the state (or log). */
static void test_stale_answers(void)
{
    sl_breaker_t b;
    apr_time_t t = apr_time_from_sec(1000);

    sl_breaker_init(&b);
    EXPECT(sl_breaker_failure(&b, t + MS(10), t + MS(20)), "opens");
    EXPECT(!sl_breaker_success(&b, t + MS(5), t + MS(21)),
           "a success of a request older than the outage does not close");
    EXPECT(sl_breaker_is_open(&b), "still open");
    EXPECT(!sl_breaker_failure(&b, t + MS(6), t + MS(22)),
           "a late failure of an old request changes nothing");
    EXPECT(!sl_breaker_allow(&b, t + MS(110)), "nor does it move the probe");
    EXPECT(sl_breaker_allow(&b, t + MS(120)), "probe on schedule");
    EXPECT(sl_breaker_success(&b, t + MS(120), t + MS(121)), "probe closes");
    EXPECT(!sl_breaker_failure(&b, t + MS(115), t + MS(125)),
           "a failure of a request older than the recovery does not reopen");
    EXPECT(!sl_breaker_is_open(&b), "still closed");
    EXPECT(sl_breaker_failure(&b, t + MS(130), t + MS(180)),
           "a new failure opens again");
}

static void sl_stuck(int sig)
{
    (void) sig;
    printf("FAIL: sl_breakers_get still waiting after 10 s\n");
    exit(1);
}

/* A process killed between claiming a cell and naming it leaves the cell
 * BUSY for good: later children must neither wait for it forever nor
 * disagree on which cell is a store's. */
static void test_half_claimed(apr_pool_t *p)
{
    apr_size_t size = sl_breakers_size(), stride = size / SL_BREAKER_CELLS;
    char *mem = calloc(1, size), *mem2 = calloc(1, size);
    sl_breakers_t *t = sl_breakers_attach(p, mem), *t2;
    sl_breaker_t *a, *b;
    apr_time_t start;
    int i, home;

    signal(SIGALRM, sl_stuck);
    alarm(10);
    /* Where "a" lands in an empty table: its home cell. */
    a = sl_breakers_get(t, "a", 1);
    home = (int) (((char *) a - mem) / stride);
    t2 = sl_breakers_attach(p, mem2);
    *(volatile apr_uint32_t *) (mem2 + (apr_size_t) home * stride) =
        SL_CLAIM_BUSY;
    start = apr_time_now();
    a = sl_breakers_get(t2, "a", 1);
    EXPECT(a != NULL && (int) (((char *) a - mem2) / stride) != home,
           "a half-claimed home cell is given up for the next one");
    EXPECT(apr_time_now() - start < apr_time_from_sec(2),
           "after a bounded wait (%ld us)", (long) (apr_time_now() - start));
    start = apr_time_now();
    b = sl_breakers_get(t2, "a", 1);
    EXPECT(b == a, "every later caller finds the same breaker");
    EXPECT(apr_time_now() - start < apr_time_from_msec(5),
           "without waiting again (%ld us)", (long) (apr_time_now() - start));
    b = sl_breakers_get(t2, "b", 1);
    EXPECT(b != NULL && b != a, "other stores still get their own");

    /* Every cell left half-claimed: no breaker, but an answer. */
    memset(mem, 0, size);
    for (i = 0; i < SL_BREAKER_CELLS; i++) {
        *(volatile apr_uint32_t *) (mem + (apr_size_t) i * stride) =
            SL_CLAIM_BUSY;
    }
    EXPECT(sl_breakers_get(t, "c", 1) == NULL,
           "a table of dead claims answers NULL (the main breaker is used)");
    alarm(0);
    free(mem);
    free(mem2);
}

int main(void)
{
    apr_pool_t *p;

    apr_initialize();
    apr_pool_create(&p, NULL);
    test_transitions();
    test_backoff_cap();
    test_stale_answers();
    test_half_claimed(p);
    printf("sl_breaker: %d passed, %d failed\n", passed, failed);
    apr_terminate();
    return failed ? 1 : 0;
}
