/* SPDX-License-Identifier: Apache-2.0 */
#include "sl_reply.h"

#include <apr_strings.h>
#include <apr_time.h>

const char *sl_decision_parse(apr_pool_t *p, const long long *v, apr_size_t nv,
                              int nlimits, sl_decision_t *d)
{
    int i;

    if (nlimits < 1 || nv != 3 + 3 * (apr_size_t) nlimits) {
        return apr_psprintf(p, "reply has %lu values, expected %d",
                            (unsigned long) nv, 3 + 3 * nlimits);
    }
    if (v[0] <= 0 || v[1] < 0 || v[1] >= APR_USEC_PER_SEC ||
        (v[2] != 0 && v[2] != 1)) {
        return "reply header out of range";
    }
    d->now = (apr_int64_t) v[0] * APR_USEC_PER_SEC + v[1];
    d->admitted = (int) v[2];
    d->n = nlimits;
    d->quota = apr_pcalloc(p, sizeof(*d->quota) * nlimits);
    for (i = 0; i < nlimits; i++) {
        const long long *x = v + 3 + 3 * i;
        if ((x[0] != 0 && x[0] != 1) || x[1] < 0 || x[2] < 0) {
            return apr_psprintf(p, "reply for limit %d out of range", i + 1);
        }
        if (d->admitted && !x[0]) {
            return "reply admits a request that a limit refused";
        }
        d->quota[i].ok = (int) x[0];
        d->quota[i].remaining = x[1];
        d->quota[i].reset = x[2];
    }
    if (!d->admitted) {
        for (i = 0; i < nlimits && d->quota[i].ok; i++) {
        }
        if (i == nlimits) {
            return "reply refuses a request that every limit admitted";
        }
    }
    return NULL;
}

const char *sl_peek_parse(apr_pool_t *p, const long long *v, apr_size_t nv,
                          int nlimits, sl_decision_t *d, apr_int64_t **blocked)
{
    const char *err;
    int i;

    if (nlimits < 1 || nv != 3 + 4 * (apr_size_t) nlimits) {
        return apr_psprintf(p, "reply has %lu values, expected %d",
                            (unsigned long) nv, 3 + 4 * nlimits);
    }
    if ((err =
             sl_decision_parse(p, v, nv - (apr_size_t) nlimits, nlimits, d))) {
        return err;
    }
    *blocked = apr_palloc(p, sizeof(**blocked) * nlimits);
    for (i = 0; i < nlimits; i++) {
        const long long b = v[3 + 3 * nlimits + i];
        if (b < 0 || (b > 0 && d->quota[i].ok)) {
            return apr_psprintf(p,
                                "reply for the block of limit %d out of "
                                "range",
                                i + 1);
        }
        (*blocked)[i] = b;
    }
    return NULL;
}
