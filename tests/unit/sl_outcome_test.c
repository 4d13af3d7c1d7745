/* SPDX-License-Identifier: Apache-2.0 */
/* The fail-mode ladder, rung by rung: what the store (or the deny cache)
 * and the shm store standing in came to, under each fail mode, fallback setting
 * and dry run. */
#include "sl_outcome.h"

#include "sl_expect.h"

#define A SL_STEP_ADMITTED
#define D SL_STEP_DENIED
#define F SL_STEP_FAILED

/* open/closed, fallback, dry run */
static sl_mode_t mode(int closed, int fallback, int dry)
{
    sl_mode_t m;
    m.fail_closed = closed;
    m.fallback = fallback;
    m.dry_run = dry;
    m.deny_status = 429;
    m.fail_status = 503;
    return m;
}

static void expect(const char *what, sl_mode_t m, int store, int fallback,
                   int result, int status, int unavailable, int quota)
{
    sl_outcome_t o;
    sl_outcome_of(&m, store, fallback, &o);
    EXPECT(o.result == result, "%s: result %d, expected %d", what, o.result,
           result);
    EXPECT(o.status == status, "%s: status %d, expected %d", what, o.status,
           status);
    EXPECT(o.unavailable == unavailable, "%s: unavailable %d", what,
           o.unavailable);
    EXPECT(o.quota == quota, "%s: quota %d", what, o.quota);
}

int main(void)
{
    int closed, fb, dry;

    /* The store answered: the fail mode and the fallback play no part. */
    for (closed = 0; closed < 2; closed++) {
        for (fb = 0; fb < 2; fb++) {
            sl_mode_t m = mode(closed, fb, 0);
            expect("admitted", m, A, F, SL_RESULT_ALLOWED, 0, 0, 1);
            expect("denied", m, D, F, SL_RESULT_DENIED, 429, 0, 1);
            EXPECT(!sl_outcome_wants_fallback(&m, A), "no fallback on admit");
            EXPECT(!sl_outcome_wants_fallback(&m, D), "no fallback on deny");
            m.dry_run = 1;
            expect("dry run admitted", m, A, F, SL_RESULT_ALLOWED, 0, 0, 1);
            expect("dry run denied", m, D, F, SL_RESULT_DRYRUN_DENIED, 0, 0, 1);
        }
    }
    /* A status of the section's own choosing. */
    {
        sl_mode_t m = mode(0, 0, 0);
        m.deny_status = 403;
        expect("SlidingLimitStatus", m, D, F, SL_RESULT_DENIED, 403, 0, 1);
    }

    /* Fail-closed: 503, no fallback, no quota headers. */
    {
        sl_mode_t m = mode(1, 1, 0);
        EXPECT(!sl_outcome_wants_fallback(&m, F), "closed: no fallback");
        expect("closed", m, F, F, SL_RESULT_FAILED_CLOSED, 503, 1, 0);
        m = mode(1, 0, 0);
        expect("closed, no fallback", m, F, F, SL_RESULT_FAILED_CLOSED, 503, 1,
               0);
    }
    /* ... but dry run never refuses: it passes as failed-open, and the
     * fallback stays out of it as under fail-closed. */
    for (fb = 0; fb < 2; fb++) {
        sl_mode_t m = mode(1, fb, 1);
        EXPECT(!sl_outcome_wants_fallback(&m, F),
               "dry run, closed: no fallback");
        expect("dry run, closed", m, F, F, SL_RESULT_FAILED_OPEN, 0, 0, 0);
    }

    /* Fail-open with the fallback: it decides. */
    for (dry = 0; dry < 2; dry++) {
        sl_mode_t m = mode(0, 1, dry);
        EXPECT(sl_outcome_wants_fallback(&m, F), "open: the fallback decides");
        expect("fallback admits", m, F, A, SL_RESULT_FAILED_OPEN, 0, 0, 1);
        expect("fallback refuses", m, F, D,
               dry ? SL_RESULT_DRYRUN_DENIED : SL_RESULT_DENIED, dry ? 0 : 429,
               0, 1);
        expect("fallback failed too", m, F, F, SL_RESULT_FAILED_OPEN, 0, 0, 0);
    }

    /* Fail-open without a fallback (off, or the shm store itself failed):
     * everything passes, whatever a fallback would have said. */
    for (dry = 0; dry < 2; dry++) {
        sl_mode_t m = mode(0, 0, dry);
        EXPECT(!sl_outcome_wants_fallback(&m, F), "no fallback configured");
        expect("open, no fallback", m, F, F, SL_RESULT_FAILED_OPEN, 0, 0, 0);
        expect("open, no fallback, stray", m, F, D, SL_RESULT_FAILED_OPEN, 0, 0,
               0);
    }

    printf("sl_outcome: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
