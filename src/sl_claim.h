/* SPDX-License-Identifier: Apache-2.0 */
/* Named cells in a fixed table of shared memory, claimed without a lock by
 * whichever process needs a name first: the breaker table, the
 * statistics' policy table and the prerequisites' table. APR only, no
 * httpd.h (tests/unit). */
#ifndef SL_CLAIM_H
#define SL_CLAIM_H

#include <apr.h>

/* Every cell starts with this word. */
#define SL_CLAIM_FREE  0
#define SL_CLAIM_BUSY  1 /* a process is writing the cell's name */
#define SL_CLAIM_READY 2
#define SL_CLAIM_LOST  3 /* its claimer took too long: skipped for good */

/* A process waits this long at most for another to finish naming a cell
 * (a few stores: microseconds); past that the claimer is taken for dead
 * (killed mid-claim), and the cell is marked lost so that nobody waits for
 * it again. A claimer that was only slow then finds its cell lost and
 * claims the next one, as the others do: one name still gets one cell. */
#define SL_CLAIM_TRIES 100
#define SL_CLAIM_POLL  100 /* microseconds between looks */

/* 1 when the READY cell is named name; fill writes name into a cell. */
typedef int sl_claim_match_fn(const void *cell, const void *name);
typedef void sl_claim_fill_fn(void *cell, const void *name);

/* The index of the cell named name, claimed and named when none is; -1
 * when every cell belongs to another name. Cells are stride bytes apart;
 * the search starts at hash % ncells (sl_fnv1a of the name) and goes on
 * linearly. Every process that asks for one name gets the same cell: all
 * look at the same cells in the same order, and each cell is named once. */
int sl_claim(void *cells, apr_size_t stride, int ncells, apr_uint32_t hash,
             const void *name, sl_claim_match_fn *match,
             sl_claim_fill_fn *fill);

/* A table whose cells begin with an sl_claim_id_t is named by SHA-1
 * digests: of a name that holds a password (a store's URL with its
 * credentials) or may be long. */
#define SL_CLAIM_DIGEST 20 /* APR_SHA1_DIGESTSIZE */

typedef struct sl_claim_id {
    volatile apr_uint32_t state; /* SL_CLAIM_* */
    unsigned char digest[SL_CLAIM_DIGEST];
} sl_claim_id_t;

/* Readies the rest of a cell just named (NULL: nothing to do). */
typedef void sl_claim_init_fn(void *cell);

/* sl_claim for the cell of digest in such a table. */
int sl_claim_digest(void *cells, apr_size_t stride, int ncells,
                    const unsigned char *digest, sl_claim_init_fn *init);

#endif
