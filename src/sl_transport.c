/* SPDX-License-Identifier: Apache-2.0 */
/* A connection's round trips over a byte stream (sl_transport_ops_t):
 * commands written at once, replies read in order with hiredis' reader
 * (or a take function first), every read within the round trip's
 * deadline. The socket's stream is sl_socket.c's. */
#include "sl_transport.h"

#include <apr_strings.h>

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Allocated with malloc, like the pool's connections: they come and go for
 * the life of a child. The bytes go through ops (the socket's or a
 * test's); the round trip's deadline and the replies are kept here. */
struct sl_transport {
    const sl_transport_ops_t *ops;
    void *io;
    redisReader *reader;
    apr_interval_time_t command_timeout;
    apr_time_t deadline; /* of the current round trip */
    char err[160];
};

apr_time_t sl_transport_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (apr_time_t) ts.tv_sec * APR_USEC_PER_SEC + ts.tv_nsec / 1000;
}

static apr_status_t sl_transport_fail(sl_transport_t *t, apr_status_t rv,
                                      const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    apr_vsnprintf(t->err, sizeof(t->err), fmt, ap);
    va_end(ap);
    return rv;
}

apr_status_t sl_transport_open(const sl_transport_ops_t *ops,
                               const sl_transport_to_t *to,
                               apr_interval_time_t connect_timeout,
                               sl_transport_t **out, char *err,
                               apr_size_t errlen)
{
    apr_time_t deadline = sl_transport_now() + connect_timeout;
    sl_transport_t *t;
    apr_status_t rv;

    *out = NULL;
    if (!(t = calloc(1, sizeof(*t))) || !(t->reader = redisReaderCreate())) {
        free(t);
        apr_snprintf(err, errlen, "no memory");
        return APR_ENOMEM;
    }
    t->ops = ops ? ops : &sl_transport_socket;
    t->command_timeout = to->command_timeout;
    rv = t->ops->connect(t->ops->ctx, to, deadline, &t->io, err, errlen);
    if (rv != APR_SUCCESS) {
        t->io = NULL;
        sl_transport_close(t);
        return rv;
    }
    *out = t;
    return APR_SUCCESS;
}

apr_status_t sl_transport_connect(const char *host, int port, const char *path,
                                  sl_tls_t *tls,
                                  apr_interval_time_t connect_timeout,
                                  apr_interval_time_t command_timeout,
                                  sl_transport_t **out, char *err,
                                  apr_size_t errlen)
{
    sl_transport_to_t to = {host, port, path, tls, command_timeout};

    return sl_transport_open(NULL, &to, connect_timeout, out, err, errlen);
}

apr_status_t sl_transport_send(sl_transport_t *t, const char *buf,
                               apr_size_t len)
{
    t->deadline = sl_transport_now() + t->command_timeout;
    return t->ops->write(t->io, buf, len, t->deadline, t->err, sizeof(t->err));
}

/* Reads what has arrived into the reply reader; take (if any) is offered
 * it first when the reader holds nothing, and *taken says it took a whole
 * reply from the front. */
static apr_status_t sl_fill(sl_transport_t *t, sl_transport_take_fn *take,
                            void *ctx, int *taken)
{
    redisReader *rd = t->reader;
    char buf[16384];
    const char *from = buf;
    apr_size_t n = 0;
    apr_status_t rv;

    rv = t->ops->read(t->io, buf, sizeof(buf), &n, t->deadline, t->err,
                      sizeof(t->err));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (take && rd->ridx == -1 && rd->pos == rd->len) {
        apr_size_t used = take(ctx, buf, n);
        if (used) {
            *taken = 1;
            from += used;
            n -= used;
        }
    }
    if (n && redisReaderFeed(rd, from, n) != REDIS_OK) {
        return sl_transport_fail(t, APR_EGENERAL, "reply: %s", rd->errstr);
    }
    return APR_SUCCESS;
}

apr_status_t sl_transport_take(sl_transport_t *t, sl_transport_take_fn *take,
                               void *ctx, redisReply **reply, int *taken)
{
    void *r = NULL;
    apr_status_t rv;

    *reply = NULL;
    *taken = 0;
    for (;;) {
        /* Only with something to read: a reader that looked at an empty
         * buffer waits for a reply's first byte (ridx 0), and would not
         * pass the next bytes to take. */
        if (t->reader->ridx != -1 || t->reader->pos < t->reader->len) {
            if (redisReaderGetReply(t->reader, &r) != REDIS_OK) {
                return sl_transport_fail(t, APR_EGENERAL, "reply: %s",
                                         t->reader->errstr);
            }
            if (r) {
                *reply = r;
                return APR_SUCCESS;
            }
        }
        if ((rv = sl_fill(t, take, ctx, taken)) != APR_SUCCESS || *taken) {
            return rv;
        }
    }
}

apr_status_t sl_transport_reply(sl_transport_t *t, redisReply **reply)
{
    int taken;

    return sl_transport_take(t, NULL, NULL, reply, &taken);
}

redisReader *sl_transport_reader(sl_transport_t *t)
{
    return t->reader;
}

apr_status_t sl_transport_vcommand(sl_transport_t *t, redisReply **reply,
                                   const char *fmt, va_list ap)
{
    char *cmd = NULL;
    int len;
    apr_status_t rv;

    *reply = NULL;
    len = redisvFormatCommand(&cmd, fmt, ap);
    if (len < 0) {
        return sl_transport_fail(t, APR_ENOMEM, "cannot format a command");
    }
    rv = sl_transport_send(t, cmd, (apr_size_t) len);
    free(cmd);
    return rv == APR_SUCCESS ? sl_transport_reply(t, reply) : rv;
}

apr_status_t sl_transport_command(sl_transport_t *t, redisReply **reply,
                                  const char *fmt, ...)
{
    apr_status_t rv;
    va_list ap;

    va_start(ap, fmt);
    rv = sl_transport_vcommand(t, reply, fmt, ap);
    va_end(ap);
    return rv;
}

const char *sl_transport_error(const sl_transport_t *t)
{
    return t->err;
}

void sl_transport_close(sl_transport_t *t)
{
    if (!t) {
        return;
    }
    if (t->io) {
        t->ops->close(t->io);
        t->io = NULL;
    }
    if (t->reader) {
        redisReaderFree(t->reader);
        t->reader = NULL;
    }
    free(t);
}
