/* Per-process cache of refusals: once the store says a key has no room
 * until T, nothing can free quota for it before T (only admissions change
 * its state, and it admits none), so later requests on that key are refused
 * here until T without a store call. That keeps a flood from one key off the
 * store and off the network. */
#ifndef SL_DENYCACHE_H
#define SL_DENYCACHE_H

#include "sl_core.h"

typedef struct sl_denycache sl_denycache_t;

sl_denycache_t *sl_denycache_create(apr_pool_t *p);

/* The first check refused until after now: its index, with *retry_at the
 * time to tell the client; else -1. */
int sl_denycache_find(sl_denycache_t *dc, const sl_check_t *checks, int n,
                      apr_time_t now, apr_time_t *retry_at);

/* Remember that c admits nothing before until (this host's clock, measured
 * from before the store call: never later than the store's end), and that
 * clients are told retry_at (measured from after it: never earlier). */
void sl_denycache_put(sl_denycache_t *dc, const sl_check_t *c, apr_time_t until,
                      apr_time_t retry_at);

#endif
