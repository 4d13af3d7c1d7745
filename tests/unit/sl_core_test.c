/* Unit tests of the pure core (src/sl_core.c): parsers, keys, the script
 * reply reader and the wire formats. No server needed. */
#include "sl_ident.h"
#include "sl_limit.h"
#include "sl_reply.h"
#include "sl_url.h"
#include "sl_wire.h"

#include <apr_general.h>
#include <apr_strings.h>

#include <stdio.h>
#include <string.h>

#include "sl_expect.h"

static void test_durations(apr_pool_t *p)
{
    static const struct {
        const char *in;
        apr_int64_t us;
    } good[] = {{"500ms", 500000},    {"30s", 30000000},
                {"1m", 60000000},     {"2min", 120000000},
                {"1h", 3600000000LL}, {"1d", 86400000000LL},
                {"45", 45000000},     {"1MS", 1000}};
    static const char *const bad[] = {"",
                                      "0",
                                      "-5s",
                                      "1w",
                                      "1.5s",
                                      "s",
                                      "10x",
                                      " 1s",
                                      "1s ",
                                      "366000d",
                                      "99999999999999999999"};
    size_t i;

    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        apr_int64_t us = 0;
        const char *err = sl_parse_duration(p, good[i].in, &us);
        EXPECT(!err && us == good[i].us, "duration %s: %s", good[i].in,
               err ? err : "wrong value");
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        apr_int64_t us = 0;
        const char *err = sl_parse_duration(p, bad[i], &us);
        EXPECT(err && strstr(err, bad[i]), "duration '%s' must be refused",
               bad[i]);
    }
    {
        /* The message names every unit that is accepted. */
        apr_int64_t us = 0;
        const char *err = sl_parse_duration(p, "15mins", &us);
        EXPECT(err && strstr(err, "m or min,"), "units listed: %s",
               err ? err : "");
    }
    EXPECT(sl_is_token("X-Api-Key") && sl_is_token("a!#$%&'*+-.^_`|~9"),
           "header names are tokens");
    EXPECT(!sl_is_token("") && !sl_is_token("X Y") && !sl_is_token("a:b") &&
               !sl_is_token("a\"b"),
           "empty, space, colon, quote are no tokens");
    EXPECT(!strcmp(sl_format_duration(p, 60000000), "1m"), "format 1m");
    EXPECT(!strcmp(sl_format_duration(p, 1500000), "1500ms"), "format 1500ms");
}

static sl_limit_t *limit(apr_pool_t *p, const char *line, const char *section,
                         const char **err)
{
    char **argv;
    sl_limit_t *l = NULL;
    int argc;

    apr_tokenize_to_argv(line, &argv, p);
    for (argc = 0; argv[argc]; argc++) {
    }
    *err = sl_parse_limit(p, argc, argv, section, &l);
    return l;
}

static void test_limits(apr_pool_t *p)
{
    const char *err;
    sl_limit_t *a, *b, *c, *d;
    static const char *const bad[] = {
        "0 1m", "abc 1m", "10", "10 1w", "10 1m foo=bar",
        "10 1m name=", "10 1m name=a b", "10 1m algorithm=x", "10 1m burst=0",
        "10 1m algorithm=log burst=5", "10 1m name=a\"b",
        /* GCRA tolerance beyond 366d */
        "1 366d algorithm=gcra burst=100000000",
        "1 1d algorithm=gcra burst=367"};
    size_t i;

    a = limit(p, "100 1m name=api", "<Location /a>\n", &err);
    EXPECT(a && !err && a->requests == 100 && a->window == 60000000 &&
               a->named && !strcmp(a->name, "api") &&
               a->algorithm == SL_ALG_UNSET,
           "named limit: %s", err ? err : "");
    b = limit(p, "5 10s name=api", "<Location /b>\n", &err);
    EXPECT(b && !strcmp(a->id, b->id), "same name, same budget everywhere");
    c = limit(p, "100 1m", "<Location /a>\n", &err);
    d = limit(p, "100 1m", "<Location /b>\n", &err);
    EXPECT(c && d && strcmp(c->id, d->id), "unnamed: one budget per section");
    EXPECT(!strcmp(c->name, "100-per-1m"), "unnamed name %s", c->name);
    d = limit(p, "100 1m", "<Location /a>\n", &err);
    EXPECT(!strcmp(c->id, d->id), "unnamed ids are stable");
    {
        const char *section = "<VirtualHost *:80>\n<Location /api>\n";
        sl_limit_t *x = limit(p, "2 1m", section, &err);
        sl_limit_t *y = limit(p, "2 1m", section, &err);
        sl_limit_t *z = limit(p, "2 1m", section, &err);
        sl_limit_t *n = limit(p, "2 1m name=shared", section, &err);
        const char *named = n->id;
        sl_limit_set_host(p, x, "a.example:0");
        sl_limit_set_host(p, y, "b.example:0");
        sl_limit_set_host(p, z, "a.example:0");
        sl_limit_set_host(p, n, "a.example:0");
        EXPECT(strcmp(x->id, y->id), "unnamed: one budget per virtual host");
        EXPECT(!strcmp(x->id, z->id), "... the same for the same host");
        EXPECT(!strcmp(n->id, named), "named: one budget across hosts");
        EXPECT(strlen(x->id) == 16 && strlen(n->id) == 16,
               "ids hold 96 bits (16 characters)");
    }
    d = limit(p, "100 60s algorithm=gcra burst=10", "<Location /a>\n", &err);
    EXPECT(d && d->algorithm == SL_ALG_GCRA && d->burst == 10, "gcra burst");
    d = limit(p, "1 1d algorithm=gcra burst=366", "", &err);
    EXPECT(d && !err, "gcra tolerance of 366d: %s", err ? err : "");
    d = limit(p, "1 1d algorithm=gcra burst=367", "", &err);
    EXPECT(err && strstr(err, "burst=367") && strstr(err, "366d"),
           "gcra tolerance above 366d: %s", err ? err : "accepted");
    d = limit(p, "7 366d algorithm=gcra burst=7", "", &err);
    EXPECT(d && !err, "gcra burst = requests at the longest window");
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        a = limit(p, bad[i], "", &err);
        EXPECT(err != NULL, "'%s' must be refused", bad[i]);
    }
}

/* cost=, block=, count=: bounded, and refused with the token named. */
static void test_limit_options(apr_pool_t *p)
{
    static const struct {
        const char *line, *named;
    } bad[] = {{"10 1m cost=0", "'0'"},
               {"10 1m cost=11", "cost=11"},
               {"10 1m cost=x", "'x'"},
               {"10 1m algorithm=gcra burst=2 cost=3", "cost=3"},
               {"10 1m block=0", "'0'"},
               {"10 1m block=1w", "'1w'"},
               {"10 1m block=400d", "'400d'"},
               {"10 1m count=", "count="},
               {"10 1m count=401,", "count=401,"},
               {"10 1m count=401,,403", "count=401,,403"},
               {"10 1m count=99", "'99'"},
               {"10 1m count=600", "'600'"},
               {"10 1m count=abc", "'abc'"},
               {"10 1m count=401,401", "401 is listed twice"},
               {"10 1m count=400,401,402,403,404,405,406,407,408,409,410,411,"
                "412,413,414,415,416",
                "at most 16"}};
    const char *err;
    sl_limit_t *l;
    size_t i;

    l = limit(p, "10 1m cost=3 block=2s count=401,403", "", &err);
    EXPECT(l && !err && l->cost == 3 && l->block == 2 * APR_USEC_PER_SEC &&
               l->ncount == 2 && sl_limit_counts(l, 401) &&
               sl_limit_counts(l, 403) && !sl_limit_counts(l, 200),
           "cost, block, count: %s", err ? err : "");
    l = limit(p, "10 1m", "", &err);
    EXPECT(l && l->cost == 1 && !l->block && !l->count &&
               sl_limit_counts(l, 200) && sl_limit_counts(l, 500),
           "defaults: cost 1, no block, every status counts");
    l = limit(p, "10 1m cost=10", "", &err);
    EXPECT(l && l->cost == 10, "cost up to the limit");
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        l = limit(p, bad[i].line, "", &err);
        EXPECT(err && strstr(err, bad[i].named), "'%s' refused naming %s: %s",
               bad[i].line, bad[i].named, err ? err : "accepted");
    }
}

/* cost=expr: and cost-unit=: the line, then what a value costs. */
static void test_cost_expr(apr_pool_t *p)
{
    static const struct {
        const char *v;
        apr_int64_t unit, max;
        int why;
        apr_int64_t cost;
    } cases[] = {
        {"3", 1, 10, SL_COST_OK, 3},
        {"10", 1, 10, SL_COST_OK, 10},
        {"0005", 1, 10, SL_COST_OK, 5},
        {"", 1, 10, SL_COST_OK, 1},
        {"0", 1, 10, SL_COST_OK, 1},
        {"0", 1024, 10, SL_COST_OK, 1},
        {"1", 1024, 10, SL_COST_OK, 1},
        {"1024", 1024, 10, SL_COST_OK, 1},
        {"1025", 1024, 10, SL_COST_OK, 2},
        {"3000", 1024, 10, SL_COST_OK, 3},
        {"10240", 1024, 10, SL_COST_OK, 10},
        {"10241", 1024, 10, SL_COST_OVER, 0},
        {"11", 1, 10, SL_COST_OVER, 0},
        {"9223372036854775807", 1, 10, SL_COST_OVER, 0},
        {"9223372036854775808", 1, 10, SL_COST_OVER, 0},
        {"99999999999999999999", 1024, 100000000, SL_COST_OVER, 0},
        {"-1", 1, 10, SL_COST_BAD, 0},
        {"+1", 1, 10, SL_COST_BAD, 0},
        {" 5", 1, 10, SL_COST_BAD, 0},
        {"5 ", 1, 10, SL_COST_BAD, 0},
        {"5abc", 1, 10, SL_COST_BAD, 0},
        {"1e9", 1, 10, SL_COST_BAD, 0},
        {"1.5", 1, 10, SL_COST_BAD, 0},
        {"0x10", 1, 10, SL_COST_BAD, 0},
        {"99999999999999999999x", 1, 10, SL_COST_BAD, 0},
    };
    const char *err;
    sl_limit_t *l;
    size_t i;

    l = limit(p, "10 1m cost=expr:%{HTTP:X-Batch}", "", &err);
    EXPECT(l && !err && !strcmp(l->cost_expr, "%{HTTP:X-Batch}") &&
               l->cost == 1 && l->cost_unit == 1,
           "cost=expr: keeps the expression's text: %s", err ? err : "");
    l = limit(p, "10 1m cost=EXPR:x cost-unit=1024", "", &err);
    EXPECT(l && !err && !strcmp(l->cost_expr, "x") && l->cost_unit == 1024,
           "cost-unit=: %s", err ? err : "");
    l = limit(p, "10 1m cost=expr:", "", &err);
    EXPECT(err && strstr(err, "cost=expr:"),
           "cost=expr: without an "
           "expression refused: %s",
           err ? err : "accepted");
    l = limit(p, "10 1m cost=3 cost=expr:x", "", &err);
    EXPECT(err && strstr(err, "cost=expr:x"),
           "cost= and cost=expr: refused: %s", err ? err : "accepted");
    l = limit(p, "10 1m cost=2 cost-unit=1024", "", &err);
    EXPECT(err && strstr(err, "cost-unit=1024"),
           "cost-unit= without cost=expr: refused: %s", err ? err : "accepted");
    l = limit(p, "10 1m cost=expr:x cost-unit=0", "", &err);
    EXPECT(err && strstr(err, "'0'"), "cost-unit=0 refused: %s",
           err ? err : "accepted");
    l = limit(p, "10 1m cost=expr:x cost-unit=2TB", "", &err);
    EXPECT(err && strstr(err, "'2TB'"), "cost-unit=2TB refused: %s",
           err ? err : "accepted");

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        apr_int64_t cost = 0;
        int why = sl_cost_of(cases[i].v, cases[i].unit, cases[i].max, &cost);
        EXPECT(why == cases[i].why &&
                   (why != SL_COST_OK || cost == cases[i].cost),
               "'%s' / %" APR_INT64_T_FMT " under %" APR_INT64_T_FMT
               ": %d, cost %" APR_INT64_T_FMT,
               cases[i].v, cases[i].unit, cases[i].max, why, cost);
    }
    EXPECT(sl_cost_of(NULL, 1, 10, &(apr_int64_t){0}) == SL_COST_OK,
           "no value costs 1");
    EXPECT(strstr(sl_json_cost_body(p, SL_COST_OVER, "api", 10),
                  "\"code\":\"COST_EXCEEDS_LIMIT\"") &&
               strstr(sl_json_cost_body(p, SL_COST_BAD, "api", 10),
                      "\"code\":\"BAD_COST\""),
           "the refusals' bodies name their reason");
}

static void test_keys(apr_pool_t *p)
{
    const char *k1, *k2, *key;
    sl_limit_t *l;
    const char *err;

    EXPECT(!strcmp(sl_ip_key(p, "192.0.2.7", 64), "192.0.2.7"), "ipv4");
    EXPECT(!strcmp(sl_ip_key(p, "::ffff:192.0.2.7", 64), "192.0.2.7"),
           "mapped ipv4");
    EXPECT(
        !strcmp(sl_ip_key(p, "2001:db8:1:2:3:4:5:6", 64), "2001:db8:1:2::/64"),
        "ipv6 /64: %s", sl_ip_key(p, "2001:db8:1:2:3:4:5:6", 64));
    EXPECT(!strcmp(sl_ip_key(p, "2001:db8:1:2:3:4:5:6", 48), "2001:db8:1::/48"),
           "ipv6 /48");
    EXPECT(!strcmp(sl_ip_key(p, "2001:db8:1:2:3:4:5:6", 128),
                   "2001:db8:1:2:3:4:5:6/128"),
           "ipv6 /128");
    EXPECT(!strcmp(sl_ip_key(p, "2001:db8:1:2:ffff::1", 60), "2001:db8:1::/60"),
           "ipv6 /60: %s", sl_ip_key(p, "2001:db8:1:2:ffff::1", 60));
    EXPECT(sl_ip_key(p, "not-an-ip", 64) == NULL, "garbage address");
    /* Forms that carry an IPv4 address are keyed by it: NAT64/SIIT gives
     * every IPv4 client one /64 otherwise, 6to4 one client 65,536. */
    EXPECT(!strcmp(sl_ip_key(p, "64:ff9b::192.0.2.7", 64), "192.0.2.7"),
           "nat64: %s", sl_ip_key(p, "64:ff9b::192.0.2.7", 64));
    EXPECT(!strcmp(sl_ip_key(p, "64:ff9b::c000:208", 48), "192.0.2.8"),
           "nat64 hex: %s", sl_ip_key(p, "64:ff9b::c000:208", 48));
    EXPECT(!strcmp(sl_ip_key(p, "::192.0.2.9", 64), "192.0.2.9"),
           "ipv4-compatible: %s", sl_ip_key(p, "::192.0.2.9", 64));
    EXPECT(!strcmp(sl_ip_key(p, "2002:c000:20a:1:2::3", 64), "192.0.2.10"),
           "6to4: %s", sl_ip_key(p, "2002:c000:20a:1:2::3", 64));
    EXPECT(!strcmp(sl_ip_key(p, "2002:c000:20a:ffff::1", 64), "192.0.2.10"),
           "6to4, another subnet of the same site");
    /* Teredo: the client's public IPv4 address, bits inverted, is the last
     * 32 bits; the /64 is the Teredo server's. */
    EXPECT(!strcmp(sl_ip_key(p, "2001:0:4136:e378:8000:63bf:3fff:fdf4", 64),
                   "192.0.2.11"),
           "teredo: %s",
           sl_ip_key(p, "2001:0:4136:e378:8000:63bf:3fff:fdf4", 64));
    /* Loopback, unspecified and 0.0.0.0/8 are not IPv4 clients. */
    EXPECT(!strcmp(sl_ip_key(p, "::1", 64), "::/64"), "loopback: %s",
           sl_ip_key(p, "::1", 64));
    EXPECT(!strcmp(sl_ip_key(p, "::", 64), "::/64"), "unspecified");
    EXPECT(!strcmp(sl_ip_key(p, "64:ff9b:1::192.0.2.7", 64), "64:ff9b:1::/64"),
           "only the well-known NAT64 prefix: %s",
           sl_ip_key(p, "64:ff9b:1::192.0.2.7", 64));

    k1 = sl_identity(p, NULL, 0, "ip", "192.0.2.7", 9);
    k2 = sl_identity(p, NULL, 0, "user", "192.0.2.7", 9);
    EXPECT(strlen(k1) == 16 && strcmp(k1, k2), "identity per source");
    k2 = sl_identity(p, NULL, 0, "header:x", "a}b{c\r\n\"", 8);
    EXPECT(!strpbrk(k2, "{}\r\n\" "), "no value byte reaches the key");
    {
        char big[20000];
        memset(big, 'a', sizeof(big));
        EXPECT(strlen(sl_identity(p, NULL, 0, "header:x", big, sizeof(big))) ==
                   16,
               "bounded identity");
        k2 = sl_identity(p, NULL, 0, "header:x", big, sizeof(big));
        big[sizeof(big) - 1] = 'b';
        EXPECT(
            strcmp(k2, sl_identity(p, NULL, 0, "header:x", big, sizeof(big))),
            "the whole value is hashed, not a prefix");
        /* A secret longer than SHA-1's block is hashed first (RFC 2104). */
        k2 = sl_identity(p, (const unsigned char *) big, 100, "ip", "x", 1);
        EXPECT(strlen(k2) == 16 &&
                   strcmp(k2, sl_identity(p, (const unsigned char *) big, 99,
                                          "ip", "x", 1)),
               "long secrets");
    }
    {
        static const unsigned char s1[] = "0123456789abcdef0123456789abcdef";
        static const unsigned char s2[] = "0123456789abcdef0123456789abcdeF";
        const char *u = sl_identity(p, NULL, 0, "ip", "192.0.2.7", 9);
        const char *a = sl_identity(p, s1, 32, "ip", "192.0.2.7", 9);
        const char *b = sl_identity(p, s2, 32, "ip", "192.0.2.7", 9);
        EXPECT(!strcmp(u, k1), "unkeyed stays what it was");
        EXPECT(strlen(a) == 16 && strcmp(a, u), "keyed differs from unkeyed");
        EXPECT(strcmp(a, b), "keyed depends on the secret");
        EXPECT(strcmp(a, sl_identity(p, s1, 32, "user", "192.0.2.7", 9)),
               "keyed identity per source");
        /* HMAC-SHA1(s1, "ip\0192.0.2.7"), first 12 bytes in base64, as
         * perl -MDigest::SHA=hmac_sha1 computes it (t/lib/SL/Keys.pm). */
        EXPECT(!strcmp(a, "hbAV19dQD7L8GYB9"), "keyed vector: %s", a);
        EXPECT(!strcmp(u, "UcsUroYSbiHOpmad"), "unkeyed vector: %s", u);
    }
    EXPECT(!strcmp(sl_ip_key(p, "fe80::1:2:3:4%eth0", 64), "fe80::/64"),
           "zone id dropped");
    l = limit(p, "10 1m name=api", "", &err);
    key = sl_store_key(p, "sl", k1, l, SL_ALG_COUNTER, NULL, 0);
    EXPECT(!strncmp(key, "sl:{", 4) && key[strlen(key) - 1] == 'c',
           "key shape %s", key);
    /* 96 bits of SHA-1("n\napi"), as t/lib/SL/Test.pm computes it. */
    EXPECT(!strcmp(l->id, "f1T9dVjwyKc/0JjT"), "policy id vector: %s", l->id);
    EXPECT(
        !strcmp(key, apr_pstrcat(p, "sl:{", k1, "}f1T9dVjwyKc/0JjT.c", NULL)),
        "unkeyed: the id itself: %s", key);
    {
        static const unsigned char s1[] = "0123456789abcdef0123456789abcdef";
        static const unsigned char s2[] = "0123456789abcdef0123456789abcdeF";
        const char *k = sl_store_key(p, "sl", k1, l, SL_ALG_COUNTER, s1, 32);
        const char *k2 = sl_store_key(p, "sl", k1, l, SL_ALG_COUNTER, s2, 32);
        /* HMAC-SHA1(s1, "policy\0" id), 12 bytes in base64 (SL::Keys). */
        EXPECT(
            !strcmp(k, apr_pstrcat(p, "sl:{", k1, "}kaOfkk8CZbeic51U.c", NULL)),
            "keyed policy vector: %s", k);
        EXPECT(strcmp(k, k2) && strlen(k) == strlen(k2),
               "keyed policy depends on the secret, same shape");
    }
    EXPECT(sl_key_slot(key, strlen(key)) == sl_key_slot(k1, strlen(k1)),
           "the hash tag decides the slot");
    /* Redis Cluster's reference values (cluster spec). */
    EXPECT(sl_key_slot("123456789", 9) == 12739, "crc16 of 123456789");
    EXPECT(sl_key_slot("foo{bar}baz", 11) == sl_key_slot("bar", 3), "tag");
    EXPECT(sl_key_slot("foo{}bar", 8) == sl_key_slot("foo{}bar", 8),
           "empty tag hashes the whole key");
}

static void test_store_urls_tls_sentinel(apr_pool_t *p)
{
    sl_store_url_t u;
    const char *err;

    err = sl_parse_store_url(p, "rediss://app:pw@cache.example:6380/1", &u);
    EXPECT(!err && u.kind == SL_STORE_TCP && u.tls && u.db == 1 &&
               !strcmp(u.user, "app") && !strcmp(u.password, "pw"),
           "rediss url: %s", err ? err : "");
    EXPECT(!strcmp(u.display, "rediss://***@cache.example:6380/1"),
           "rediss display: %s", u.display);
    err = sl_parse_store_url(p, "redis://h", &u);
    EXPECT(!err && !u.tls, "redis:// is plain");
    err = sl_parse_store_url(p, "cluster://app:p@ss@a:7000,b", &u);
    EXPECT(!err && u.kind == SL_STORE_CLUSTER && !u.tls &&
               u.nodes->nelts == 2 && !strcmp(u.user, "app") &&
               !strcmp(u.password, "p@ss") &&
               APR_ARRAY_IDX(u.nodes, 1, sl_hostport_t).port == 6379,
           "cluster url with credentials: %s", err ? err : "");
    EXPECT(!strcmp(u.display, "cluster://***@a:7000,b:6379"),
           "cluster display: %s", u.display);
    err = sl_parse_store_url(p, "clusters://secret@a:7000", &u);
    EXPECT(!err && u.tls && !u.user && !strcmp(u.password, "secret") &&
               !strcmp(u.display, "clusters://***@a:7000"),
           "clusters url: %s", err ? err : u.display);
    err = sl_parse_store_url(p, "unix:app:pw@/run/redis.sock?db=2", &u);
    EXPECT(!err && u.kind == SL_STORE_UNIX && !strcmp(u.user, "app") &&
               !strcmp(u.password, "pw") && u.db == 2 &&
               !strcmp(u.path, "/run/redis.sock") &&
               !strcmp(u.display, "unix:***@/run/redis.sock"),
           "unix url with credentials: %s", err ? err : u.display);
    err = sl_parse_store_url(p, "unix:///run/a@b/redis.sock", &u);
    EXPECT(!err && !u.password && !strcmp(u.path, "/run/a@b/redis.sock"),
           "unix path with '@' and no credentials");

    err = sl_parse_store_url(
        p, "sentinel://app:pw@10.0.0.1:26380,s2,[::1]:26381/mymaster/3", &u);
    EXPECT(!err && u.kind == SL_STORE_SENTINEL && !u.tls &&
               u.nodes->nelts == 3 && !strcmp(u.master, "mymaster") &&
               u.db == 3 && !strcmp(u.user, "app") &&
               !strcmp(u.password, "pw") &&
               APR_ARRAY_IDX(u.nodes, 1, sl_hostport_t).port == 26379 &&
               APR_ARRAY_IDX(u.nodes, 0, sl_hostport_t).port == 26380,
           "sentinel url: %s", err ? err : "");
    EXPECT(!strcmp(u.display, "sentinel://***@10.0.0.1:26380,s2:26379,"
                              "[::1]:26381/mymaster/3"),
           "sentinel display: %s", u.display);
    err = sl_parse_store_url(p, "sentinels://s1:26379/m@ster", &u);
    EXPECT(!err && u.tls && !u.password && !strcmp(u.master, "m@ster") &&
               u.db == 0,
           "sentinels url, '@' in the master name: %s", err ? err : "");
    EXPECT(sl_parse_store_url(p, "sentinel://s1:26379", &u) != NULL,
           "sentinel without a master name");
    EXPECT(sl_parse_store_url(p, "sentinel://s1:26379/", &u) != NULL,
           "sentinel with an empty master name");
    EXPECT(sl_parse_store_url(p, "sentinel://s1/m/x", &u) != NULL,
           "sentinel with a bad db");
    EXPECT(sl_parse_store_url(p, "cluster://a:1/3", &u) != NULL,
           "cluster with a database other than 0");
    {
        /* A host with a colon outside brackets is a typo (host:port:port)
         * or an IPv6 address without its brackets: never a host name. */
        static const char *const colon[] = {
            "redis://127.0.0.1:6391:7", "redis://::1", "redis://fe80::1:6379",
            "cluster://a:1,b:2:3", "sentinel://s:1:2/m"};
        apr_size_t i;
        for (i = 0; i < sizeof(colon) / sizeof(colon[0]); i++) {
            const char *err = sl_parse_store_url(p, colon[i], &u);
            EXPECT(err && strstr(err, "brackets"),
                   "%s must be refused, saying why: %s", colon[i],
                   err ? err : "(accepted)");
        }
        err = sl_parse_store_url(p, "redis://[::1]:6391", &u);
        EXPECT(!err, "[::1]:6391: %s", err ? err : "");
    }
    {
        sl_store_url_t a, b;
        sl_parse_store_url(p, "redis://10.0.0.1:6379/0", &a);
        sl_parse_store_url(p, "rediss://10.0.0.1:6379/0", &b);
        EXPECT(a.tag != b.tag, "TLS and plain are two stores");
        sl_parse_store_url(p, "sentinel://s:1/m1", &a);
        sl_parse_store_url(p, "sentinel://s:1/m2", &b);
        EXPECT(a.tag != b.tag, "two masters, two tags");
    }
}

/* No error and no display form ever holds the password. */
static void test_store_urls_redacted(apr_pool_t *p)
{
    static const char *const bad[] = {
        "redis://u:Hunter2pw@h:99999",
        "rediss://Hunter2pw@h/x",
        "cluster://u:Hunter2pw@a:1,b:x",
        "sentinel://u:Hunter2pw@s:1",
        "sentinels://Hunter2pw@s:1/m/zz",
        "unix:u:Hunter2pw@/run/r.sock?database=1",
        "unix:u:Hunter2pw@relative.sock",
        "memcached://u:Hunter2pw@h",
        "http://Hunter2pw@h",
        "redis://u:Hunter2pw@",
        "redis://u:Hunter2pw@[::1",
    };
    static const char *const good[] = {
        "redis://u:Hunter2pw@h",         "rediss://Hunter2pw@h:1/2",
        "cluster://u:Hunter2pw@a:1,b:2", "sentinel://u:Hunter2pw@s:1/m",
        "unix:Hunter2pw@/r.sock",
    };
    sl_store_url_t u;
    apr_size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *err = sl_parse_store_url(p, bad[i], &u);
        EXPECT(err && !strstr(err, "Hunter2"),
               "refused without the password: "
               "%s -> %s",
               bad[i], err ? err : "(accepted)");
    }
    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        const char *err = sl_parse_store_url(p, good[i], &u);
        EXPECT(!err && !strstr(u.display, "Hunter2") &&
                   !strcmp(u.password, "Hunter2pw"),
               "display without the password: %s -> %s", good[i],
               err ? err : u.display);
    }
    EXPECT(!strcmp(sl_redact_url(p, "redis://u:pw@h:1"), "redis://***@h:1"),
           "redact user:password");
    EXPECT(!strcmp(sl_redact_url(p, "x://p@w@h"), "x://***@h"),
           "redact a password with '@': %s", sl_redact_url(p, "x://p@w@h"));
    EXPECT(!strcmp(sl_redact_url(p, "unix:u:pw@/s"), "unix:***@/s"),
           "redact unix");
    EXPECT(!strcmp(sl_redact_url(p, "redis://h:1"), "redis://h:1"),
           "nothing to redact");
}

static void test_store_urls(apr_pool_t *p)
{
    sl_store_url_t u;
    const char *err;

    err = sl_parse_store_url(p, "redis://user:s3cr@t@10.1.2.3:6380/2", &u);
    EXPECT(!err && u.kind == SL_STORE_TCP && u.db == 2 &&
               !strcmp(u.user, "user") && !strcmp(u.password, "s3cr@t"),
           "redis url: %s", err ? err : "");
    EXPECT(!strstr(u.display, "s3cr"), "password never displayed: %s",
           u.display);
    err = sl_parse_store_url(p, "redis://localhost", &u);
    EXPECT(!err && APR_ARRAY_IDX(u.nodes, 0, sl_hostport_t).port == 6379,
           "default port");
    err = sl_parse_store_url(p, "unix:/run/redis.sock?db=3", &u);
    EXPECT(!err && u.kind == SL_STORE_UNIX && u.db == 3 &&
               !strcmp(u.path, "/run/redis.sock"),
           "unix url");
    err = sl_parse_store_url(p, "cluster://a:7000,b:7001,[::1]:7002", &u);
    EXPECT(!err && u.nodes->nelts == 3 &&
               !strcmp(APR_ARRAY_IDX(u.nodes, 2, sl_hostport_t).host, "::1"),
           "cluster url");
    err = sl_parse_store_url(p, "cluster://app:pa@ss@a:7000,b:7001", &u);
    EXPECT(!err && u.nodes->nelts == 2 && !strcmp(u.user, "app") &&
               !strcmp(u.password, "pa@ss") &&
               !strcmp(APR_ARRAY_IDX(u.nodes, 0, sl_hostport_t).host, "a"),
           "cluster url with an ACL user: %s", err ? err : "");
    EXPECT(!strstr(u.display, "pa@ss") && !strstr(u.display, "app"),
           "cluster: credentials never displayed: %s", u.display);
    err = sl_parse_store_url(p, "cluster://s3cret@a:7000", &u);
    EXPECT(!err && !u.user && !strcmp(u.password, "s3cret"),
           "cluster url with a password: %s", err ? err : "");
    err = sl_parse_store_url(p, "unix://u:s3cr@t@/run/redis.sock?db=2", &u);
    EXPECT(!err && !strcmp(u.path, "/run/redis.sock") && u.db == 2 &&
               !strcmp(u.user, "u") && !strcmp(u.password, "s3cr@t") &&
               !strstr(u.display, "s3cr"),
           "unix url with credentials: %s %s", err ? err : "",
           err ? "" : u.display);
    {
        sl_store_url_t a, b;
        sl_parse_store_url(p, "redis://10.0.0.1:6379/0", &a);
        sl_parse_store_url(p, "redis://10.0.0.1:6379/0", &b);
        EXPECT(a.tag == b.tag, "one store, one tag");
        sl_parse_store_url(p, "redis://10.0.0.1:6380/0", &b);
        EXPECT(a.tag != b.tag, "another port, another tag");
        sl_parse_store_url(p, "redis://10.0.0.1:6379/1", &b);
        EXPECT(a.tag != b.tag, "another database, another tag");
        sl_parse_store_url(p, "unix:/run/r.sock?db=1", &a);
        sl_parse_store_url(p, "unix:/run/r.sock", &b);
        EXPECT(a.tag != b.tag, "unix socket: the database counts too");
    }
    EXPECT(sl_parse_store_url(p, "redis://h:99999", &u) != NULL, "bad port");
    EXPECT(sl_parse_store_url(p, "redis://h/x", &u) != NULL, "bad db");
    EXPECT(sl_parse_store_url(p, "memcached://h", &u) != NULL, "bad scheme");
    EXPECT(sl_parse_store_url(p, "unix:relative", &u) != NULL, "relative");
    EXPECT(sl_parse_store_url(p, "cluster://", &u) != NULL, "no seeds");
    test_store_urls_tls_sentinel(p);
    test_store_urls_redacted(p);
}

static void test_decisions(apr_pool_t *p)
{
    sl_decision_t d;
    const long long ok[] = {1796018400, 5, 1, 1, 41, 12000000, 1, 3, 500000};
    const long long denied[] = {1796018400, 0, 0, 1, 41, 0, 0, 0, 17200000};
    const long long liar[] = {1796018400, 0, 1, 0, 0, 5};
    const long long lies2[] = {1796018400, 0, 0, 1, 5, 0};
    const long long neg[] = {1796018400, 0, 1, 1, -1, 0};

    EXPECT(!sl_decision_parse(p, ok, 9, 2, &d) && d.admitted && d.n == 2,
           "admitted reply");
    EXPECT(sl_decision_pick(&d) == 1, "fewest remaining decides");
    EXPECT(!sl_decision_parse(p, denied, 9, 2, &d) && !d.admitted, "denied");
    EXPECT(sl_decision_pick(&d) == 1, "the refusing limit decides");
    EXPECT(sl_retry_after(&d) == 18, "Retry-After rounds up: %ld",
           (long) sl_retry_after(&d));
    EXPECT(sl_decision_parse(p, ok, 8, 2, &d) != NULL, "short reply");
    EXPECT(sl_decision_parse(p, liar, 6, 1, &d) != NULL,
           "admit despite refusal");
    EXPECT(sl_decision_parse(p, lies2, 6, 1, &d) != NULL,
           "refuse though all admit");
    EXPECT(sl_decision_parse(p, neg, 6, 1, &d) != NULL, "negative remaining");
    EXPECT(sl_ceil_seconds(1) == 1 && sl_ceil_seconds(1000000) == 1 &&
               sl_ceil_seconds(1000001) == 2 && sl_ceil_seconds(0) == 1,
           "ceil seconds");
}

static void test_peek_json(apr_pool_t *p)
{
    sl_decision_t d;
    apr_int64_t *blocked = NULL;
    const long long ok[] = {1796018400, 5, 0, 0,          0, 3600000000,
                            1,          3, 0, 3599000000, 0};
    const long long bad[] = {1796018400, 5, 0, 0, 0, 5, 1, 3, 0, 0, 7};
    const long long neg[] = {1796018400, 5, 0, 0, 0, 5, 1, 3, 0, -1, 0};

    EXPECT(!sl_peek_parse(p, ok, 11, 2, &d, &blocked) && !d.admitted &&
               blocked[0] == 3599000000 && blocked[1] == 0 &&
               d.quota[1].remaining == 3,
           "peek reply: state and blocks");
    EXPECT(sl_peek_parse(p, ok, 9, 2, &d, &blocked) != NULL,
           "peek reply without the blocks");
    EXPECT(sl_peek_parse(p, bad, 11, 2, &d, &blocked) != NULL,
           "peek reply: a block on a limit with room");
    EXPECT(sl_peek_parse(p, neg, 11, 2, &d, &blocked) != NULL,
           "peek reply: a negative block");
    EXPECT(!strcmp(sl_json_string(p, "a\"b\\c\n\x01\xc3\xa9"),
                   "\"a\\\"b\\\\c\\u000a\\u0001\xc3\xa9\""),
           "JSON string: quotes, backslash, control characters escaped: %s",
           sl_json_string(p, "a\"b\\c\n\x01\xc3\xa9"));
}

struct hdrs {
    apr_pool_t *p;
    const char *all;
};

static void collect(void *ctx, const char *name, const char *value)
{
    struct hdrs *h = ctx;
    h->all = apr_pstrcat(h->p, h->all, name, ": ", value, "\n", NULL);
}

static void test_headers(apr_pool_t *p)
{
    apr_array_header_t *limits = apr_array_make(p, 2, sizeof(sl_limit_t *));
    const char *err;
    sl_decision_t d;
    struct hdrs h = {p, ""};
    const long long v[] = {1796018400, 0, 1, 1, 41, 12000000, 1, 90, 100};

    APR_ARRAY_PUSH(limits, sl_limit_t *) =
        limit(p, "100 60s name=api", "", &err);
    APR_ARRAY_PUSH(limits, sl_limit_t *) =
        limit(p, "1000 1h name=hourly", "", &err);
    sl_decision_parse(p, v, 9, 2, &d);
    sl_quota_headers(p, SL_HDR_IETF | SL_HDR_DRAFT03 | SL_HDR_XRL, limits, &d,
                     collect, &h);
    EXPECT(strstr(h.all, "RateLimit-Policy: \"api\";q=100;w=60, "
                         "\"hourly\";q=1000;w=3600\n") != NULL,
           "policy header:\n%s", h.all);
    EXPECT(strstr(h.all, "RateLimit: \"api\";r=41;t=12\n") != NULL,
           "ratelimit header:\n%s", h.all);
    EXPECT(strstr(h.all, "RateLimit-Reset: 12\n") != NULL, "draft03 reset");
    EXPECT(strstr(h.all, "X-RateLimit-Reset: 1796018412\n") != NULL,
           "x-ratelimit reset");
    EXPECT(!strcmp(sl_sf_string(p, "a\"b\\c"), "\"a\\\"b\\\\c\""), "sf-string");
    EXPECT(strstr(sl_json_body(p, 0, 18), "\"retry_after_seconds\":18}") !=
               NULL,
           "json body");
    EXPECT(strstr(sl_json_body(p, 0, 1), "Try again in 1 second.") != NULL,
           "one second, not one seconds: %s", sl_json_body(p, 0, 1));
    EXPECT(strstr(sl_json_body(p, 1, 1), "Try again in 1 second.") != NULL,
           "one second (unavailable): %s", sl_json_body(p, 1, 1));
    EXPECT(strstr(sl_json_body(p, 0, 2), "Try again in 2 seconds.") != NULL,
           "two seconds");
}

int main(void)
{
    apr_pool_t *p;

    apr_initialize();
    apr_pool_create(&p, NULL);
    test_durations(p);
    test_limits(p);
    test_limit_options(p);
    test_cost_expr(p);
    test_keys(p);
    test_store_urls(p);
    test_decisions(p);
    test_headers(p);
    test_peek_json(p);
    printf("sl_core: %d passed, %d failed\n", passed, failed);
    apr_terminate();
    return failed ? 1 : 0;
}
