/* SPDX-License-Identifier: Apache-2.0 */
/* 64-bit atomics for the counters and times that live in shared memory
 * (sl_stats.c, sl_breaker.c). APR has them only from 1.7 (apr_atomic_*64),
 * and a module that calls them does not load into httpd on APR 1.4 to 1.6
 * (RHEL 7 runs 1.4.8). The compiler's __atomic builtins (GCC 4.7, clang
 * 3.1) are what APR 1.7 itself uses on these targets: lock-free 8-byte
 * operations, valid across processes on a shared segment. A lock would
 * have to be a cross-process mutex to be correct there, and emulation on
 * APR's 32-bit atomics is not atomic across the two halves. Same meaning
 * as APR's: add/inc return the old value, cas returns the value found. */
#ifndef SL_ATOMIC_H
#define SL_ATOMIC_H

#include <apr.h>

#if !defined(__ATOMIC_SEQ_CST)
#error                                                                         \
    "mod_slidinglimit needs the compiler's __atomic builtins (GCC 4.7 or later, clang 3.1 or later)"
#endif

/* A libatomic fallback would take a lock in process memory, which does not
 * guard a counter shared by several processes. */
#if !defined(__GCC_ATOMIC_LLONG_LOCK_FREE) || __GCC_ATOMIC_LLONG_LOCK_FREE != 2
#error "mod_slidinglimit needs lock-free 64-bit atomics on this target"
#endif

static APR_INLINE apr_uint64_t sl_atomic_read64(volatile apr_uint64_t *mem)
{
    return __atomic_load_n(mem, __ATOMIC_SEQ_CST);
}

static APR_INLINE void sl_atomic_set64(volatile apr_uint64_t *mem,
                                       apr_uint64_t val)
{
    __atomic_store_n(mem, val, __ATOMIC_SEQ_CST);
}

static APR_INLINE apr_uint64_t sl_atomic_add64(volatile apr_uint64_t *mem,
                                               apr_uint64_t val)
{
    return __atomic_fetch_add(mem, val, __ATOMIC_SEQ_CST);
}

static APR_INLINE apr_uint64_t sl_atomic_inc64(volatile apr_uint64_t *mem)
{
    return __atomic_fetch_add(mem, 1, __ATOMIC_SEQ_CST);
}

static APR_INLINE apr_uint64_t sl_atomic_cas64(volatile apr_uint64_t *mem,
                                               apr_uint64_t with,
                                               apr_uint64_t cmp)
{
    __atomic_compare_exchange_n(mem, &cmp, with, 0, __ATOMIC_SEQ_CST,
                                __ATOMIC_SEQ_CST);
    return cmp;
}

#endif
