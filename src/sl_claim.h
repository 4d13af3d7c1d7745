/* Named slots in a fixed table of shared memory, claimed without a lock by
 * whichever process needs a name first: the breaker table, the
 * statistics' policy table and the prerequisites' table. APR only, no
 * httpd.h (tests/unit). */
#ifndef SL_CLAIM_H
#define SL_CLAIM_H

#include <apr.h>

/* Every slot starts with this word. */
#define SL_CLAIM_FREE  0
#define SL_CLAIM_BUSY  1 /* a process is writing the slot's name */
#define SL_CLAIM_READY 2
#define SL_CLAIM_LOST  3 /* its claimer took too long: skipped for good */

/* A process waits this long at most for another to finish naming a slot
 * (a few stores: microseconds); past that the claimer is taken for dead
 * (killed mid-claim), and the slot is marked lost so that nobody waits for
 * it again. A claimer that was only slow then finds its slot lost and
 * claims the next one, as the others do: one name still gets one slot. */
#define SL_CLAIM_TRIES 100
#define SL_CLAIM_POLL  100 /* microseconds between looks */

/* 1 when the READY slot is named name; fill writes name into a slot. */
typedef int sl_claim_match_fn(const void *slot, const void *name);
typedef void sl_claim_fill_fn(void *slot, const void *name);

/* The index of the slot named name, claimed and named when none is; -1
 * when every slot belongs to another name. Slots are stride bytes apart;
 * the search starts at hash % nslots (sl_fnv1a of the name) and goes on
 * linearly. Every process that asks for one name gets the same slot: all
 * look at the same slots in the same order, and each slot is named once. */
int sl_claim(void *slots, apr_size_t stride, int nslots, apr_uint32_t hash,
             const void *name, sl_claim_match_fn *match,
             sl_claim_fill_fn *fill);

/* A table whose slots begin with an sl_claim_id_t is named by SHA-1
 * digests: of a name that holds a password (a store's URL with its
 * credentials) or may be long. */
#define SL_CLAIM_DIGEST 20 /* APR_SHA1_DIGESTSIZE */

typedef struct sl_claim_id {
    volatile apr_uint32_t state; /* SL_CLAIM_* */
    unsigned char digest[SL_CLAIM_DIGEST];
} sl_claim_id_t;

/* Readies the rest of a slot just named (NULL: nothing to do). */
typedef void sl_claim_init_fn(void *slot);

/* sl_claim for the slot of digest in such a table. */
int sl_claim_digest(void *slots, apr_size_t stride, int nslots,
                    const unsigned char *digest, sl_claim_init_fn *init);

#endif
