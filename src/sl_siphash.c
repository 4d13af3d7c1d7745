/* The module's keyed hash (see sl_siphash.h): SipHash-2-4 as in the
 * paper's reference code. APR-util's apr_siphash24 would do, but it came
 * with APR-util 1.6 and the module must build on 1.5 (RHEL 7). */
#include "sl_siphash.h"

#include <apr_general.h>

#define SL_ROTL(x, b) (apr_uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

/* Little-endian, whatever the host's order (the reference vectors). */
static apr_uint64_t sl_le64(const unsigned char *p)
{
    apr_uint64_t v = 0;
    int i;

    for (i = 7; i >= 0; i--) {
        v = (v << 8) | p[i];
    }
    return v;
}

#define SL_SIPROUND                                                            \
    do {                                                                       \
        v0 += v1;                                                              \
        v1 = SL_ROTL(v1, 13);                                                  \
        v1 ^= v0;                                                              \
        v0 = SL_ROTL(v0, 32);                                                  \
        v2 += v3;                                                              \
        v3 = SL_ROTL(v3, 16);                                                  \
        v3 ^= v2;                                                              \
        v0 += v3;                                                              \
        v3 = SL_ROTL(v3, 21);                                                  \
        v3 ^= v0;                                                              \
        v2 += v1;                                                              \
        v1 = SL_ROTL(v1, 17);                                                  \
        v1 ^= v2;                                                              \
        v2 = SL_ROTL(v2, 32);                                                  \
    } while (0)

apr_uint64_t sl_siphash(const unsigned char key[SL_SIPHASH_KEY],
                        const void *data, apr_size_t len)
{
    const unsigned char *in = data, *end = in + (len - len % 8);
    apr_uint64_t k0 = sl_le64(key), k1 = sl_le64(key + 8), m;
    apr_uint64_t v0 = k0 ^ APR_UINT64_C(0x736f6d6570736575);
    apr_uint64_t v1 = k1 ^ APR_UINT64_C(0x646f72616e646f6d);
    apr_uint64_t v2 = k0 ^ APR_UINT64_C(0x6c7967656e657261);
    apr_uint64_t v3 = k1 ^ APR_UINT64_C(0x7465646279746573);
    apr_uint64_t b = ((apr_uint64_t) len) << 56;
    int i;

    for (; in != end; in += 8) {
        m = sl_le64(in);
        v3 ^= m;
        SL_SIPROUND;
        SL_SIPROUND;
        v0 ^= m;
    }
    for (i = (int) (len % 8) - 1; i >= 0; i--) {
        b |= ((apr_uint64_t) in[i]) << (8 * i);
    }
    v3 ^= b;
    SL_SIPROUND;
    SL_SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SL_SIPROUND;
    SL_SIPROUND;
    SL_SIPROUND;
    SL_SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

apr_status_t sl_siphash_key(unsigned char key[SL_SIPHASH_KEY])
{
    return apr_generate_random_bytes(key, SL_SIPHASH_KEY);
}
