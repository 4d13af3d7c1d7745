/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of a node's connections (src/sl_conn.c), its pipeline
 * (src/sl_pipe.c) and the transport's reply reading (src/sl_transport.c)
 * over a scripted byte stream in place of the socket
 * (sl_transport_ops_t): a fake server that answers each command written
 * and hands its bytes back in the pieces a test asks for, fails a read
 * where asked, or holds reads until the test lets them go. The real
 * socket, TLS and servers are tests/transport's and t/'s. No server
 * needed (make unit). */
#include "sl_redis_private.h"

#include <apr_general.h>
#include <apr_strings.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sl_expect.h"

/* One connection's end at the fake server. */
typedef struct fconn {
    int id;
    redisReader *cmds; /* the commands written, parsed */
    char *out;         /* the replies not yet read */
    apr_size_t outlen, outpos;
} fconn_t;

/* The server, and what the test asks of it. All under lock. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int connects;         /* connections made */
    apr_status_t refuse;  /* connect fails with this (0: accepts) */
    int deny_auth;        /* AUTH answers an error */
    int silent;           /* reads time out at once (a server that hangs) */
    apr_size_t chunk[4];  /* the sizes of the next reads (0: all there is) */
    int nchunk;           /* how many of chunk are still to come */
    int one_byte;         /* every read returns one byte */
    apr_size_t cut_after; /* deliver this many bytes, then cut_rv */
    apr_status_t cut_rv;  /* a read's failure (0: none) */
    int cut_conn;         /* ...on this connection only */
    int held;             /* reads wait until released */
    int waiting;          /* reads that wait */
    int writes;           /* writes (one per round trip) */
    char written[4096];   /* every command's first two words, in order */
} srv = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static void srv_reply(fconn_t *c, const char *s, apr_size_t n)
{
    c->out = realloc(c->out, c->outlen + n);
    memcpy(c->out + c->outlen, s, n);
    c->outlen += n;
}

/* One command's answer. INTS a b ...: an array of those integers (the
 * scripts' answers); ECHO s: s as a bulk string. */
static void srv_answer(fconn_t *c, const redisReply *cmd)
{
    const char *name = cmd->element[0]->str;
    char buf[256];
    size_t i;

    apr_snprintf(srv.written + strlen(srv.written),
                 sizeof(srv.written) - strlen(srv.written), "%s%s%s;", name,
                 cmd->elements > 1 ? " " : "",
                 cmd->elements > 1 ? cmd->element[1]->str : "");
    if (!strcmp(name, "AUTH")) {
        const char *a = srv.deny_auth ? "-WRONGPASS no\r\n" : "+OK\r\n";
        srv_reply(c, a, strlen(a));
    }
    else if (!strcmp(name, "INFO")) {
        srv_reply(c, "$21\r\nredis_version:7.2.4\r\n\r\n", 28);
    }
    else if (!strcmp(name, "SELECT")) {
        srv_reply(c, "+OK\r\n", 5);
    }
    else if (!strcmp(name, "INTS")) {
        apr_snprintf(buf, sizeof(buf), "*%d\r\n", (int) cmd->elements - 1);
        srv_reply(c, buf, strlen(buf));
        for (i = 1; i < cmd->elements; i++) {
            apr_snprintf(buf, sizeof(buf), ":%s\r\n", cmd->element[i]->str);
            srv_reply(c, buf, strlen(buf));
        }
    }
    else if (!strcmp(name, "NEST") && cmd->elements == 4) {
        /* An array whose first element is itself an array. */
        apr_snprintf(buf, sizeof(buf), "*2\r\n*2\r\n:%s\r\n:%s\r\n:%s\r\n",
                     cmd->element[1]->str, cmd->element[2]->str,
                     cmd->element[3]->str);
        srv_reply(c, buf, strlen(buf));
    }
    else if (!strcmp(name, "ECHO")) {
        apr_snprintf(buf, sizeof(buf), "$%d\r\n%s\r\n",
                     (int) cmd->element[1]->len, cmd->element[1]->str);
        srv_reply(c, buf, strlen(buf));
    }
    else {
        srv_reply(c, "-ERR unknown\r\n", 14);
    }
}

static apr_status_t f_connect(void *ctx, const sl_transport_to_t *to,
                              apr_time_t deadline, void **io, char *err,
                              apr_size_t errlen)
{
    fconn_t *c;

    (void) ctx, (void) to, (void) deadline;
    pthread_mutex_lock(&srv.lock);
    if (srv.refuse) {
        pthread_mutex_unlock(&srv.lock);
        apr_snprintf(err, errlen, "connect: refused by the script");
        return srv.refuse;
    }
    c = calloc(1, sizeof(*c));
    c->id = ++srv.connects;
    c->cmds = redisReaderCreate();
    pthread_mutex_unlock(&srv.lock);
    *io = c;
    return APR_SUCCESS;
}

static apr_status_t f_write(void *io, const char *buf, apr_size_t len,
                            apr_time_t deadline, char *err, apr_size_t errlen)
{
    fconn_t *c = io;
    void *r;

    (void) deadline, (void) err, (void) errlen;
    pthread_mutex_lock(&srv.lock);
    srv.writes++;
    redisReaderFeed(c->cmds, buf, len);
    while (redisReaderGetReply(c->cmds, &r) == REDIS_OK && r) {
        srv_answer(c, r);
        freeReplyObject(r);
    }
    pthread_mutex_unlock(&srv.lock);
    return APR_SUCCESS;
}

static apr_status_t f_read(void *io, char *buf, apr_size_t cap, apr_size_t *n,
                           apr_time_t deadline, char *err, apr_size_t errlen)
{
    fconn_t *c = io;
    apr_size_t left, take;
    apr_status_t rv = APR_SUCCESS;

    (void) deadline;
    pthread_mutex_lock(&srv.lock);
    srv.waiting++;
    pthread_cond_broadcast(&srv.cond);
    while (srv.held) {
        pthread_cond_wait(&srv.cond, &srv.lock);
    }
    srv.waiting--;
    left = c->outlen - c->outpos;
    take = srv.one_byte ? 1 : srv.nchunk ? srv.chunk[0] : left;
    if (srv.cut_rv && (!srv.cut_conn || srv.cut_conn == c->id)) {
        if (!srv.cut_after) {
            rv = srv.cut_rv;
        }
        else if (take > srv.cut_after) {
            take = srv.cut_after;
        }
        srv.cut_after -= rv ? 0 : take;
    }
    if (!rv && (srv.silent || !left)) {
        /* Nothing comes: as the socket's read at its deadline. */
        rv = APR_TIMEUP;
    }
    if (rv) {
        apr_snprintf(err, errlen, "read %s",
                     rv == APR_TIMEUP ? "timed out" : "connection closed");
        pthread_mutex_unlock(&srv.lock);
        return rv;
    }
    if (srv.nchunk && !srv.one_byte) {
        memmove(srv.chunk, srv.chunk + 1,
                sizeof(srv.chunk) - sizeof(*srv.chunk));
        srv.nchunk--;
    }
    take = take == 0 || take > left ? left : take;
    take = take > cap ? cap : take;
    memcpy(buf, c->out + c->outpos, take);
    c->outpos += take;
    *n = take;
    pthread_mutex_unlock(&srv.lock);
    return APR_SUCCESS;
}

static void f_close(void *io)
{
    fconn_t *c = io;

    redisReaderFree(c->cmds);
    free(c->out);
    free(c);
}

static const sl_transport_ops_t fake = {f_connect, f_write, f_read, f_close,
                                        NULL};

static void srv_reset(void)
{
    pthread_mutex_lock(&srv.lock);
    srv.refuse = 0;
    srv.deny_auth = srv.silent = srv.one_byte = srv.held = 0;
    srv.nchunk = 0;
    srv.cut_after = 0;
    srv.cut_rv = 0;
    srv.cut_conn = 0;
    srv.writes = 0;
    srv.written[0] = '\0';
    pthread_mutex_unlock(&srv.lock);
}

static apr_pool_t *pool;
static sl_store_url_t url;

/* A Redis client as sl_redis_create makes it, over the fake. */
static sl_redis_t *client(void)
{
    sl_redis_t *rs = apr_pcalloc(pool, sizeof(*rs));

    url.kind = SL_URL_TCP;
    rs->pool = pool;
    rs->url = &url;
    rs->io = &fake;
    rs->connect_timeout = apr_time_from_sec(1);
    rs->command_timeout = apr_time_from_sec(1);
    rs->queue_timeout = apr_time_from_sec(10);
    rs->max_connections = 4;
    rs->pipeline = 1;
    apr_thread_mutex_create(&rs->mutex, APR_THREAD_MUTEX_DEFAULT, pool);
    sl_pipe_init(rs, pool);
    return rs;
}

/* A command in RESP, in pool. */
static const char *cmd(const char *fmt, apr_size_t *len)
{
    char *c = NULL;
    int n = redisFormatCommand(&c, fmt);
    const char *out = apr_pstrmemdup(pool, c, n);

    free(c);
    *len = (apr_size_t) n;
    return out;
}

/* One call through the pipeline; its integers in v (NULL: no reply). */
typedef struct call {
    sl_redis_t *rs;
    sl_node_t *node;
    const char *what;
    long long v[8];
    sl_ints_t ints;
    redisReply *reply;
    apr_status_t rv;
    int stale, trips;
    const char *err;
    int done;
} call_t;

static void *call_run(void *data)
{
    call_t *c = data;
    apr_size_t len;
    const char *buf = cmd(c->what, &len);
    apr_pool_t *p;

    apr_pool_create(&p, NULL);
    c->ints.v = c->v;
    c->ints.cap = 8;
    c->reply = NULL;
    c->stale = c->trips = 0;
    c->err = NULL;
    c->rv = sl_pipe_exec(c->rs, c->node, p, buf, len, &c->ints, &c->reply,
                         &c->stale, &c->err, &c->trips);
    c->err = c->err ? strdup(c->err) : NULL;
    apr_pool_destroy(p);
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* The call's answer is the integers of want (n of them). */
static int answered(const call_t *c, const long long *want, apr_size_t n)
{
    const long long *v;
    apr_size_t nv, i;

    if (c->rv != APR_SUCCESS || !c->reply ||
        sl_reply_values(pool, c->reply, &c->ints, &v, &nv) || nv != n) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (v[i] != want[i]) {
            return 0;
        }
    }
    return 1;
}

static void call_done(call_t *c)
{
    if (c->reply) {
        sl_reply_free(c->reply);
        c->reply = NULL;
    }
    free((char *) c->err);
    c->err = NULL;
}

/* What a call got, as text: the integers read into its target, or
 * hiredis' reply. */
static void describe(const redisReply *r, const sl_ints_t *ints, char *out,
                     apr_size_t len)
{
    apr_size_t i, at;

    if (!r) {
        snprintf(out, len, "none");
        return;
    }
    if (r == &sl_reply_ints) {
        at = (apr_size_t) snprintf(out, len, "ints bad=%ld:", ints->bad);
        for (i = 0; i < ints->n && at < len; i++) {
            at += (apr_size_t) snprintf(out + at, len - at, " %lld",
                                        (long) i == ints->bad ? -1LL
                                                              : ints->v[i]);
        }
        return;
    }
    at = (apr_size_t) snprintf(out, len, "type %d int %lld [", r->type,
                               r->integer);
    for (i = 0; i < r->elements && at < len; i++) {
        describe(r->element[i], NULL, out + at, len - at);
        at += strlen(out + at);
        at += (apr_size_t) snprintf(out + at, len - at, ",");
    }
    snprintf(out + at, len - at, "]");
}

/* A reply with an array inside, split at every byte: read as it is when
 * it comes whole (the take function is never offered the middle of a
 * reply that the reader holds the start of). */
static void test_split_nested(void)
{
    sl_redis_t *rs = client();
    sl_node_t *node = sl_node_create(rs, "127.0.0.1", 9, 6379);
    const char *reply = "*2\r\n*2\r\n:5\r\n:6\r\n:7\r\n";
    char whole[256], got[256];
    apr_size_t off, len = strlen(reply);
    int bad = 0;
    call_t c = {.rs = rs, .node = node, .what = "NEST 5 6 7"};

    srv_reset();
    call_run(&c);
    describe(c.reply, &c.ints, whole, sizeof(whole));
    EXPECT(c.rv == APR_SUCCESS && !strcmp(whole, "ints bad=0: -1 7"),
           "the nested reply whole: %s", whole);
    call_done(&c);
    for (off = 1; off < len; off++) {
        srv_reset();
        srv.chunk[0] = off;
        srv.nchunk = 1;
        call_run(&c);
        describe(c.reply, &c.ints, got, sizeof(got));
        if (c.rv != APR_SUCCESS || strcmp(got, whole)) {
            bad++;
            printf("nested split at %d: %d %s\n", (int) off, c.rv, got);
        }
        call_done(&c);
    }
    EXPECT(bad == 0, "%d of %d splits of a nested reply read wrong", bad,
           (int) len - 1);
    sl_node_destroy(node);
}

/* A reply that comes one byte per read, and a batch of replies in one
 * read: the same answers. */
static void test_partial_reads(void)
{
    sl_redis_t *rs = client();
    sl_node_t *node = sl_node_create(rs, "127.0.0.1", 9, 6379);
    call_t c = {.rs = rs, .node = node, .what = "INTS 7 -3 12345678901"};
    static const long long want[] = {7, -3, 12345678901LL};

    srv_reset();
    srv.one_byte = 1;
    call_run(&c);
    EXPECT(answered(&c, want, 3), "one byte per read: %d %s", c.rv,
           c.err ? c.err : "");
    EXPECT(c.trips == 1, "one round trip, not %d", c.trips);
    call_done(&c);
    sl_node_destroy(node);
}

/* The answer split in two reads at every byte: the same integers, read
 * by the reader where the take function cannot have the whole reply; and
 * an INFO-like bulk reply ahead of it split the same way. */
static void test_split_everywhere(void)
{
    sl_redis_t *rs = client();
    sl_node_t *node = sl_node_create(rs, "127.0.0.1", 9, 6379);
    static const long long want[] = {1, 0, -42, 900};
    const char *reply = "*4\r\n:1\r\n:0\r\n:-42\r\n:900\r\n";
    apr_size_t len = strlen(reply), off;
    int bad = 0, fast = 0, slow = 0;

    for (off = 1; off < len; off++) {
        call_t c = {.rs = rs, .node = node, .what = "INTS 1 0 -42 900"};
        srv_reset();
        srv.chunk[0] = off;
        srv.nchunk = 1;
        call_run(&c);
        if (!answered(&c, want, 4)) {
            bad++;
            printf("split at %d: %d %s\n", (int) off, c.rv, c.err ? c.err : "");
        }
        fast += c.reply == &sl_reply_ints;
        slow += c.reply && c.reply != &sl_reply_ints;
        call_done(&c);
    }
    EXPECT(bad == 0, "%d of %d splits read wrong", bad, (int) len - 1);
    EXPECT(fast + slow == (int) len - 1, "every split answered");
    EXPECT(srv.connects >= 1 && node->nidle == 1,
           "one connection kept for all (%d idle)", node->nidle);

    /* Two replies in one stream, cut at every byte: each command its own
     * answer, in order. */
    {
        sl_conn_t *conn;
        const char *two = "$5\r\nhello\r\n*2\r\n:5\r\n:6\r\n";
        apr_size_t tl = strlen(two);
        bad = 0;
        for (off = 1; off < tl; off++) {
            redisReply *r1 = NULL, *r2 = NULL;
            long long v[4];
            sl_ints_t ints = {v, 4, 0, -1};
            char err[128];
            apr_size_t l1, l2;
            const char *c1 = cmd("ECHO hello", &l1), *c2 = cmd("INTS 5 6", &l2);
            srv_reset();
            srv.chunk[0] = off;
            srv.nchunk = 1;
            if (sl_conn_acquire(node, &conn) != APR_SUCCESS) {
                bad++;
                continue;
            }
            sl_conn_send(conn, c1, l1);
            sl_conn_send(conn, c2, l2);
            if (sl_conn_read(conn, NULL, &r1, err, sizeof(err)) ||
                sl_conn_read(conn, &ints, &r2, err, sizeof(err)) ||
                r1->type != REDIS_REPLY_STRING || strcmp(r1->str, "hello") ||
                r2 != &sl_reply_ints || ints.n != 2 || v[0] != 5 || v[1] != 6) {
                bad++;
                printf("two replies split at %d: wrong\n", (int) off);
            }
            if (r1) {
                freeReplyObject(r1);
            }
            sl_conn_release(node, conn);
        }
        EXPECT(bad == 0, "%d of %d splits of two replies read wrong", bad,
               (int) tl - 1);
    }
    sl_node_destroy(node);
}

/* A read times out halfway through a reply: the call fails as a timeout
 * (not stale: the script may have run), the connection is closed, and
 * the next call, on a new connection, gets its own answer rather than
 * the rest of the late one. */
static void test_timeout_mid_reply(void)
{
    sl_redis_t *rs = client();
    sl_node_t *node = sl_node_create(rs, "127.0.0.1", 9, 6379);
    call_t c = {.rs = rs, .node = node, .what = "INTS 11 22 33"};
    static const long long want2[] = {44};
    int before;

    srv_reset();
    srv.cut_after = 7; /* "*3\r\n:11" of "*3\r\n:11\r\n:22\r\n:33\r\n" */
    srv.cut_rv = APR_TIMEUP;
    before = srv.connects;
    call_run(&c);
    EXPECT(c.rv == APR_TIMEUP && !c.stale && !c.reply,
           "mid-reply timeout: rv %d stale %d", c.rv, c.stale);
    EXPECT(c.err && strstr(c.err, "timed out"), "said why: %s",
           c.err ? c.err : "(none)");
    EXPECT(node->nidle == 0, "the connection was closed (%d idle)",
           node->nidle);
    call_done(&c);

    srv_reset();
    c.what = "INTS 44";
    call_run(&c);
    EXPECT(answered(&c, want2, 1), "the next call its own answer: %d %s", c.rv,
           c.err ? c.err : "");
    EXPECT(srv.connects == before + 2, "on a new connection (%d made)",
           srv.connects - before);
    call_done(&c);
    sl_node_destroy(node);
}

/* The server closes a pooled connection between two batches: the second
 * fails as stale (its command may go again on a fresh connection), the
 * node's epoch moves on so that idle ones from before go too, and the
 * next call connects anew. A connection closed on its first use is not
 * stale. */
static void test_reset_between_batches(void)
{
    sl_redis_t *rs = client();
    sl_node_t *node = sl_node_create(rs, "127.0.0.1", 9, 6379);
    call_t c = {.rs = rs, .node = node, .what = "INTS 1"};
    static const long long one[] = {1}, three[] = {3};
    apr_uint32_t epoch;
    int first;

    srv_reset();
    call_run(&c);
    EXPECT(answered(&c, one, 1), "first batch answered");
    EXPECT(node->nidle == 1, "its connection pooled");
    call_done(&c);
    first = srv.connects;
    epoch = node->epoch;

    srv.cut_rv = APR_ECONNRESET;
    srv.cut_conn = first;
    c.what = "INTS 2";
    call_run(&c);
    EXPECT(c.rv == APR_EGENERAL && c.stale && !c.reply,
           "reset on a pooled connection: rv %d stale %d", c.rv, c.stale);
    EXPECT(c.err && strstr(c.err, "closed"), "said why: %s",
           c.err ? c.err : "(none)");
    EXPECT(node->epoch == epoch + 1, "the node's epoch moved on");
    EXPECT(node->nidle == 0, "the connection closed");
    call_done(&c);

    c.what = "INTS 3";
    call_run(&c);
    EXPECT(answered(&c, three, 1) && srv.connects == first + 1,
           "the next call on a new connection");
    call_done(&c);

    /* Closed on its first use: not one the server dropped while idle. */
    srv_reset();
    srv.cut_rv = APR_ECONNRESET;
    srv.cut_conn = srv.connects + 1;
    c.what = "INTS 4";
    while (node->nidle > 0) {
        sl_conn_destroy(node->idle[--node->nidle]);
    }
    call_run(&c);
    EXPECT(c.rv == APR_EGENERAL && !c.stale,
           "reset on a new connection: rv %d stale %d", c.rv, c.stale);
    call_done(&c);
    sl_node_destroy(node);
}

/* Queued commands (not the leader's) in node's queue. A command's layout
 * is sl_pipe.c's own: its first member is the next one's address. */
static int queued(sl_node_t *node)
{
    struct sl_pcmd *c;
    int n = 0;

    apr_thread_mutex_lock(node->qlock);
    for (c = node->qhead; c; c = *(struct sl_pcmd **) c) {
        n++;
    }
    apr_thread_mutex_unlock(node->qlock);
    return n;
}

static void wait_for(int (*cond)(sl_node_t *), sl_node_t *node, int want)
{
    int i;

    for (i = 0; i < 5000 && cond(node) != want; i++) {
        apr_sleep(1000);
    }
}

static int reads_waiting(sl_node_t *node)
{
    int n;

    (void) node;
    pthread_mutex_lock(&srv.lock);
    n = srv.waiting;
    pthread_mutex_unlock(&srv.lock);
    return n;
}

/* While the leader's read is held, B queues with a short deadline and C
 * and D with a long one: B leaves the queue unsent at its deadline; when
 * the read is let go the leader answers, hands the pipeline to C, and C
 * carries D in its batch. Every answer goes to its own caller. */
static void test_waiter_times_out(void)
{
    sl_redis_t *rs = client();
    sl_node_t *node = sl_node_create(rs, "127.0.0.1", 9, 6379);
    call_t a = {.rs = rs, .node = node, .what = "INTS 1"},
           b = {.rs = rs, .node = node, .what = "INTS 2"},
           c = {.rs = rs, .node = node, .what = "INTS 3"},
           d = {.rs = rs, .node = node, .what = "INTS 4"};
    static const long long one[] = {1}, three[] = {3}, four[] = {4};
    pthread_t ta, tb, tc, td;
    int i;

    srv_reset();
    srv.held = 1;
    pthread_create(&ta, NULL, call_run, &a);
    wait_for(reads_waiting, node, 1);

    rs->queue_timeout = apr_time_from_msec(50);
    pthread_create(&tb, NULL, call_run, &b);
    /* Bounded: a waiter that never leaves fails here rather than hangs
     * (it is answered once the read is let go, below). */
    for (i = 0; i < 3000 && !__atomic_load_n(&b.done, __ATOMIC_ACQUIRE); i++) {
        apr_sleep(1000);
    }
    rs->queue_timeout = apr_time_from_sec(10);
    EXPECT(b.done, "the waiter past its deadline returned");
    EXPECT(b.rv == APR_TIMEUP && b.err &&
               !strcmp(b.err, "timed out waiting for a batch"),
           "the waiter past its deadline left: %d %s", b.rv,
           b.err ? b.err : "");

    pthread_create(&tc, NULL, call_run, &c);
    wait_for(queued, node, 1);
    pthread_create(&td, NULL, call_run, &d);
    wait_for(queued, node, 2);
    EXPECT(queued(node) == 2, "C and D queued (%d)", queued(node));

    pthread_mutex_lock(&srv.lock);
    srv.held = 0;
    pthread_cond_broadcast(&srv.cond);
    pthread_mutex_unlock(&srv.lock);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    pthread_join(tc, NULL);
    pthread_join(td, NULL);

    EXPECT(answered(&a, one, 1) && a.trips == 1, "A led and got 1");
    EXPECT(answered(&c, three, 1) && c.trips == 1, "C led the next batch");
    EXPECT(answered(&d, four, 1) && d.trips == 0, "D rode in C's batch");
    EXPECT(srv.writes == 2, "two batches written, not %d", srv.writes);
    EXPECT(!strcmp(srv.written, "INTS 1;INTS 3;INTS 4;"), "B never sent: %s",
           srv.written);
    EXPECT(node->inflight == 0 && !node->qhead, "the pipeline idle again");
    call_done(&a);
    call_done(&b);
    call_done(&c);
    call_done(&d);
    sl_node_destroy(node);
}

/* The connection's setup through the seam: AUTH and SELECT before the
 * first command, a refused password, a server that does not answer (a
 * timeout, not a refused password), a refused connect. */
static void test_setup(void)
{
    sl_redis_t *rs = client();
    sl_node_t *node = sl_node_create(rs, "127.0.0.1", 9, 6379);
    sl_conn_t *conn = NULL;
    apr_status_t rv;

    url.user = "u";
    url.password = "p";
    url.db = 3;
    srv_reset();
    rv = sl_conn_acquire(node, &conn);
    EXPECT(rv == APR_SUCCESS && !strcmp(srv.written, "AUTH u;SELECT 3;"),
           "AUTH then SELECT: %d %s", rv, srv.written);
    if (rv == APR_SUCCESS) {
        sl_conn_destroy(conn);
    }

    srv_reset();
    srv.deny_auth = 1;
    rv = sl_conn_acquire(node, &conn);
    EXPECT(rv == APR_EACCES &&
               !strcmp(sl_conn_error(rv), "authentication refused"),
           "a refused password: %d %s", rv, sl_conn_error(rv));

    srv_reset();
    srv.silent = 1;
    rv = sl_conn_acquire(node, &conn);
    EXPECT(rv == APR_TIMEUP && strstr(sl_conn_error(rv), "AUTH: read timed"),
           "a silent server times out: %d %s", rv, sl_conn_error(rv));

    srv_reset();
    srv.refuse = APR_ECONNREFUSED;
    rv = sl_conn_acquire(node, &conn);
    EXPECT(rv == APR_ECONNREFUSED &&
               strstr(sl_conn_error(rv), "refused by the script"),
           "a refused connect: %d %s", rv, sl_conn_error(rv));
    url.user = url.password = NULL;
    url.db = 0;
    sl_node_destroy(node);
}

static struct {
    int claims;
    char node[64], text[64];
} prereq;

static int claim(void *ctx, const char *node)
{
    (void) ctx;
    apr_cpystrn(prereq.node, node, sizeof(prereq.node));
    return ++prereq.claims == 1;
}

static void info(void *ctx, const char *node, const char *text, apr_size_t len,
                 const char *error)
{
    (void) ctx, (void) node, (void) error;
    apr_cpystrn(prereq.text, text ? text : "(none)",
                len + 1 < sizeof(prereq.text) ? len + 1 : sizeof(prereq.text));
}

/* The store's prerequisites: INFO goes out with a new connection's first
 * command, in the same write, and its reply, split anywhere, is read
 * ahead of that command's; only the connection the store names asks. */
static void test_info_ahead(void)
{
    sl_redis_t *rs = client();
    sl_node_t *node = sl_node_create(rs, "127.0.0.1", 9, 6379);
    call_t c = {.rs = rs, .node = node, .what = "INTS 9"};
    static const long long nine[] = {9};
    int before;

    rs->prereq_claim = claim;
    rs->prereq_info = info;
    srv_reset();
    srv.chunk[0] = 13; /* within INFO's text */
    srv.chunk[1] = 22; /* past its end, into the answer */
    srv.nchunk = 2;
    before = srv.connects;
    call_run(&c);
    EXPECT(answered(&c, nine, 1), "the command's own answer after INFO: %d %s",
           c.rv, c.err ? c.err : "");
    EXPECT(!strcmp(prereq.text, "redis_version:7.2.4\r\n") &&
               !strcmp(prereq.node, "127.0.0.1:6379"),
           "INFO's text to the prerequisites: '%s' of %s", prereq.text,
           prereq.node);
    EXPECT(!strcmp(srv.written, "INFO;INTS 9;") && srv.writes == 1,
           "INFO in the first command's write: %s (%d writes)", srv.written,
           srv.writes);
    call_done(&c);

    /* A second connection that the store does not name sends none. */
    while (node->nidle > 0) {
        sl_conn_destroy(node->idle[--node->nidle]);
    }
    srv_reset();
    call_run(&c);
    EXPECT(answered(&c, nine, 1) && !strcmp(srv.written, "INTS 9;") &&
               srv.connects == before + 2,
           "no INFO on the next connection: %s", srv.written);
    call_done(&c);
    sl_node_destroy(node);
}

int main(void)
{
    apr_initialize();
    apr_pool_create(&pool, NULL);

    test_partial_reads();
    test_split_everywhere();
    test_split_nested();
    test_timeout_mid_reply();
    test_reset_between_batches();
    test_waiter_times_out();
    test_setup();
    test_info_ahead();

    printf("sl_pipe: %d passed, %d failed\n", passed, failed);
    apr_pool_destroy(pool);
    apr_terminate();
    return failed ? 1 : 0;
}
