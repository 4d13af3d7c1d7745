/* SPDX-License-Identifier: Apache-2.0 */
/* The one cell-claim protocol of the module's shared tables (see
 * sl_claim.h). A cell goes FREE -> BUSY (compare-and-swap: one winner)
 * -> READY once its name is written, or BUSY -> LOST when its claimer
 * never finishes, and never back while the segment lives, so a READY
 * cell's name can be read without a lock. */
#include "sl_claim.h"
#include "sl_ident.h"

#include <apr_atomic.h>
#include <apr_time.h>

#include <string.h>

static apr_uint32_t sl_claim_wait(volatile apr_uint32_t *state)
{
    apr_uint32_t s = apr_atomic_read32(state);
    int i;

    for (i = 0; s == SL_CLAIM_BUSY && i < SL_CLAIM_TRIES; i++) {
        apr_sleep(SL_CLAIM_POLL);
        s = apr_atomic_read32(state);
    }
    if (s == SL_CLAIM_BUSY) {
        s = apr_atomic_cas32(state, SL_CLAIM_LOST, SL_CLAIM_BUSY);
        if (s == SL_CLAIM_BUSY) {
            s = SL_CLAIM_LOST;
        }
    }
    return s;
}

int sl_claim(void *cells, apr_size_t stride, int ncells, apr_uint32_t hash,
             const void *name, sl_claim_match_fn *match, sl_claim_fill_fn *fill)
{
    int i;

    for (i = 0; i < ncells; i++) {
        int at = (int) ((hash + (apr_uint32_t) i) % (apr_uint32_t) ncells);
        void *cell = (char *) cells + (apr_size_t) at * stride;
        volatile apr_uint32_t *state = cell;
        apr_uint32_t s = apr_atomic_read32(state);

        if (s == SL_CLAIM_FREE &&
            apr_atomic_cas32(state, SL_CLAIM_BUSY, SL_CLAIM_FREE) ==
                SL_CLAIM_FREE) {
            fill(cell, name);
            /* The name is written before anyone can see READY (the
             * compare-and-swap is a full barrier). */
            if (apr_atomic_cas32(state, SL_CLAIM_READY, SL_CLAIM_BUSY) ==
                SL_CLAIM_BUSY) {
                return at;
            }
            continue; /* taken for dead meanwhile: the cell is lost */
        }
        /* Another process is naming this cell: it may be naming it ours,
         * so wait for it rather than claim a second cell for one name. */
        s = sl_claim_wait(state);
        if (s == SL_CLAIM_READY && match(cell, name)) {
            return at;
        }
    }
    return -1;
}

typedef struct sl_claim_named {
    const unsigned char *digest;
    sl_claim_init_fn *init;
} sl_claim_named_t;

static int sl_claim_digest_match(const void *cell, const void *name)
{
    return !memcmp(((const sl_claim_id_t *) cell)->digest,
                   ((const sl_claim_named_t *) name)->digest, SL_CLAIM_DIGEST);
}

static void sl_claim_digest_fill(void *cell, const void *name)
{
    const sl_claim_named_t *n = name;

    memcpy(((sl_claim_id_t *) cell)->digest, n->digest, SL_CLAIM_DIGEST);
    if (n->init) {
        n->init(cell);
    }
}

int sl_claim_digest(void *cells, apr_size_t stride, int ncells,
                    const unsigned char *digest, sl_claim_init_fn *init)
{
    sl_claim_named_t n = {digest, init};

    return sl_claim(cells, stride, ncells,
                    sl_fnv1a(SL_FNV_INIT, digest, SL_CLAIM_DIGEST), &n,
                    sl_claim_digest_match, sl_claim_digest_fill);
}
