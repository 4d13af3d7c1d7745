/* SPDX-License-Identifier: Apache-2.0 */
/* The Redis protocol without I/O (src/sl_resp.h): RESP out, replies in.
 * Pure: APR and hiredis' reply type only, so that the unit tests read
 * the same replies the store does. */
#include "sl_resp.h"

#include <apr_strings.h>

#include <string.h>

static int sl_prefix(const char *msg, const char *word)
{
    size_t n = strlen(word);

    return !strncmp(msg, word, n) && (msg[n] == ' ' || !msg[n]);
}

int sl_reply_classify(apr_status_t rv, int stale, const redisReply *r)
{
    const char *msg;

    if (rv != APR_SUCCESS) {
        return stale ? SL_REPLY_RETRY : SL_REPLY_FAILED;
    }
    if (r->type != REDIS_REPLY_ERROR) {
        return SL_REPLY_OK;
    }
    msg = r->str ? r->str : "";
    if (sl_prefix(msg, "NOSCRIPT")) {
        return SL_REPLY_NOSCRIPT;
    }
    if (sl_prefix(msg, "MOVED")) {
        return SL_REPLY_MOVED;
    }
    if (sl_prefix(msg, "ASK")) {
        return SL_REPLY_ASK;
    }
    if (sl_prefix(msg, "TRYAGAIN")) {
        return SL_REPLY_TRYAGAIN;
    }
    /* Not run: the map is out of date (a demoted master says READONLY) or
     * the cluster is between states. */
    if (sl_error_demoted(msg) || sl_prefix(msg, "CLUSTERDOWN") ||
        sl_prefix(msg, "LOADING")) {
        return SL_REPLY_REROUTE;
    }
    return SL_REPLY_FATAL;
}

int sl_error_demoted(const char *msg)
{
    static const char script[] = "ERR Error running script ";

    if (!msg) {
        return 0;
    }
    if (sl_prefix(msg, "READONLY") || sl_prefix(msg, "MASTERDOWN")) {
        return 1;
    }
    /* Before Redis 7 a replica runs the script, and its first write fails
     * inside it: the reply is the script's error, which quotes the write's
     * "-READONLY ..." after the script's place. Nothing was written. */
    if (strncmp(msg, script, sizeof(script) - 1) != 0) {
        return 0;
    }
    return strstr(msg, ": -READONLY You can't write against a read only ") !=
           NULL;
}

/* Errors that leave the connection fine: the request's second trip
 * reloads the script or follows the redirection. Any other error may be
 * the connection's own state (NOAUTH after a restart with a password,
 * READONLY after a failover, LOADING): a new connection starts over, a
 * pooled one would fail every request it serves. */
int sl_error_usable(const char *msg)
{
    return !strncmp(msg, "NOSCRIPT", 8) || !strncmp(msg, "MOVED ", 6) ||
           !strncmp(msg, "ASK ", 4);
}

/* A store's error as the log shows it. Redis 6 and later close a
 * connection that sends a long command before AUTH with "Protocol error:
 * unauthenticated multibulk length", which says nothing of a password. */
const char *sl_error_text(apr_pool_t *p, const char *msg)
{
    if (!strncmp(msg, "NOAUTH", 6) || strstr(msg, "unauthenticated")) {
        return apr_pstrcat(p, msg,
                           " (the store requires authentication: give "
                           "the password, or user:password, in "
                           "SlidingLimitStore)",
                           NULL);
    }
    return apr_pstrdup(p, msg);
}

/* The script's integers, checked one by one. */
const char *sl_reply_integers(apr_pool_t *p, const redisReply *r, long long **v)
{
    size_t i;

    if (r->type != REDIS_REPLY_ARRAY) {
        return apr_psprintf(p, "unexpected reply type %d", r->type);
    }
    *v = apr_palloc(p, sizeof(**v) * (r->elements + 1));
    for (i = 0; i < r->elements; i++) {
        if (r->element[i]->type != REDIS_REPLY_INTEGER) {
            return apr_psprintf(p, "reply element %lu is not an integer",
                                (unsigned long) i);
        }
        (*v)[i] = r->element[i]->integer;
    }
    return NULL;
}

const char *sl_reply_values(apr_pool_t *p, const redisReply *r,
                            const sl_ints_t *ints, const long long **v,
                            apr_size_t *nv)
{
    long long *values;
    const char *err;

    if (r == &sl_reply_ints) {
        if (ints->bad >= 0) {
            return apr_psprintf(p, "reply element %lu is not an integer",
                                (unsigned long) ints->bad);
        }
        *v = ints->v;
        *nv = ints->n;
        return NULL;
    }
    if ((err = sl_reply_integers(p, r, &values)) != NULL) {
        return err;
    }
    *v = values;
    *nv = r->elements;
    return NULL;
}

const char *sl_reply_decision(apr_pool_t *p, const redisReply *r,
                              const sl_ints_t *ints, int n, sl_decision_t *d)
{
    const long long *v = NULL;
    apr_size_t nv = 0;
    const char *err = sl_reply_values(p, r, ints, &v, &nv);

    return err ? err : sl_decision_parse(p, v, nv, n, d);
}

/* The reader's object functions. hiredis makes a redisReply (two callocs
 * and a free each) for the array and for every one of its integers: a
 * third of the request path's instructions with Redis went to reading
 * five integers. An array read while the reader has a target becomes
 * sl_reply_ints, its elements go into the target's v (anything nested is
 * only noted as not an integer), and every other reply is hiredis' own. */
const redisReply sl_reply_ints = {.type = REDIS_REPLY_ARRAY};

#define SL_INTS ((void *) &sl_reply_ints)

/* 1: task is an element of an array read into the target; 2: deeper. */
static int sl_in_ints(const redisReadTask *task)
{
    if (!task->parent || task->parent->obj != SL_INTS) {
        return 0;
    }
    return task->parent->parent ? 2 : 1;
}

static void *sl_ints_other(const redisReadTask *task)
{
    sl_ints_t *ints = ((sl_reader_t *) task->privdata)->target;

    if (sl_in_ints(task) == 1 && ints->bad < 0) {
        ints->bad = task->idx;
    }
    return SL_INTS;
}

static void *sl_reader_string(const redisReadTask *task, char *str, size_t len)
{
    sl_reader_t *rd = task->privdata;

    return sl_in_ints(task) ? sl_ints_other(task)
                            : rd->dflt->createString(task, str, len);
}

#if HIREDIS_MAJOR >= 1
typedef size_t sl_reader_len_t;
#else
typedef int sl_reader_len_t;
#endif

static void *sl_reader_array(const redisReadTask *task, sl_reader_len_t len)
{
    sl_reader_t *rd = task->privdata;

    /* A longer array (or hiredis' -1) is hiredis' own. */
    if (!task->parent && rd->target && (apr_size_t) len <= rd->target->cap) {
        rd->target->n = (apr_size_t) len;
        rd->target->bad = -1;
        return SL_INTS;
    }
    return sl_in_ints(task) ? sl_ints_other(task)
                            : rd->dflt->createArray(task, len);
}

static void *sl_reader_integer(const redisReadTask *task, long long value)
{
    sl_reader_t *rd = task->privdata;

    switch (sl_in_ints(task)) {
    case 0:
        return rd->dflt->createInteger(task, value);
    case 1:
        rd->target->v[task->idx] = value;
    }
    return SL_INTS;
}

static void *sl_reader_nil(const redisReadTask *task)
{
    sl_reader_t *rd = task->privdata;

    return sl_in_ints(task) ? sl_ints_other(task) : rd->dflt->createNil(task);
}

/* A count ("*N") or an integer (":N") line at p, in the spelling Redis
 * writes: no sign but '-', no leading zero, at most 18 digits. Returns its
 * end, or NULL. */
static APR_INLINE const char *sl_take_number(const char *p, const char *end,
                                             char type, long long *out)
{
    const char *digits;
    apr_uint64_t u = 0;
    int neg;

    if (end - p < 4 || p[0] != type) {
        return NULL;
    }
    neg = p[1] == '-';
    for (p = digits = p + 1 + neg; p < end && (unsigned int) (*p - '0') <= 9;
         p++) {
        u = u * 10 + (apr_uint64_t) (*p - '0');
    }
    if (p == digits || p - digits > 18 || (*digits == '0' && p - digits > 1) ||
        (neg && !u) || end - p < 2 || p[0] != '\r' || p[1] != '\n') {
        return NULL;
    }
    *out = neg ? -(long long) u : (long long) u;
    return p + 2;
}

/* hiredis' reader spends more on the five integers of a decision than the
 * rest of the trip: when the bytes that arrive start with the reply, they
 * are read here. */
apr_size_t sl_resp_take_ints(void *ctx, const char *buf, apr_size_t len)
{
    sl_ints_t *ints = ctx;
    const char *p = buf, *end = buf + len;
    long long n, i;

    if (!(p = sl_take_number(p, end, '*', &n)) || n < 0 ||
        (apr_uint64_t) n > ints->cap) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (!(p = sl_take_number(p, end, ':', &ints->v[i]))) {
            return 0;
        }
    }
    ints->n = (apr_size_t) n;
    ints->bad = -1;
    return (apr_size_t) (p - buf);
}

void sl_reply_free(redisReply *r)
{
    if (r != &sl_reply_ints) {
        freeReplyObject(r);
    }
}

/* No privdata here: hiredis' own is freeReplyObject. */
static void sl_reader_free(void *obj)
{
    sl_reply_free(obj);
}

static const redisReplyObjectFunctions sl_reader_fns = {
    .createString = sl_reader_string,
    .createArray = sl_reader_array,
    .createInteger = sl_reader_integer,
    .createNil = sl_reader_nil,
    .freeObject = sl_reader_free,
};

void sl_reader_init(sl_reader_t *rd, redisReader *reader)
{
    rd->target = NULL;
    rd->dflt = reader->fn;
    /* A reader that makes no objects (none in any hiredis yet) is left
     * alone. */
    if (rd->dflt && rd->dflt->createString && rd->dflt->createArray &&
        rd->dflt->createInteger && rd->dflt->createNil) {
        reader->fn = (redisReplyObjectFunctions *) &sl_reader_fns;
        reader->privdata = rd;
    }
}

/* Decimal numbers two digits at a time, written from the end: a decision
 * writes a dozen of them. */
static const char sl_pairs[] = "0001020304050607080910111213141516171819"
                               "2021222324252627282930313233343536373839"
                               "4041424344454647484950515253545556575859"
                               "6061626364656667686970717273747576777879"
                               "8081828384858687888990919293949596979899";

static int sl_ndigits(apr_uint64_t u)
{
    apr_uint64_t p = 10;
    int k = 1;

    /* 10^19 is the last power of ten below 2^64. */
    while (k < 20 && u >= p) {
        p *= 10;
        k++;
    }
    return k;
}

/* u's k digits (sl_ndigits) at o; returns their end. */
static char *sl_decimal(char *o, apr_uint64_t u, int k)
{
    char *e = o + k;

    while (u >= 100) {
        unsigned int d = (unsigned int) (u % 100) * 2;
        u /= 100;
        *--e = sl_pairs[d + 1];
        *--e = sl_pairs[d];
    }
    if (u >= 10) {
        unsigned int d = (unsigned int) u * 2;
        *--e = sl_pairs[d + 1];
        *--e = sl_pairs[d];
    }
    else {
        *--e = (char) ('0' + u);
    }
    return o + k;
}

static char *sl_resp_header(char *o, char type, apr_size_t n)
{
    *o++ = type;
    o = sl_decimal(o, n, sl_ndigits(n));
    *o++ = '\r';
    *o++ = '\n';
    return o;
}

char *sl_resp_count(char *o, int argc)
{
    return sl_resp_header(o, '*', (apr_size_t) argc);
}

char *sl_resp_arg(char *o, const char *s, apr_size_t n)
{
    o = sl_resp_header(o, '$', n);
    memcpy(o, s, n);
    o += n;
    *o++ = '\r';
    *o++ = '\n';
    return o;
}

/* As apr_off_t_toa writes it, without a pool or a second copy: the
 * script's numbers are most of a decision's arguments. */
char *sl_resp_int(char *o, apr_int64_t v)
{
    apr_uint64_t u = v < 0 ? 0 - (apr_uint64_t) v : (apr_uint64_t) v;
    int k = sl_ndigits(u), len = k + (v < 0);

    *o++ = '$';
    o = sl_decimal(o, (apr_uint64_t) len, len < 10 ? 1 : 2);
    *o++ = '\r';
    *o++ = '\n';
    if (v < 0) {
        *o++ = '-';
    }
    o = sl_decimal(o, u, k);
    *o++ = '\r';
    *o++ = '\n';
    return o;
}

/* The command in RESP, as redisFormatCommandArgv makes it, but in the
 * request pool rather than malloc'd: it lives as long as its request. */
const char *sl_resp_format(apr_pool_t *p, int argc, const char **argv,
                           const size_t *argvlen, apr_size_t *len)
{
    apr_size_t total = SL_RESP_COUNT_MAX;
    char *buf, *o;
    int i;

    for (i = 0; i < argc; i++) {
        total += SL_RESP_ARG_MAX(argvlen[i]);
    }
    buf = o = apr_palloc(p, total);
    o = sl_resp_count(o, argc);
    for (i = 0; i < argc; i++) {
        o = sl_resp_arg(o, argv[i], argvlen[i]);
    }
    *len = (apr_size_t) (o - buf);
    return buf;
}
