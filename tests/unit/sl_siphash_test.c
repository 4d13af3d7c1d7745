/* The keyed hash against the reference vectors of SipHash-2-4 (the
 * reference implementation's vectors.h: key 00..0f, message 00..n-1). */
#include "sl_siphash.h"
#include "sl_expect.h"

#include <apr_general.h>

#include <string.h>

static const struct {
    int len;
    apr_uint64_t out;
} vectors[] = {
    {0, APR_UINT64_C(0x726fdb47dd0e0e31)},
    {1, APR_UINT64_C(0x74f839c593dc67fd)},
    {2, APR_UINT64_C(0x0d6c8009d9a94f5a)},
    {3, APR_UINT64_C(0x85676696d7fb7e2d)},
    /* The paper's worked example (its appendix A). */
    {15, APR_UINT64_C(0xa129ca6149be45e5)},
};

int main(void)
{
    unsigned char key[SL_SIPHASH_KEY], other[SL_SIPHASH_KEY], msg[64];
    size_t i;

    apr_initialize();
    for (i = 0; i < sizeof(key); i++) {
        key[i] = (unsigned char) i;
    }
    for (i = 0; i < sizeof(msg); i++) {
        msg[i] = (unsigned char) i;
    }
    for (i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
        apr_uint64_t h = sl_siphash(key, msg, (apr_size_t) vectors[i].len);
        EXPECT(h == vectors[i].out, "%d bytes: %016llx", vectors[i].len,
               (unsigned long long) h);
    }
    EXPECT(sl_siphash_key(other) == APR_SUCCESS && memcmp(other, key, 16),
           "a random secret");
    EXPECT(sl_siphash(other, msg, 15) != vectors[4].out,
           "another secret, another hash");
    printf("sl_siphash: %d passed, %d failed\n", passed, failed);
    apr_terminate();
    return failed ? 1 : 0;
}
