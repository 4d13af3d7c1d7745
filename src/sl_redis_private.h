/* SPDX-License-Identifier: Apache-2.0 */
/* What the Redis store's files share: sl_conn.c (connections and the
 * per-node idle pool), sl_pipe.c (the auto-pipeline), sl_topology.c (nodes,
 * the slot map, redirections), sl_slots.c (the map's I/O), sl_way.c (a
 * call's routing) and sl_redis.c (the decision); the protocol is
 * sl_resp.h's. Nothing here is seen outside the store. */
#ifndef SL_REDIS_PRIVATE_H
#define SL_REDIS_PRIVATE_H

#include "sl_breaker.h"
#include "sl_redis.h"
#include "sl_resp.h"
#include "sl_sentinel.h"
#include "sl_transport.h"
#include "sl_url.h"

#include <apr_atomic.h>
#include <apr_thread_mutex.h>
#include <apr_thread_proc.h>

#include <hiredis/hiredis.h>

#include <semaphore.h>
#include <sys/time.h>

/* The slot map is loaded again at most this often after an error (MOVED,
 * a node that failed, READONLY, CLUSTERDOWN), and at least this often
 * anyway, so that a child that saw no error still learns a failover's
 * new master before it needs it. */
#define SL_TOPO_RETRY  apr_time_from_msec(100)
#define SL_TOPO_PERIOD apr_time_from_sec(5)

/* Auto-pipelining (threaded MPMs): at most this many commands share one
 * write and one read, and at most SL_PIPE_INFLIGHT batches per node are in
 * flight at once, each on its own connection (0 turns pipelining off; a
 * build-time knob for measuring, see bench/NOTES.md). One: Redis is the
 * resource every server shares, and with two in flight batches are smaller
 * (a 16-client burst in the suite shared no trip at all) for a request
 * that arrives while the only batch is out, which waits for it, a round
 * trip sooner. */
#define SL_PIPE_BATCH 64
#ifndef SL_PIPE_INFLIGHT
#define SL_PIPE_INFLIGHT 1
#endif

/* Allocated with malloc, not from the child's pool: connections come and go
 * with every Redis restart for the life of the child, and a pool would keep
 * each one's memory until the child exits. Only sl_conn.c touches the
 * transport. */
typedef struct sl_conn {
    sl_transport_t *t;
    sl_reader_t rd; /* the transport's reader's object functions */
    char *out;      /* commands sent with the next read */
    apr_size_t outlen, outcap;
    int uses;
    apr_uint32_t node_epoch; /* the node's epoch when it was made */
    /* The node INFO was asked of (malloc'd), until its reply is read
     * ahead of the first command's: see sl_conn_read. */
    char *info_node;
    struct sl_redis *rs;
} sl_conn_t;

/* Nodes are allocated with malloc and own an unmanaged pool (their
 * mutexes), not the child's pool: a cluster whose nodes come and go would
 * grow that for the life of the child. A node leaves the table when it
 * leaves the slot map, and is freed when the last request that routed to
 * it lets go (refs, under the client's mutex). */
typedef struct sl_node {
    sl_redis_t *rs;
    apr_pool_t *pool;
    const char *host; /* NULL for a unix socket */
    int port;
    int refs;
    int index;  /* in the table, -1 once out of it */
    int mapped; /* serves slots in the map being loaded */
    /* Cluster nodes only: whether this node answers, per child (each child
     * finds out on its own, as it does for its connections). Only the
     * slots of a node that fails take the fail mode; the store's breaker
     * in shared memory stays for a cluster of which no node answers. */
    sl_breaker_t health;
    /* Idle connections, at most one per thread of the child. Not an
     * apr_reslist: apr-util 1.6 makes a new resource with the list's lock
     * held, so while one thread waits out a connect timeout every other
     * thread of the child, even one that only wants an idle connection,
     * waits behind it, and n concurrent requests take n connect timeouts.
     * Here the lock only guards the stack; connecting happens outside. */
    apr_thread_mutex_t *lock;
    sl_conn_t **idle;
    int nidle;
    /* Bumped when a pooled connection is found closed by the server (a
     * restart closes all of them): idle connections from before are
     * dropped when next acquired instead of each failing a request. */
    volatile apr_uint32_t epoch;
    /* Auto-pipelining, under qlock (not lock, which the leaders take for
     * the idle stack): commands waiting for a batch (FIFO) and the
     * batches in flight. */
    apr_thread_mutex_t *qlock;
    struct sl_pcmd *qhead, *qtail;
    int inflight;
} sl_node_t;

/* What a thread waits on while another carries its command: one per thread
 * and client, made on the thread's first wait and handed back to the
 * client's spares when the thread exits (mod_http2 starts and ends worker
 * threads for the life of the child), so their number stays that of the
 * threads alive at once. A POSIX semaphore rather than an APR mutex and
 * condition variable: a waiter is woken exactly once per wait (one futex
 * wake, one futex wait), where the condition variable cost the leader a
 * lock, a signal and often a second wake for every thread it answered
 * (bench/NOTES.md). */
typedef struct sl_waiter {
    sem_t sem;
    struct sl_redis *rs;
    struct sl_waiter *next; /* in rs->spare */
    struct sl_waiter *made; /* every waiter of rs, freed at child exit */
} sl_waiter_t;

/* The nodes a Redis client knows and, for a cluster, which serves each slot.
 * Pure data: sl_topology.c reads and changes it, under the Redis client's
 * mutex, and makes and frees nodes only through node_new and node_free. */
typedef struct sl_topology {
    sl_node_t **nodes; /* the table; NULL where a node left */
    int nnodes, cap;
    apr_uint16_t *slots;  /* cluster: table index + 1, 0 unknown */
    apr_time_t loaded_at; /* the map's last load */
    apr_time_t tried_at;  /* the last try to load it */
    int refreshing;       /* a thread is loading it */
    int outdated;         /* an error said it is out of date */
    sl_node_t *(*node_new)(void *ctx, const char *host, apr_size_t hostlen,
                           int port);
    void (*node_free)(sl_node_t *node);
    void *ctx;
} sl_topology_t;

/* A Sentinel store's master as the Sentinels last named it (sl_conn.c),
 * under lock. */
typedef struct sl_master {
    apr_thread_mutex_t *lock;
    sl_sentinel_t sentinel;
    char host[256];
    int port;    /* 0: none known yet */
    int doubted; /* it failed, timed out or said READONLY: discover it again */
    int discovering;
    apr_time_t discovered_at;
    char why[160]; /* the last answer, when it was no master */
} sl_master_t;

/* A script run with EVALSHA; after NOSCRIPT (Redis restarted, SCRIPT FLUSH)
 * it is loaded again in the same round trip as the call. */
typedef struct sl_script {
    const char *sha; /* hex SHA-1 of the text */
    /* EVALSHA and the SHA-1 as a command's first two arguments, in RESP */
    const char *head;
    apr_size_t head_len;
    const char *load; /* SCRIPT LOAD of the text, in RESP */
    apr_size_t load_len;
} sl_script_t;

struct sl_redis {
    apr_pool_t *pool;
    const sl_store_url_t *url;
    apr_interval_time_t connect_timeout;
    apr_interval_time_t command_timeout;
    sl_tls_t *tls; /* TLS stores */
    /* The byte stream under every connection (sl_conn.c): NULL for the
     * socket's, a scripted one in the unit tests. */
    const sl_transport_ops_t *io;
    sl_master_t master; /* Sentinel stores */
    int max_connections;
    /* Threads of a child share round trips to a node (see sl_pipe_exec);
     * never under a single-threaded MPM. */
    int pipeline;
    apr_interval_time_t queue_timeout; /* connect + command timeouts */
    apr_threadkey_t *waiter_key;       /* this thread's sl_waiter_t */
    sl_waiter_t *spare;                /* of exited threads, under mutex */
    sl_waiter_t *made;                 /* all of them, under mutex */
    sl_script_t check;     /* lua/sl_check.lua: decisions and looks */
    sl_script_t give_back; /* lua/sl_give_back.lua: give-backs (count=) */
    sl_script_t renew;     /* lua/sl_renew.lua: leases renewed */
    sl_script_t charge;    /* lua/sl_charge.lua: charges (cost=after:) */
    sl_script_t allot;     /* lua/sl_allot.lua: allotments */
    sl_redis_claim_fn *prereq_claim; /* sl_redis_prereq_set */
    sl_redis_info_fn *prereq_info;
    void *prereq_ctx;
    /* Guards topo, the nodes' refs and allocations from pool: threads of
     * one child share this structure, never a connection. */
    apr_thread_mutex_t *mutex;
    sl_topology_t topo;
    /* A store that is not a cluster: the table's first node, where every
     * call goes (sl_slots_route). */
    sl_node_t *single;
};

/* sl_conn.c: nodes and the transport, behind connect / send / read /
 * close. A failed read leaves the connection unusable: it goes to
 * sl_conn_discard. */
sl_node_t *sl_node_create(void *rs, const char *host, apr_size_t hostlen,
                          int port);
void sl_node_destroy(sl_node_t *node);
apr_status_t sl_conn_acquire(sl_node_t *node, sl_conn_t **out);
void sl_conn_release(sl_node_t *node, sl_conn_t *conn);
void sl_conn_destroy(sl_conn_t *conn);
/* Why the calling thread's last sl_conn_acquire failed. */
const char *sl_conn_error(apr_status_t rv);
/* A Sentinel store's master failed, or said it is one no more
 * (sl_conn_error_reply with READONLY or MASTERDOWN): ask the Sentinels
 * again before the next connection. */
void sl_conn_master_failed(sl_redis_t *rs);
void sl_conn_error_reply(sl_node_t *node, const char *msg);
/* Queues one command in RESP; written by the next sl_conn_read. */
apr_status_t sl_conn_send(sl_conn_t *conn, const char *buf, apr_size_t len);
/* The next reply, or APR_TIMEUP, APR_ECONNRESET or APR_EGENERAL with the
 * reason in err. ints (or NULL): an array reply is read into it, and
 * *reply is then sl_reply_ints. */
apr_status_t sl_conn_read(sl_conn_t *conn, sl_ints_t *ints, redisReply **reply,
                          char *err, apr_size_t errlen);
/* Closes a connection whose read failed with rv; 1 when it was a pooled
 * one the server had closed (its commands may be sent again on a new one,
 * and the node's older connections are dropped too). */
int sl_conn_discard(sl_node_t *node, sl_conn_t *conn, apr_status_t rv);

/* sl_pipe.c */
apr_status_t sl_pipe_init(sl_redis_t *rs, apr_pool_t *p);
apr_status_t sl_pipe_exec(sl_redis_t *rs, sl_node_t *node, apr_pool_t *p,
                          const char *buf, apr_size_t len, sl_ints_t *ints,
                          redisReply **reply, int *stale, const char **err,
                          int *trips);

/* sl_topology.c, called with the Redis client's mutex held */
void sl_topo_ref(sl_node_t *node);
void sl_topo_unref(sl_topology_t *t, sl_node_t *node);
/* The table's node at host:port, made when new; NULL when out of memory. */
sl_node_t *sl_topo_node(sl_topology_t *t, const char *host, apr_size_t hostlen,
                        int port);
/* Empties the table (child exit). */
void sl_topo_clear(sl_topology_t *t);
/* The master of slot; for a slot not mapped yet a node that is up; the
 * one node of a store that is not a cluster. NULL: none. */
sl_node_t *sl_topo_route(sl_topology_t *t, unsigned int slot);
int sl_topo_any_up(sl_topology_t *t);
sl_node_t *sl_topo_redirect(sl_topology_t *t, const char *msg,
                            const sl_node_t *from_node);
/* A CLUSTER SLOTS reply from from_node becomes the map; nodes that serve no
 * slot leave the table. NULL, or why the reply was refused (the map is
 * then unchanged). */
const char *sl_topo_load(sl_topology_t *t, const redisReply *r,
                         const sl_node_t *from_node);
/* 1 when the caller is to load the map now (and is the only one to). */
int sl_topo_refresh_claim(sl_topology_t *t, apr_time_t now);
void sl_topo_refresh_done(sl_topology_t *t, apr_time_t now, int loaded);

/* sl_slots.c: the slot map's I/O, the real Redis client's part of a call's
 * way (sl_way_ops_t, whose comments say what each does). ctx: the
 * client. */
sl_node_t *sl_slots_route(void *ctx, apr_pool_t *p, unsigned int slot,
                          int outdated);
sl_node_t *sl_slots_redirect(void *ctx, const char *msg, sl_node_t *from_node);
void sl_slots_unref(void *ctx, sl_node_t *node);
void sl_slots_migrating(void *ctx, apr_interval_time_t wait);
apr_status_t sl_slots_down(void *ctx, apr_status_t rv, const char **err);

#endif
