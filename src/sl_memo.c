/* SPDX-License-Identifier: Apache-2.0 */
/* The process's identities by what they were made of (see sl_memo.h). */
#include "sl_memo.h"

#include <apr_strings.h>
#include <apr_thread_mutex.h>

#include <string.h>

/* Four identities a set, 64 sets a thread of the child (rounded up to a
 * power of two), at most 2,048 sets: 8,192 identities, about 1 MB, where a
 * pool of some thousands of clients finds its own, and 256 in a child of
 * prefork, which serves one client at a time. A set is chosen by an
 * unkeyed hash: a client that aims values at another's set only has that
 * one's identity made again, as it would be without a memo, and so does
 * any client that sends more values than the memo holds. */
#define SL_MEMO_SETS  2048
#define SL_MEMO_WAYS  4
#define SL_MEMO_LOCKS 16
/* Secrets prepared: one a virtual host at most, most servers have one. */
#define SL_MEMO_SECRETS 8

typedef struct sl_memo_entry {
    const unsigned char *secret;
    apr_size_t slen;
    apr_size_t len; /* of in; 0: unused */
    char in[SL_MEMO_IN];
    char identity[SL_IDENTITY_LEN];
} sl_memo_entry_t;

typedef struct sl_memo_set {
    /* Odd while a writer changes the set: a reader that sees it change
     * (or odd) takes what it read for nothing and makes the identity. */
    apr_uint32_t seq;
    unsigned int next; /* the way a new entry takes */
    sl_memo_entry_t way[SL_MEMO_WAYS];
} sl_memo_set_t;

typedef struct sl_memo_secret {
    const unsigned char *secret;
    apr_size_t slen;
    sl_hmac_t hmac;
} sl_memo_secret_t;

struct sl_memo {
    /* Writers of set i take lock[i % SL_MEMO_LOCKS]; readers take none.
     * NULL: one thread. */
    apr_thread_mutex_t *lock[SL_MEMO_LOCKS];
    unsigned int nsets; /* a power of two */
    sl_memo_set_t *set;
    /* The first nsecrets are made, and never change again; made under
     * lock[0]. */
    apr_uint32_t nsecrets;
    sl_memo_secret_t secret[SL_MEMO_SECRETS];
};

sl_memo_t *sl_memo_create(apr_pool_t *p, int threads)
{
    sl_memo_t *m = apr_pcalloc(p, sizeof(*m));
    int i;

    for (m->nsets = 64;
         m->nsets < SL_MEMO_SETS && m->nsets < (unsigned int) threads * 64;
         m->nsets *= 2) {
    }
    m->set = apr_pcalloc(p, sizeof(*m->set) * m->nsets);
    for (i = 0; threads > 1 && i < SL_MEMO_LOCKS; i++) {
        if (apr_thread_mutex_create(&m->lock[i], APR_THREAD_MUTEX_DEFAULT, p) !=
            APR_SUCCESS) {
            return NULL;
        }
    }
    return m;
}

/* Eight bytes a step: the values are short, and only spread matters. */
static unsigned int sl_memo_hash(const sl_memo_t *m, const char *in,
                                 apr_size_t len)
{
    apr_uint64_t h = len, w;

    for (; len >= 8; in += 8, len -= 8) {
        memcpy(&w, in, 8);
        h = (h ^ w) * APR_UINT64_C(0x9e3779b97f4a7c15);
        h ^= h >> 29;
    }
    w = 0;
    memcpy(&w, in, len);
    h = (h ^ w) * APR_UINT64_C(0x9e3779b97f4a7c15);
    h ^= h >> 32;
    return (unsigned int) (h & (m->nsets - 1));
}

const char *sl_memo_find(sl_memo_t *m, apr_pool_t *p,
                         const unsigned char *secret, apr_size_t slen,
                         const char *in, apr_size_t len, unsigned int *set)
{
    const sl_memo_set_t *s;
    char id[SL_IDENTITY_LEN];
    apr_uint32_t seq;
    int i, found = 0;

    *set = 0;
    if (!m || !len || len > SL_MEMO_IN) {
        return NULL;
    }
    *set = sl_memo_hash(m, in, len);
    s = &m->set[*set];
    seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
    if (seq & 1) {
        return NULL;
    }
    for (i = 0; i < SL_MEMO_WAYS && !found; i++) {
        const sl_memo_entry_t *e = &s->way[i];
        if (e->len == len && e->secret == secret && e->slen == slen &&
            !memcmp(e->in, in, len)) {
            memcpy(id, e->identity, SL_IDENTITY_LEN);
            found = 1;
        }
    }
    /* What was read counts only if no writer began meanwhile. */
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (!found || __atomic_load_n(&s->seq, __ATOMIC_RELAXED) != seq) {
        return NULL;
    }
    return apr_pstrmemdup(p, id, SL_IDENTITY_LEN);
}

void sl_memo_put(sl_memo_t *m, unsigned int set, const unsigned char *secret,
                 apr_size_t slen, const char *in, apr_size_t len,
                 const char *identity)
{
    apr_thread_mutex_t *lock;
    sl_memo_set_t *s;
    sl_memo_entry_t *e;

    if (!m || !len || len > SL_MEMO_IN || set >= m->nsets || !identity ||
        strlen(identity) != SL_IDENTITY_LEN) {
        return;
    }
    s = &m->set[set];
    lock = m->lock[set % SL_MEMO_LOCKS];
    if (lock) {
        apr_thread_mutex_lock(lock);
    }
    __atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    e = &s->way[s->next];
    s->next = (s->next + 1) % SL_MEMO_WAYS;
    e->secret = secret;
    e->slen = slen;
    e->len = len;
    memcpy(e->in, in, len);
    memcpy(e->identity, identity, SL_IDENTITY_LEN);
    __atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELEASE);
    if (lock) {
        apr_thread_mutex_unlock(lock);
    }
}

static const sl_hmac_t *sl_memo_secret_of(const sl_memo_t *m, apr_uint32_t n,
                                          const unsigned char *secret,
                                          apr_size_t slen)
{
    apr_uint32_t i;

    for (i = 0; i < n; i++) {
        if (m->secret[i].secret == secret && m->secret[i].slen == slen) {
            return &m->secret[i].hmac;
        }
    }
    return NULL;
}

const sl_hmac_t *sl_memo_hmac(sl_memo_t *m, const unsigned char *secret,
                              apr_size_t slen)
{
    const sl_hmac_t *k;
    apr_uint32_t n;

    if (!m || !secret) {
        return NULL;
    }
    n = __atomic_load_n(&m->nsecrets, __ATOMIC_ACQUIRE);
    if ((k = sl_memo_secret_of(m, n, secret, slen)) || n == SL_MEMO_SECRETS) {
        return k;
    }
    if (m->lock[0]) {
        apr_thread_mutex_lock(m->lock[0]);
    }
    n = __atomic_load_n(&m->nsecrets, __ATOMIC_RELAXED);
    if (!(k = sl_memo_secret_of(m, n, secret, slen)) && n < SL_MEMO_SECRETS) {
        m->secret[n].secret = secret;
        m->secret[n].slen = slen;
        sl_hmac_prepare(&m->secret[n].hmac, secret, slen);
        k = &m->secret[n].hmac;
        __atomic_store_n(&m->nsecrets, n + 1, __ATOMIC_RELEASE);
    }
    if (m->lock[0]) {
        apr_thread_mutex_unlock(m->lock[0]);
    }
    return k;
}
