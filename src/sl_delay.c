/* SPDX-License-Identifier: Apache-2.0 */
/* delay=: whether a refusal may wait (see sl_delay.h). */
#include "sl_delay.h"

apr_int64_t sl_delay_wait(const apr_array_header_t *limits,
                          const sl_decision_t *d, apr_int64_t waited,
                          int rounds)
{
    apr_int64_t wait = 0;
    int i, refusing = 0;

    if (d->admitted || rounds >= SL_DELAY_ROUNDS || !limits ||
        limits->nelts < d->n || waited < 0) {
        return 0;
    }
    for (i = 0; i < d->n; i++) {
        const sl_limit_t *l = APR_ARRAY_IDX(limits, i, const sl_limit_t *);
        apr_int64_t reset = d->quota[i].reset;
        if (d->quota[i].ok) {
            continue;
        }
        refusing++;
        if (reset < SL_DELAY_MIN_WAIT) {
            reset = SL_DELAY_MIN_WAIT;
        }
        if (!l->delay || l->block || reset > l->delay - waited) {
            return 0;
        }
        if (reset > wait) {
            wait = reset;
        }
    }
    return refusing ? wait : 0;
}

int sl_delay_max_default(int threaded, int threads)
{
    if (!threaded) {
        return 0;
    }
    return threads / 4 > 1 ? threads / 4 : 1;
}
