/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the process's memo of identities (src/sl_memo.c): what it
 * finds is what was kept for the same input and secret, nothing else. No
 * server needed. */
#include "sl_memo.h"

#include <apr_general.h>
#include <apr_strings.h>
#include <apr_thread_proc.h>

#include <stdio.h>
#include <string.h>

#include "sl_expect.h"

static const char *find(sl_memo_t *m, apr_pool_t *p,
                        const unsigned char *secret, apr_size_t slen,
                        const char *in, apr_size_t len)
{
    unsigned int set;

    return sl_memo_find(m, p, secret, slen, in, len, &set);
}

/* As the memo's users keep an identity: where the find that missed said. */
static void put(sl_memo_t *m, apr_pool_t *p, const unsigned char *secret,
                apr_size_t slen, const char *in, apr_size_t len,
                const char *identity)
{
    unsigned int set;

    sl_memo_find(m, p, secret, slen, in, len, &set);
    sl_memo_put(m, set, secret, slen, in, len, identity);
}

static void test_memo(apr_pool_t *p, int threads)
{
    static const unsigned char s1[] = "0123456789abcdef";
    static const unsigned char s2[] = "0123456789abcdef";
    sl_memo_t *m = sl_memo_create(p, threads);
    unsigned int set;
    const char *id;
    char in[SL_MEMO_IN + 1];
    int i, found, wrong;

    EXPECT(m != NULL, "created");
    EXPECT(!find(m, p, s1, 16, "i\100\0x", 4), "empty");
    put(m, p, s1, 16, "i\100\0x", 4, "AAAAAAAAAAAAAAAA");
    id = find(m, p, s1, 16, "i\100\0x", 4);
    EXPECT(id && !strcmp(id, "AAAAAAAAAAAAAAAA"), "found: %s", id);
    /* Another secret (by address), another length of it, another input:
     * another identity. */
    EXPECT(!find(m, p, s2, 16, "i\100\0x", 4), "other secret");
    EXPECT(!find(m, p, s1, 15, "i\100\0x", 4), "other length");
    EXPECT(!find(m, p, NULL, 0, "i\100\0x", 4), "no secret");
    EXPECT(!find(m, p, s1, 16, "i\100\0y", 4), "other input");
    EXPECT(!find(m, p, s1, 16, "i\100\0x", 3), "a prefix of it");
    put(m, p, s1, 16, "i\100\0x", 4, "BBBBBBBBBBBBBBBB");
    id = find(m, p, s1, 16, "i\100\0x", 4);
    EXPECT(id && (!strcmp(id, "AAAAAAAAAAAAAAAA") ||
                  !strcmp(id, "BBBBBBBBBBBBBBBB")),
           "one of what was kept: %s", id);
    /* Nothing kept that is not an identity, or an input too long. */
    put(m, p, s1, 16, "short", 5, "ABC");
    EXPECT(!find(m, p, s1, 16, "short", 5), "not an identity");
    memset(in, 'v', sizeof(in));
    put(m, p, s1, 16, in, SL_MEMO_IN + 1, "CCCCCCCCCCCCCCCC");
    EXPECT(!find(m, p, s1, 16, in, SL_MEMO_IN + 1), "too long");
    put(m, p, s1, 16, in, SL_MEMO_IN, "CCCCCCCCCCCCCCCC");
    id = find(m, p, s1, 16, in, SL_MEMO_IN);
    EXPECT(id && !strcmp(id, "CCCCCCCCCCCCCCCC"), "the longest kept");
    /* Many inputs: each found is its own. */
    for (i = 0; i < 20000; i++) {
        char v[32], out[SL_IDENTITY_LEN + 1];
        int n = apr_snprintf(v, sizeof(v), "198.18.%d.%d", i / 250, i % 250);
        apr_snprintf(out, sizeof(out), "%016d", i);
        put(m, p, NULL, 0, v, (apr_size_t) n, out);
    }
    for (i = found = wrong = 0; i < 20000; i++) {
        char v[32], out[SL_IDENTITY_LEN + 1];
        int n = apr_snprintf(v, sizeof(v), "198.18.%d.%d", i / 250, i % 250);
        apr_snprintf(out, sizeof(out), "%016d", i);
        id = find(m, p, NULL, 0, v, (apr_size_t) n);
        found += id != NULL;
        wrong += id && strcmp(id, out);
    }
    EXPECT(!wrong, "%d found another's identity", wrong);
    EXPECT(threads < 32 ? found > 0 && found <= 256 * threads
                        : found > 4000 && found <= 8192,
           "kept the latest: %d", found);
    EXPECT(!find(NULL, p, s1, 16, "i\100\0x", 4), "no memo");
    put(NULL, p, s1, 16, "i\100\0x", 4, "AAAAAAAAAAAAAAAA");
    /* A set that is none keeps nothing. */
    sl_memo_put(m, 1u << 30, s1, 16, "z", 1, "DDDDDDDDDDDDDDDD");
    EXPECT(!sl_memo_find(m, p, s1, 16, "z", 1, &set), "no such set");
}

/* Threads that keep and find the same values at once: each identity found
 * is the one its value makes (here: the value itself, padded). */
typedef struct {
    sl_memo_t *m;
    int wrong, found;
} sl_race_t;

static void *APR_THREAD_FUNC sl_race(apr_thread_t *t, void *data)
{
    sl_race_t *r = data;
    apr_pool_t *p;
    int i;

    apr_pool_create(&p, NULL);
    for (i = 0; i < 200000; i++) {
        char v[32], out[SL_IDENTITY_LEN + 1];
        unsigned int set;
        const char *id;
        int n = apr_snprintf(v, sizeof(v), "%d", (i * 7919) % 3000);
        apr_snprintf(out, sizeof(out), "%016d", (i * 7919) % 3000);
        id = sl_memo_find(r->m, p, NULL, 0, v, (apr_size_t) n, &set);
        if (id) {
            r->found++;
            r->wrong += strcmp(id, out) != 0;
        }
        else {
            sl_memo_put(r->m, set, NULL, 0, v, (apr_size_t) n, out);
        }
        if (i % 1000 == 0) {
            apr_pool_clear(p);
        }
    }
    apr_pool_destroy(p);
    apr_thread_exit(t, APR_SUCCESS);
    return NULL;
}

static void test_race(apr_pool_t *p)
{
    sl_race_t r[4];
    apr_thread_t *t[4];
    apr_status_t rv;
    sl_memo_t *m = sl_memo_create(p, 64);
    int i, wrong = 0, found = 0;

    for (i = 0; i < 4; i++) {
        r[i].m = m;
        r[i].wrong = r[i].found = 0;
        apr_thread_create(&t[i], NULL, sl_race, &r[i], p);
    }
    for (i = 0; i < 4; i++) {
        apr_thread_join(&rv, t[i]);
        wrong += r[i].wrong;
        found += r[i].found;
    }
    EXPECT(!wrong && found > 400000, "threads: %d found, %d wrong", found,
           wrong);
}

/* Each secret is prepared once, to what it makes itself; past the eighth
 * there is none, and the caller hashes the secret as it is. */
static void test_secrets(apr_pool_t *p)
{
    static unsigned char sec[9][20];
    sl_memo_t *m = sl_memo_create(p, 4);
    const sl_hmac_t *k;
    int i;

    for (i = 0; i < 9; i++) {
        memset(sec[i], 'a' + i, sizeof(sec[i]));
        k = sl_memo_hmac(m, sec[i], sizeof(sec[i]));
        EXPECT(i < 8 ? k != NULL : k == NULL, "secret %d prepared", i);
        if (k) {
            EXPECT(k == sl_memo_hmac(m, sec[i], sizeof(sec[i])), "once");
            EXPECT(!strcmp(sl_identity_with(p, k, "ip", "192.0.2.7", 9),
                           sl_identity(p, sec[i], sizeof(sec[i]), "ip",
                                       "192.0.2.7", 9)),
                   "secret %d: the same identity", i);
        }
    }
    EXPECT(sl_memo_hmac(m, sec[0], 19) != sl_memo_hmac(m, sec[0], 20),
           "a secret is its address and its length");
    EXPECT(!sl_memo_hmac(m, NULL, 0), "no secret");
    EXPECT(!sl_memo_hmac(NULL, sec[0], 20), "no memo");
}

int main(void)
{
    apr_pool_t *p;

    apr_initialize();
    apr_pool_create(&p, NULL);
    test_memo(p, 1);
    test_memo(p, 64);
    test_race(p);
    test_secrets(p);
    printf("sl_memo: %d passed, %d failed\n", passed, failed);
    apr_terminate();
    return failed ? 1 : 0;
}
