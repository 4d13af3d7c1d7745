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

const char *sl_ip_key(apr_pool_t *p, const char *ip, int v6bits)
{
    unsigned char a[16], v4buf[4];
    const unsigned char *v4;
    char buf[INET6_ADDRSTRLEN];
    int i;

    if (!ip) {
        return NULL;
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
static void sl_identity_hmac(const unsigned char *secret, apr_size_t slen,
                             const char *source, const char *value,
                             apr_size_t len,
                             unsigned char digest[APR_SHA1_DIGESTSIZE])
{
    unsigned char k[64] = {0}, pad[64];
    apr_sha1_ctx_t ctx;
    int i;

    if (slen > sizeof(k)) {
        apr_sha1_init(&ctx);
        apr_sha1_update_binary(&ctx, secret, (unsigned int) slen);
        apr_sha1_final(k, &ctx);
    }
    else {
        memcpy(k, secret, slen);
    }
    for (i = 0; i < 64; i++) {
        pad[i] = k[i] ^ 0x36;
    }
    apr_sha1_init(&ctx);
    apr_sha1_update_binary(&ctx, pad, sizeof(pad));
    apr_sha1_update_binary(&ctx, (const unsigned char *) source,
                           strlen(source) + 1);
    apr_sha1_update_binary(&ctx, (const unsigned char *) value,
                           (unsigned int) len);
    apr_sha1_final(digest, &ctx);
    for (i = 0; i < 64; i++) {
        pad[i] = k[i] ^ 0x5c;
    }
    apr_sha1_init(&ctx);
    apr_sha1_update_binary(&ctx, pad, sizeof(pad));
    apr_sha1_update_binary(&ctx, digest, APR_SHA1_DIGESTSIZE);
    apr_sha1_final(digest, &ctx);
    memset(k, 0, sizeof(k));
    memset(pad, 0, sizeof(pad));
}

const char *sl_identity(apr_pool_t *p, const unsigned char *secret,
                        apr_size_t slen, const char *source, const char *value,
                        apr_size_t len)
{
    unsigned char digest[APR_SHA1_DIGESTSIZE];
    apr_sha1_ctx_t ctx;
    char *out = apr_palloc(p, apr_base64_encode_len(12));

    /* The whole value is hashed, never a prefix: values that differ only
     * after some cut would share a budget. Its length is already bounded by
     * httpd (LimitRequestFieldSize, LimitRequestFields). The source tag and
     * a NUL keep "user bob" and "header bob" apart. */
    if (secret) {
        sl_identity_hmac(secret, slen, source, value, len, digest);
    }
    else {
        apr_sha1_init(&ctx);
        apr_sha1_update_binary(&ctx, (const unsigned char *) source,
                               strlen(source) + 1);
        apr_sha1_update_binary(&ctx, (const unsigned char *) value, len);
        apr_sha1_final(digest, &ctx);
    }
    apr_base64_encode_binary(out, digest, 12);
    return out;
}

const char *sl_store_key(apr_pool_t *p, const char *prefix,
                         const char *identity, const sl_limit_t *l, int alg,
                         const unsigned char *secret, apr_size_t slen)
{
    char code[2] = {sl_algorithm_code(alg), '\0'};
    /* Under a secret the policy's part is keyed too, like the identity:
     * nobody without it can name a policy whose key is another's. Made
     * here because a section's limits are read before the server's secret
     * may be, and one section may serve hosts with different secrets. */
    const char *policy =
        secret ? sl_identity(p, secret, slen, "policy", l->id, strlen(l->id))
               : l->id;

    return apr_pstrcat(p, prefix, ":{", identity, "}", policy, ".", code, NULL);
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

unsigned int sl_key_slot(const char *key, apr_size_t len)
{
    unsigned int crc = 0;
    apr_size_t i;

    key = sl_hash_tag(key, len, &len);
    for (i = 0; i < len; i++) {
        int b;
        crc ^= (unsigned int) (unsigned char) key[i] << 8;
        for (b = 0; b < 8; b++) {
            crc = (crc & 0x8000) ? ((crc << 1) ^ 0x1021) : (crc << 1);
        }
    }
    return (crc & 0xffff) % 16384;
}
