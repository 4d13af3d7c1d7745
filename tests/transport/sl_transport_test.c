/* SPDX-License-Identifier: Apache-2.0 */
/* The transport against real redis-servers that tests/transport/run.sh
 * starts (plain, unix socket, TLS with the suite's certificates), and
 * against a socket of its own that accepts and never answers.
 *
 *   sl_transport_test            every case run.sh set up (environment)
 *   sl_transport_test dns        a name whose resolver never answers
 *                                (run.sh runs it in a namespace of its own)
 *   sl_transport_test sentinel   master discovery and a failover against
 *                                run.sh's master, replicas and Sentinels */
#include "sl_sentinel.h"
#include "sl_transport.h"
#include "../unit/sl_expect.h"

#include <apr_general.h>
#include <apr_strings.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MS(n) ((apr_interval_time_t) (n) *1000)

static double sl_secs(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int env_port(const char *name)
{
    const char *v = getenv(name);
    return v ? atoi(v) : 0;
}

static const char *cert(apr_pool_t *p, const char *file)
{
    return apr_pstrcat(p, getenv("SL_T_CERTS"), "/", file, NULL);
}

/* A take function (sl_transport_take) for one integer reply. */
static apr_size_t take_integer(void *ctx, const char *buf, apr_size_t len)
{
    const char *crlf = len > 1 && buf[0] == ':' ? memchr(buf, '\r', len) : NULL;

    if (!crlf || crlf + 1 >= buf + len) {
        return 0;
    }
    *(long long *) ctx = atoll(buf + 1);
    return (apr_size_t) (crlf + 2 - buf);
}

/* Two pipelined INCR and a GET read with a take function: the first reply
 * is taken from the bytes received, whatever came with it goes to the
 * reader, and the order stays. */
static void exercise_take(sl_transport_t *t, const char *what)
{
    redisReply *r = NULL;
    long long v = 0;
    char *a = NULL, *c = NULL, *all;
    int la, lc, taken = 0;

    la = redisFormatCommand(&a, "INCR sl:t:%s", what);
    lc = redisFormatCommand(&c, "GET sl:t:%s", what);
    all = malloc(2 * la + lc);
    memcpy(all, a, la);
    memcpy(all + la, a, la);
    memcpy(all + 2 * la, c, lc);
    EXPECT(sl_transport_send(t, all, 2 * la + lc) == APR_SUCCESS,
           "%s: pipelined send for take", what);
    EXPECT(sl_transport_take(t, take_integer, &v, &r, &taken) == APR_SUCCESS &&
               taken && !r && v == 43,
           "%s: the first reply taken", what);
    EXPECT(sl_transport_take(t, take_integer, &v, &r, &taken) == APR_SUCCESS &&
               ((taken && !r && v == 44) ||
                (!taken && r && r->type == REDIS_REPLY_INTEGER &&
                 r->integer == 44)),
           "%s: the second, taken or from the reader", what);
    if (r) {
        freeReplyObject(r);
    }
    EXPECT(sl_transport_take(t, take_integer, &v, &r, &taken) == APR_SUCCESS &&
               !taken && r && r->type == REDIS_REPLY_STRING &&
               !strcmp(r->str, "44"),
           "%s: a reply not taken is the reader's", what);
    if (r) {
        freeReplyObject(r);
    }
    free(a);
    free(c);
    free(all);
}

/* PING and a pipelined SET/INCR/GET (one send, three replies in order). */
static void exercise(sl_transport_t *t, const char *what)
{
    redisReply *r = NULL;
    char *a = NULL, *b = NULL, *c = NULL, *all;
    int la, lb, lc;

    EXPECT(sl_transport_command(t, &r, "PING") == APR_SUCCESS && r &&
               r->type == REDIS_REPLY_STATUS && !strcmp(r->str, "PONG"),
           "%s: PING (%s)", what, sl_transport_error(t));
    if (r) {
        freeReplyObject(r);
    }
    la = redisFormatCommand(&a, "SET sl:t:%s 41", what);
    lb = redisFormatCommand(&b, "INCR sl:t:%s", what);
    lc = redisFormatCommand(&c, "GET sl:t:%s", what);
    all = malloc(la + lb + lc);
    memcpy(all, a, la);
    memcpy(all + la, b, lb);
    memcpy(all + la + lb, c, lc);
    EXPECT(sl_transport_send(t, all, la + lb + lc) == APR_SUCCESS,
           "%s: pipelined send", what);
    EXPECT(sl_transport_reply(t, &r) == APR_SUCCESS &&
               r->type == REDIS_REPLY_STATUS,
           "%s: SET", what);
    freeReplyObject(r);
    EXPECT(sl_transport_reply(t, &r) == APR_SUCCESS &&
               r->type == REDIS_REPLY_INTEGER && r->integer == 42,
           "%s: INCR", what);
    freeReplyObject(r);
    EXPECT(sl_transport_reply(t, &r) == APR_SUCCESS &&
               r->type == REDIS_REPLY_STRING && !strcmp(r->str, "42"),
           "%s: GET", what);
    freeReplyObject(r);
    free(a);
    free(b);
    free(c);
    free(all);
    exercise_take(t, what);
}

/* A value larger than a TLS record and a socket buffer, both ways. */
static void exercise_large(sl_transport_t *t, const char *what)
{
    apr_size_t n = 300 * 1024;
    char *v = malloc(n);
    redisReply *r = NULL;

    memset(v, 'x', n);
    v[n - 1] = 'y';
    EXPECT(sl_transport_command(t, &r, "SET sl:t:big %b", v, n) ==
                   APR_SUCCESS &&
               r,
           "%s: SET 300K (%s)", what, sl_transport_error(t));
    if (r) {
        freeReplyObject(r);
    }
    EXPECT(sl_transport_command(t, &r, "GET sl:t:big") == APR_SUCCESS && r &&
               r->type == REDIS_REPLY_STRING && r->len == n &&
               !memcmp(r->str, v, n),
           "%s: GET 300K (%s)", what, sl_transport_error(t));
    if (r) {
        freeReplyObject(r);
    }
    free(v);
}

static void test_plain(apr_pool_t *p)
{
    int port = env_port("SL_T_PLAIN_PORT");
    sl_transport_t *t;
    char err[160];
    apr_status_t rv;

    rv = sl_transport_connect("127.0.0.1", port, NULL, NULL, MS(500), MS(500),
                              &t, err, sizeof(err));
    EXPECT(rv == APR_SUCCESS, "plain connect: %s", err);
    if (rv == APR_SUCCESS) {
        exercise(t, "plain");
        exercise_large(t, "plain");
        sl_transport_close(t);
    }
    /* A name goes through the bounded resolver. */
    rv = sl_transport_connect("localhost", port, NULL, NULL, MS(500), MS(500),
                              &t, err, sizeof(err));
    EXPECT(rv == APR_SUCCESS, "connect by name: %s", err);
    if (rv == APR_SUCCESS) {
        exercise(t, "name");
        sl_transport_close(t);
    }
    rv = sl_transport_connect(NULL, 0, getenv("SL_T_UNIX"), NULL, MS(500),
                              MS(500), &t, err, sizeof(err));
    EXPECT(rv == APR_SUCCESS, "unix connect: %s", err);
    if (rv == APR_SUCCESS) {
        exercise(t, "unix");
        sl_transport_close(t);
    }
    rv = sl_transport_connect("127.0.0.1", env_port("SL_T_CLOSED_PORT"), NULL,
                              NULL, MS(500), MS(500), &t, err, sizeof(err));
    EXPECT(rv == APR_ECONNREFUSED && !t && strstr(err, "refused"),
           "nothing listening: refused (%s)", err);
    rv = sl_transport_connect("sl-test.invalid", port, NULL, NULL, MS(500),
                              MS(500), &t, err, sizeof(err));
    EXPECT(rv == APR_ECONNREFUSED && strstr(err, "sl-test.invalid"),
           "unknown name: refused, named (%s)", err);
    (void) p;
}

/* A socket that completes TCP connects (the kernel does) but never reads
 * or writes: a TLS handshake and a command both wait on it. */
static void test_silent(apr_pool_t *p, sl_tls_t *tls)
{
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sl_transport_t *t;
    redisReply *r;
    char err[160];
    apr_status_t rv;
    double t0;

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT(bind(fd, (struct sockaddr *) &sin, sizeof(sin)) == 0 &&
               listen(fd, 16) == 0 &&
               getsockname(fd, (struct sockaddr *) &sin, &len) == 0,
           "silent listener");
    t0 = sl_secs();
    rv = sl_transport_connect("127.0.0.1", ntohs(sin.sin_port), NULL, tls,
                              MS(200), MS(100), &t, err, sizeof(err));
    EXPECT(rv == APR_TIMEUP && strstr(err, "handshake timed out") &&
               sl_secs() - t0 >= 0.19 && sl_secs() - t0 < 1.0,
           "TLS handshake bounded by the connect timeout: %s in %.3fs", err,
           sl_secs() - t0);
    rv = sl_transport_connect("127.0.0.1", ntohs(sin.sin_port), NULL, NULL,
                              MS(200), MS(100), &t, err, sizeof(err));
    EXPECT(rv == APR_SUCCESS, "plain connect to the silent socket");
    if (rv == APR_SUCCESS) {
        t0 = sl_secs();
        rv = sl_transport_command(t, &r, "PING");
        EXPECT(rv == APR_TIMEUP && strstr(sl_transport_error(t), "timed out") &&
                   sl_secs() - t0 >= 0.09 && sl_secs() - t0 < 1.0,
               "command bounded by the command timeout: %s in %.3fs",
               sl_transport_error(t), sl_secs() - t0);
        sl_transport_close(t);
    }
    close(fd);
    (void) p;
}

/* Connects to a TLS server with a client context; returns the status and
 * leaves the reason in err. */
static apr_status_t tls_try(apr_pool_t *p, const char *host, const char *env,
                            const char *ca, int with_cert, int verify,
                            char *err, apr_size_t errlen, const char *what)
{
    sl_tls_t *tls;
    sl_transport_t *t;
    const char *e;
    apr_status_t rv;

    e = sl_tls_create(p, ca ? cert(p, ca) : NULL,
                      with_cert ? cert(p, "client.pem") : NULL,
                      with_cert ? cert(p, "client.key") : NULL, verify, &tls);
    EXPECT(!e, "%s: TLS context (%s)", what, e ? e : "");
    if (e) {
        return APR_EGENERAL;
    }
    rv = sl_transport_connect(host, env_port(env), NULL, tls, MS(1000),
                              MS(1000), &t, err, errlen);
    if (rv == APR_SUCCESS) {
        redisReply *r = NULL;
        /* TLS 1.3 refuses a missing client certificate after the client's
         * side of the handshake: on the first read. */
        rv = sl_transport_command(t, &r, "PING");
        apr_cpystrn(err, sl_transport_error(t), errlen);
        if (r) {
            freeReplyObject(r);
        }
        if (rv == APR_SUCCESS) {
            exercise(t, what);
            exercise_large(t, what);
        }
        sl_transport_close(t);
    }
    return rv;
}

/* The README's least-privilege user (run.sh made it from the README's
 * line): what the module sends is allowed, nothing else. */
static void test_acl(apr_pool_t *p)
{
    sl_tls_t *tls;
    sl_transport_t *t;
    redisReply *r = NULL;
    char err[200];

    if (sl_tls_create(p, cert(p, "ca.pem"), NULL, NULL, 1, &tls) ||
        sl_transport_connect("127.0.0.1", env_port("SL_T_TLS_PORT"), NULL, tls,
                             MS(1000), MS(1000), &t, err,
                             sizeof(err)) != APR_SUCCESS) {
        EXPECT(0, "ACL: connect");
        return;
    }
    EXPECT(sl_sentinel_auth(t, "ratelimit", "wrong") == APR_EACCES,
           "ACL user, wrong password: refused");
    EXPECT(sl_sentinel_auth(t, "ratelimit", getenv("SL_T_ACL_PASSWORD")) ==
               APR_SUCCESS,
           "ACL user: AUTH");
    EXPECT(sl_transport_command(t, &r, "PING") == APR_SUCCESS &&
               r->type == REDIS_REPLY_STATUS,
           "ACL user: PING");
    freeReplyObject(r);
    EXPECT(sl_transport_command(t, &r, "EVAL %s 1 sltest:{x}acl",
                                "redis.call('SET', KEYS[1], 1) "
                                "return redis.call('GET', KEYS[1])") ==
                   APR_SUCCESS &&
               r->type == REDIS_REPLY_ERROR && strstr(r->str, "NOPERM"),
           "ACL user: EVAL refused (only EVALSHA): %s",
           r && r->str ? r->str : "");
    freeReplyObject(r);
    EXPECT(sl_transport_command(t, &r, "SCRIPT LOAD %s",
                                "return redis.call('TIME')[1]") ==
                   APR_SUCCESS &&
               r->type == REDIS_REPLY_STRING,
           "ACL user: SCRIPT LOAD");
    if (r->type == REDIS_REPLY_STRING) {
        char *sha = apr_pstrdup(p, r->str);
        freeReplyObject(r);
        EXPECT(sl_transport_command(t, &r, "EVALSHA %s 0", sha) ==
                       APR_SUCCESS &&
                   r->type == REDIS_REPLY_STRING,
               "ACL user: EVALSHA calling TIME");
    }
    freeReplyObject(r);
    EXPECT(sl_transport_command(t, &r, "KEYS *") == APR_SUCCESS &&
               r->type == REDIS_REPLY_ERROR && strstr(r->str, "NOPERM"),
           "ACL user: KEYS refused");
    freeReplyObject(r);
    EXPECT(sl_transport_command(t, &r, "GET other:key") == APR_SUCCESS &&
               r->type == REDIS_REPLY_ERROR && strstr(r->str, "NOPERM"),
           "ACL user: a key outside the prefix refused");
    freeReplyObject(r);
    sl_transport_close(t);
}

static void test_tls(apr_pool_t *p)
{
    char err[200];
    apr_status_t rv;
    sl_tls_t *tls;

    rv = tls_try(p, "127.0.0.1", "SL_T_TLS_PORT", "ca.pem", 0, 1, err,
                 sizeof(err), "tls-ip");
    EXPECT(rv == APR_SUCCESS, "TLS, IP address in the certificate: %s", err);
    rv = tls_try(p, "localhost", "SL_T_TLS_PORT", "ca.pem", 0, 1, err,
                 sizeof(err), "tls-name");
    EXPECT(rv == APR_SUCCESS, "TLS, name in the certificate: %s", err);
    rv = tls_try(p, "127.0.0.1", "SL_T_TLS_PORT", "other-ca.pem", 0, 1, err,
                 sizeof(err), "wrong-ca");
    EXPECT(rv == APR_EGENERAL && strstr(err, "certificate verify failed"),
           "wrong CA: %s", err);
    rv = tls_try(p, "127.0.0.1", "SL_T_TLS_PORT", "other-ca.pem", 0, 0, err,
                 sizeof(err), "verify-off");
    EXPECT(rv == APR_SUCCESS, "wrong CA, verification off: %s", err);
    rv = tls_try(p, "127.0.0.1", "SL_T_TLS_EXPIRED_PORT", "ca.pem", 0, 1, err,
                 sizeof(err), "expired");
    EXPECT(rv == APR_EGENERAL && strstr(err, "certificate has expired"),
           "expired certificate: %s", err);
    rv = tls_try(p, "127.0.0.1", "SL_T_TLS_WRONGHOST_PORT", "ca.pem", 0, 1, err,
                 sizeof(err), "wronghost");
    EXPECT(rv == APR_EGENERAL && strstr(err, "hostname mismatch") &&
               strstr(err, "127.0.0.1"),
           "certificate for another name: %s", err);
    rv = tls_try(p, "localhost", "SL_T_TLS_WRONGHOST_PORT", "ca.pem", 0, 1, err,
                 sizeof(err), "wronghost-name");
    EXPECT(rv == APR_EGENERAL && strstr(err, "hostname mismatch"),
           "certificate for another name (by name): %s", err);
    rv = tls_try(p, "127.0.0.1", "SL_T_TLS_CLIENT_PORT", "ca.pem", 0, 1, err,
                 sizeof(err), "no-client-cert");
    EXPECT(rv != APR_SUCCESS && strstr(err, "certificate required"),
           "no client certificate where one is required: %s", err);
    rv = tls_try(p, "127.0.0.1", "SL_T_TLS_CLIENT_PORT", "ca.pem", 1, 1, err,
                 sizeof(err), "client-cert");
    EXPECT(rv == APR_SUCCESS, "client certificate: %s", err);

    test_acl(p);

    EXPECT(sl_tls_check_ca(p, cert(p, "ca.pem")) == NULL, "CA file check");
    EXPECT(sl_tls_check_ca(p, getenv("SL_T_CERTS")) == NULL,
           "CA directory check");
    EXPECT(sl_tls_check_ca(p, cert(p, "nonexistent.pem")) != NULL,
           "missing CA file refused");
    EXPECT(sl_tls_check_ca(p, cert(p, "client.key")) != NULL, "a key is no CA");
    EXPECT(sl_tls_check_cert(p, cert(p, "client.pem"), cert(p, "client.key")) ==
               NULL,
           "client certificate check");
    EXPECT(sl_tls_check_cert(p, cert(p, "client.pem"), cert(p, "server.key")) !=
               NULL,
           "a key that does not match refused");
    EXPECT(sl_tls_create(p, cert(p, "nonexistent.pem"), NULL, NULL, 1, &tls) !=
               NULL,
           "context with a missing CA refused");
    if (!sl_tls_create(p, cert(p, "ca.pem"), NULL, NULL, 1, &tls)) {
        test_silent(p, tls);
    }
}

/* run.sh gives this process a resolver that never answers. */
static void test_dns(apr_pool_t *p)
{
    struct sockaddr_in sin;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    sl_transport_t *t;
    char err[160];
    apr_status_t rv;
    double t0;

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons(53);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT(bind(fd, (struct sockaddr *) &sin, sizeof(sin)) == 0,
           "a resolver that never answers on 127.0.0.1:53");
    t0 = sl_secs();
    rv = sl_transport_connect("sl-test.invalid", 6379, NULL, NULL, MS(300),
                              MS(100), &t, err, sizeof(err));
    EXPECT(rv == APR_TIMEUP && strstr(err, "timed out") && sl_secs() - t0 < 1.0,
           "name resolution bounded by the connect timeout: %s in %.3fs", err,
           sl_secs() - t0);
    /* The abandoned look-up ends (resolv.conf: timeout 1, one attempt)
     * and frees its record while this process still runs. */
    sleep(2);
    close(fd);
    (void) p;
}

/* The run's Sentinels as a URL: first (a list ending in ',') before them;
 * only: just that one of them, -1 all. */
static sl_store_url_t *sentinel_url(apr_pool_t *p, const char *first,
                                    const char *master, int only)
{
    sl_store_url_t *u = apr_pcalloc(p, sizeof(*u));
    char *ports = apr_pstrdup(p, getenv("SL_SENTINEL_PORTS")), *tok, *st;
    const char *url, *err, *sep = "";
    int n = 0;

    url = apr_pstrcat(p, "sentinel://", getenv("SL_T_DATA_PASSWORD"), "@",
                      first ? first : "", NULL);
    for (tok = apr_strtok(ports, ",", &st); tok;
         tok = apr_strtok(NULL, ",", &st), n++) {
        if (only < 0 || only == n) {
            url = apr_pstrcat(p, url, sep, "127.0.0.1:", tok, NULL);
            sep = ",";
        }
    }
    url = apr_pstrcat(p, url, "/", master, NULL);
    err = sl_parse_store_url(p, url, u);
    EXPECT(!err, "sentinel url: %s", err ? err : "");
    return u;
}

static apr_status_t find_master(sl_sentinel_t *s, int *port, char *err,
                                apr_size_t errlen)
{
    char host[64];

    return sl_sentinel_master(s, apr_time_now() + apr_time_from_sec(2), host,
                              sizeof(host), port, err, errlen);
}

static void test_sentinel(apr_pool_t *p)
{
    sl_sentinel_t s;
    char err[600], cmd[512];
    int port = 0, master = env_port("SL_SENTINEL_MASTER_PORT"), i, k;
    apr_status_t rv;
    double t0;
    FILE *f;
    long pid = 0;

    memset(&s, 0, sizeof(s));
    s.password = getenv("SL_T_SENTINEL_PASSWORD");
    s.connect_timeout = MS(200);
    s.command_timeout = MS(200);

    /* The first Sentinel listed is down: the next one answers. */
    s.url = sentinel_url(
        p, apr_psprintf(p, "127.0.0.1:%d,", env_port("SL_T_CLOSED_PORT")),
        "slmaster", -1);
    rv = find_master(&s, &port, err, sizeof(err));
    EXPECT(rv == APR_SUCCESS && port == master,
           "master found past a dead Sentinel: %d (%s)", port, err);
    EXPECT(s.first == 1, "the Sentinel that answered is asked first next");

    s.url = sentinel_url(p, NULL, "nosuchmaster", -1);
    rv = find_master(&s, &port, err, sizeof(err));
    EXPECT(rv != APR_SUCCESS && strstr(err, "does not know the master"),
           "unknown master name: %s", err);

    s.url = sentinel_url(p, NULL, "slmaster", -1);
    s.password = "wrong";
    rv = find_master(&s, &port, err, sizeof(err));
    EXPECT(rv != APR_SUCCESS && strstr(err, "AUTH: refused") &&
               !strstr(err, "wrong"),
           "wrong Sentinel password, not shown: %s", err);
    s.password = getenv("SL_T_SENTINEL_PASSWORD");

    /* A failover: SIGKILL the master, follow the Sentinels. */
    f = fopen(
        apr_pstrcat(p, getenv("SL_SENTINEL_DIR"), "/master/redis.pid", NULL),
        "r");
    EXPECT(f && fscanf(f, "%ld", &pid) == 1 && pid > 1, "master pid");
    if (f) {
        fclose(f);
    }
    if (pid <= 1) {
        return;
    }
    kill((pid_t) pid, SIGKILL);
    t0 = sl_secs();
    for (i = 0; i < 150; i++) {
        rv = find_master(&s, &port, err, sizeof(err));
        if (rv == APR_SUCCESS && port != master) {
            break;
        }
        usleep(100 * 1000);
    }
    EXPECT(rv == APR_SUCCESS && port != master,
           "new master %d after the master's SIGKILL, in %.1fs (%s)", port,
           sl_secs() - t0, err);
    printf("sl_transport (sentinel): failover followed in %.1fs\n",
           sl_secs() - t0);
    /* Every Sentinel knows a new master before the old one is back. On a
     * loaded host the Sentinels may fail over once more (a new master
     * that misses its 1 s down-after): any master but the dead one. */
    for (k = 0; k < 3; k++) {
        sl_sentinel_t one = s;
        int got = 0;
        one.url = sentinel_url(p, NULL, "slmaster", k);
        one.first = 0;
        for (i = 0; i < 100; i++) {
            if (find_master(&one, &got, err, sizeof(err)) == APR_SUCCESS &&
                got != master) {
                break;
            }
            usleep(100 * 1000);
        }
        EXPECT(got > 0 && got != master,
               "Sentinel %d names a new master: %d (not %d)", k, got, master);
    }
    /* The old master comes back as a replica, as an operator brings it
     * back, and is never the answer: every master found (checked with
     * ROLE) is another node. */
    snprintf(cmd, sizeof(cmd),
             "redis-server %s/master/redis.conf --replicaof 127.0.0.1 %d",
             getenv("SL_SENTINEL_DIR"), port);
    EXPECT(system(cmd) == 0, "old master restarted");
    {
        int answers = 0, old = 0, again;

        for (i = 0; i < 50; i++) {
            again = 0;
            if (find_master(&s, &again, err, sizeof(err)) == APR_SUCCESS) {
                answers++;
                old += again == master;
            }
            usleep(50 * 1000);
        }
        EXPECT(answers > 0 && old == 0,
               "with the old master %d back as a replica, %d of 50 asks "
               "found a master, %d of them the old one (new master %d)",
               master, answers, old, port);
    }
}

int main(int argc, char **argv)
{
    apr_pool_t *p;

    signal(SIGPIPE, SIG_IGN);
    apr_initialize();
    apr_pool_create(&p, NULL);
    if (argc > 1 && !strcmp(argv[1], "dns")) {
        test_dns(p);
    }
    else if (argc > 1 && !strcmp(argv[1], "sentinel")) {
        test_sentinel(p);
    }
    else {
        test_plain(p);
        test_tls(p);
    }
    apr_pool_destroy(p);
    apr_terminate();
    printf("sl_transport%s%s%s: %d passed, %d failed\n", argc > 1 ? " (" : "",
           argc > 1 ? argv[1] : "", argc > 1 ? ")" : "", passed, failed);
    return failed ? 1 : 0;
}
