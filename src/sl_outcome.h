/* SPDX-License-Identifier: Apache-2.0 */
/* The fail-mode ladder: from what each step of a decision came to (the deny
 * cache or the store, then the shm store standing in), the result a request is
 * logged and counted with, and whether it is refused and how. APR only, no
 * httpd.h: tests/unit/sl_outcome_test.c walks every rung. */
#ifndef SL_OUTCOME_H
#define SL_OUTCOME_H

/* The outcome in SLIDINGLIMIT_RESULT and the metrics (sl_result_name). */
#define SL_RESULT_ALLOWED       0
#define SL_RESULT_DENIED        1
#define SL_RESULT_DRYRUN_DENIED 2
#define SL_RESULT_FAILED_OPEN   3
#define SL_RESULT_FAILED_CLOSED 4
#define SL_RESULT_COUNT         5

/* What one step came to. */
#define SL_STEP_ADMITTED 0
#define SL_STEP_DENIED   1
#define SL_STEP_FAILED   2 /* no answer (down, full, not made), or not run */

/* The section's settings that the ladder reads. */
typedef struct sl_mode {
    int fail_closed; /* SlidingLimitFailMode closed */
    int fallback;    /* a remote store with SlidingLimitLocalFallback on */
    int dry_run;     /* SlidingLimitDryRun on */
    int deny_status; /* SlidingLimitStatus */
    int fail_status; /* the fail-closed answer */
} sl_mode_t;

typedef struct sl_outcome {
    int result; /* SL_RESULT_* */
    int status; /* 0: the request passes; else the status it is refused with */
    int unavailable; /* refused because the store did not answer */
    int quota;       /* a decision backs it: quota headers, policy, remaining */
} sl_outcome_t;

/* 1 when the shm store is to decide in the store's place, given what the store
 * came to. */
int sl_outcome_wants_fallback(const sl_mode_t *m, int store_step);

/* store_step: what the deny cache or the store came to; fallback: what the
 * shm store standing in came to (SL_STEP_FAILED when it did not run). */
void sl_outcome_of(const sl_mode_t *m, int store_step, int fallback,
                   sl_outcome_t *out);

#endif
