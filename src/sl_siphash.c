/* SPDX-License-Identifier: Apache-2.0 */
/* The module's keyed hash (see sl_siphash.h): SipHash-2-4 as in the
 * paper's reference code, with its 128-bit variant. APR-util's
 * apr_siphash24 would do, but it came with APR-util 1.6 and the module must
 * build on 1.5 (RHEL 7). */
#include "sl_siphash.h"

#include <apr_general.h>

#include <string.h>

#define SL_ROTL(x, b) (apr_uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

/* Little-endian, whatever the host's order (the reference vectors). On a
 * little-endian host one unaligned load: this runs on every request's
 * keys. */
static apr_uint64_t sl_le64(const unsigned char *p)
{
    apr_uint64_t v;
#if APR_IS_BIGENDIAN
    int i;

    v = 0;
    for (i = 7; i >= 0; i--) {
        v = (v << 8) | p[i];
    }
#else
    memcpy(&v, p, sizeof(v));
#endif
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

#define SL_SIPROUND4                                                           \
    do {                                                                       \
        SL_SIPROUND;                                                           \
        SL_SIPROUND;                                                           \
        SL_SIPROUND;                                                           \
        SL_SIPROUND;                                                           \
    } while (0)

/* Both widths: the reference's siphash() with outlen 8 or 16 (wide). */
static apr_uint64_t sl_sip(const unsigned char key[SL_SIPHASH_KEY],
                           const void *data, apr_size_t len, int wide,
                           apr_uint64_t *second)
{
    const unsigned char *in = data, *end = in + (len - len % 8);
    apr_uint64_t k0 = sl_le64(key), k1 = sl_le64(key + 8), m;
    apr_uint64_t v0 = k0 ^ APR_UINT64_C(0x736f6d6570736575);
    apr_uint64_t v1 = k1 ^ APR_UINT64_C(0x646f72616e646f6d);
    apr_uint64_t v2 = k0 ^ APR_UINT64_C(0x6c7967656e657261);
    apr_uint64_t v3 = k1 ^ APR_UINT64_C(0x7465646279746573);
    apr_uint64_t b = ((apr_uint64_t) len) << 56, first;

    if (wide) {
        v1 ^= 0xee;
    }
    for (; in != end; in += 8) {
        m = sl_le64(in);
        v3 ^= m;
        SL_SIPROUND;
        SL_SIPROUND;
        v0 ^= m;
    }
    switch (len % 8) {
    case 7:
        b |= ((apr_uint64_t) in[6]) << 48;
        /* fall through */
    case 6:
        b |= ((apr_uint64_t) in[5]) << 40;
        /* fall through */
    case 5:
        b |= ((apr_uint64_t) in[4]) << 32;
        /* fall through */
    case 4:
        b |= ((apr_uint64_t) in[3]) << 24;
        /* fall through */
    case 3:
        b |= ((apr_uint64_t) in[2]) << 16;
        /* fall through */
    case 2:
        b |= ((apr_uint64_t) in[1]) << 8;
        /* fall through */
    case 1:
        b |= (apr_uint64_t) in[0];
        break;
    default:
        break;
    }
    v3 ^= b;
    SL_SIPROUND;
    SL_SIPROUND;
    v0 ^= b;
    v2 ^= wide ? 0xee : 0xff;
    SL_SIPROUND4;
    first = v0 ^ v1 ^ v2 ^ v3;
    if (wide) {
        v1 ^= 0xdd;
        SL_SIPROUND4;
        *second = v0 ^ v1 ^ v2 ^ v3;
    }
    return first;
}

apr_uint64_t sl_siphash(const unsigned char key[SL_SIPHASH_KEY],
                        const void *data, apr_size_t len)
{
    return sl_sip(key, data, len, 0, NULL);
}

void sl_siphash128(const unsigned char key[SL_SIPHASH_KEY], const void *data,
                   apr_size_t len, apr_uint64_t out[2])
{
    out[0] = sl_sip(key, data, len, 1, &out[1]);
}

apr_status_t sl_siphash_key(unsigned char key[SL_SIPHASH_KEY])
{
    return apr_generate_random_bytes(key, SL_SIPHASH_KEY);
}
