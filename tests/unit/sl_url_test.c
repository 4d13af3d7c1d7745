/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of SlidingLimitStore's URL (src/sl_url.c): every kind of
 * store, credentials, tags, and no password in an error or a display form.
 * No server needed. */
#include "sl_url.h"

#include <apr_general.h>
#include <apr_strings.h>

#include <stdio.h>
#include <string.h>

#include "sl_expect.h"

static void test_store_urls_tls_sentinel(apr_pool_t *p)
{
    sl_store_url_t u;
    const char *err;

    err = sl_parse_store_url(p, "rediss://app:pw@cache.example:6380/1", &u);
    EXPECT(!err && u.kind == SL_URL_TCP && u.tls && u.db == 1 &&
               !strcmp(u.user, "app") && !strcmp(u.password, "pw"),
           "rediss url: %s", err ? err : "");
    EXPECT(!strcmp(u.display, "rediss://***@cache.example:6380/1"),
           "rediss display: %s", u.display);
    err = sl_parse_store_url(p, "redis://h", &u);
    EXPECT(!err && !u.tls, "redis:// is plain");
    err = sl_parse_store_url(p, "cluster://app:p@ss@a:7000,b", &u);
    EXPECT(!err && u.kind == SL_URL_CLUSTER && !u.tls && u.nodes->nelts == 2 &&
               !strcmp(u.user, "app") && !strcmp(u.password, "p@ss") &&
               APR_ARRAY_IDX(u.nodes, 1, sl_hostport_t).port == 6379,
           "cluster url with credentials: %s", err ? err : "");
    EXPECT(!strcmp(u.display, "cluster://***@a:7000,b:6379"),
           "cluster display: %s", u.display);
    err = sl_parse_store_url(p, "clusters://secret@a:7000", &u);
    EXPECT(!err && u.tls && !u.user && !strcmp(u.password, "secret") &&
               !strcmp(u.display, "clusters://***@a:7000"),
           "clusters url: %s", err ? err : u.display);
    err = sl_parse_store_url(p, "unix:app:pw@/run/redis.sock?db=2", &u);
    EXPECT(!err && u.kind == SL_URL_UNIX && !strcmp(u.user, "app") &&
               !strcmp(u.password, "pw") && u.db == 2 &&
               !strcmp(u.path, "/run/redis.sock") &&
               !strcmp(u.display, "unix:***@/run/redis.sock"),
           "unix url with credentials: %s", err ? err : u.display);
    err = sl_parse_store_url(p, "unix:///run/a@b/redis.sock", &u);
    EXPECT(!err && !u.password && !strcmp(u.path, "/run/a@b/redis.sock"),
           "unix path with '@' and no credentials");

    err = sl_parse_store_url(
        p, "sentinel://app:pw@10.0.0.1:26380,s2,[::1]:26381/mymaster/3", &u);
    EXPECT(!err && u.kind == SL_URL_SENTINEL && !u.tls && u.nodes->nelts == 3 &&
               !strcmp(u.master, "mymaster") && u.db == 3 &&
               !strcmp(u.user, "app") && !strcmp(u.password, "pw") &&
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
    EXPECT(!err && u.kind == SL_URL_TCP && u.db == 2 &&
               !strcmp(u.user, "user") && !strcmp(u.password, "s3cr@t"),
           "redis url: %s", err ? err : "");
    EXPECT(!strstr(u.display, "s3cr"), "password never displayed: %s",
           u.display);
    err = sl_parse_store_url(p, "redis://localhost", &u);
    EXPECT(!err && APR_ARRAY_IDX(u.nodes, 0, sl_hostport_t).port == 6379,
           "default port");
    err = sl_parse_store_url(p, "unix:/run/redis.sock?db=3", &u);
    EXPECT(!err && u.kind == SL_URL_UNIX && u.db == 3 &&
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

int main(void)
{
    apr_pool_t *p;

    apr_initialize();
    apr_pool_create(&p, NULL);
    test_store_urls(p);
    printf("sl_url: %d passed, %d failed\n", passed, failed);
    apr_terminate();
    return failed ? 1 : 0;
}
