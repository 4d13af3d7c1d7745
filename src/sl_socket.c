/* SPDX-License-Identifier: Apache-2.0 */
/* The socket's byte stream under a transport (sl_transport_socket): TCP,
 * a unix socket or TLS (OpenSSL), every step bounded by its deadline, names
 * resolved with a bounded wait; and the TLS client contexts. */
#include "sl_transport.h"

#include <apr_strings.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

struct sl_tls {
    SSL_CTX *ctx;
    int verify;
};

/* The socket's state (sl_transport_socket's io). */
typedef struct sl_sock {
    int fd;
    SSL *ssl;
    /* Plaintext: the socket's SO_RCVTIMEO (0: reads never block), and
     * whether the round trip's first read may block (sl_blocking_reads). */
    apr_interval_time_t rcvtimeo;
    int block_once;
} sl_sock_t;

/* Waits until fd is ready for events or the deadline passes: 1 ready, 0
 * timed out, -1 error. */
static int sl_wait(int fd, short events, apr_time_t deadline)
{
    for (;;) {
        struct pollfd pfd = {fd, events, 0};
        apr_time_t left = deadline - sl_transport_now();
        int rc;

        if (left <= 0) {
            return 0;
        }
        rc = poll(&pfd, 1, (int) ((left + 999) / 1000));
        if (rc > 0) {
            return 1;
        }
        if (rc == 0) {
            return 0;
        }
        if (errno != EINTR) {
            return -1;
        }
    }
}

/* Name resolution in a thread of its own, so that the caller waits at most
 * until its deadline: getaddrinfo has no timeout, and a resolver that does
 * not answer would hold the request for the resolver's own retries
 * (seconds). The last of the two to finish frees the shared record. */
typedef struct sl_lookup {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int refs, done, rc;
    char *host;
    char port[8];
    struct addrinfo *res;
} sl_lookup_t;

static void sl_lookup_unref(sl_lookup_t *l)
{
    int last;

    pthread_mutex_lock(&l->lock);
    last = --l->refs == 0;
    pthread_mutex_unlock(&l->lock);
    if (last) {
        if (l->res) {
            freeaddrinfo(l->res);
        }
        pthread_cond_destroy(&l->cond);
        pthread_mutex_destroy(&l->lock);
        free(l->host);
        free(l);
    }
}

static void *sl_lookup_run(void *data)
{
    sl_lookup_t *l = data;
    struct addrinfo hints, *res = NULL;
    int rc;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    rc = getaddrinfo(l->host, l->port, &hints, &res);
    pthread_mutex_lock(&l->lock);
    l->rc = rc;
    l->res = res;
    l->done = 1;
    pthread_cond_signal(&l->cond);
    pthread_mutex_unlock(&l->lock);
    sl_lookup_unref(l);
    return NULL;
}

/* 0 and *res, or an EAI_* code; EAI_AGAIN also when the deadline passed. */
static int sl_resolve(const char *host, int port, apr_time_t deadline,
                      struct addrinfo **res)
{
    struct addrinfo hints;
    char service[8];
    sl_lookup_t *l;
    pthread_condattr_t ca;
    pthread_attr_t ta;
    pthread_t tid;
    struct timespec until;
    int rc;

    /* An address needs no resolver. */
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    snprintf(service, sizeof(service), "%d", port);
    rc = getaddrinfo(host, service, &hints, res);
    if (rc != EAI_NONAME) {
        return rc;
    }
    if (!(l = calloc(1, sizeof(*l))) || !(l->host = strdup(host))) {
        free(l);
        return EAI_MEMORY;
    }
    memcpy(l->port, service, sizeof(service));
    l->refs = 2;
    pthread_mutex_init(&l->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_attr_init(&ta);
    pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&tid, &ta, sl_lookup_run, l) != 0) {
        pthread_attr_destroy(&ta);
        l->refs = 1;
        sl_lookup_unref(l);
        return EAI_SYSTEM;
    }
    pthread_attr_destroy(&ta);
    until.tv_sec = (time_t) (deadline / APR_USEC_PER_SEC);
    until.tv_nsec = (long) (deadline % APR_USEC_PER_SEC) * 1000;
    pthread_mutex_lock(&l->lock);
    while (!l->done &&
           pthread_cond_timedwait(&l->cond, &l->lock, &until) != ETIMEDOUT) {
    }
    rc = l->done ? l->rc : EAI_AGAIN;
    *res = l->done ? l->res : NULL;
    l->res = NULL;
    pthread_mutex_unlock(&l->lock);
    sl_lookup_unref(l);
    return rc;
}

/* Connects fd to addr before the deadline: 0, or an errno. */
static int sl_connect_fd(int fd, const struct sockaddr *addr, socklen_t len,
                         apr_time_t deadline)
{
    int soerr = 0;
    socklen_t sl = sizeof(soerr);
    int rc;

    if (connect(fd, addr, len) == 0) {
        return 0;
    }
    if (errno != EINPROGRESS && errno != EAGAIN) {
        return errno;
    }
    rc = sl_wait(fd, POLLOUT, deadline);
    if (rc <= 0) {
        return rc == 0 ? ETIMEDOUT : errno;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0) {
        return errno;
    }
    return soerr;
}

static apr_status_t sl_connect_tcp(const char *host, int port,
                                   apr_time_t deadline, int *out, char *err,
                                   apr_size_t errlen)
{
    struct addrinfo *res = NULL, *ai;
    int rc, last = ECONNREFUSED, one = 1;

    rc = sl_resolve(host, port, deadline, &res);
    if (rc != 0) {
        apr_snprintf(err, errlen, "cannot resolve %s: %s", host,
                     rc == EAI_AGAIN && sl_transport_now() >= deadline
                         ? "timed out"
                         : gai_strerror(rc));
        return rc == EAI_AGAIN && sl_transport_now() >= deadline
                   ? APR_TIMEUP
                   : APR_ECONNREFUSED;
    }
    for (ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family,
                        ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                        ai->ai_protocol);
        if (fd < 0) {
            last = errno;
            continue;
        }
        last = sl_connect_fd(fd, ai->ai_addr, ai->ai_addrlen, deadline);
        if (last == 0) {
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
            freeaddrinfo(res);
            *out = fd;
            return APR_SUCCESS;
        }
        close(fd);
        if (last == ETIMEDOUT) {
            break;
        }
    }
    freeaddrinfo(res);
    apr_snprintf(err, errlen, "connect: %s",
                 last == ETIMEDOUT ? "timed out" : strerror(last));
    return last == ETIMEDOUT ? APR_TIMEUP : APR_ECONNREFUSED;
}

static apr_status_t sl_connect_unix(const char *path, apr_time_t deadline,
                                    int *out, char *err, apr_size_t errlen)
{
    struct sockaddr_un sun;
    int fd, rc;

    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(sun.sun_path)) {
        apr_snprintf(err, errlen, "socket path too long");
        return APR_ECONNREFUSED;
    }
    strcpy(sun.sun_path, path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        apr_snprintf(err, errlen, "socket: %s", strerror(errno));
        return APR_ECONNREFUSED;
    }
    rc = sl_connect_fd(fd, (struct sockaddr *) &sun, sizeof(sun), deadline);
    if (rc != 0) {
        close(fd);
        apr_snprintf(err, errlen, "connect: %s",
                     rc == ETIMEDOUT ? "timed out" : strerror(rc));
        return rc == ETIMEDOUT ? APR_TIMEUP : APR_ECONNREFUSED;
    }
    *out = fd;
    return APR_SUCCESS;
}

/* OpenSSL's reason for the last failure on this thread. */
static const char *sl_ssl_reason(char *buf, apr_size_t len)
{
    unsigned long e = ERR_peek_last_error();

    if (!e) {
        return NULL;
    }
    ERR_error_string_n(e, buf, len);
    ERR_clear_error();
    return buf;
}

/* Runs one SSL call that may want to read or write until it succeeds,
 * fails or the deadline passes: 1 done, 0 timed out, -1 failed (code in
 * *ssl_err). */
static int sl_ssl_io(SSL *ssl, int fd, apr_time_t deadline, int *ssl_err,
                     int (*op)(SSL *, void *, int), void *buf, int len, int *n)
{
    for (;;) {
        int rc, w;

        ERR_clear_error();
        rc = op(ssl, buf, len);
        if (rc > 0) {
            *n = rc;
            return 1;
        }
        *ssl_err = SSL_get_error(ssl, rc);
        if (*ssl_err == SSL_ERROR_WANT_READ) {
            w = sl_wait(fd, POLLIN, deadline);
        }
        else if (*ssl_err == SSL_ERROR_WANT_WRITE) {
            w = sl_wait(fd, POLLOUT, deadline);
        }
        else {
            return -1;
        }
        if (w <= 0) {
            return w;
        }
    }
}

static int sl_ssl_handshake_op(SSL *ssl, void *buf, int len)
{
    (void) buf;
    (void) len;
    return SSL_connect(ssl);
}

static int sl_ssl_read_op(SSL *ssl, void *buf, int len)
{
    return SSL_read(ssl, buf, len);
}

static int sl_ssl_write_op(SSL *ssl, void *buf, int len)
{
    return SSL_write(ssl, buf, len);
}

static apr_status_t sl_fail(char *err, apr_size_t errlen, apr_status_t rv,
                            const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    apr_vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return rv;
}

static apr_status_t sl_handshake(sl_sock_t *s, sl_tls_t *tls, const char *host,
                                 apr_time_t deadline, char *err,
                                 apr_size_t errlen)
{
    unsigned char ip[16];
    int is_ip = host && (inet_pton(AF_INET, host, ip) == 1 ||
                         inet_pton(AF_INET6, host, ip) == 1);
    int ssl_err = 0, n, rc;
    long vr;
    char reason[120];

    ERR_clear_error();
    if (!(s->ssl = SSL_new(tls->ctx)) || !SSL_set_fd(s->ssl, s->fd)) {
        return sl_fail(err, errlen, APR_EGENERAL, "TLS: %s",
                       sl_ssl_reason(reason, sizeof(reason)) ?: "no memory");
    }
    if (host && !is_ip) {
        SSL_set_tlsext_host_name(s->ssl, host);
    }
    if (tls->verify && host) {
        X509_VERIFY_PARAM *vp = SSL_get0_param(s->ssl);
        if (is_ip ? !X509_VERIFY_PARAM_set1_ip_asc(vp, host)
                  : !SSL_set1_host(s->ssl, host)) {
            return sl_fail(err, errlen, APR_EGENERAL,
                           "TLS: cannot verify the name %s", host);
        }
    }
    rc = sl_ssl_io(s->ssl, s->fd, deadline, &ssl_err, sl_ssl_handshake_op, NULL,
                   0, &n);
    if (rc == 1) {
        return APR_SUCCESS;
    }
    if (rc == 0) {
        return sl_fail(err, errlen, APR_TIMEUP, "TLS handshake timed out");
    }
    vr = SSL_get_verify_result(s->ssl);
    if (vr == X509_V_ERR_HOSTNAME_MISMATCH ||
        vr == X509_V_ERR_IP_ADDRESS_MISMATCH) {
        apr_snprintf(err, errlen,
                     "TLS hostname mismatch: the certificate is not for %s",
                     host);
    }
    else if (vr != X509_V_OK) {
        apr_snprintf(err, errlen, "TLS certificate verify failed: %s",
                     X509_verify_cert_error_string(vr));
    }
    else if (sl_ssl_reason(reason, sizeof(reason))) {
        apr_snprintf(err, errlen, "TLS handshake failed: %s", reason);
    }
    else {
        apr_snprintf(err, errlen, "TLS handshake failed: %s",
                     ssl_err == SSL_ERROR_SYSCALL && errno
                         ? strerror(errno)
                         : "connection closed by the server");
    }
    return APR_EGENERAL;
}

/* A round trip's first plaintext read sleeps in recv itself, not in a
 * poll after a recv that found nothing yet: most replies are not there
 * when the read starts, and that was two system calls per request. The
 * socket is made blocking with SO_RCVTIMEO a margin short of the command
 * timeout (the kernel rounds it up to its ticks); writes, and every
 * other read, pass MSG_DONTWAIT and wait in poll as before, and a first
 * read that times out waits out the rest of the deadline in poll, so the
 * round trip stays bounded by the deadline as poll keeps it. */
#define SL_RCV_MARGIN apr_time_from_msec(20)
#define SL_RCV_SLACK  apr_time_from_msec(5)

static void sl_blocking_reads(sl_sock_t *s, apr_interval_time_t timeout)
{
    apr_interval_time_t to = timeout - SL_RCV_MARGIN;
    struct timeval tv;
    int fl;

    if (to < SL_RCV_MARGIN) {
        return;
    }
    tv.tv_sec = (time_t) (to / APR_USEC_PER_SEC);
    tv.tv_usec = (suseconds_t) (to % APR_USEC_PER_SEC);
    if (setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
        (fl = fcntl(s->fd, F_GETFL)) < 0 ||
        fcntl(s->fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        return;
    }
    s->rcvtimeo = to;
}

static void sl_sock_close(void *io)
{
    sl_sock_t *s = io;

    if (!s) {
        return;
    }
    if (s->ssl) {
        /* No close_notify: it could block on a dead peer, and Redis does
         * not need one. */
        SSL_free(s->ssl);
        s->ssl = NULL;
    }
    if (s->fd >= 0) {
        close(s->fd);
        s->fd = -1;
    }
    free(s);
}

static apr_status_t sl_sock_connect(void *ctx, const sl_transport_to_t *to,
                                    apr_time_t deadline, void **io, char *err,
                                    apr_size_t errlen)
{
    sl_sock_t *s;
    apr_status_t rv;

    (void) ctx;
    if (!(s = calloc(1, sizeof(*s)))) {
        return sl_fail(err, errlen, APR_ENOMEM, "no memory");
    }
    s->fd = -1;
    rv = to->path ? sl_connect_unix(to->path, deadline, &s->fd, err, errlen)
                  : sl_connect_tcp(to->host, to->port, deadline, &s->fd, err,
                                   errlen);
    if (rv == APR_SUCCESS && to->tls) {
        rv = sl_handshake(s, to->tls, to->path ? NULL : to->host, deadline, err,
                          errlen);
    }
    if (rv != APR_SUCCESS) {
        sl_sock_close(s);
        return rv;
    }
    if (!to->tls) {
        sl_blocking_reads(s, to->command_timeout);
    }
    *io = s;
    return APR_SUCCESS;
}

/* After a failed SSL read or write. A server that refuses the client's
 * certificate under TLS 1.3 does so after the client's handshake is done,
 * with an alert and a close: a write then fails on the closed connection,
 * and the alert that says why is still to be read. */
static apr_status_t sl_ssl_fail(sl_sock_t *s, int rc, int ssl_err,
                                const char *what, char *err, apr_size_t errlen)
{
    char reason[120];

    if (rc == 0) {
        return sl_fail(err, errlen, APR_TIMEUP, "%s timed out", what);
    }
    if (ssl_err == SSL_ERROR_ZERO_RETURN ||
        (ssl_err == SSL_ERROR_SYSCALL && !ERR_peek_error())) {
        char buf[256];
        ERR_clear_error();
        if (SSL_read(s->ssl, buf, sizeof(buf)) <= 0 &&
            sl_ssl_reason(reason, sizeof(reason))) {
            return sl_fail(err, errlen, APR_EGENERAL, "%s: TLS: %s", what,
                           reason);
        }
        return sl_fail(err, errlen, APR_ECONNRESET, "%s: connection closed",
                       what);
    }
    return sl_fail(err, errlen, APR_EGENERAL, "%s: TLS: %s", what,
                   sl_ssl_reason(reason, sizeof(reason)) ?: "error");
}

static apr_status_t sl_sock_write(void *io, const char *buf, apr_size_t len,
                                  apr_time_t deadline, char *err,
                                  apr_size_t errlen)
{
    sl_sock_t *s = io;

    s->block_once = s->rcvtimeo > 0;
    while (len > 0) {
        ssize_t n;

        if (s->ssl) {
            int ssl_err = 0, written = 0,
                chunk = len > (1 << 30) ? (1 << 30) : (int) len;
            int rc = sl_ssl_io(s->ssl, s->fd, deadline, &ssl_err,
                               sl_ssl_write_op, (void *) buf, chunk, &written);
            if (rc != 1) {
                return sl_ssl_fail(s, rc, ssl_err, "write", err, errlen);
            }
            n = written;
        }
        else {
            n = send(s->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n < 0) {
                int w;
                if (errno == EINTR) {
                    continue;
                }
                if (errno != EAGAIN && errno != EWOULDBLOCK) {
                    return sl_fail(err, errlen, APR_ECONNRESET, "write: %s",
                                   strerror(errno));
                }
                w = sl_wait(s->fd, POLLOUT, deadline);
                if (w <= 0) {
                    return sl_fail(
                        err, errlen, w == 0 ? APR_TIMEUP : APR_ECONNRESET,
                        "write %s", w == 0 ? "timed out" : strerror(errno));
                }
                continue;
            }
        }
        buf += n;
        len -= (apr_size_t) n;
    }
    return APR_SUCCESS;
}

/* The round trip's first read blocks (sl_blocking_reads) while the
 * kernel's timeout ends before the deadline: the write took less than the
 * slack. */
static int sl_recv_flags(sl_sock_t *s, apr_time_t deadline)
{
    int first = s->block_once;

    s->block_once = 0;
    return first && deadline - sl_transport_now() >=
                        s->rcvtimeo + SL_RCV_MARGIN - SL_RCV_SLACK
               ? 0
               : MSG_DONTWAIT;
}

static apr_status_t sl_sock_read(void *io, char *buf, apr_size_t cap,
                                 apr_size_t *got, apr_time_t deadline,
                                 char *err, apr_size_t errlen)
{
    sl_sock_t *s = io;
    ssize_t n;

    if (s->ssl) {
        int ssl_err = 0, len = 0;
        int rc = sl_ssl_io(s->ssl, s->fd, deadline, &ssl_err, sl_ssl_read_op,
                           buf, cap > INT_MAX ? INT_MAX : (int) cap, &len);
        if (rc != 1) {
            return sl_ssl_fail(s, rc, ssl_err, "read", err, errlen);
        }
        *got = (apr_size_t) len;
        return APR_SUCCESS;
    }
    for (;;) {
        int w;
        n = recv(s->fd, buf, cap, sl_recv_flags(s, deadline));
        if (n > 0) {
            *got = (apr_size_t) n;
            return APR_SUCCESS;
        }
        if (n == 0) {
            return sl_fail(err, errlen, APR_ECONNRESET,
                           "read: connection closed");
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            return sl_fail(err, errlen, APR_ECONNRESET, "read: %s",
                           strerror(errno));
        }
        w = sl_wait(s->fd, POLLIN, deadline);
        if (w <= 0) {
            return sl_fail(err, errlen, w == 0 ? APR_TIMEUP : APR_ECONNRESET,
                           "read %s", w == 0 ? "timed out" : strerror(errno));
        }
    }
}

const sl_transport_ops_t sl_transport_socket = {
    sl_sock_connect, sl_sock_write, sl_sock_read, sl_sock_close, NULL};

static apr_status_t sl_tls_cleanup(void *data)
{
    sl_tls_t *tls = data;

    SSL_CTX_free(tls->ctx);
    tls->ctx = NULL;
    return APR_SUCCESS;
}

static const char *sl_tls_error(apr_pool_t *p, const char *what,
                                const char *file)
{
    char reason[160];

    return apr_psprintf(p, "%s '%s': %s", what, file,
                        sl_ssl_reason(reason, sizeof(reason))
                            ?: "not readable");
}

static const char *sl_tls_load_ca(apr_pool_t *p, SSL_CTX *ctx, const char *path)
{
    struct stat st;

    if (stat(path, &st) != 0) {
        return apr_psprintf(p, "'%s': %s", path, strerror(errno));
    }
    if (S_ISDIR(st.st_mode)) {
        /* A hashed directory (c_rehash) is read at verification time;
         * refuse one that cannot be listed now rather than then. */
        if (access(path, R_OK | X_OK) != 0) {
            return apr_psprintf(p, "'%s': %s", path, strerror(errno));
        }
        return SSL_CTX_load_verify_locations(ctx, NULL, path)
                   ? NULL
                   : sl_tls_error(p, "CA directory", path);
    }
    return SSL_CTX_load_verify_locations(ctx, path, NULL)
               ? NULL
               : sl_tls_error(p, "CA file", path);
}

static const char *sl_tls_load_cert(apr_pool_t *p, SSL_CTX *ctx,
                                    const char *cert, const char *key)
{
    if (!SSL_CTX_use_certificate_chain_file(ctx, cert)) {
        return sl_tls_error(p, "certificate", cert);
    }
    if (!SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM)) {
        return sl_tls_error(p, "key", key);
    }
    if (!SSL_CTX_check_private_key(ctx)) {
        return sl_tls_error(p, "key does not match the certificate; key", key);
    }
    return NULL;
}

static SSL_CTX *sl_tls_ctx(void)
{
    SSL_CTX *ctx;

    /* Idempotent and thread safe since OpenSSL 1.1. */
    OPENSSL_init_ssl(
        OPENSSL_INIT_LOAD_SSL_STRINGS | OPENSSL_INIT_LOAD_CRYPTO_STRINGS, NULL);
    ERR_clear_error();
    ctx = SSL_CTX_new(TLS_client_method());
    if (ctx) {
        SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
        SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                                  SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    }
    return ctx;
}

const char *sl_tls_check_ca(apr_pool_t *p, const char *path)
{
    SSL_CTX *ctx = sl_tls_ctx();
    const char *err;

    if (!ctx) {
        return "cannot create a TLS context";
    }
    err = sl_tls_load_ca(p, ctx, path);
    SSL_CTX_free(ctx);
    return err;
}

const char *sl_tls_check_cert(apr_pool_t *p, const char *cert, const char *key)
{
    SSL_CTX *ctx = sl_tls_ctx();
    const char *err;

    if (!ctx) {
        return "cannot create a TLS context";
    }
    err = sl_tls_load_cert(p, ctx, cert, key);
    SSL_CTX_free(ctx);
    return err;
}

const char *sl_tls_create(apr_pool_t *p, const char *ca, const char *cert,
                          const char *key, int verify, sl_tls_t **out)
{
    sl_tls_t *tls = apr_pcalloc(p, sizeof(*tls));
    const char *err = NULL;

    if (!(tls->ctx = sl_tls_ctx())) {
        return "cannot create a TLS context";
    }
    apr_pool_cleanup_register(p, tls, sl_tls_cleanup, apr_pool_cleanup_null);
    tls->verify = verify;
    SSL_CTX_set_verify(tls->ctx, verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE,
                       NULL);
    if (ca) {
        err = sl_tls_load_ca(p, tls->ctx, ca);
    }
    else if (!SSL_CTX_set_default_verify_paths(tls->ctx)) {
        err = "cannot load the system's CA certificates";
    }
    if (!err && cert) {
        err = sl_tls_load_cert(p, tls->ctx, cert, key ? key : cert);
    }
    if (err) {
        return err;
    }
    *out = tls;
    return NULL;
}
