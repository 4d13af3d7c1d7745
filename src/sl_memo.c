/* The process's identities by what they were made of (see sl_memo.h). */
#include "sl_memo.h"

#include <apr_strings.h>
#include <apr_thread_mutex.h>

#include <string.h>

/* 8,192 identities, about 1 MB: a pool of some thousands of clients finds
 * its own. An entry lives in its set of four, chosen by FNV-1a, not by a
 * keyed hash: a client that aims values at another's set only has that
 * one's identity made again, as it would be without a memo, and so does
 * any client that sends more values than the memo holds. */
#define SL_MEMO_SETS  2048
#define SL_MEMO_WAYS  4
#define SL_MEMO_LOCKS 16

typedef struct sl_memo_entry {
    const unsigned char *secret;
    apr_size_t slen;
    apr_size_t len; /* of in; 0: unused */
    char in[SL_MEMO_IN];
    char identity[SL_IDENTITY_LEN];
} sl_memo_entry_t;

struct sl_memo {
    /* A set's lock is lock[set % SL_MEMO_LOCKS]: threads that look up
     * different clients seldom wait for each other. NULL: one thread. */
    apr_thread_mutex_t *lock[SL_MEMO_LOCKS];
    unsigned char next[SL_MEMO_SETS]; /* the way a new entry takes */
    sl_memo_entry_t entry[SL_MEMO_SETS][SL_MEMO_WAYS];
};

sl_memo_t *sl_memo_create(apr_pool_t *p, int threaded)
{
    sl_memo_t *m = apr_pcalloc(p, sizeof(*m));
    int i;

    for (i = 0; threaded && i < SL_MEMO_LOCKS; i++) {
        if (apr_thread_mutex_create(&m->lock[i], APR_THREAD_MUTEX_DEFAULT, p) !=
            APR_SUCCESS) {
            return NULL;
        }
    }
    return m;
}

static void sl_memo_lock(sl_memo_t *m, unsigned int set)
{
    if (m->lock[set % SL_MEMO_LOCKS]) {
        apr_thread_mutex_lock(m->lock[set % SL_MEMO_LOCKS]);
    }
}

static void sl_memo_unlock(sl_memo_t *m, unsigned int set)
{
    if (m->lock[set % SL_MEMO_LOCKS]) {
        apr_thread_mutex_unlock(m->lock[set % SL_MEMO_LOCKS]);
    }
}

const char *sl_memo_find(sl_memo_t *m, apr_pool_t *p,
                         const unsigned char *secret, apr_size_t slen,
                         const char *in, apr_size_t len, unsigned int *set)
{
    unsigned int i;
    char *out = NULL;

    *set = sl_fnv1a(SL_FNV_INIT, in, len) % SL_MEMO_SETS;
    if (!m || !len || len > SL_MEMO_IN) {
        return NULL;
    }
    sl_memo_lock(m, *set);
    for (i = 0; i < SL_MEMO_WAYS; i++) {
        const sl_memo_entry_t *e = &m->entry[*set][i];
        if (e->len == len && e->secret == secret && e->slen == slen &&
            !memcmp(e->in, in, len)) {
            out = apr_pstrmemdup(p, e->identity, SL_IDENTITY_LEN);
            break;
        }
    }
    sl_memo_unlock(m, *set);
    return out;
}

void sl_memo_put(sl_memo_t *m, unsigned int set, const unsigned char *secret,
                 apr_size_t slen, const char *in, apr_size_t len,
                 const char *identity)
{
    sl_memo_entry_t *e;

    if (!m || !len || len > SL_MEMO_IN || set >= SL_MEMO_SETS || !identity ||
        strlen(identity) != SL_IDENTITY_LEN) {
        return;
    }
    sl_memo_lock(m, set);
    e = &m->entry[set][m->next[set]];
    m->next[set] = (unsigned char) ((m->next[set] + 1) % SL_MEMO_WAYS);
    e->secret = secret;
    e->slen = slen;
    e->len = len;
    memcpy(e->in, in, len);
    memcpy(e->identity, identity, SL_IDENTITY_LEN);
    sl_memo_unlock(m, set);
}
