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

#endif
