/* SPDX-License-Identifier: Apache-2.0 */
/* What a store answers for one request: the decision and each limit's
 * quota, read from the check script's integer reply (lua/sl_check.lua) or
 * made by the shm store. Pure: APR only, no httpd.h
 * (tests/unit/sl_reply_test.c). */
#ifndef SL_REPLY_H
#define SL_REPLY_H

#include <apr_errno.h>
#include <apr_pools.h>

/* What a store's call returns when one part of the store is down while the
 * rest answers (a Redis Cluster slot whose master is away): the request
 * takes the fail mode, and the store's breaker stays as it is (the other
 * parts are served). */
#define SL_STORE_PART_DOWN (APR_OS_START_USERERR + 1301)

typedef struct sl_quota {
    int ok;                /* this limit had room */
    apr_int64_t remaining; /* after this request if admitted, else now */
    apr_int64_t reset;     /* microseconds until more quota; 0: all of it */
} sl_quota_t;

typedef struct sl_decision {
    apr_int64_t now; /* store time, microseconds since the epoch */
    int admitted;
    int n;
    sl_quota_t *quota; /* per limit, in order */
} sl_decision_t;

/* Reads the script's integer reply; refuses anything out of shape. NULL,
 * or what is wrong, allocated from p. */
const char *sl_decision_parse(apr_pool_t *p, const long long *v, apr_size_t nv,
                              int nlimits, sl_decision_t *d);

/* The reply of the check script's peek (lua/sl_check.lua, "peek"): *d as
 * sl_decision_parse reads it (the state now: admitted 1 when the next
 * request would be), then blocked[i], the microseconds until limit i's
 * block ends (0: none), from an array it allocates. */
const char *sl_peek_parse(apr_pool_t *p, const long long *v, apr_size_t nv,
                          int nlimits, sl_decision_t *d, apr_int64_t **blocked);

#endif
