/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of a call's way through the Redis store (src/sl_way.c): what
 * it does with each reply, driven through its seam by a scripted network.
 * The slot map is the real one (src/sl_topology.c) over fake nodes; each
 * trip answers the next step of a script (a reply in RESP, read by
 * hiredis, or a failure) and notes what the way sent. The end-to-end
 * tests in t/ run the same paths against real servers. No server needed
 * (make unit). */
#include "sl_way.h"

#include <apr_general.h>
#include <apr_strings.h>

#include "sl_expect.h"
#include "sl_reply_read.h"

#define SLOT      100
#define MAX_STEPS 64

/* What the next trip answers: a reply (resp), else the failure rv on a
 * connection that was (stale) or was not a pooled one the server had
 * closed. */
typedef struct step {
    const char *resp;
    apr_status_t rv;
    int stale;
} step_t;

#define REPLY(s)                                                               \
    {                                                                          \
        (s), APR_SUCCESS, 0                                                    \
    }
#define FAIL(rv, stale)                                                        \
    {                                                                          \
        NULL, (rv), (stale)                                                    \
    }

/* What one trip was asked to send. */
typedef struct seen {
    int port, asking, reload, shared;
} seen_t;

static struct {
    const step_t *steps; /* the last one repeats */
    int nsteps;
    seen_t seen[MAX_STEPS];
    int ntrips;
    long long answer; /* the script's answer, when it came */
    int routes, outdated_routes;
    /* A map loaded after an error names this node for the slot (NULL:
     * the same map); cycle: the next node of the table each time. */
    sl_node_t *reroute_to;
    int cycle;
    apr_interval_time_t waits[MAX_STEPS];
    int nwaits;
    int downs;
    apr_status_t down_rv;
} net;

static sl_topology_t topo;
static apr_pool_t *pool;
static sl_node_t *n1, *n2, *n3;
static const sl_script_t script = {
    .sha = "0123", .load = "*1\r\n$4\r\nLOAD\r\n", .load_len = 14};

static sl_node_t *fake_new(void *ctx, const char *host, apr_size_t hostlen,
                           int port)
{
    sl_node_t *n = calloc(1, sizeof(*n));

    (void) ctx;
    n->host = apr_pstrmemdup(pool, host, hostlen);
    n->port = port;
    sl_breaker_init(&n->health);
    return n;
}

static void fake_free(sl_node_t *n)
{
    free(n);
}

/* The scripted network: the trip. */
static apr_status_t fake_trip(const sl_way_t *w, int shared, redisReply **reply,
                              int *stale, const char **err, int *trips)
{
    const step_t *s =
        &net.steps[net.ntrips < net.nsteps ? net.ntrips : net.nsteps - 1];
    seen_t *seen = &net.seen[net.ntrips < MAX_STEPS ? net.ntrips : 0];

    /* A way that never stops ends here, so that the test fails instead of
     * hanging. */
    if (net.ntrips >= MAX_STEPS) {
        *reply = reply_of("-ERR the fake network: too many trips\r\n");
        return APR_SUCCESS;
    }
    net.ntrips++;
    seen->port = w->node->port;
    seen->asking = w->asking;
    seen->reload = w->reload && w->script;
    seen->shared = shared;
    if (s->rv == APR_ECONNREFUSED) {
        *err = "the fake network: refused";
        return s->rv; /* no connection, no round trip */
    }
    (*trips)++;
    if (s->resp) {
        *reply = reply_of(s->resp);
        return APR_SUCCESS;
    }
    *err = "the fake network: failed";
    *stale = s->stale;
    return s->rv;
}

/* The slot map's part, as sl_slots.c does it without the I/O: an outdated
 * route "loads" the map the test prepared. */
static sl_node_t *fake_route(void *ctx, apr_pool_t *p, unsigned int slot,
                             int outdated)
{
    sl_node_t *node;

    (void) ctx;
    (void) p;
    net.routes++;
    if (outdated) {
        net.outdated_routes++;
        topo.outdated = 1;
        if (net.cycle && topo.slots[slot]) {
            int next = topo.slots[slot] % topo.nnodes;
            topo.slots[slot] = (apr_uint16_t) (next + 1);
        }
        else if (net.reroute_to) {
            topo.slots[slot] = (apr_uint16_t) (net.reroute_to->index + 1);
        }
    }
    node = sl_topo_route(&topo, slot);
    if (node) {
        sl_topo_ref(node);
    }
    return node;
}

static sl_node_t *fake_redirect(void *ctx, const char *msg,
                                sl_node_t *from_node)
{
    sl_node_t *node = sl_topo_redirect(&topo, msg, from_node);

    (void) ctx;
    if (node) {
        sl_topo_ref(node);
    }
    sl_topo_unref(&topo, from_node);
    return node;
}

static void fake_unref(void *ctx, sl_node_t *node)
{
    (void) ctx;
    if (node) {
        sl_topo_unref(&topo, node);
    }
}

static void fake_migrating(void *ctx, apr_interval_time_t wait)
{
    (void) ctx;
    topo.outdated = 1;
    net.waits[net.nwaits++ % MAX_STEPS] = wait;
}

static apr_status_t fake_down(void *ctx, apr_status_t rv, const char **err)
{
    (void) ctx;
    net.downs++;
    net.down_rv = rv;
    if (!sl_topo_any_up(&topo)) {
        *err = "no node of the cluster answers";
        return rv;
    }
    return SL_STORE_PART_DOWN;
}

static const sl_way_ops_t fake_ops = {
    .trip = fake_trip,
    .route = fake_route,
    .redirect = fake_redirect,
    .unref = fake_unref,
    .migrating = fake_migrating,
    .down = fake_down,
};

/* A cluster of three masters, 127.0.0.1:7001 serving SLOT, or a single
 * server (7001); a fresh map, nodes and network for each case. */
static void setup(int cluster)
{
    sl_topo_clear(&topo);
    free(topo.slots);
    memset(&topo, 0, sizeof(topo));
    memset(&net, 0, sizeof(net));
    topo.node_new = fake_new;
    topo.node_free = fake_free;
    if (cluster) {
        topo.slots = calloc(16384, sizeof(*topo.slots));
    }
    n1 = sl_topo_node(&topo, "127.0.0.1", 9, 7001);
    n2 = cluster ? sl_topo_node(&topo, "127.0.0.1", 9, 7002) : NULL;
    n3 = cluster ? sl_topo_node(&topo, "127.0.0.1", 9, 7003) : NULL;
    if (cluster) {
        topo.slots[SLOT] = (apr_uint16_t) (n1->index + 1);
    }
}

static apr_uint16_t mapped(const sl_node_t *n)
{
    return (apr_uint16_t) (n->index + 1);
}

/* 1 when every node of the table is held by the table alone: the way let
 * go of all it took. */
static int balanced(void)
{
    int i;

    for (i = 0; i < topo.nnodes; i++) {
        if (topo.nodes[i] && topo.nodes[i]->refs != 1) {
            return 0;
        }
    }
    return 1;
}

#define RUN(kind, sc, steps, err, trips)                                       \
    run((kind), (sc), (steps), (int) (sizeof(steps) / sizeof((steps)[0])),     \
        (err), (trips))

#define CLUSTER  1
#define SINGLE   2
#define SENTINEL 3

static apr_status_t run(int kind, const sl_script_t *sc, const step_t *steps,
                        int nsteps, const char **err, int *trips)
{
    sl_way_t w = {.ops = &fake_ops,
                  .p = pool,
                  .slot = SLOT,
                  .cluster = kind == CLUSTER,
                  .sentinel = kind == SENTINEL,
                  .buf = "*1\r\n$4\r\nCALL\r\n",
                  .len = 14,
                  .script = sc};
    redisReply *reply = NULL;
    apr_status_t rv;

    net.steps = steps;
    net.nsteps = nsteps;
    *err = NULL;
    rv = sl_way_run(&w, &reply, err, trips);
    /* A way broken on purpose may claim success without a reply: the
     * checks then fail, the test does not crash. */
    net.answer = -1;
    if (rv == APR_SUCCESS && reply) {
        net.answer = reply->type == REDIS_REPLY_INTEGER ? reply->integer : -1;
        freeReplyObject(reply);
    }
    return rv;
}

static int starts(const char *s, const char *prefix)
{
    return s && !strncmp(s, prefix, strlen(prefix));
}

static void test_answer(void)
{
    static const step_t ok[] = {REPLY(":7\r\n")};
    const char *err;
    int trips;

    setup(CLUSTER);
    EXPECT(RUN(CLUSTER, &script, ok, &err, &trips) == APR_SUCCESS &&
               net.answer == 7 && net.ntrips == 1 && trips == 1,
           "answer: one trip");
    EXPECT(net.seen[0].port == 7001 && net.seen[0].shared &&
               !net.seen[0].asking && !net.seen[0].reload,
           "answer: the slot's master, the first trip may share a batch");
    EXPECT(net.routes == 1 && !net.outdated_routes && !topo.outdated,
           "answer: routed once, the map not out of date");
    EXPECT(balanced(), "answer: every node let go");
}

static void test_moved(void)
{
    static const step_t moved[] = {REPLY("-MOVED 100 127.0.0.1:7002\r\n"),
                                   REPLY(":1\r\n")};
    static const step_t unknown[] = {REPLY("-MOVED 100 127.0.0.1:7009\r\n"),
                                     REPLY(":1\r\n")};
    const char *err;
    int trips;

    setup(CLUSTER);
    EXPECT(RUN(CLUSTER, &script, moved, &err, &trips) == APR_SUCCESS &&
               net.ntrips == 2 && trips == 2,
           "MOVED: followed, two trips");
    EXPECT(net.seen[1].port == 7002 && !net.seen[1].asking &&
               !net.seen[1].shared && !net.seen[1].reload,
           "MOVED: the named node, without ASKING, on its own");
    EXPECT(topo.slots[SLOT] == mapped(n2), "MOVED: the slot moves in the map");
    EXPECT(topo.outdated, "MOVED: the map is out of date (loaded again)");
    EXPECT(balanced(), "MOVED: every node let go");

    setup(CLUSTER);
    EXPECT(RUN(CLUSTER, &script, unknown, &err, &trips) == APR_SUCCESS &&
               net.seen[1].port == 7009 && topo.nnodes == 4,
           "MOVED: a node the map did not know joins the table");
    EXPECT(balanced(), "MOVED to a new node: every node let go");
}

static void test_ask(void)
{
    static const step_t ask[] = {REPLY("-ASK 100 127.0.0.1:7002\r\n"),
                                 REPLY(":1\r\n")};
    static const step_t ask_here[] = {REPLY("-ASK 100 :7003\r\n"),
                                      REPLY(":1\r\n")};
    static const step_t ask_noscript[] = {
        REPLY("-ASK 100 127.0.0.1:7002\r\n"),
        REPLY("-NOSCRIPT No matching script.\r\n"), REPLY(":1\r\n")};
    static const step_t ask_tryagain[] = {
        REPLY("-ASK 100 127.0.0.1:7002\r\n"),
        REPLY("-TRYAGAIN Multiple keys request during rehashing\r\n"),
        REPLY(":1\r\n")};
    const char *err;
    int trips;

    setup(CLUSTER);
    EXPECT(RUN(CLUSTER, &script, ask, &err, &trips) == APR_SUCCESS &&
               net.ntrips == 2,
           "ASK: followed, two trips");
    EXPECT(net.seen[1].port == 7002 && net.seen[1].asking,
           "ASK: ASKING first, to the named node");
    EXPECT(topo.slots[SLOT] == mapped(n1) && !topo.outdated,
           "ASK: the map unchanged");
    EXPECT(balanced(), "ASK: every node let go");

    setup(CLUSTER);
    EXPECT(RUN(CLUSTER, &script, ask_here, &err, &trips) == APR_SUCCESS &&
               net.seen[1].port == 7003 && net.seen[1].asking,
           "ASK without a host: the answering node's host");

    setup(CLUSTER);
    EXPECT(RUN(CLUSTER, &script, ask_noscript, &err, &trips) == APR_SUCCESS &&
               net.ntrips == 3 && net.seen[2].port == 7002 &&
               net.seen[2].asking && net.seen[2].reload,
           "ASK then NOSCRIPT: the script loaded, ASKING again");

    setup(CLUSTER);
    EXPECT(RUN(CLUSTER, &script, ask_tryagain, &err, &trips) == APR_SUCCESS &&
               net.ntrips == 3 && net.seen[2].port == 7002 &&
               !net.seen[2].asking,
           "ASK holds for one trip: after TRYAGAIN, no ASKING");
}

static void test_noscript(void)
{
    static const step_t once[] = {REPLY("-NOSCRIPT No matching script.\r\n"),
                                  REPLY(":1\r\n")};
    static const step_t always[] = {REPLY("-NOSCRIPT No matching script.\r\n")};
    const char *err;
    int trips;

    setup(SINGLE);
    EXPECT(RUN(SINGLE, &script, once, &err, &trips) == APR_SUCCESS &&
               net.ntrips == 2 && trips == 2,
           "NOSCRIPT: run again, two trips");
    EXPECT(!net.seen[0].reload && net.seen[1].reload &&
               net.seen[1].port == 7001 && !net.seen[1].shared,
           "NOSCRIPT: the script loaded in the second trip, same node");

    setup(SINGLE);
    EXPECT(RUN(SINGLE, &script, always, &err, &trips) == APR_EGENERAL &&
               starts(err, "NOSCRIPT"),
           "NOSCRIPT after every load: the error");
    EXPECT(net.ntrips == 3 && net.seen[1].reload && net.seen[2].reload,
           "NOSCRIPT: loaded at most twice (three trips)");

    setup(SINGLE);
    EXPECT(RUN(SINGLE, NULL, once, &err, &trips) == APR_EGENERAL &&
               net.ntrips == 1 && starts(err, "NOSCRIPT"),
           "NOSCRIPT for a plain command: nothing to load, the error");

    setup(CLUSTER);
    EXPECT(RUN(CLUSTER, &script, once, &err, &trips) == APR_SUCCESS &&
               net.seen[1].reload && !net.seen[1].asking &&
               net.seen[1].port == 7001,
           "NOSCRIPT in a cluster: loaded on the same node");
}

static void test_tryagain(void)
{
    static const step_t twice[] = {
        REPLY("-TRYAGAIN Multiple keys request during rehashing\r\n"),
        REPLY("-TRYAGAIN Multiple keys request during rehashing\r\n"),
        REPLY(":1\r\n")};
    static const step_t always[] = {
        REPLY("-TRYAGAIN Multiple keys request during rehashing\r\n")};
    const char *err;
    int trips;

    setup(CLUSTER);
    EXPECT(RUN(CLUSTER, &script, twice, &err, &trips) == APR_SUCCESS &&
               net.ntrips == 3 && net.seen[2].port == 7001,
           "TRYAGAIN: again on the same node");
    EXPECT(net.nwaits == 2 && net.waits[0] == apr_time_from_msec(5) &&
               net.waits[1] == apr_time_from_msec(10),
           "TRYAGAIN: waits 5ms, then 10ms");
    EXPECT(topo.outdated, "TRYAGAIN: the map is out of date");

    setup(CLUSTER);
    EXPECT(RUN(CLUSTER, &script, always, &err, &trips) == APR_EGENERAL &&
               net.ntrips == SL_MAX_TRIPS && starts(err, "too many"),
           "TRYAGAIN forever: gives up after %d trips", SL_MAX_TRIPS);
    EXPECT(net.nwaits == SL_MAX_TRIPS &&
               net.waits[SL_MAX_TRIPS - 1] ==
                   apr_time_from_msec(5 << (SL_MAX_TRIPS - 1)),
           "TRYAGAIN forever: each wait twice the last");
    EXPECT(balanced(), "TRYAGAIN: every node let go");

    setup(SINGLE);
    EXPECT(RUN(SINGLE, &script, always, &err, &trips) == APR_EGENERAL &&
               net.ntrips == 1 && !net.nwaits && starts(err, "TRYAGAIN"),
           "TRYAGAIN from a single server: the error, no wait");
}

static void test_reroute(void)
{
    static const step_t readonly[] = {
        REPLY("-READONLY You can't write against a read only replica.\r\n"),
        REPLY(":1\r\n")};
    static const step_t clusterdown[] = {
        REPLY("-CLUSTERDOWN The cluster is down\r\n")};
    static const step_t loading[] = {
        REPLY("-LOADING Redis is loading the dataset in memory\r\n"),
        REPLY(":1\r\n")};
    static const step_t always[] = {
        REPLY("-READONLY You can't write against a read only replica.\r\n")};
    const char *err;
    int trips;

    setup(CLUSTER);
    net.reroute_to = n2;
    EXPECT(RUN(CLUSTER, &script, readonly, &err, &trips) == APR_SUCCESS &&
               net.ntrips == 2 && net.seen[1].port == 7002,
           "READONLY: the master of a map loaded now");
    EXPECT(net.outdated_routes == 1, "READONLY: the map loaded again, once");
    EXPECT(balanced(), "READONLY: every node let go");

    setup(CLUSTER);
    EXPECT(RUN(CLUSTER, &script, clusterdown, &err, &trips) ==
                   SL_STORE_PART_DOWN &&
               net.ntrips == 1 && starts(err, "CLUSTERDOWN"),
           "CLUSTERDOWN, the map unchanged: the slot is down");
    EXPECT(net.outdated_routes == 1 && !net.downs,
           "CLUSTERDOWN: the map asked for again, the cluster not down");
    EXPECT(balanced(), "CLUSTERDOWN: every node let go");

    setup(CLUSTER);
    net.reroute_to = n3;
    EXPECT(RUN(CLUSTER, &script, loading, &err, &trips) == APR_SUCCESS &&
               net.seen[1].port == 7003,
           "LOADING: the master of a map loaded now");

    setup(CLUSTER);
    net.cycle = 1;
    EXPECT(RUN(CLUSTER, &script, always, &err, &trips) == APR_EGENERAL &&
               net.ntrips == SL_MAX_TRIPS && starts(err, "too many"),
           "READONLY from every master in turn: gives up after %d trips",
           SL_MAX_TRIPS);
    EXPECT(balanced(), "READONLY in turn: every node let go");

    setup(SENTINEL);
    EXPECT(RUN(SENTINEL, &script, readonly, &err, &trips) == APR_SUCCESS &&
               net.ntrips == 2 && net.seen[1].port == 7001,
           "Sentinel, READONLY: asked again, once");
    setup(SENTINEL);
    EXPECT(RUN(SENTINEL, &script, always, &err, &trips) == APR_EGENERAL &&
               net.ntrips == 2 && starts(err, "READONLY"),
           "Sentinel, READONLY twice: the error");
    setup(SENTINEL);
    EXPECT(RUN(SENTINEL, &script, loading, &err, &trips) == APR_EGENERAL &&
               net.ntrips == 1 && starts(err, "LOADING"),
           "Sentinel, LOADING: the error, not asked again");
    setup(SINGLE);
    EXPECT(RUN(SINGLE, &script, readonly, &err, &trips) == APR_EGENERAL &&
               net.ntrips == 1 && starts(err, "READONLY"),
           "single server, READONLY: the error");
}

static void test_connection(void)
{
    static const step_t stale_once[] = {FAIL(APR_EGENERAL, 1), REPLY(":1\r\n")};
    static const step_t stale_always[] = {FAIL(APR_EGENERAL, 1)};
    static const step_t stale_timeout[] = {FAIL(APR_TIMEUP, 1)};
    static const step_t refused[] = {FAIL(APR_ECONNREFUSED, 0),
                                     REPLY(":1\r\n")};
    static const step_t timeout[] = {FAIL(APR_TIMEUP, 0), REPLY(":1\r\n")};
    static const step_t broken[] = {FAIL(APR_EGENERAL, 0), REPLY(":1\r\n")};
    const char *err;
    int trips;

    setup(SINGLE);
    EXPECT(RUN(SINGLE, &script, stale_once, &err, &trips) == APR_SUCCESS &&
               net.ntrips == 2 && !net.seen[1].shared,
           "a stale pooled connection: once more, on its own");
    setup(SINGLE);
    EXPECT(RUN(SINGLE, &script, stale_always, &err, &trips) == APR_EGENERAL &&
               net.ntrips == 2,
           "stale twice: the failure after one retry");
    setup(SINGLE);
    EXPECT(RUN(SINGLE, &script, stale_timeout, &err, &trips) == APR_TIMEUP &&
               net.ntrips == 2,
           "stale, then a timeout: APR_TIMEUP");
    setup(SINGLE);
    EXPECT(RUN(SINGLE, &script, refused, &err, &trips) == APR_ECONNREFUSED &&
               net.ntrips == 1 && starts(err, "the fake network"),
           "single server refused: its failure, no retry");

    setup(CLUSTER);
    net.reroute_to = n2;
    EXPECT(RUN(CLUSTER, &script, refused, &err, &trips) == APR_SUCCESS &&
               net.ntrips == 2 && net.seen[1].port == 7002 && trips == 1,
           "refused: again on the master of a map loaded now");
    EXPECT(sl_breaker_is_open(&n1->health) && !sl_breaker_is_open(&n2->health),
           "refused: that node is down, the other up");
    EXPECT(balanced(), "refused: every node let go");

    setup(CLUSTER);
    EXPECT(RUN(CLUSTER, &script, refused, &err, &trips) == SL_STORE_PART_DOWN &&
               net.ntrips == 1 && net.downs == 1 &&
               net.down_rv == APR_ECONNREFUSED,
           "refused, the map unchanged: the slot is down");

    setup(CLUSTER);
    net.reroute_to = n2;
    EXPECT(RUN(CLUSTER, &script, timeout, &err, &trips) == SL_STORE_PART_DOWN &&
               net.ntrips == 1 && net.down_rv == APR_TIMEUP,
           "a timeout: never sent again (the script may have run)");
    setup(CLUSTER);
    net.reroute_to = n2;
    EXPECT(RUN(CLUSTER, &script, broken, &err, &trips) == SL_STORE_PART_DOWN &&
               net.ntrips == 1 && net.down_rv == APR_EGENERAL,
           "a broken reply: never sent again");
    EXPECT(balanced(), "a broken reply: every node let go");

    setup(CLUSTER);
    sl_breaker_failure(&n2->health, apr_time_now(), apr_time_now());
    sl_breaker_failure(&n3->health, apr_time_now(), apr_time_now());
    EXPECT(RUN(CLUSTER, &script, refused, &err, &trips) == APR_ECONNREFUSED &&
               starts(err, "no node"),
           "refused, no node up: the store's failure");
}

static void test_down(void)
{
    static const step_t ok[] = {REPLY(":1\r\n")};
    const char *err;
    int trips;

    setup(CLUSTER);
    sl_breaker_failure(&n1->health, apr_time_now(), apr_time_now());
    net.reroute_to = n2;
    EXPECT(RUN(CLUSTER, &script, ok, &err, &trips) == APR_SUCCESS &&
               net.ntrips == 1 && net.seen[0].port == 7002 &&
               !net.seen[0].shared,
           "a master known down: the map's new master, no trip to it");

    setup(CLUSTER);
    sl_breaker_failure(&n1->health, apr_time_now(), apr_time_now());
    EXPECT(RUN(CLUSTER, &script, ok, &err, &trips) == SL_STORE_PART_DOWN &&
               !net.ntrips && net.down_rv == APR_ECONNREFUSED,
           "a master known down, no other: the slot is down, no trip");
    EXPECT(balanced(), "known down: every node let go");

    setup(CLUSTER);
    topo.slots[SLOT] = 0;
    sl_breaker_failure(&n1->health, apr_time_now(), apr_time_now());
    sl_breaker_failure(&n2->health, apr_time_now(), apr_time_now());
    sl_breaker_failure(&n3->health, apr_time_now(), apr_time_now());
    EXPECT(RUN(CLUSTER, &script, ok, &err, &trips) == APR_EGENERAL &&
               !net.ntrips && starts(err, "no node of the cluster"),
           "no node to route to: no trip");
}

static void test_bound(void)
{
    static const step_t moved_self[] = {REPLY("-MOVED 100 127.0.0.1:7001\r\n")};
    static const step_t ping_pong[] = {REPLY("-MOVED 100 127.0.0.1:7002\r\n"),
                                       REPLY("-MOVED 100 127.0.0.1:7001\r\n"),
                                       REPLY("-MOVED 100 127.0.0.1:7002\r\n"),
                                       REPLY("-MOVED 100 127.0.0.1:7001\r\n"),
                                       REPLY("-MOVED 100 127.0.0.1:7002\r\n"),
                                       REPLY("-MOVED 100 127.0.0.1:7001\r\n"),
                                       REPLY(":1\r\n")};
    static const step_t ask_self[] = {REPLY("-ASK 100 127.0.0.1:7001\r\n")};
    static const step_t unusable[] = {REPLY("-MOVED 100 :7002\r\n")};
    const char *err;
    int trips;

    setup(CLUSTER);
    EXPECT(RUN(CLUSTER, &script, moved_self, &err, &trips) == APR_EGENERAL &&
               starts(err, "too many redirections"),
           "MOVED to itself forever: an error");
    EXPECT(net.ntrips == SL_MAX_TRIPS && trips == SL_MAX_TRIPS,
           "MOVED to itself: %d trips, no more", SL_MAX_TRIPS);
    EXPECT(balanced(), "MOVED to itself: every node let go");

    setup(CLUSTER);
    EXPECT(RUN(CLUSTER, &script, ping_pong, &err, &trips) == APR_EGENERAL &&
               net.ntrips == SL_MAX_TRIPS,
           "MOVED back and forth: %d trips, then an error", SL_MAX_TRIPS);

    setup(CLUSTER);
    EXPECT(RUN(CLUSTER, &script, ask_self, &err, &trips) == APR_EGENERAL &&
               net.ntrips == SL_MAX_TRIPS && starts(err, "too many"),
           "ASK forever: %d trips, then an error", SL_MAX_TRIPS);

    setup(SINGLE);
    n1->host = NULL; /* a unix socket: no host to fill in */
    EXPECT(RUN(SINGLE, &script, unusable, &err, &trips) == APR_EGENERAL &&
               net.ntrips == 1 && starts(err, "cluster redirection"),
           "a redirection that names no node: an error");
}

int main(void)
{
    apr_initialize();
    apr_pool_create(&pool, NULL);
    test_answer();
    test_moved();
    test_ask();
    test_noscript();
    test_tryagain();
    test_reroute();
    test_connection();
    test_down();
    test_bound();
    sl_topo_clear(&topo);
    free(topo.slots);
    printf("sl_way_test: %d passed, %d failed\n", passed, failed);
    apr_pool_destroy(pool);
    apr_terminate();
    return failed ? 1 : 0;
}
