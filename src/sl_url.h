/* SPDX-License-Identifier: Apache-2.0 */
/* SlidingLimitStore's URL: which store, where, with which credentials, and
 * a display form that never shows them. Pure: APR only, no httpd.h
 * (tests/unit/sl_url_test.c). */
#ifndef SL_URL_H
#define SL_URL_H

#include <apr_pools.h>
#include <apr_tables.h>

#define SL_URL_SHM      0
#define SL_URL_TCP      1
#define SL_URL_UNIX     2
#define SL_URL_CLUSTER  3
#define SL_URL_SENTINEL 4

typedef struct sl_hostport {
    const char *host;
    int port;
} sl_hostport_t;

typedef struct sl_store_url {
    int kind;
    int tls; /* rediss://, clusters://, sentinels:// */
    /* sl_hostport_t: one node, the cluster seeds, or the Sentinels */
    apr_array_header_t *nodes;
    const char *path;   /* unix socket */
    const char *master; /* Sentinel: the master's name */
    int db;
    const char *user; /* the data node's credentials */
    const char *password;
    /* The userinfo had no ':': a password, or the user name where
     * SlidingLimitStorePassword gives the password. */
    int bare_userinfo;
    const char *display; /* for logs: "user:***@" at most, never a password */
    apr_uint32_t tag;    /* the same for URLs naming the same data */
    /* display's FNV-1a: the status page's series of this store is found
     * by it on every call */
    apr_uint32_t display_hash;
} sl_store_url_t;

/* Every error names the bad token without the URL's password. */
const char *sl_parse_store_url(apr_pool_t *p, const char *url,
                               sl_store_url_t *out);

/* url, well formed or not, with its userinfo (user and password) replaced
 * by "***": what an error message may quote. */
const char *sl_redact_url(apr_pool_t *p, const char *url);

#endif
