/* SPDX-License-Identifier: Apache-2.0 */
/* The module's own connection to a Redis node, over TCP, a unix socket or
 * TLS (OpenSSL): Debian's hiredis 0.14 has no TLS and resolves names with
 * no time limit. hiredis still encodes the commands (redisFormatCommand*)
 * and decodes the replies (redisReader), so pipelining works as before:
 * several formatted commands in one send, their replies read in order.
 *
 * Every step is bounded: the connect timeout covers name resolution, the
 * TCP connect and the TLS handshake together; the command timeout covers a
 * whole round trip, from the start of a send to the last reply read. APR
 * only (and OpenSSL, hiredis), no httpd.h: tested on its own in tests/.
 *
 * Two files: sl_transport.c reads replies over a byte stream given as
 * operations (sl_transport_ops_t), sl_socket.c is the real stream, and
 * tests/unit/sl_pipe_test.c scripts one to test the connections and the
 * pipeline above it without a server. */
#ifndef SL_TRANSPORT_H
#define SL_TRANSPORT_H

#include <stdarg.h>

#include <apr_pools.h>
#include <apr_time.h>

#include <hiredis/hiredis.h>

/* The reply reader (redisReaderCreate and its kin) as the module uses it:
 * hiredis 0.12 is the oldest tested (make compat). */
#if HIREDIS_MAJOR == 0 && HIREDIS_MINOR < 12
#error "mod_slidinglimit needs hiredis 0.12 or later"
#endif

typedef struct sl_tls sl_tls_t;
typedef struct sl_transport sl_transport_t;

/* Configuration checks, as root at start-up: NULL, or an error that names
 * the file and OpenSSL's reason. */
const char *sl_tls_check_ca(apr_pool_t *p, const char *path);
const char *sl_tls_check_cert(apr_pool_t *p, const char *cert, const char *key);

/* One client context for the TLS stores of a server: ca NULL trusts the
 * system's store; cert/key NULL sends no client certificate; verify 0
 * accepts any certificate for any name. Freed with p. */
const char *sl_tls_create(apr_pool_t *p, const char *ca, const char *cert,
                          const char *key, int verify, sl_tls_t **out);

/* Where a connection goes: host:port (path NULL), or the unix socket
 * path; tls NULL for plaintext. */
typedef struct sl_transport_to {
    const char *host;
    int port;
    const char *path;
    sl_tls_t *tls;
    apr_interval_time_t command_timeout;
} sl_transport_to_t;

/* The byte stream under a transport, as operations: the socket's
 * (sl_transport_socket: TCP, a unix socket or TLS) or a test's scripted
 * one, so that the reply reading above it, the connection and the
 * pipeline are tested without a server. Each is bounded by deadline and
 * says why it failed in err: APR_TIMEUP, APR_ECONNRESET (closed by the
 * server), APR_EGENERAL (TLS or protocol), APR_ECONNREFUSED (connect). */
typedef struct sl_transport_ops {
    /* A connection to where, in *io; ctx is the table's. */
    apr_status_t (*connect)(void *ctx, const sl_transport_to_t *to,
                            apr_time_t deadline, void **io, char *err,
                            apr_size_t errlen);
    /* All of buf, written: a round trip starts. */
    apr_status_t (*write)(void *io, const char *buf, apr_size_t len,
                          apr_time_t deadline, char *err, apr_size_t errlen);
    /* What has arrived, at least one byte and at most cap, in *n. */
    apr_status_t (*read)(void *io, char *buf, apr_size_t cap, apr_size_t *n,
                         apr_time_t deadline, char *err, apr_size_t errlen);
    void (*close)(void *io);
    void *ctx;
} sl_transport_ops_t;

/* sl_socket.c's */
extern const sl_transport_ops_t sl_transport_socket;

/* The deadlines' clock (CLOCK_MONOTONIC), in microseconds. */
apr_time_t sl_transport_now(void);

/* Connects through ops (NULL: the socket's) within connect_timeout; the
 * deadlines are CLOCK_MONOTONIC's, in microseconds. On failure *out is
 * NULL and err says why. */
apr_status_t sl_transport_open(const sl_transport_ops_t *ops,
                               const sl_transport_to_t *to,
                               apr_interval_time_t connect_timeout,
                               sl_transport_t **out, char *err,
                               apr_size_t errlen);

/* The socket's: connects to host:port (path NULL), or to the unix socket
 * path; tls NULL for plaintext. On failure *out is NULL and err says why (for
 * the log: "connect timed out", "certificate verify failed: ...", "hostname
 * mismatch: ..."). APR_TIMEUP: a timeout; APR_ECONNREFUSED: no server
 * there (or no address for the name); APR_EGENERAL: TLS refused. */
apr_status_t sl_transport_connect(const char *host, int port, const char *path,
                                  sl_tls_t *tls,
                                  apr_interval_time_t connect_timeout,
                                  apr_interval_time_t command_timeout,
                                  sl_transport_t **out, char *err,
                                  apr_size_t errlen);

/* Writes all of buf (one or several formatted commands) and starts the
 * round trip's deadline. */
apr_status_t sl_transport_send(sl_transport_t *t, const char *buf,
                               apr_size_t len);

/* The next reply (freeReplyObject it), within the round trip's deadline.
 * APR_TIMEUP, APR_ECONNRESET (closed by the server) or APR_EGENERAL (TLS
 * or protocol error); the transport is unusable after any failure. */
apr_status_t sl_transport_reply(sl_transport_t *t, redisReply **reply);

/* The same, but the bytes received are offered to take first whenever the
 * reader holds none: take returns the length of the one whole reply it
 * took from their front (0: none; the reader reads them all). *taken
 * says it did, and *reply is then NULL; what follows the reply goes to
 * the reader. */
typedef apr_size_t sl_transport_take_fn(void *ctx, const char *buf,
                                        apr_size_t len);
apr_status_t sl_transport_take(sl_transport_t *t, sl_transport_take_fn *take,
                               void *ctx, redisReply **reply, int *taken);

/* The transport's reply reader, for the caller's object functions
 * (sl_reader_init). */
redisReader *sl_transport_reader(sl_transport_t *t);

/* Formats, sends and reads one command (connection setup, Sentinel). */
apr_status_t sl_transport_command(sl_transport_t *t, redisReply **reply,
                                  const char *fmt, ...);
apr_status_t sl_transport_vcommand(sl_transport_t *t, redisReply **reply,
                                   const char *fmt, va_list ap);

/* Why the last call failed. */
const char *sl_transport_error(const sl_transport_t *t);

void sl_transport_close(sl_transport_t *t);

#endif
