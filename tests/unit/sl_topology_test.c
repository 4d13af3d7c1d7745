/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of Redis Cluster routing (src/sl_topology.c) through its
 * seam: CLUSTER SLOTS replies, MOVED and ASK built here as hiredis reply
 * structures, nodes made and freed by counting fakes. No server needed
 * (make unit). */
#include "sl_redis_private.h"

#include <apr_general.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_expect.h"

#define MS(x) apr_time_from_msec(x)

static int made, freed;

static sl_node_t *fake_new(void *ctx, const char *host, apr_size_t hostlen,
                           int port)
{
    sl_node_t *n = calloc(1, sizeof(*n));
    char *h = malloc(hostlen + 1);

    (void) ctx;
    memcpy(h, host, hostlen);
    h[hostlen] = '\0';
    n->host = h;
    n->port = port;
    sl_breaker_init(&n->health);
    made++;
    return n;
}

static void fake_free(sl_node_t *n)
{
    free((char *) n->host);
    free(n);
    freed++;
}

/* Reply builders: the structures hiredis would hand over. */
static redisReply *r_int(long long v)
{
    redisReply *r = calloc(1, sizeof(*r));
    r->type = REDIS_REPLY_INTEGER;
    r->integer = v;
    return r;
}

static redisReply *r_str(int type, const char *s)
{
    redisReply *r = calloc(1, sizeof(*r));
    r->type = type;
    r->str = strdup(s);
    r->len = strlen(s);
    return r;
}

static redisReply *r_arr(size_t n, ...)
{
    redisReply *r = calloc(1, sizeof(*r));
    va_list ap;
    size_t i;

    r->type = REDIS_REPLY_ARRAY;
    r->elements = n;
    r->element = calloc(n ? n : 1, sizeof(*r->element));
    va_start(ap, n);
    for (i = 0; i < n; i++) {
        r->element[i] = va_arg(ap, redisReply *);
    }
    va_end(ap);
    return r;
}

static void r_free(redisReply *r)
{
    size_t i;

    if (r->type == REDIS_REPLY_ARRAY) {
        for (i = 0; i < r->elements; i++) {
            r_free(r->element[i]);
        }
        free(r->element);
    }
    free(r->str);
    free(r);
}

/* One CLUSTER SLOTS entry: a master and one replica. */
static redisReply *entry(long long from, long long to, const char *host,
                         int port, int replica_port)
{
    return r_arr(4, r_int(from), r_int(to),
                 r_arr(3, r_str(REDIS_REPLY_STRING, host), r_int(port),
                       r_str(REDIS_REPLY_STRING, "id")),
                 r_arr(3, r_str(REDIS_REPLY_STRING, host), r_int(replica_port),
                       r_str(REDIS_REPLY_STRING, "id2")));
}

static redisReply *three_masters(int b_port)
{
    return r_arr(3, entry(0, 5460, "127.0.0.1", 7001, 7004),
                 entry(5461, 10922, "127.0.0.1", b_port, 7005),
                 entry(10923, 16383, "127.0.0.1", 7003, 7006));
}

static void topo_init(sl_topology_t *t)
{
    memset(t, 0, sizeof(*t));
    t->node_new = fake_new;
    t->node_free = fake_free;
    t->slots = calloc(16384, sizeof(*t->slots));
}

static void topo_fini(sl_topology_t *t)
{
    sl_topo_clear(t);
    free(t->slots);
}

static int port_of(sl_topology_t *t, unsigned int slot)
{
    sl_node_t *n = sl_topo_route(t, slot);
    return n ? n->port : -1;
}

static void test_load(void)
{
    sl_topology_t t;
    redisReply *r = three_masters(7002), *bad;
    sl_node_t *seed;
    int before;

    made = freed = 0;
    topo_init(&t);
    seed = sl_topo_node(&t, "127.0.0.1", 9, 7004); /* a replica as seed */
    EXPECT(sl_topo_node(&t, "127.0.0.1", 9, 7004) == seed && made == 1,
           "a known address is the same node");
    EXPECT(port_of(&t, 100) == 7004, "before the map: any node that is up");
    EXPECT(sl_topo_load(&t, r, seed) == NULL, "three masters loaded");
    EXPECT(port_of(&t, 0) == 7001 && port_of(&t, 5460) == 7001,
           "slots 0-5460 on 7001");
    EXPECT(port_of(&t, 5461) == 7002 && port_of(&t, 10922) == 7002,
           "5461-10922 on 7002");
    EXPECT(port_of(&t, 16383) == 7003, "16383 on 7003");
    EXPECT(made == 4 && freed == 1,
           "the seed that serves no slot left the table (made %d, freed %d)",
           made, freed);
    before = made;
    EXPECT(sl_topo_load(&t, r, NULL) == NULL && made == before,
           "the same map again allocates nothing");

    bad = r_arr(
        1, r_arr(3, r_int(10), r_int(5), r_arr(2, r_str(5, "x"), r_int(1))));
    bad->element[0]->element[2]->element[0]->type = REDIS_REPLY_STRING;
    EXPECT(sl_topo_load(&t, bad, NULL) != NULL, "from > to refused");
    EXPECT(port_of(&t, 0) == 7001, "... the map unchanged");
    r_free(bad);
    bad = r_str(REDIS_REPLY_ERROR, "ERR This instance has cluster support "
                                   "disabled");
    EXPECT(sl_topo_load(&t, bad, NULL) != NULL, "an error reply refused");
    r_free(bad);
    bad = r_arr(0);
    EXPECT(sl_topo_load(&t, bad, NULL) != NULL, "an empty map refused");
    r_free(bad);
    bad = r_arr(1, r_arr(3, r_int(0), r_int(16384),
                         r_arr(2, r_str(REDIS_REPLY_STRING, "h"), r_int(1))));
    EXPECT(sl_topo_load(&t, bad, NULL) != NULL, "slot 16384 refused");
    r_free(bad);
    bad = r_arr(1, r_arr(3, r_int(0), r_int(1),
                         r_arr(2, r_str(REDIS_REPLY_STRING, "h"), r_int(0))));
    EXPECT(sl_topo_load(&t, bad, NULL) != NULL, "port 0 refused");
    r_free(bad);
    r_free(r);

    /* An empty endpoint is the node that answered. */
    r = r_arr(1, entry(0, 16383, "", 7009, 7010));
    seed = sl_topo_route(&t, 0);
    EXPECT(sl_topo_load(&t, r, seed) == NULL && port_of(&t, 42) == 7009 &&
               !strcmp(sl_topo_route(&t, 42)->host, "127.0.0.1"),
           "empty host: the answering node's host");
    r_free(r);
    topo_fini(&t);
    EXPECT(made == freed, "every node freed (made %d, freed %d)", made, freed);
}

static void test_failover(void)
{
    sl_topology_t t;
    redisReply *r = three_masters(7002), *r2 = three_masters(7005);
    sl_node_t *b;

    made = freed = 0;
    topo_init(&t);
    sl_topo_load(&t, r, NULL);
    b = sl_topo_route(&t, 6000);
    sl_topo_ref(b); /* a request holds it */
    EXPECT(sl_topo_load(&t, r2, NULL) == NULL && port_of(&t, 6000) == 7005,
           "after the failover the replica serves the slots");
    EXPECT(b->index == -1 && freed == 0,
           "the old master left the table, kept while a request holds it");
    sl_topo_unref(&t, b);
    EXPECT(freed == 1, "freed when the request lets go");
    EXPECT(port_of(&t, 0) == 7001, "the other masters' slots unchanged");
    topo_fini(&t);
    EXPECT(made == freed, "every node freed (made %d, freed %d)", made, freed);
    r_free(r);
    r_free(r2);
}

static void test_churn(void)
{
    sl_topology_t t;
    int i, live_max = 0, refused = 0;

    made = freed = 0;
    topo_init(&t);
    for (i = 0; i < 2000; i++) {
        redisReply *r = r_arr(2, entry(0, 8191, "10.0.0.1", 10000 + i, 1),
                              entry(8192, 16383, "10.0.0.2", 10000 + i, 1));
        refused += sl_topo_load(&t, r, NULL) != NULL;
        if (made - freed > live_max) {
            live_max = made - freed;
        }
        r_free(r);
    }
    EXPECT(!refused, "2000 maps loaded (%d refused)", refused);
    EXPECT(live_max <= 4 && t.nnodes <= 4,
           "2000 maps of new nodes: at most %d alive, %d in the table",
           live_max, t.nnodes);
    topo_fini(&t);
    EXPECT(made == freed, "every node freed (made %d, freed %d)", made, freed);
}

static void test_redirect(void)
{
    sl_topology_t t;
    redisReply *r = three_masters(7002);
    sl_node_t *a, *n;
    int before;

    made = freed = 0;
    topo_init(&t);
    sl_topo_load(&t, r, NULL);
    a = sl_topo_route(&t, 0);
    before = made;
    n = sl_topo_redirect(&t, "MOVED 42 127.0.0.1:7003", a);
    EXPECT(n && n->port == 7003 && made == before,
           "MOVED to a known node allocates nothing");
    EXPECT(port_of(&t, 42) == 7003, "MOVED moves the slot");
    EXPECT(t.outdated, "MOVED: the map is out of date");
    t.outdated = 0;
    n = sl_topo_redirect(&t, "ASK 43 127.0.0.1:7002", a);
    EXPECT(n && n->port == 7002 && port_of(&t, 43) == 7001,
           "ASK does not move the slot");
    EXPECT(!t.outdated, "ASK: the map is not out of date");
    n = sl_topo_redirect(&t, "MOVED 44 :7002", sl_topo_route(&t, 5000));
    EXPECT(n && n->port == 7002 && made == before,
           "an empty host is the answering node's");
    n = sl_topo_redirect(&t, "MOVED 45 :7003", a);
    EXPECT(n && !strcmp(n->host, "127.0.0.1") && n->port == 7003,
           "... not the first seed's");
    n = sl_topo_redirect(&t, "MOVED 46 127.0.0.9:7100", a);
    EXPECT(n && n->port == 7100 && made == before + 1 &&
               port_of(&t, 46) == 7100,
           "a new node: made once");
    EXPECT(sl_topo_redirect(&t, "MOVED 46 127.0.0.9:7100", a) == n &&
               made == before + 1,
           "... and known the next time");
    EXPECT(!sl_topo_redirect(&t, "MOVED 99999 127.0.0.1:7001", a),
           "slot out of range");
    EXPECT(!sl_topo_redirect(&t, "MOVED 12 127.0.0.1:0", a), "port 0");
    EXPECT(!sl_topo_redirect(&t, "MOVED 12 127.0.0.1:70x", a), "bad port");
    EXPECT(!sl_topo_redirect(&t, "MOVED x 127.0.0.1:7001", a), "bad slot");
    EXPECT(!sl_topo_redirect(&t, "MOVED 12", a), "no address");
    EXPECT(!sl_topo_redirect(&t, "MOVED 12 127.0.0.1", a), "no port");
    t.outdated = 0;
    EXPECT(!sl_topo_redirect(&t, "MOVED 12", a) && t.outdated,
           "MOVED that names no node: the map is out of date all the same");
    /* The next map drops the node that serves nothing. */
    sl_topo_load(&t, r, NULL);
    EXPECT(port_of(&t, 46) == 7001 && freed == 1,
           "a reload forgets the redirect-only node");
    topo_fini(&t);
    r_free(r);
}

static void test_health(void)
{
    sl_topology_t t;
    redisReply *r = three_masters(7002);
    apr_time_t now = apr_time_from_sec(1000);
    int i;

    made = freed = 0;
    topo_init(&t);
    sl_topo_node(&t, "127.0.0.1", 9, 7001);
    sl_topo_node(&t, "127.0.0.1", 9, 7002);
    sl_breaker_failure(&t.nodes[0]->health, now, now);
    EXPECT(port_of(&t, 5) == 7002, "no map: a seed that is up");
    EXPECT(sl_topo_any_up(&t), "one seed up");
    sl_breaker_failure(&t.nodes[1]->health, now, now);
    EXPECT(!sl_topo_any_up(&t) && port_of(&t, 5) == -1,
           "no node up: none to route to");
    sl_topo_load(&t, r, NULL);
    sl_breaker_failure(&sl_topo_route(&t, 0)->health, now, now);
    EXPECT(port_of(&t, 0) == 7001,
           "a mapped slot stays with its master while it is down");
    EXPECT(sl_topo_any_up(&t), "the other masters are up");
    for (i = 0; i < 16384; i += 4096) {
        t.slots[i] = 0;
    }
    EXPECT(port_of(&t, 0) != 7001 && port_of(&t, 0) > 0,
           "an unmapped slot goes to a node that is up");
    topo_fini(&t);
    r_free(r);
}

static void test_refresh(void)
{
    sl_topology_t t;
    apr_time_t now = apr_time_from_sec(1000);

    topo_init(&t);
    EXPECT(sl_topo_refresh_claim(&t, now), "first use loads the map");
    EXPECT(!sl_topo_refresh_claim(&t, now + MS(500)), "one thread at a time");
    sl_topo_refresh_done(&t, now + MS(10), 0);
    EXPECT(!sl_topo_refresh_claim(&t, now + MS(50)),
           "a failed load is retried no sooner than 100 ms");
    EXPECT(sl_topo_refresh_claim(&t, now + MS(110)), "... then again");
    sl_topo_refresh_done(&t, now + MS(111), 1);
    EXPECT(!sl_topo_refresh_claim(&t, now + MS(300)), "loaded: not again");
    t.outdated = 1;
    EXPECT(!sl_topo_refresh_claim(&t, now + MS(150)), "an error: rate-limited");
    EXPECT(sl_topo_refresh_claim(&t, now + MS(220)), "an error: load again");
    sl_topo_refresh_done(&t, now + MS(221), 1);
    EXPECT(!t.outdated, "loaded: not out of date");
    EXPECT(!sl_topo_refresh_claim(&t, now + MS(5000)), "within the period");
    EXPECT(sl_topo_refresh_claim(&t, now + MS(5300)), "periodically");
    sl_topo_refresh_done(&t, now + MS(5301), 1);
    free(t.slots);
    t.slots = NULL;
    EXPECT(!sl_topo_refresh_claim(&t, now + MS(99999)),
           "no map to load for a single server");
    topo_fini(&t);
}

int main(void)
{
    apr_initialize();
    test_load();
    test_failover();
    test_churn();
    test_redirect();
    test_health();
    test_refresh();
    printf("sl_topology_test: %d passed, %d failed\n", passed, failed);
    apr_terminate();
    return failed ? 1 : 0;
}
