/* SPDX-License-Identifier: Apache-2.0 */
#include "sl_ident.h"

#include <apr_base64.h>
#include <apr_sha1.h>
#include <apr_strings.h>

#include <arpa/inet.h>
#include <string.h>

/* The IPv4 address an IPv6 address stands for, if any: IPv4-mapped
 * (::ffff:V4), IPv4-compatible (::V4), the well-known NAT64/SIIT prefix
 * (64:ff9b::V4, RFC 6052), 6to4 (2002:V4::/48, RFC 3056) and Teredo (the
 * client's public address, bits inverted, RFC 4380). A translator puts
 * every IPv4 client in one /64, and a 6to4 site holds 65,536 of them, so
 * these are keyed as the IPv4 client they carry. 0.0.0.0/8 is no client
 * (it leaves :: and ::1 alone), except where the form is unambiguous. */
static const unsigned char *sl_embedded_ipv4(const unsigned char *a,
                                             unsigned char *out)
{
    static const unsigned char zero[12],
        mapped[12] = {[10] = 0xff, [11] = 0xff},
        nat64[12] = {0, 0x64, 0xff, 0x9b};
    const unsigned char *v4 = NULL;
    int i;

    if (!memcmp(a, mapped, 12)) {
        return a + 12;
    }
    if (!memcmp(a, zero, 12) || !memcmp(a, nat64, 12)) {
        v4 = a + 12;
    }
    else if (a[0] == 0x20 && a[1] == 0x02) {
        v4 = a + 2;
    }
    else if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0) {
        for (i = 0; i < 4; i++) {
            out[i] = (unsigned char) ~a[12 + i];
        }
        v4 = out;
    }
    return v4 && v4[0] ? v4 : NULL;
}

/* Whether ip is an IPv4 address in the one dotted form glibc's inet_pton
 * takes: four numbers to 255, without leading zeros. The busiest path
 * (every client address a memo has not seen) spares the call. */
static int sl_ipv4_dotted(const char *ip)
{
    int octets = 0, digits = 0, v = 0;

    for (;; ip++) {
        if (*ip >= '0' && *ip <= '9') {
            if ((digits && !v) || (v = v * 10 + (*ip - '0')) > 255) {
                return 0;
            }
            digits++;
        }
        else if ((*ip == '.' || !*ip) && digits && octets < 4) {
            octets++;
            if (!*ip) {
                return octets == 4;
            }
            digits = v = 0;
        }
        else {
            return 0;
        }
    }
}

const char *sl_ip_key(apr_pool_t *p, const char *ip, int v6bits)
{
    unsigned char a[16], v4buf[4];
    const unsigned char *v4;
    char buf[INET6_ADDRSTRLEN];
    int i;

    if (!ip) {
        return NULL;
    }
    if (sl_ipv4_dotted(ip)) {
        return ip;
    }
    /* A link-local address may carry its zone ("fe80::1%eth0"). */
    if (strchr(ip, '%')) {
        ip = apr_pstrmemdup(p, ip, strchr(ip, '%') - ip);
    }
    /* glibc's inet_pton takes IPv4 only in its one canonical dotted form,
     * so an address it accepts is already its own key: no reformatting on
     * the busiest path. */
    if (inet_pton(AF_INET, ip, a) == 1) {
        return ip;
    }
    if (inet_pton(AF_INET6, ip, a) != 1) {
        return NULL;
    }
    if ((v4 = sl_embedded_ipv4(a, v4buf))) {
        return inet_ntop(AF_INET, v4, buf, sizeof(buf)) ? apr_pstrdup(p, buf)
                                                        : NULL;
    }
    for (i = 0; i < 16; i++) {
        int keep = v6bits - 8 * i;
        if (keep <= 0) {
            a[i] = 0;
        }
        else if (keep < 8) {
            a[i] &= (unsigned char) (0xff << (8 - keep));
        }
    }
    if (!inet_ntop(AF_INET6, a, buf, sizeof(buf))) {
        return NULL;
    }
    return apr_psprintf(p, "%s/%d", buf, v6bits);
}

/* HMAC-SHA1 (RFC 2104) rather than SipHash: the secret is a file of any
 * length, which HMAC takes as it is, and its 160 bits leave the 96 that
 * the key keeps (SipHash gives 64 per key); it is also what any language's
 * standard library computes, for tools and tests that must find a key. */
void sl_hmac_prepare(sl_hmac_t *k, const unsigned char *secret, apr_size_t slen)
{
    unsigned char key[64] = {0}, pad[64];
    int i;

    if (slen > sizeof(key)) {
        SHA1(secret, slen, key);
    }
    else {
        memcpy(key, secret, slen);
    }
    for (i = 0; i < 64; i++) {
        pad[i] = key[i] ^ 0x36;
    }
    SHA1_Init(&k->inner);
    SHA1_Update(&k->inner, pad, sizeof(pad));
    for (i = 0; i < 64; i++) {
        pad[i] = key[i] ^ 0x5c;
    }
    SHA1_Init(&k->outer);
    SHA1_Update(&k->outer, pad, sizeof(pad));
    memset(key, 0, sizeof(key));
    memset(pad, 0, sizeof(pad));
}

/* HMAC-SHA1 of source, its NUL and value from k's padded keys, already
 * hashed: two blocks of SHA-1 for a short value instead of four. */
static void sl_hmac_digest(const sl_hmac_t *k, const char *source,
                           const char *value, apr_size_t len,
                           unsigned char digest[APR_SHA1_DIGESTSIZE])
{
    SHA_CTX ctx = k->inner;

    SHA1_Update(&ctx, source, strlen(source) + 1);
    SHA1_Update(&ctx, value, len);
    SHA1_Final(digest, &ctx);
    ctx = k->outer;
    SHA1_Update(&ctx, digest, APR_SHA1_DIGESTSIZE);
    SHA1_Final(digest, &ctx);
    memset(&ctx, 0, sizeof(ctx));
}

const char *sl_identity_with(apr_pool_t *p, const sl_hmac_t *k,
                             const char *source, const char *value,
                             apr_size_t len)
{
    unsigned char digest[APR_SHA1_DIGESTSIZE];
    char *out = apr_palloc(p, apr_base64_encode_len(12));

    sl_hmac_digest(k, source, value, len, digest);
    apr_base64_encode_binary(out, digest, 12);
    return out;
}

const char *sl_identity(apr_pool_t *p, const unsigned char *secret,
                        apr_size_t slen, const char *source, const char *value,
                        apr_size_t len)
{
    unsigned char digest[APR_SHA1_DIGESTSIZE];
    SHA_CTX ctx;
    char *out = apr_palloc(p, apr_base64_encode_len(12));

    /* The whole value is hashed, never a prefix: values that differ only
     * after some cut would share a budget. Its length is already bounded by
     * httpd (LimitRequestFieldSize, LimitRequestFields). The source tag and
     * a NUL keep "user bob" and "header bob" apart. */
    if (secret) {
        sl_hmac_t k;
        sl_hmac_prepare(&k, secret, slen);
        sl_hmac_digest(&k, source, value, len, digest);
        memset(&k, 0, sizeof(k));
    }
    else {
        SHA1_Init(&ctx);
        SHA1_Update(&ctx, source, strlen(source) + 1);
        SHA1_Update(&ctx, value, len);
        SHA1_Final(digest, &ctx);
    }
    apr_base64_encode_binary(out, digest, 12);
    return out;
}

const char *sl_store_policy(apr_pool_t *p, const sl_limit_t *l,
                            const unsigned char *secret, apr_size_t slen)
{
    /* Under a secret the policy's part is keyed too, like the identity:
     * nobody without it can name a policy whose key is another's. Made
     * per request because a section's limits are read before the server's
     * secret may be, and one section may serve hosts with different
     * secrets. */
    return secret ? sl_identity(p, secret, slen, "policy", l->id, strlen(l->id))
                  : l->id;
}

char *sl_store_key_join(apr_pool_t *p, const char *prefix, const char *identity,
                        const char *policy, int alg, apr_size_t *len)
{
    apr_size_t a = strlen(prefix), b = strlen(identity), c = strlen(policy);
    char *key = apr_palloc(p, a + b + c + 6), *k = key;

    memcpy(k, prefix, a);
    k += a;
    *k++ = ':';
    *k++ = '{';
    memcpy(k, identity, b);
    k += b;
    *k++ = '}';
    memcpy(k, policy, c);
    k += c;
    *k++ = '.';
    *k++ = sl_algorithm_code(alg);
    *k = '\0';
    *len = (apr_size_t) (k - key);
    return key;
}

const char *sl_store_key(apr_pool_t *p, const char *prefix,
                         const char *identity, const sl_limit_t *l, int alg,
                         const unsigned char *secret, apr_size_t slen)
{
    apr_size_t len;

    return sl_store_key_join(p, prefix, identity,
                             sl_store_policy(p, l, secret, slen), alg, &len);
}

apr_uint32_t sl_fnv1a(apr_uint32_t h, const void *data, apr_size_t len)
{
    const unsigned char *b = data;

    while (len--) {
        h = (h ^ *b++) * 16777619u;
    }
    return h;
}

const char *sl_hash_tag(const char *key, apr_size_t len, apr_size_t *tag_len)
{
    const char *open = memchr(key, '{', len);

    if (open) {
        const char *close =
            memchr(open + 1, '}', len - (apr_size_t) (open + 1 - key));
        if (close && close > open + 1) {
            *tag_len = (apr_size_t) (close - open - 1);
            return open + 1;
        }
    }
    *tag_len = len;
    return key;
}

/* CRC16/XMODEM (polynomial 0x1021) of every byte value: a byte at a time
 * instead of a bit at a time. */
static const unsigned short sl_crc16_table[256] = {
    0x0000, 0x1021, 0x2042, 0x3063, 0x4084, 0x50a5, 0x60c6, 0x70e7, 0x8108,
    0x9129, 0xa14a, 0xb16b, 0xc18c, 0xd1ad, 0xe1ce, 0xf1ef, 0x1231, 0x0210,
    0x3273, 0x2252, 0x52b5, 0x4294, 0x72f7, 0x62d6, 0x9339, 0x8318, 0xb37b,
    0xa35a, 0xd3bd, 0xc39c, 0xf3ff, 0xe3de, 0x2462, 0x3443, 0x0420, 0x1401,
    0x64e6, 0x74c7, 0x44a4, 0x5485, 0xa56a, 0xb54b, 0x8528, 0x9509, 0xe5ee,
    0xf5cf, 0xc5ac, 0xd58d, 0x3653, 0x2672, 0x1611, 0x0630, 0x76d7, 0x66f6,
    0x5695, 0x46b4, 0xb75b, 0xa77a, 0x9719, 0x8738, 0xf7df, 0xe7fe, 0xd79d,
    0xc7bc, 0x48c4, 0x58e5, 0x6886, 0x78a7, 0x0840, 0x1861, 0x2802, 0x3823,
    0xc9cc, 0xd9ed, 0xe98e, 0xf9af, 0x8948, 0x9969, 0xa90a, 0xb92b, 0x5af5,
    0x4ad4, 0x7ab7, 0x6a96, 0x1a71, 0x0a50, 0x3a33, 0x2a12, 0xdbfd, 0xcbdc,
    0xfbbf, 0xeb9e, 0x9b79, 0x8b58, 0xbb3b, 0xab1a, 0x6ca6, 0x7c87, 0x4ce4,
    0x5cc5, 0x2c22, 0x3c03, 0x0c60, 0x1c41, 0xedae, 0xfd8f, 0xcdec, 0xddcd,
    0xad2a, 0xbd0b, 0x8d68, 0x9d49, 0x7e97, 0x6eb6, 0x5ed5, 0x4ef4, 0x3e13,
    0x2e32, 0x1e51, 0x0e70, 0xff9f, 0xefbe, 0xdfdd, 0xcffc, 0xbf1b, 0xaf3a,
    0x9f59, 0x8f78, 0x9188, 0x81a9, 0xb1ca, 0xa1eb, 0xd10c, 0xc12d, 0xf14e,
    0xe16f, 0x1080, 0x00a1, 0x30c2, 0x20e3, 0x5004, 0x4025, 0x7046, 0x6067,
    0x83b9, 0x9398, 0xa3fb, 0xb3da, 0xc33d, 0xd31c, 0xe37f, 0xf35e, 0x02b1,
    0x1290, 0x22f3, 0x32d2, 0x4235, 0x5214, 0x6277, 0x7256, 0xb5ea, 0xa5cb,
    0x95a8, 0x8589, 0xf56e, 0xe54f, 0xd52c, 0xc50d, 0x34e2, 0x24c3, 0x14a0,
    0x0481, 0x7466, 0x6447, 0x5424, 0x4405, 0xa7db, 0xb7fa, 0x8799, 0x97b8,
    0xe75f, 0xf77e, 0xc71d, 0xd73c, 0x26d3, 0x36f2, 0x0691, 0x16b0, 0x6657,
    0x7676, 0x4615, 0x5634, 0xd94c, 0xc96d, 0xf90e, 0xe92f, 0x99c8, 0x89e9,
    0xb98a, 0xa9ab, 0x5844, 0x4865, 0x7806, 0x6827, 0x18c0, 0x08e1, 0x3882,
    0x28a3, 0xcb7d, 0xdb5c, 0xeb3f, 0xfb1e, 0x8bf9, 0x9bd8, 0xabbb, 0xbb9a,
    0x4a75, 0x5a54, 0x6a37, 0x7a16, 0x0af1, 0x1ad0, 0x2ab3, 0x3a92, 0xfd2e,
    0xed0f, 0xdd6c, 0xcd4d, 0xbdaa, 0xad8b, 0x9de8, 0x8dc9, 0x7c26, 0x6c07,
    0x5c64, 0x4c45, 0x3ca2, 0x2c83, 0x1ce0, 0x0cc1, 0xef1f, 0xff3e, 0xcf5d,
    0xdf7c, 0xaf9b, 0xbfba, 0x8fd9, 0x9ff8, 0x6e17, 0x7e36, 0x4e55, 0x5e74,
    0x2e93, 0x3eb2, 0x0ed1, 0x1ef0};

unsigned int sl_key_slot(const char *key, apr_size_t len)
{
    unsigned int crc = 0;
    apr_size_t i;

    key = sl_hash_tag(key, len, &len);
    for (i = 0; i < len; i++) {
        crc = ((crc << 8) ^
               sl_crc16_table[((crc >> 8) ^ (unsigned char) key[i]) & 0xff]) &
              0xffff;
    }
    return crc % 16384;
}
