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

const char *sl_reply_decision(apr_pool_t *p, const redisReply *r, int n,
                              sl_decision_t *d)
{
    long long *v;
    const char *err = sl_reply_integers(p, r, &v);

    return err ? err : sl_decision_parse(p, v, r->elements, n, d);
}

static char *sl_resp_header(char *o, char type, apr_size_t n)
{
    char digits[24];
    int k = 0;

    *o++ = type;
    do {
        digits[k++] = (char) ('0' + n % 10);
        n /= 10;
    } while (n);
    while (k) {
        *o++ = digits[--k];
    }
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
    char digits[24];
    apr_uint64_t u = v < 0 ? 0 - (apr_uint64_t) v : (apr_uint64_t) v;
    int k = 0;

    do {
        digits[k++] = (char) ('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) {
        digits[k++] = '-';
    }
    o = sl_resp_header(o, '$', (apr_size_t) k);
    while (k) {
        *o++ = digits[--k];
    }
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
