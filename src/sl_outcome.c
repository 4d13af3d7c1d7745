/* SPDX-License-Identifier: Apache-2.0 */
/* The fail-mode ladder (see sl_outcome.h). */
#include "sl_outcome.h"

int sl_outcome_wants_fallback(const sl_mode_t *m, int store_step)
{
    return store_step == SL_STEP_FAILED && !m->fail_closed && m->fallback;
}

void sl_outcome_of(const sl_mode_t *m, int store_step, int fallback,
                   sl_outcome_t *out)
{
    int step = store_step;

    out->status = 0;
    out->unavailable = 0;
    out->quota = 1;
    if (store_step == SL_STEP_FAILED) {
        /* Also for the shm store (full, or this child outlived a restart):
         * a fail-closed login page stays closed. Dry run never refuses: it
         * passes as any request the store could not decide. */
        if (m->fail_closed && !m->dry_run) {
            out->result = SL_RESULT_FAILED_CLOSED;
            out->status = m->fail_status;
            out->unavailable = 1;
            out->quota = 0;
            return;
        }
        if (!sl_outcome_wants_fallback(m, store_step) ||
            fallback == SL_STEP_FAILED) {
            out->result = SL_RESULT_FAILED_OPEN;
            out->quota = 0;
            return;
        }
        if (fallback == SL_STEP_ADMITTED) {
            out->result = SL_RESULT_FAILED_OPEN;
            return;
        }
        step = fallback;
    }
    if (step == SL_STEP_ADMITTED) {
        out->result = SL_RESULT_ALLOWED;
    }
    else if (m->dry_run) {
        out->result = SL_RESULT_DRYRUN_DENIED;
    }
    else {
        out->result = SL_RESULT_DENIED;
        out->status = m->deny_status;
    }
}
