/* SPDX-License-Identifier: Apache-2.0 */
/* delay=: a request that would be refused, held instead until its limits
 * admit it, within a bound (nginx's limit_req delay, Traefik's
 * reservation). Pure: APR only, no httpd.h (tests/unit/sl_delay_test.c). */
#ifndef SL_DELAY_H
#define SL_DELAY_H

#include <apr_tables.h>
#include <apr_time.h>

#include "sl_limit.h"
#include "sl_reply.h"

/* The longest delay= (a held request holds a worker thread). */
#define SL_MAX_DELAY (60 * APR_USEC_PER_SEC)
/* The shortest wait: a reset of a few microseconds is not worth a store
 * call per microsecond. */
#define SL_DELAY_MIN_WAIT 1000
/* Decisions of one request after the first, at most: a retry is refused
 * again only when other requests took the room first, so a few rounds are
 * enough, and the store sees no more than this from one client request. */
#define SL_DELAY_ROUNDS 8

/* How long a request refused by d may wait before it is decided again,
 * microseconds; 0: it may not (refused as without delay=). limits
 * (sl_limit_t *) are d's, in order; waited is the time since its first
 * decision and rounds the decisions after it so far. It may wait when
 * every refusing limit has delay= and would admit it (its reset) within
 * what is left of its delay=, and none of them has block=: a block is
 * never waited through (a refusal of such a limit starts one or meets a
 * running one). */
apr_int64_t sl_delay_wait(const apr_array_header_t *limits,
                          const sl_decision_t *d, apr_int64_t waited,
                          int rounds);

/* SlidingLimitDelayMax's value when unset: a quarter of a threaded
 * child's threads (at least 1), so that held requests never take every
 * thread; 0 (never wait) under a non-threaded MPM, where one held request
 * holds a whole child. */
int sl_delay_max_default(int threaded, int threads);

/* At start-up and under httpd -t (src/sl_delay_check.c, httpd.h):
 * sl_delay_note, as a SlidingLimit line with delay= is read, keeps the
 * line; sl_delay_check warns once for each kept line whose section holds
 * no request (SlidingLimitDelayMax 0, set or the MPM's default). */
#ifdef AP_DECLARE
void sl_delay_note(cmd_parms *cmd);
void sl_delay_check(apr_pool_t *pconf, apr_pool_t *ptemp, server_rec *s);
#endif

#endif
