/* SPDX-License-Identifier: Apache-2.0 */
/* SlidingLimit expr:STRING: a limit's quota read from each request. */
#ifndef SL_QUOTA_H
#define SL_QUOTA_H

#include "httpd.h"
#include "http_config.h"

#include "sl_limit.h"

/* The quota of limit l (one with quota_prog) for target, the request whose
 * section it is: SL_QUOTA_OK with *quota its value, SL_QUOTA_ZERO with
 * *quota 0, or SL_QUOTA_BAD with *quota l's quota-default=, logged (as a
 * warning, on r, the client's request) with the value that was not a
 * quota. */
int sl_quota_eval(request_rec *r, request_rec *target, const sl_limit_t *l,
                  apr_int64_t *quota);

/* A request's expression quotas: each such limit of *limits (with its
 * budgets, n) becomes a copy from r's pool with the request's quota, which
 * its budget takes and its quota headers say; *limits is then a new array.
 * Returns how many limits have a quota of 0 (their budget's requests stay
 * quota-default=: no store is asked about a limit of 0). */
int sl_quota_apply(request_rec *r, request_rec *target,
                   const apr_array_header_t **limits, sl_budget_t *budgets,
                   int n);

/* At start-up (src/sl_quota_check.c): sl_quota_note, as a SlidingLimit
 * line with expr:'s quota is read from the server configuration, keeps it
 * in the configuration pool; sl_quota_check, in post_config, warns once
 * for each such expression that reads what a client chooses (a request
 * header no early RequestHeader of its server replaces, the request line),
 * naming it and what to do. */
void sl_quota_note(cmd_parms *cmd, const char *expr);
void sl_quota_check(apr_pool_t *pconf, apr_pool_t *ptemp, server_rec *s);

#endif
