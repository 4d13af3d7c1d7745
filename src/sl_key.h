/* Whose budget a request uses: SlidingLimitKey's sources, resolved per
 * request and hashed. */
#ifndef SL_KEY_H
#define SL_KEY_H

#include "sl_config.h"

/* The hashed identity of the request's budget: the first source with a
 * non-empty value, or the shared bucket "-". */
const char *sl_key_identity(request_rec *r, const sl_dir_conf_t *dc);

#endif
