/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of a Redis store's prerequisites (src/sl_prereq.c): INFO's
 * text read (versions, CRLF and LF lines, missing fields, garbage, Valkey's
 * names), the rules, one line each naming the store without its password,
 * and the shared table that has each node asked once per generation. No
 * server needed (make unit); the version rule is tested only here, as no
 * Redis older than 3.2 runs on the test machines. */
#include "sl_prereq.h"

#include <apr_general.h>
#include <apr_strings.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_expect.h"

static apr_pool_t *pool;

static const char *parse(const char *text, sl_info_t *info)
{
    return sl_info_parse(pool, text, strlen(text), info);
}

static void test_parse(void)
{
    sl_info_t i;
    const char *err;

    err = parse("# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:00000000"
                "\r\nredis_mode:standalone\r\n\r\n# Memory\r\nmaxmemory:0\r\n"
                "maxmemory_human:0B\r\nmaxmemory_policy:noeviction\r\n\r\n"
                "# Cluster\r\ncluster_enabled:0\r\n",
                &i);
    EXPECT(!err, "7.0.15 read: %s", err);
    EXPECT(i.major == 7 && i.minor == 0 && i.patch == 15, "7.0.15: %d.%d.%d",
           i.major, i.minor, i.patch);
    EXPECT(!strcmp(i.version, "7.0.15"), "version text without CR: '%s'",
           i.version);
    EXPECT(i.cluster == 0 && i.maxmemory == 0, "cluster %d maxmemory %ld",
           i.cluster, (long) i.maxmemory);
    EXPECT(i.policy && !strcmp(i.policy, "noeviction"), "policy '%s'",
           i.policy ? i.policy : "(null)");
    EXPECT(i.server && !strcmp(i.server, "Redis 7.0.15"), "named '%s'",
           i.server ? i.server : "(null)");

    err = parse("redis_version:3.0.7\nredis_mode:cluster\n", &i);
    EXPECT(!err && i.major == 3 && i.minor == 0 && i.patch == 7,
           "3.0.7 with LF lines");
    EXPECT(i.cluster == 1, "redis_mode:cluster without cluster_enabled");
    EXPECT(i.maxmemory == -1 && !i.policy, "missing memory fields: unknown");

    err = parse("redis_version:6.2.0\r\nmaxmemory:104857600\r\n"
                "maxmemory_policy:allkeys-lru",
                &i);
    EXPECT(!err && i.major == 6 && i.minor == 2 && i.patch == 0,
           "6.2.0, no final newline");
    EXPECT(i.maxmemory == 104857600 && !strcmp(i.policy, "allkeys-lru"),
           "maxmemory and policy");
    EXPECT(i.cluster == -1, "no cluster field: unknown");

    err = parse("redis_version:7.2\r\n", &i);
    EXPECT(!err && i.major == 7 && i.minor == 2 && i.patch == 0,
           "MAJOR.MINOR alone");
    err = parse("redis_version:7.2.4-valkey\r\n", &i);
    EXPECT(!err && i.patch == 4, "a fork's suffix");

    EXPECT(parse("", &i) != NULL, "empty text refused");
    EXPECT(parse("garbage\x01\x02 no colon at all", &i) != NULL,
           "garbage refused");
    EXPECT(parse("ERR unknown command 'INFO'", &i) != NULL,
           "an error's text refused");
    err = parse("# Server\r\nredis_mode:standalone\r\n", &i);
    EXPECT(err && strstr(err, "redis_version"), "no version: '%s'",
           err ? err : "(null)");
    err = parse("redis_version:seven\r\n", &i);
    EXPECT(err && strstr(err, "seven"), "a word as version: '%s'",
           err ? err : "(null)");
    EXPECT(parse("redis_version:7\r\n", &i) != NULL, "no minor refused");
    EXPECT(parse("redis_version:7.\r\n", &i) != NULL, "empty minor refused");
    EXPECT(parse("redis_version:99999999999.1\r\n", &i) != NULL,
           "overlong number refused");
    EXPECT(parse("redis_version:\r\n", &i) != NULL, "empty version refused");

    err = parse("redis_version:7.0.0\r\nmaxmemory:lots\r\n"
                "cluster_enabled:yes\r\nmaxmemory_policy:\r\n",
                &i);
    EXPECT(!err && i.maxmemory == -1 && i.cluster == -1 && !i.policy,
           "malformed fields stay unknown");
    err = parse("#redis_version:1.0\r\nredis_version:7.0.1\r\n", &i);
    EXPECT(!err && i.major == 7, "comment lines skipped");
}

/* Valkey reports the Redis it is compatible with as redis_version, which
 * the rules go by, and names itself in server_name and valkey_version,
 * which the log shows. The text is Valkey 8.1.1's (Debian 13). */
static void test_valkey(void)
{
    sl_info_t i;
    sl_prereq_t pr[SL_PREREQ_MAX];
    sl_store_url_t u;
    const char *err;

    err = parse("# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\n"
                "valkey_version:8.1.1\r\nvalkey_release_stage:ga\r\n"
                "redis_git_sha1:00000000\r\nserver_mode:standalone\r\n\r\n"
                "# Memory\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n"
                "\r\n# Cluster\r\ncluster_enabled:0\r\n",
                &i);
    EXPECT(!err, "Valkey 8.1.1 read: %s", err);
    EXPECT(i.server && !strcmp(i.server, "Valkey 8.1.1"),
           "Valkey named with its own version: '%s'",
           i.server ? i.server : "(null)");
    EXPECT(!strcmp(i.version, "7.2.4") && i.major == 7 && i.minor == 2 &&
               i.patch == 4,
           "the rules' version is redis_version: %s", i.version);
    EXPECT(!sl_parse_store_url(pool, "redis://127.0.0.1:6379", &u) &&
               sl_prereq_problems(pool, &i, &u, "127.0.0.1:6379", pr) == 0,
           "Valkey 8 meets the prerequisites");

    err = parse("redis_version:7.2.4\nserver_name:valkey\n", &i);
    EXPECT(
        !err && i.server && !strcmp(i.server, "Valkey (redis_version 7.2.4)"),
        "Valkey without valkey_version: '%s'", i.server ? i.server : "(null)");
    err = parse("server_name:valkey\r\nvalkey_version:8.0.1\r\n", &i);
    EXPECT(err && strstr(err, "redis_version"),
           "valkey_version alone is not a version to go by: '%s'",
           err ? err : "(null)");
    err = parse("redis_version:7.4.1\r\nserver_name:valkeyish\r\n"
                "valkey_version:9.9.9\r\n",
                &i);
    EXPECT(!err && i.server && !strcmp(i.server, "Redis 7.4.1"),
           "another server_name is not Valkey: '%s'",
           i.server ? i.server : "(null)");
}

static sl_store_url_t *store(const char *url)
{
    sl_store_url_t *u = apr_pcalloc(pool, sizeof(*u));
    const char *err = sl_parse_store_url(pool, url, u);

    if (err) {
        printf("bad test URL %s: %s\n", url, err);
        exit(1);
    }
    return u;
}

static int problems(const char *text, const char *url, const char *node,
                    sl_prereq_t *out)
{
    sl_info_t i;

    if (parse(text, &i)) {
        return -1;
    }
    return sl_prereq_problems(pool, &i, store(url), node, out);
}

static void test_rules(void)
{
    sl_prereq_t pr[SL_PREREQ_MAX];
    const char *url = "redis://u:s3cret@127.0.0.1:6379/2";
    int n;

    n = problems("redis_version:7.0.15\r\nmaxmemory:0\r\n"
                 "maxmemory_policy:allkeys-lru\r\ncluster_enabled:0\r\n",
                 url, "127.0.0.1:6379", pr);
    EXPECT(n == 0, "healthy 7.0 (a policy without maxmemory): %d", n);
    n = problems("redis_version:3.2.0\r\n", url, "127.0.0.1:6379", pr);
    EXPECT(n == 0, "3.2.0 is enough: %d", n);
    n = problems("redis_version:4.0.14\r\nmaxmemory:1000\r\n"
                 "maxmemory_policy:noeviction\r\n",
                 url, "127.0.0.1:6379", pr);
    EXPECT(n == 0, "noeviction under maxmemory: %d", n);

    n = problems("redis_version:3.0.7\r\n", url, "127.0.0.1:6379", pr);
    EXPECT(n == 1 && pr[0].level == SL_PREREQ_ERROR, "3.0.7: one error");
    EXPECT(n == 1 && strstr(pr[0].text, "Redis 3.0.7") &&
               strstr(pr[0].text, "3.2 or later") &&
               strstr(pr[0].text, "store redis://***@127.0.0.1:6379/2"),
           "names the version, what is needed, the store: %s",
           n ? pr[0].text : "");
    n = problems("redis_version:2.8.24\r\n", url, "127.0.0.1:6379", pr);
    EXPECT(n == 1 && pr[0].level == SL_PREREQ_ERROR, "2.8: an error");

    n = problems("redis_version:6.2.0\r\nmaxmemory:104857600\r\n"
                 "maxmemory_policy:volatile-lru\r\n",
                 url, "127.0.0.1:6379", pr);
    EXPECT(n == 1 && pr[0].level == SL_PREREQ_WARNING,
           "volatile-lru under maxmemory: a warning");
    EXPECT(n == 1 && strstr(pr[0].text, "maxmemory-policy volatile-lru") &&
               strstr(pr[0].text, "maxmemory 104857600") &&
               strstr(pr[0].text, "noeviction"),
           "names the setting and the remedy: %s", n ? pr[0].text : "");

    n = problems("redis_version:7.0.15\r\ncluster_enabled:1\r\n", url,
                 "127.0.0.1:6379", pr);
    EXPECT(n == 1 && pr[0].level == SL_PREREQ_WARNING,
           "redis:// on a cluster: a warning");
    EXPECT(n == 1 && strstr(pr[0].text, "cluster://127.0.0.1:6379"),
           "says to use cluster://: %s", n ? pr[0].text : "");
    n = problems("redis_version:7.0.15\r\ncluster_enabled:1\r\n",
                 "rediss://h.example:6380", "h.example:6380", pr);
    EXPECT(n == 1 && strstr(pr[0].text, "clusters://h.example:6380"),
           "TLS: clusters://: %s", n ? pr[0].text : "");
    n = problems("redis_version:7.0.15\r\ncluster_enabled:1\r\n",
                 "cluster://127.0.0.1:7000", "127.0.0.1:7001", pr);
    EXPECT(n == 0, "cluster:// on a cluster: %d", n);
    n = problems("redis_version:7.0.15\r\ncluster_enabled:0\r\n",
                 "cluster://:pw@127.0.0.1:7000,127.0.0.1:7001",
                 "127.0.0.1:7001", pr);
    EXPECT(n == 1 && pr[0].level == SL_PREREQ_WARNING &&
               strstr(pr[0].text, "redis://127.0.0.1:7001") &&
               strstr(pr[0].text, "node 127.0.0.1:7001"),
           "cluster:// on a plain Redis names the node: %s",
           n ? pr[0].text : "");

    n = problems("redis_version:3.0.7\r\ncluster_enabled:1\r\n"
                 "maxmemory:1\r\nmaxmemory_policy:allkeys-random\r\n",
                 url, "127.0.0.1:6379", pr);
    EXPECT(n == 3, "three problems, three lines: %d", n);
    for (n--; n >= 0; n--) {
        EXPECT(!strstr(pr[n].text, "s3cret") && !strstr(pr[n].text, "u:"),
               "no credentials: %s", pr[n].text);
    }
}

static void test_table(void)
{
    void *base = calloc(1, sl_prereqs_size());
    sl_prereqs_t *t = sl_prereqs_attach(base);
    char node[32];
    int i, claimed;

    EXPECT(sl_prereqs_claim(t, "redis://a:1/0", "a:1", 0), "first asks");
    EXPECT(!sl_prereqs_claim(t, "redis://a:1/0", "a:1", 0),
           "second of the generation does not");
    EXPECT(sl_prereqs_claim(t, "cluster://a:1", "a:1", 0),
           "another store on the same node asks");
    EXPECT(sl_prereqs_claim(t, "redis://a:1/0", "a:1", 1),
           "the next generation asks again");
    EXPECT(!sl_prereqs_claim(t, "redis://a:1/0", "a:1", 0),
           "the generation before does not ask again");
    sl_prereqs_release(t, "redis://a:1/0", "a:1", 1);
    EXPECT(sl_prereqs_claim(t, "redis://a:1/0", "a:1", 1),
           "released (no answer): asked again");
    EXPECT(!sl_prereqs_claim(t, "redis://a:1/0", "a:1", 1), "then not");

    for (i = 0, claimed = 0; i < SL_PREREQ_CELLS + 10; i++) {
        apr_snprintf(node, sizeof(node), "n%d:1", i);
        claimed += sl_prereqs_claim(t, "cluster://x:1", node, 0);
    }
    EXPECT(claimed == SL_PREREQ_CELLS - 2,
           "a full table asks no more (claimed %d)", claimed);
    free(base);
}

int main(void)
{
    apr_initialize();
    apr_pool_create(&pool, NULL);
    test_parse();
    test_valkey();
    test_rules();
    test_table();
    printf("sl_prereq: %d passed, %d failed\n", passed, failed);
    apr_pool_destroy(pool);
    apr_terminate();
    return failed ? 1 : 0;
}
