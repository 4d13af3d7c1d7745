/* SPDX-License-Identifier: Apache-2.0 */
/* What a client sees of a decision: the quota headers, Retry-After and the
 * JSON bodies, and the grammar of the header names a configuration gives.
 * Pure: APR only, no httpd.h (tests/unit/sl_wire_test.c). */
#ifndef SL_WIRE_H
#define SL_WIRE_H

#include <apr_pools.h>
#include <apr_tables.h>

#include "sl_limit.h"
#include "sl_reply.h"

/* SlidingLimitHeaders: a bit per header set, 0 is "off". A new set is its
 * bit here and its row in sl_wire.c's sl_header_sets. */
#define SL_HDR_IETF    1
#define SL_HDR_DRAFT03 2
#define SL_HDR_XRL     4

/* An RFC 9110 token, what a header field name may be (httpd's
 * ap_scan_http_token came with 2.4.24). */
int sl_is_token(const char *s);

/* The limit that the headers describe: among denying limits the one with
 * the longest wait, otherwise the fewest remaining, ties to the longer t. */
int sl_decision_pick(const sl_decision_t *d);

/* Whole seconds, rounded up, at least 1: never earlier than the true time.
 * Retry-After and a window are never 0 seconds. */
apr_int64_t sl_ceil_seconds(apr_int64_t us);
apr_int64_t sl_retry_after(const sl_decision_t *d);

/* The same rounded up, except that 0 (or less) stays 0: a reset, where 0
 * says that the whole quota is there now (RateLimit's t=,
 * RateLimit-Reset). */
apr_int64_t sl_reset_seconds(apr_int64_t us);

/* Header sets; add(ctx, name, value) is called once per header. */
typedef void sl_header_fn(void *ctx, const char *name, const char *value);
const char *sl_sf_string(apr_pool_t *p, const char *s);
/* The bit of the header set called name (any case), 0 for none; the sets'
 * names, for a message ("ietf, draft03, x-ratelimit"). */
int sl_header_set(const char *name);
const char *sl_header_set_names(apr_pool_t *p);
/* Makes what the quota headers say of l whatever the request (its fields
 * sf_name, requests_text, policy_item), once when its line is read. */
void sl_wire_limit(apr_pool_t *p, sl_limit_t *l);
/* Returns the text of the remaining quota the headers showed (that of
 * d->quota[sl_decision_pick(d)]), NULL when none did. */
const char *sl_quota_headers(apr_pool_t *p, int flags,
                             const apr_array_header_t *limits,
                             const sl_decision_t *d, sl_header_fn *add,
                             void *ctx);

/* Decimal text of v, without apr_psprintf's formatter (see sl_wire.c). */
const char *sl_i64toa(apr_pool_t *p, apr_int64_t v);

const char *sl_json_body(apr_pool_t *p, int unavailable, apr_int64_t retry);

/* The body of a refusal for a cost (SL_COST_BAD or SL_COST_OVER) under the
 * policy named policy, which holds max units. */
const char *sl_json_cost_body(apr_pool_t *p, int why, const char *policy,
                              apr_int64_t max);

/* s as a JSON string, quotes included: '"', '\\' and control characters
 * escaped, other bytes as they are (the caller's text is UTF-8 or ASCII). */
const char *sl_json_string(apr_pool_t *p, const char *s);

#endif
