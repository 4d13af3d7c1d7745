/* SPDX-License-Identifier: Apache-2.0 */
/* What a Redis store must be for the module to work as documented, read
 * from the INFO text of the first connection to each of its nodes and
 * logged once per server generation (sl_store_redis.c). APR only, no httpd.h:
 * the reading and the rules are unit-tested (tests/unit). */
#ifndef SL_PREREQ_H
#define SL_PREREQ_H

#include "sl_url.h"

/* What INFO said; fields it did not say stay unknown. */
typedef struct sl_info {
    /* What the log names: "Redis 7.0.15", or "Valkey 8.1.1" where
     * server_name says valkey (its valkey_version). */
    const char *server;
    /* redis_version, which Valkey sets to the Redis it is compatible
     * with (7.2.4 for Valkey 8): what the rules go by. */
    const char *version;
    int major, minor, patch; /* of version */
    int cluster;             /* cluster_enabled: 1, 0, -1 unknown */
    apr_int64_t maxmemory;   /* bytes, 0 none, -1 unknown */
    const char *policy;      /* maxmemory_policy, NULL unknown */
} sl_info_t;

/* Reads INFO's text (lines "field:value", LF or CRLF). NULL, or why it is
 * not INFO's text: no redis_version, or one that is not a version. */
const char *sl_info_parse(apr_pool_t *p, const char *text, apr_size_t len,
                          sl_info_t *out);

/* The oldest Redis that runs the scripts: TIME before a write needs
 * redis.replicate_commands(), which 3.2 introduced. */
#define SL_PREREQ_MAJOR 3
#define SL_PREREQ_MINOR 2

#define SL_PREREQ_ERROR   1 /* decisions fail or go wrong */
#define SL_PREREQ_WARNING 2 /* budgets may be lost, or cost more */

typedef struct sl_prereq {
    int level;        /* SL_PREREQ_* */
    const char *text; /* one line naming the store and what to change */
} sl_prereq_t;

#define SL_PREREQ_MAX 3

/* The problems of node (host:port or a socket path) of the store at url, at
 * most SL_PREREQ_MAX, in out; returns how many. */
int sl_prereq_problems(apr_pool_t *p, const sl_info_t *info,
                       const sl_store_url_t *url, const char *node,
                       sl_prereq_t *out);

/* Which nodes were asked in this generation, in shared memory kept across
 * graceful restarts (as the breakers are): one process asks each node of
 * each store once per generation, whichever child connects first. */
typedef struct sl_prereqs sl_prereqs_t;

#define SL_PREREQ_CELLS 256

/* The table's size, and the table in zeroed memory of that size. */
apr_size_t sl_prereqs_size(void);
sl_prereqs_t *sl_prereqs_attach(void *base);

/* 1 when the caller is to ask node of the store shown as display in
 * httpd generation config_gen (and no other process is); 0 when it was asked,
 * or when the table is full. */
int sl_prereqs_claim(sl_prereqs_t *t, const char *display, const char *node,
                     apr_uint32_t config_gen);

/* The claimed question got no answer: the next new connection asks. */
void sl_prereqs_release(sl_prereqs_t *t, const char *display, const char *node,
                        apr_uint32_t config_gen);

#endif
