/* SPDX-License-Identifier: Apache-2.0 */
/* Finding a Sentinel-managed master: each Sentinel in turn is asked for the
 * master's address (SENTINEL get-master-addr-by-name), and the node it
 * names is asked with ROLE whether it really is the master (a Sentinel cut
 * off from the others can name an old one). APR and the transport only, no
 * httpd.h: tested against real Sentinels in tests/transport. */
#ifndef SL_SENTINEL_H
#define SL_SENTINEL_H

#include "sl_url.h"
#include "sl_transport.h"

typedef struct sl_sentinel {
    const sl_store_url_t *url; /* the Sentinels, master name, data creds */
    const char *user; /* the Sentinels' own (SlidingLimitSentinelAuth) */
    const char *password;
    sl_tls_t *tls; /* sentinels://: Sentinels and master alike */
    apr_interval_time_t connect_timeout;
    apr_interval_time_t command_timeout;
    /* The Sentinel that answered last is asked first next time. Not
     * guarded: reading an older value only changes which one is asked first. */
    volatile int first;
} sl_sentinel_t;

/* AUTH on a new connection, when there are credentials: APR_SUCCESS,
 * the transport's failure, or APR_EACCES when refused (the server's text is
 * not kept: no place to risk echoing a credential). */
apr_status_t sl_sentinel_auth(sl_transport_t *t, const char *user,
                              const char *password);

/* The master's address, host in a buffer of hostlen bytes. Tries every
 * Sentinel, each bounded by the timeouts, and no longer than deadline (an
 * apr_time_now() value) in all. On failure err says why, for the log:
 * what each Sentinel answered or not, in one line. */
apr_status_t sl_sentinel_master(sl_sentinel_t *s, apr_time_t deadline,
                                char *host, apr_size_t hostlen, int *port,
                                char *err, apr_size_t errlen);

#endif
