/* Unit tests of the process's memo of identities (src/sl_memo.c): what it
 * finds is what was kept for the same input and secret, nothing else. No
 * server needed. */
#include "sl_memo.h"

#include <apr_general.h>
#include <apr_strings.h>

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

static void test_memo(apr_pool_t *p, int threaded)
{
    static const unsigned char s1[] = "0123456789abcdef";
    static const unsigned char s2[] = "0123456789abcdef";
    sl_memo_t *m = sl_memo_create(p, threaded);
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
    EXPECT(found > 4000 && found <= 8192, "kept the latest: %d", found);
    EXPECT(!find(NULL, p, s1, 16, "i\100\0x", 4), "no memo");
    put(NULL, p, s1, 16, "i\100\0x", 4, "AAAAAAAAAAAAAAAA");
    /* A set that is none keeps nothing. */
    sl_memo_put(m, 1u << 30, s1, 16, "z", 1, "DDDDDDDDDDDDDDDD");
    EXPECT(!sl_memo_find(m, p, s1, 16, "z", 1, &set), "no such set");
}

int main(void)
{
    apr_pool_t *p;

    apr_initialize();
    apr_pool_create(&p, NULL);
    test_memo(p, 0);
    test_memo(p, 1);
    printf("sl_memo: %d passed, %d failed\n", passed, failed);
    apr_terminate();
    return failed ? 1 : 0;
}
