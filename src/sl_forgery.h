/* SPDX-License-Identifier: Apache-2.0 */
/* Whether a reset through the status handler is one an operator asked for,
 * or one a page of another site made the operator's browser send (cross-
 * site request forgery). APR only, no httpd.h: tests/unit/sl_forgery_test.c
 * checks each header it reads. */
#ifndef SL_FORGERY_H
#define SL_FORGERY_H

#include "apr_pools.h"
#include "apr_network_io.h"

/* The header a reset must carry; no page of another site can add it to a
 * request without a preflight, which the handler never grants. */
#define SL_RESET_HEADER "X-SlidingLimit-Reset"

/* Whether ORIGIN, an Origin field (scheme://host[:port]), is the origin
 * SCHEME://HOST:PORT of a request. Scheme and host compare without case,
 * a host with or without an IPv6 literal's brackets; an Origin without a
 * port has its scheme's. "null", a path, user information or a query are
 * never a match. */
int sl_same_origin(apr_pool_t *p, const char *origin, const char *scheme,
                   const char *host, apr_port_t port);

/* Why a POST with these header values (NULL: absent) must not reset, or
 * NULL when it may: MARK is SL_RESET_HEADER's value, SITE Sec-Fetch-Site's,
 * ORIGIN Origin's; SCHEME, HOST and PORT are the request's own. */
const char *sl_reset_forged(apr_pool_t *p, const char *mark, const char *site,
                            const char *origin, const char *scheme,
                            const char *host, apr_port_t port);

#endif
