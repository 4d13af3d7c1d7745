/* SPDX-License-Identifier: Apache-2.0 */
/* The identities this process made lately, by what each was made of (a
 * key source and its raw value): a client sends the same address, user or
 * key value with every request, and each would otherwise cost a SHA-1 (an
 * HMAC under a secret) before its keys can be built. Pure: APR only
 * (tests/unit/sl_memo_test.c). */
#ifndef SL_MEMO_H
#define SL_MEMO_H

#include <apr_pools.h>

#include "sl_ident.h"

/* The longest in a memo keeps: what is longer is made every time. */
#define SL_MEMO_IN 80

typedef struct sl_memo sl_memo_t;

/* An empty memo in p (the child's pool: it never outlives the
 * configuration, whose secrets it tells apart by their address) for a
 * child of threads threads, which take a lock to change it. NULL when its
 * locks cannot be made. */
sl_memo_t *sl_memo_create(apr_pool_t *p, int threads);

/* The identity made of in (len bytes: everything it depends on besides
 * the secret, as its maker writes it) under secret, copied into p; NULL
 * when the memo holds none. *set is where sl_memo_put keeps it then. */
const char *sl_memo_find(sl_memo_t *m, apr_pool_t *p,
                         const unsigned char *secret, apr_size_t slen,
                         const char *in, apr_size_t len, unsigned int *set);

/* Keeps identity as the one made of in under secret in set (sl_memo_find's),
 * in place of an older entry; nothing when len is 0 or more than
 * SL_MEMO_IN, or identity is not one (SL_IDENTITY_LEN characters). */
void sl_memo_put(sl_memo_t *m, unsigned int set, const unsigned char *secret,
                 apr_size_t slen, const char *in, apr_size_t len,
                 const char *identity);

/* The prepared HMAC key (sl_hmac_prepare) of secret, made the first time
 * it is asked for; NULL for a ninth secret, or without a memo. */
const sl_hmac_t *sl_memo_hmac(sl_memo_t *m, const unsigned char *secret,
                              apr_size_t slen);

#endif
