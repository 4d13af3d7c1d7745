/* Whose budget a request uses: SlidingLimitKey's sources, resolved per
 * request and hashed. */
#ifndef SL_KEY_H
#define SL_KEY_H

#include "sl_config.h"

/* The hashed identity of the request's budget: the first source with a
 * non-empty value, or the shared bucket "-". */
const char *sl_key_identity(request_rec *r, const sl_dir_conf_t *dc);

/* The identity a request gets when the key source named source ("ip",
 * "user", "header:NAME", "env:NAME", "expr": the section's first
 * expression, or "none": the shared bucket) is the first with value: the
 * same function makes both. NULL with *err when dc has no such source or
 * the value cannot be one (an empty value, an address that does not
 * parse). */
const char *sl_key_identity_of(apr_pool_t *p, const sl_server_conf_t *sc,
                               const sl_dir_conf_t *dc, const char *source,
                               const char *value, const char **err);

#endif
