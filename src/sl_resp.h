/* SPDX-License-Identifier: Apache-2.0 */
/* The Redis protocol as the store's files share it, without I/O: commands
 * written in RESP, what a reply (hiredis' redisReply) means for the
 * request, the script's integers, and the error replies' meaning and
 * text. sl_conn.c, sl_pipe.c, sl_way.c and sl_redis.c all call down into
 * it; it calls none of them. */
#ifndef SL_RESP_H
#define SL_RESP_H

#include "sl_reply.h"

#include <apr_pools.h>

#include <hiredis/hiredis.h>

/* The command in RESP, in p (it lives as long as its request). */
const char *sl_resp_format(apr_pool_t *p, int argc, const char **argv,
                           const size_t *argvlen, apr_size_t *len);

/* A command written piece by piece into one buffer that the caller sized
 * with these bounds: the argument count, an argument of n bytes, a
 * decimal integer. Each returns the end of what it wrote. The bytes are
 * sl_resp_format's for the same arguments. */
#define SL_RESP_COUNT_MAX  16
#define SL_RESP_ARG_MAX(n) (25 + (apr_size_t) (n))
#define SL_RESP_INT_MAX    27
char *sl_resp_count(char *o, int argc);
char *sl_resp_arg(char *o, const char *s, apr_size_t n);
char *sl_resp_int(char *o, apr_int64_t v);

/* What a round trip's outcome asks of the request. One reading for the
 * pipelined and the direct trip. rv: the trip's status; stale: it failed
 * on a pooled connection the server had closed. */
#define SL_REPLY_OK       0 /* the script's answer */
#define SL_REPLY_NOSCRIPT 1 /* load the script, run again */
#define SL_REPLY_MOVED    2 /* the slot lives elsewhere now */
#define SL_REPLY_ASK      3 /* this once elsewhere, with ASKING */
#define SL_REPLY_RETRY    4 /* again on a fresh connection */
#define SL_REPLY_TRYAGAIN 5 /* the slot is migrating: again shortly */
#define SL_REPLY_REROUTE  6 /* not run: load the map, try its master */
#define SL_REPLY_FAILED   7 /* the node did not answer */
#define SL_REPLY_FATAL    8 /* an error reply */
int sl_reply_classify(apr_status_t rv, int stale, const redisReply *r);

/* An array reply's integers read straight into v by a reader that
 * sl_reader_init made (no redisReply per element: the decision's reply is
 * read this way). */
typedef struct sl_ints {
    long long *v;
    apr_size_t cap; /* v's room: a longer array is read as a redisReply */
    apr_size_t n;   /* the array's elements */
    long bad;       /* the first element that is no integer; -1: none */
} sl_ints_t;

/* What the reader hands back for an array read into its target: of type
 * REDIS_REPLY_ARRAY (sl_reply_classify reads it as an answer), nothing
 * else; never freed. */
extern const redisReply sl_reply_ints;

/* A reader's object functions and their state (its privdata): hiredis'
 * own, but for a top-level array read while target is set. */
typedef struct sl_reader {
    redisReplyObjectFunctions *dflt;
    sl_ints_t *target;
} sl_reader_t;
void sl_reader_init(sl_reader_t *rd, redisReader *reader);
/* An sl_transport_take_fn (ctx: an sl_ints_t): the array of integers at
 * the front of buf, when it is one whole reply that hiredis would read
 * the same (anything else, even a valid one, is left to the reader). */
apr_size_t sl_resp_take_ints(void *ctx, const char *buf, apr_size_t len);
/* freeReplyObject, but for sl_reply_ints. */
void sl_reply_free(redisReply *r);

/* The script's integers (*v, in p), checked one by one; NULL, or why
 * not. */
const char *sl_reply_integers(apr_pool_t *p, const redisReply *r,
                              long long **v);
/* The same of a reply read with ints as the reader's target: from ints
 * when r is sl_reply_ints, else from r; *nv of them. */
const char *sl_reply_values(apr_pool_t *p, const redisReply *r,
                            const sl_ints_t *ints, const long long **v,
                            apr_size_t *nv);
/* The check script's answer for n budgets as *d; NULL, or why not. ints:
 * the reader's target for r, or NULL. */
const char *sl_reply_decision(apr_pool_t *p, const redisReply *r,
                              const sl_ints_t *ints, int n, sl_decision_t *d);

/* READONLY or MASTERDOWN (or, before Redis 7, the script's error that
 * quotes READONLY): the server is no master (now), the call did not run. */
int sl_error_demoted(const char *msg);
/* 1 for an error after which the connection may serve the next request. */
int sl_error_usable(const char *msg);
/* An error reply's text as the log shows it, in p. */
const char *sl_error_text(apr_pool_t *p, const char *msg);

#endif
