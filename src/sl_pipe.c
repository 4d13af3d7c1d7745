/* SPDX-License-Identifier: Apache-2.0 */
/* The auto-pipeline of threaded MPMs: the threads of a child that ask a
 * node at the same time share round trips, one leader writing many
 * EVALSHA at once and reading their replies in order. */
#include "sl_redis_private.h"
#include "sl_resp.h"

#include <apr_strings.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One request's command on its way through a node's pipeline. It lives on
 * the requesting thread's stack and its text in the request pool: once a
 * leader has taken it (SL_PCMD_TAKEN) the requester waits for the leader's
 * word (DONE, or LEAD when handed the pipeline) whatever its deadline, so
 * neither is freed while the leader still reads it. QUEUED becomes TAKEN
 * under the node's qlock; TAKEN becomes DONE or LEAD with one post of the
 * waiter's semaphore, after the leader wrote the outcome. */
#define SL_PCMD_QUEUED 0
#define SL_PCMD_TAKEN  1
#define SL_PCMD_LEAD   2 /* handed the node's pipeline: run the next batch */
#define SL_PCMD_DONE   3

typedef struct sl_pcmd {
    struct sl_pcmd *next;
    const char *buf;
    apr_size_t len;
    sl_ints_t *ints;     /* the reply's integers go here (NULL: none) */
    sl_waiter_t *waiter; /* NULL for the thread that led at once */
    volatile apr_uint32_t state;
    /* DONE: the reply, or NULL and rv, err (a copy: the context that said
     * it is gone) and stale (it failed on a pooled connection that the
     * server had closed, so one retry on a fresh one is safe). */
    redisReply *reply;
    apr_status_t rv;
    int stale;
    char err[128];
} sl_pcmd_t;

static void sl_waiter_release(void *data);

/* Child exit, the workers and the lease renewer joined (their cleanups
 * run first): no thread waits any more, and none that exits later hands a
 * waiter back. */
static apr_status_t sl_waiter_key_cleanup(void *data)
{
    sl_redis_t *rs = data;
    sl_waiter_t *w;

    apr_threadkey_private_delete(rs->waiter_key);
    while ((w = rs->made) != NULL) {
        rs->made = w->made;
        sem_destroy(&w->sem);
        free(w);
    }
    rs->spare = NULL;
    return APR_SUCCESS;
}

/* Thread exit (the key's destructor): the waiter goes to the spares. Its
 * semaphore is at zero: a thread leaves sl_pipe_exec only after taking the
 * one post it was owed. */
static void sl_waiter_release(void *data)
{
    sl_waiter_t *w = data;
    sl_redis_t *rs = w->rs;

    apr_thread_mutex_lock(rs->mutex);
    w->next = rs->spare;
    rs->spare = w;
    apr_thread_mutex_unlock(rs->mutex);
}

/* This thread's waiter for rs: a spare, else a new one; NULL if that
 * failed. Made with calloc, not from the child's pool: threads of the
 * child make theirs at once, and a pool (its allocator too) is one
 * thread's at a time; rs->mutex orders this client's threads only, not
 * another store's or httpd's own users of that pool. */
static sl_waiter_t *sl_waiter(sl_redis_t *rs)
{
    void *data = NULL;
    sl_waiter_t *w;

    if (apr_threadkey_private_get(&data, rs->waiter_key) == APR_SUCCESS &&
        data) {
        return data;
    }
    apr_thread_mutex_lock(rs->mutex);
    if ((w = rs->spare) != NULL) {
        rs->spare = w->next;
        w->next = NULL;
    }
    else if ((w = calloc(1, sizeof(*w))) != NULL) {
        if (sem_init(&w->sem, 0, 0) == 0) {
            w->rs = rs;
            w->made = rs->made;
            rs->made = w;
        }
        else {
            free(w);
            w = NULL;
        }
    }
    if (w && apr_threadkey_private_set(w, rs->waiter_key) != APR_SUCCESS) {
        w->next = rs->spare;
        rs->spare = w;
        w = NULL;
    }
    apr_thread_mutex_unlock(rs->mutex);
    return w;
}

/* Tells a waiting thread that its command is answered or that it leads
 * now: exactly one post per command taken from the queue, so the
 * semaphore is back at zero when its thread returns. The command may be
 * gone as soon as the post is made. */
static void sl_pcmd_post(sl_pcmd_t *c, apr_uint32_t state)
{
    sl_waiter_t *w = c->waiter;

    apr_atomic_set32(&c->state, state);
    sem_post(&w->sem);
}

/* The leader's batch, taken under node->qlock (released here): its own
 * command first, then as many queued ones as fit. */
static int sl_pipe_take(sl_node_t *node, sl_pcmd_t **batch, sl_pcmd_t *own)
{
    int n = 0;

    batch[n++] = own;
    while (n < SL_PIPE_BATCH && node->qhead) {
        sl_pcmd_t *c = node->qhead;
        node->qhead = c->next;
        c->next = NULL;
        apr_atomic_set32(&c->state, SL_PCMD_TAKEN);
        batch[n++] = c;
    }
    if (!node->qhead) {
        node->qtail = NULL;
    }
    apr_thread_mutex_unlock(node->qlock);
    return n;
}

/* After a round trip: the pipeline to the thread of the next queued
 * command, or one batch fewer in flight, then the batch's other threads
 * told that their replies (or failure) are in. */
static void sl_pipe_pass(sl_node_t *node, sl_pcmd_t **batch, int n)
{
    sl_pcmd_t *next = NULL;
    int i;

    /* The next batch first: its commands have waited longest. */
    apr_thread_mutex_lock(node->qlock);
    if (node->qhead) {
        next = node->qhead;
        node->qhead = next->next;
        if (!node->qhead) {
            node->qtail = NULL;
        }
        next->next = NULL;
        apr_atomic_set32(&next->state, SL_PCMD_TAKEN);
    }
    else {
        node->inflight--;
    }
    apr_thread_mutex_unlock(node->qlock);
    if (next) {
        sl_pcmd_post(next, SL_PCMD_LEAD);
    }
    for (i = 1; i < n; i++) {
        sl_pcmd_post(batch[i], SL_PCMD_DONE);
    }
}

/* At a queued command's deadline: takes it out of the queue and says so,
 * unless a leader has taken it already (then its thread waits for the
 * leader's word). */
static int sl_pipe_leave(sl_node_t *node, sl_pcmd_t *cmd)
{
    int left = 0;

    apr_thread_mutex_lock(node->qlock);
    if (apr_atomic_read32(&cmd->state) == SL_PCMD_QUEUED) {
        sl_pcmd_t **pp = &node->qhead, *prev = NULL;
        while (*pp != cmd) {
            prev = *pp;
            pp = &(*pp)->next;
        }
        *pp = cmd->next;
        if (node->qtail == cmd) {
            node->qtail = prev;
        }
        left = 1;
    }
    apr_thread_mutex_unlock(node->qlock);
    return left;
}

/* The leader's round trip, entered with node->qlock held and one of the
 * node's in-flight batches counted for it, left with it released: its own
 * command, then as many queued ones as fit, all written at once (hiredis
 * flushes its output buffer in one write), then every reply in order on
 * the same connection. The pipeline then passes to the thread of the next
 * queued command, so no request waits for batches after its own, and each
 * command gets its reply or the batch's failure, as a direct call would
 * have seen it. */
static void sl_pipe_run(sl_node_t *node, sl_pcmd_t *own, int *trips)
{
    sl_pcmd_t *batch[SL_PIPE_BATCH];
    sl_conn_t *conn = NULL;
    char errbuf[128];
    const char *err = NULL;
    apr_status_t rv;
    int n, got = 0, keep = 1, stale = 0, i;

    n = sl_pipe_take(node, batch, own);

    rv = sl_conn_acquire(node, &conn);
    if (rv != APR_SUCCESS) {
        err = sl_conn_error(rv);
        conn = NULL;
    }
    else {
        (*trips)++;
        for (i = 0; rv == APR_SUCCESS && i < n; i++) {
            rv = sl_conn_send(conn, batch[i]->buf, batch[i]->len);
        }
        for (got = 0; rv == APR_SUCCESS && got < n; got++) {
            const redisReply *r;
            rv = sl_conn_read(conn, batch[got]->ints, &batch[got]->reply,
                              errbuf, sizeof(errbuf));
            if (rv != APR_SUCCESS) {
                batch[got]->reply = NULL;
                break;
            }
            r = batch[got]->reply;
            if (r->type == REDIS_REPLY_ERROR &&
                !sl_error_usable(r->str ? r->str : "")) {
                sl_conn_error_reply(node, r->str);
                keep = 0;
            }
        }
        if (rv != APR_SUCCESS) {
            err = errbuf;
            if (rv == APR_ENOMEM) {
                apr_cpystrn(errbuf, "out of memory", sizeof(errbuf));
            }
            /* As in sl_redis_decide: the commands of a pooled connection
             * that the server closed may be sent again. */
            stale = sl_conn_discard(node, conn, rv);
            conn = NULL;
            rv = rv == APR_TIMEUP ? APR_TIMEUP : APR_EGENERAL;
        }
    }
    /* The commands without a reply; err copied before the connection that
     * holds it is freed. */
    for (i = got; i < n; i++) {
        batch[i]->rv = rv;
        batch[i]->stale = stale;
        apr_cpystrn(batch[i]->err, err, sizeof(batch[i]->err));
    }
    if (conn) {
        if (keep) {
            sl_conn_release(node, conn);
        }
        else {
            sl_conn_destroy(conn);
        }
    }

    sl_pipe_pass(node, batch, n);
}

/* A command queued behind the batch in flight, entered with node->qlock
 * held and left with it released: waits to be answered or handed the
 * pipeline (and then leads). APR_TIMEUP when it left the queue unsent at
 * its deadline. */
static apr_status_t sl_pipe_wait(sl_redis_t *rs, sl_node_t *node,
                                 sl_pcmd_t *cmd, sl_waiter_t *w, int *trips)
{
    /* The wall clock, as sem_timedwait wants it (and as libfaketime
     * shifts both). */
    apr_time_t deadline = apr_time_now() + rs->queue_timeout;
    struct timespec ts;

    cmd->waiter = w;
    if (node->qtail) {
        node->qtail->next = cmd;
    }
    else {
        node->qhead = cmd;
    }
    node->qtail = cmd;
    apr_thread_mutex_unlock(node->qlock);

    ts.tv_sec = (time_t) apr_time_sec(deadline);
    ts.tv_nsec = (long) apr_time_usec(deadline) * 1000;
    while (sem_timedwait(&w->sem, &ts) != 0) {
        if (errno == EINTR) {
            continue;
        }
        /* Deadline: leave the queue unsent, unless a leader has taken
         * the command already (then wait for its word, unbounded: the
         * leader is bounded by the command timeout). */
        if (sl_pipe_leave(node, cmd)) {
            return APR_TIMEUP;
        }
        while (sem_wait(&w->sem) != 0) {
            /* EINTR; anything else cannot happen to a valid semaphore,
             * and leaving before the leader's word would free the
             * command under it. */
        }
        break;
    }
    if (apr_atomic_read32(&cmd->state) == SL_PCMD_LEAD) {
        apr_thread_mutex_lock(node->qlock);
        sl_pipe_run(node, cmd, trips);
    }
    return APR_SUCCESS;
}

/* One request's command through the node's pipeline: the thread that finds
 * no batch in flight sends it at once (with whatever queues meanwhile);
 * the others queue and wait to be answered or handed the pipeline. A
 * command still queued at its deadline (the bound of a direct call:
 * connect and command timeouts) leaves the queue unsent and fails with
 * APR_TIMEUP. APR_SUCCESS with *reply, else the failure with *stale and
 * *err; APR_ENOTIMPL when this thread has no waiter (the caller then goes
 * the direct way). */
apr_status_t sl_pipe_exec(sl_redis_t *rs, sl_node_t *node, apr_pool_t *p,
                          const char *buf, apr_size_t len, sl_ints_t *ints,
                          redisReply **reply, int *stale, const char **err,
                          int *trips)
{
    sl_pcmd_t cmd;
    sl_waiter_t *w;

    cmd.next = NULL;
    cmd.buf = buf;
    cmd.len = len;
    cmd.ints = ints;
    cmd.waiter = NULL;
    cmd.state = SL_PCMD_QUEUED;
    cmd.reply = NULL;
    cmd.rv = APR_SUCCESS;
    cmd.stale = 0;
    cmd.err[0] = '\0';

    w = sl_waiter(rs);
    apr_thread_mutex_lock(node->qlock);
    if (node->inflight < SL_PIPE_INFLIGHT && !node->qhead) {
        node->inflight++;
        sl_pipe_run(node, &cmd, trips);
    }
    else if (!w) {
        apr_thread_mutex_unlock(node->qlock);
        return APR_ENOTIMPL;
    }
    else if (sl_pipe_wait(rs, node, &cmd, w, trips) != APR_SUCCESS) {
        *err = "timed out waiting for a batch";
        return APR_TIMEUP;
    }
    if (cmd.reply) {
        *reply = cmd.reply;
        return APR_SUCCESS;
    }
    *stale = cmd.stale;
    *err = apr_pstrdup(p, cmd.err);
    return cmd.rv;
}

apr_status_t sl_pipe_init(sl_redis_t *rs, apr_pool_t *p)
{
    apr_status_t rv =
        apr_threadkey_private_create(&rs->waiter_key, sl_waiter_release, p);

    if (rv == APR_SUCCESS) {
        /* Registered after the Redis client's mutex, so run before its
         * destruction, and before the lease renewer is made: run after
         * it is joined. */
        apr_pool_cleanup_register(p, rs, sl_waiter_key_cleanup,
                                  apr_pool_cleanup_null);
    }
    return rv;
}
