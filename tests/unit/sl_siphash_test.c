/* SPDX-License-Identifier: Apache-2.0 */
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
    {7, APR_UINT64_C(0xab0200f58b01d137)},
    {8, APR_UINT64_C(0x93f5f5799a932462)},
    {16, APR_UINT64_C(0x3f2acc7f57c29bdb)},
    {32, APR_UINT64_C(0x7127512f72f27cce)},
    {63, APR_UINT64_C(0x958a324ceb064572)},
    /* The paper's worked example (its appendix A). */
    {15, APR_UINT64_C(0xa129ca6149be45e5)},
};

/* The same vectors' 128-bit outputs (vectors_sip128), as bytes. */
static const struct {
    int len;
    unsigned char out[16];
} vectors128[] = {
    {0,
     {0xa3, 0x81, 0x7f, 0x04, 0xba, 0x25, 0xa8, 0xe6, 0x6d, 0xf6, 0x72, 0x14,
      0xc7, 0x55, 0x02, 0x93}},
    {7,
     {0xa1, 0xf1, 0xeb, 0xbe, 0xd8, 0xdb, 0xc1, 0x53, 0xc0, 0xb8, 0x4a, 0xa6,
      0x1f, 0xf0, 0x82, 0x39}},
    {8,
     {0x3b, 0x62, 0xa9, 0xba, 0x62, 0x58, 0xf5, 0x61, 0x0f, 0x83, 0xe2, 0x64,
      0xf3, 0x14, 0x97, 0xb4}},
    {15,
     {0x54, 0x93, 0xe9, 0x99, 0x33, 0xb0, 0xa8, 0x11, 0x7e, 0x08, 0xec, 0x0f,
      0x97, 0xcf, 0xc3, 0xd9}},
    {63,
     {0x51, 0x50, 0xd1, 0x77, 0x2f, 0x50, 0x83, 0x4a, 0x50, 0x3e, 0x06, 0x9a,
      0x97, 0x3f, 0xbd, 0x7c}},
};

/* apr_uint64_t to its little-endian bytes, whatever the host's order. */
static void le_bytes(apr_uint64_t v, unsigned char *out)
{
    int i;

    for (i = 0; i < 8; i++) {
        out[i] = (unsigned char) (v >> (8 * i));
    }
}

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
    for (i = 0; i < sizeof(vectors128) / sizeof(vectors128[0]); i++) {
        apr_uint64_t h[2];
        unsigned char got[16];
        sl_siphash128(key, msg, (apr_size_t) vectors128[i].len, h);
        le_bytes(h[0], got);
        le_bytes(h[1], got + 8);
        EXPECT(!memcmp(got, vectors128[i].out, 16), "%d bytes, 128 bits",
               vectors128[i].len);
    }
    EXPECT(sl_siphash_key(other) == APR_SUCCESS && memcmp(other, key, 16),
           "a random secret");
    EXPECT(sl_siphash(other, msg, 15) != vectors[4].out,
           "another secret, another hash");
    printf("sl_siphash: %d passed, %d failed\n", passed, failed);
    apr_terminate();
    return failed ? 1 : 0;
}
