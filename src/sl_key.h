/* SPDX-License-Identifier: Apache-2.0 */
/* Whose budget a request uses: SlidingLimitKey's sources, resolved per
 * request and hashed. */
#ifndef SL_KEY_H
#define SL_KEY_H

#include "sl_config.h"

/* The hashed identity of the request's budget: the first source with a
 * non-empty value; without one, the client address where user is a source
 * (keyed as ip), else the shared bucket "-". user is r->user, set by
 * authentication; before_auth (a section with count=, decided before
 * authentication) makes it the Basic name attempted instead, paired with
 * the client address unless the source says any-address. */
const char *sl_key_identity(request_rec *r, const sl_dir_conf_t *dc,
                            int before_auth);

/* The identity a request gets when the key source named source ("ip",
 * "user", "header:NAME", "env:NAME", "expr": the section's first
 * expression, or "none": the shared bucket) is the first with value: the
 * same function makes both. "ip" also names a user section's request
 * without a user; address is the client address a paired user name goes
 * with (NULL otherwise). NULL with *err when dc has no such source or the
 * value cannot be one (an empty value, an address that does not parse, a
 * pair where the section has none or none where it has one). */
const char *sl_key_identity_of(apr_pool_t *p, const sl_server_conf_t *sc,
                               const sl_dir_conf_t *dc, int before_auth,
                               const char *source, const char *value,
                               const char *address, const char **err);

/* Whether the query's source ("ip", "user", "header:NAME", ..., "none")
 * names an identity of dc's requests: one of its sources, ip where a
 * request without a user or form value is keyed by its address, none
 * (the shared bucket) elsewhere. */
int sl_key_takes(const sl_dir_conf_t *dc, const char *source);

/* key=SOURCE (sl_key_line.c): the budgets of the limits (sl_limit_t *)
 * with a key= of their own made for the identity that source gives the
 * request r, by sl_key_identity under dc with that one source; the others
 * keep the section's, which budgets already hold. The keys are made in p:
 * the client's request's pool, which outlives mod_dir's look-up (r) that
 * the request may be decided for (its give-back reads them). */
void sl_key_lines(apr_pool_t *p, request_rec *r, const sl_dir_conf_t *dc,
                  const apr_array_header_t *limits, sl_budget_t *budgets,
                  int before_auth);

/* The section dc as limit l keys it: dc itself, or in *one dc with l's
 * key= as its only source. */
const sl_dir_conf_t *sl_key_line_conf(const sl_dir_conf_t *dc,
                                      const sl_limit_t *l, sl_dir_conf_t *one);

/* key=: whether the configuration's stores can decide lines of several
 * identities in one call (not a Redis Cluster); logs why not. */
int sl_key_lines_check(apr_pool_t *pconf, server_rec *s);

/* The query's source reaches limit l of dc (sl_key_takes under the line's
 * own key=, where ip, always a request's, has no shared bucket). */
int sl_key_line_takes(const sl_dir_conf_t *dc, const sl_limit_t *l,
                      const char *source);

#endif
