/* The module's keyed hash (see sl_siphash.h), on APR's SipHash-2-4. */
#include "sl_siphash.h"

#include <apr_general.h>
#include <apr_siphash.h>

typedef char sl_assert_key[SL_SIPHASH_KEY == APR_SIPHASH_KSIZE ? 1 : -1];

apr_uint64_t sl_siphash(const unsigned char key[SL_SIPHASH_KEY],
                        const void *data, apr_size_t len)
{
    return apr_siphash24(data, len, key);
}

apr_status_t sl_siphash_key(unsigned char key[SL_SIPHASH_KEY])
{
    return apr_generate_random_bytes(key, SL_SIPHASH_KEY);
}
