/* SPDX-License-Identifier: Apache-2.0 */
/* From a key value to a store key: the client address as a key, the
 * identity hashed from a value, the key built from an identity and a
 * policy, and where a key lives (its hash tag and Redis Cluster slot).
 * Which value a request uses is sl_key.c's (SlidingLimitKey). Pure: APR
 * only, no httpd.h (tests/unit/sl_ident_test.c). */
#ifndef SL_IDENT_H
#define SL_IDENT_H

#include <apr_pools.h>
#include <apr_sha1.h>

/* SHA1_Init and its kin: deprecated in OpenSSL 3.0 in favour of EVP, whose
 * context is allocated and whose digest is looked up per use; the
 * low-level calls are there in every OpenSSL from 1.0.2 on. */
#ifndef OPENSSL_SUPPRESS_DEPRECATED
#define OPENSSL_SUPPRESS_DEPRECATED
#endif
#include <openssl/sha.h>

#include "sl_limit.h"

/* Client address as a budget key: IPv6 masked to v6bits; IPv6 forms that
 * carry an IPv4 client (mapped, compatible, NAT64 64:ff9b::/96, 6to4,
 * Teredo) as that IPv4 address. Returns NULL when ip is not an address. */
const char *sl_ip_key(apr_pool_t *p, const char *ip, int v6bits);

/* Hash of a key value (source tag + the whole value): no raw value reaches
 * the store, and no byte of the value can change the key's shape or hash
 * slot. 16 characters of base64: 96 bits of HMAC-SHA1 keyed with secret
 * (SlidingLimitKeySecret), or of plain SHA-1 when secret is NULL. */
const char *sl_identity(apr_pool_t *p, const unsigned char *secret,
                        apr_size_t slen, const char *source, const char *value,
                        apr_size_t len);

/* The characters of an identity (sl_identity): 12 bytes in base64. */
#define SL_IDENTITY_LEN 16

/* The policy's part of its store keys: the limit's id, or with a secret
 * (SlidingLimitKeySecret) sl_identity of source "policy" and the id: 16
 * characters either way. */
const char *sl_store_policy(apr_pool_t *p, const sl_limit_t *l,
                            const unsigned char *secret, apr_size_t slen);

/* PREFIX:{identity}POLICY.A from its parts, *len its length. */
char *sl_store_key_join(apr_pool_t *p, const char *prefix, const char *identity,
                        const char *policy, int alg, apr_size_t *len);

/* HMAC-SHA1's two padded keys under one secret, each a SHA-1 that has
 * taken its first block: what every identity under the secret starts
 * from. OpenSSL's SHA-1 (libcrypto, which the module links for TLS):
 * with the CPU's SHA instructions it makes an identity in a fifth of the
 * time of APR's portable one, and an identity's first request is mostly
 * that. */
typedef struct sl_hmac {
    SHA_CTX inner;
    SHA_CTX outer;
} sl_hmac_t;

void sl_hmac_prepare(sl_hmac_t *k, const unsigned char *secret,
                     apr_size_t slen);

/* sl_identity under the secret k was prepared with. */
const char *sl_identity_with(apr_pool_t *p, const sl_hmac_t *k,
                             const char *source, const char *value,
                             apr_size_t len);

/* PREFIX:{identity}POLICY.A -- the braces make every key of one identity
 * share a Redis Cluster hash slot. POLICY is sl_store_policy's. */
const char *sl_store_key(apr_pool_t *p, const char *prefix,
                         const char *identity, const sl_limit_t *l, int alg,
                         const unsigned char *secret, apr_size_t slen);

/* FNV-1a over len bytes, continuing from h (SL_FNV_INIT to start): where
 * sl_claim starts looking for a name's cell in shared memory (the metrics'
 * policies and stores, the breakers, the prerequisite checks) and a store
 * URL's tag, names the configuration chooses. What a client could aim
 * collisions at (the shm store's stripes and chains, the deny cache's
 * cells) is hashed with sl_siphash instead (sl_siphash.h). */
#define SL_FNV_INIT 2166136261u
apr_uint32_t sl_fnv1a(apr_uint32_t h, const void *data, apr_size_t len);

/* The part of a key that places it, as Redis Cluster reads it: what lies
 * between the first '{' and the next '}' when that is not empty, else the
 * whole key. The shm store's stripes follow the same rule. */
const char *sl_hash_tag(const char *key, apr_size_t len, apr_size_t *tag_len);

/* Redis Cluster hash slot of a key (CRC16/XMODEM of its hash tag). */
unsigned int sl_key_slot(const char *key, apr_size_t len);

#endif
