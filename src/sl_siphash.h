/* SPDX-License-Identifier: Apache-2.0 */
/* The module's keyed hash: SipHash-2-4 (Aumasson and Bernstein, 2012) with
 * a 128-bit secret, for anything a client could otherwise aim collisions
 * at: the shm store's stripe of a key (sl_table_stripe) and its hash
 * chains (each entry's 96-bit key hash, sl_table.c), and the deny cache's
 * cell of a key (sl_denycache.c). Our own code (APR's apr_siphash24 needs
 * APR-util 1.6), pinned by the reference vectors in
 * tests/unit/sl_siphash_test.c. For spreading names that only the
 * configuration chooses, sl_fnv1a (sl_ident.h) is enough. */
#ifndef SL_SIPHASH_H
#define SL_SIPHASH_H

#include <apr.h>
#include <apr_errno.h>

#define SL_SIPHASH_KEY 16 /* bytes of secret */

apr_uint64_t sl_siphash(const unsigned char key[SL_SIPHASH_KEY],
                        const void *data, apr_size_t len);

/* SipHash-2-4 with a 128-bit output (the reference's outlen 16): its
 * bytes are out[0] then out[1], each little-endian. One pass over data for
 * twice the bits, where two sl_siphash with two secrets would read it
 * twice. */
void sl_siphash128(const unsigned char key[SL_SIPHASH_KEY], const void *data,
                   apr_size_t len, apr_uint64_t out[2]);

/* A new secret from the system's random source. */
apr_status_t sl_siphash_key(unsigned char key[SL_SIPHASH_KEY]);

#endif
