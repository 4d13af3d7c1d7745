/* The server's counters (decisions per policy and result, store calls,
 * latency) in one shared segment kept across graceful restarts, and the
 * Prometheus text of the status page. */
#include "sl_stats.h"
#include "sl_atomic.h"
#include "sl_claim.h"
#include "sl_shm.h"

#include "http_config.h"
#include "http_log.h"
#include "http_protocol.h"

#include <apr_atomic.h>
#include <apr_hash.h>
#include <apr_sha1.h>
#include <apr_strings.h>

#include <string.h>

APLOG_USE_MODULE(slidinglimit);

/* Policies are named in the configuration, so their counters are found by
 * name in a fixed table; a policy past the table's end is counted under
 * "other" rather than lost. */
#define SL_STATS_POLICIES 256
#define SL_STATS_NAME     72

/* Upper bounds of the store latency histogram, microseconds. */
static const apr_int64_t sl_buckets[] = {
    250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 1000000};
#define SL_NBUCKETS (sizeof(sl_buckets) / sizeof(sl_buckets[0]))

/* The same bounds as "le" labels, written out: APR's %g drops the leading
 * zero (".00025"), which not every scraper's float parser accepts. */
static const char *const sl_bucket_labels[SL_NBUCKETS] = {
    "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01",
    "0.025",   "0.05",   "0.1",   "0.25",   "1"};

typedef struct sl_policy_slot {
    volatile apr_uint32_t state; /* SL_CLAIM_* */
    char name[SL_STATS_NAME];
    volatile apr_uint64_t count[SL_RESULT_COUNT];
} sl_policy_slot_t;

typedef struct sl_stats_seg {
    sl_breaker_t breaker;
    volatile apr_uint64_t store_calls;
    volatile apr_uint64_t store_errors;
    volatile apr_uint64_t fallback;
    volatile apr_uint64_t deny_cached;
    volatile apr_uint64_t latency[SL_NBUCKETS + 1];
    volatile apr_uint64_t latency_sum_us;
    volatile apr_uint64_t other[SL_RESULT_COUNT];
    sl_policy_slot_t policies[SL_STATS_POLICIES];
    volatile apr_uint64_t store_round_trips;
    volatile apr_uint64_t blocks;
    /* A digest of the store the breaker belongs to (sl_stats_breaker). */
    unsigned char breaker_of[APR_SHA1_DIGESTSIZE];
} sl_stats_seg_t;

struct sl_stats {
    sl_stats_seg_t *seg;
};

static const char *const sl_result_names[SL_RESULT_COUNT] = {
    "allowed", "denied", "dryrun-denied", "failed-open", "failed-closed"};

const char *sl_result_name(int result)
{
    return result >= 0 && result < SL_RESULT_COUNT ? sl_result_names[result]
                                                   : "unknown";
}

apr_status_t sl_stats_create(apr_pool_t *pconf, server_rec *s, sl_stats_t **out)
{
    sl_stats_t *st = apr_pcalloc(pconf, sizeof(*st));
    void *base;
    int fresh;
    /* Counters survive graceful restarts, as Prometheus expects of
     * counters. A fresh segment is zeroed: a closed breaker, no counts. */
    apr_status_t rv =
        sl_shm_retain(s, "stats", sizeof(sl_stats_seg_t), &base, &fresh);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    st->seg = base;
    *out = st;
    return APR_SUCCESS;
}

sl_breaker_t *sl_stats_breaker(sl_stats_t *st, const char *id,
                               apr_size_t id_len)
{
    unsigned char digest[APR_SHA1_DIGESTSIZE];
    apr_sha1_ctx_t ctx;

    /* An outage that spans a graceful restart is still the same outage,
     * but a changed SlidingLimitStore is another store: tried at once, and
     * its failure logged as news, not read as the old store's. */
    apr_sha1_init(&ctx);
    apr_sha1_update_binary(&ctx, (const unsigned char *) id,
                           (unsigned int) id_len);
    apr_sha1_final(digest, &ctx);
    if (memcmp(digest, st->seg->breaker_of, sizeof(digest))) {
        sl_breaker_init(&st->seg->breaker);
        memcpy(st->seg->breaker_of, digest, sizeof(digest));
    }
    return &st->seg->breaker;
}

static int sl_policy_match(const void *slot, const void *name)
{
    return !strcmp(((const sl_policy_slot_t *) slot)->name, name);
}

static void sl_policy_fill(void *slot, const void *name)
{
    strcpy(((sl_policy_slot_t *) slot)->name, name);
}

static volatile apr_uint64_t *sl_policy_counters(sl_stats_t *st,
                                                 const char *policy)
{
    apr_size_t len = strlen(policy);
    int i;

    if (len >= SL_STATS_NAME) {
        return st->seg->other;
    }
    i = sl_claim(st->seg->policies, sizeof(sl_policy_slot_t), SL_STATS_POLICIES,
                 sl_fnv1a(SL_FNV_INIT, policy, len), policy, sl_policy_match,
                 sl_policy_fill);
    return i < 0 ? st->seg->other : st->seg->policies[i].count;
}

void sl_stats_decision(sl_stats_t *st, const char *policy, int result)
{
    if (!st || result < 0 || result >= SL_RESULT_COUNT) {
        return;
    }
    sl_atomic_inc64(&sl_policy_counters(st, policy)[result]);
}

void sl_stats_store(sl_stats_t *st, apr_interval_time_t latency, int error)
{
    size_t b;

    if (!st) {
        return;
    }
    sl_atomic_inc64(&st->seg->store_calls);
    if (error) {
        sl_atomic_inc64(&st->seg->store_errors);
    }
    for (b = 0; b < SL_NBUCKETS && latency > sl_buckets[b]; b++) {
    }
    sl_atomic_inc64(&st->seg->latency[b]);
    sl_atomic_add64(&st->seg->latency_sum_us,
                    (apr_uint64_t) (latency > 0 ? latency : 0));
}

void sl_stats_round_trips(sl_stats_t *st, int trips)
{
    if (st && trips > 0) {
        sl_atomic_add64(&st->seg->store_round_trips, (apr_uint64_t) trips);
    }
}

void sl_stats_fallback(sl_stats_t *st)
{
    if (st) {
        sl_atomic_inc64(&st->seg->fallback);
    }
}

void sl_stats_deny_cached(sl_stats_t *st)
{
    if (st) {
        sl_atomic_inc64(&st->seg->deny_cached);
    }
}

void sl_stats_blocks(sl_stats_t *st, int started)
{
    if (st && started > 0) {
        sl_atomic_add64(&st->seg->blocks, (apr_uint64_t) started);
    }
}

/* Prometheus label value: backslash, quote and newline escaped. */
static const char *sl_label(apr_pool_t *p, const char *s)
{
    char *out = apr_palloc(p, 2 * strlen(s) + 1), *o = out;

    for (; *s; s++) {
        if (*s == '\\' || *s == '"') {
            *o++ = '\\';
            *o++ = *s;
        }
        else if (*s == '\n') {
            *o++ = '\\';
            *o++ = 'n';
        }
        else {
            *o++ = *s;
        }
    }
    *o = '\0';
    return out;
}

void sl_stats_write(sl_stats_t *st, request_rec *r)
{
    sl_stats_seg_t *g = st->seg;
    apr_hash_t *seen = apr_hash_make(r->pool);
    apr_uint64_t cum = 0;
    size_t b;
    int i, k;

    ap_rputs("# HELP slidinglimit_decisions_total Rate limit decisions by "
             "result and policy.\n"
             "# TYPE slidinglimit_decisions_total counter\n",
             r);
    for (i = 0; i < SL_STATS_POLICIES; i++) {
        sl_policy_slot_t *slot = &g->policies[i];
        apr_uint64_t *sum;
        if (apr_atomic_read32(&slot->state) != SL_CLAIM_READY) {
            continue;
        }
        sum = apr_hash_get(seen, slot->name, APR_HASH_KEY_STRING);
        if (!sum) {
            sum = apr_pcalloc(r->pool, sizeof(*sum) * SL_RESULT_COUNT);
            apr_hash_set(seen, apr_pstrdup(r->pool, slot->name),
                         APR_HASH_KEY_STRING, sum);
        }
        for (k = 0; k < SL_RESULT_COUNT; k++) {
            sum[k] += sl_atomic_read64(&slot->count[k]);
        }
    }
    {
        apr_uint64_t *other =
            apr_pcalloc(r->pool, sizeof(*other) * SL_RESULT_COUNT);
        apr_hash_index_t *hi;
        for (k = 0; k < SL_RESULT_COUNT; k++) {
            other[k] = sl_atomic_read64(&g->other[k]);
        }
        for (k = 0; k < SL_RESULT_COUNT && !other[k]; k++) {
        }
        if (k < SL_RESULT_COUNT) {
            apr_hash_set(seen, "other", APR_HASH_KEY_STRING, other);
        }
        for (hi = apr_hash_first(r->pool, seen); hi; hi = apr_hash_next(hi)) {
            const void *name;
            void *val;
            apr_uint64_t *sum;
            apr_hash_this(hi, &name, NULL, &val);
            sum = val;
            for (k = 0; k < SL_RESULT_COUNT; k++) {
                ap_rprintf(r,
                           "slidinglimit_decisions_total{result=\"%s\","
                           "policy=\"%s\"} %" APR_UINT64_T_FMT "\n",
                           sl_result_names[k], sl_label(r->pool, name), sum[k]);
            }
        }
    }
    ap_rprintf(
        r,
        "# HELP slidinglimit_store_calls_total Calls to the store.\n"
        "# TYPE slidinglimit_store_calls_total counter\n"
        "slidinglimit_store_calls_total %" APR_UINT64_T_FMT "\n"
        "# HELP slidinglimit_store_round_trips_total Round trips to the "
        "store; fewer than calls when threads share them.\n"
        "# TYPE slidinglimit_store_round_trips_total counter\n"
        "slidinglimit_store_round_trips_total %" APR_UINT64_T_FMT "\n"
        "# HELP slidinglimit_store_errors_total Store calls that "
        "failed or timed out.\n"
        "# TYPE slidinglimit_store_errors_total counter\n"
        "slidinglimit_store_errors_total %" APR_UINT64_T_FMT "\n"
        "# HELP slidinglimit_local_fallback_total Decisions made from "
        "shared memory while the store was down.\n"
        "# TYPE slidinglimit_local_fallback_total counter\n"
        "slidinglimit_local_fallback_total %" APR_UINT64_T_FMT "\n"
        "# HELP slidinglimit_deny_cache_hits_total Refusals answered "
        "without a store call.\n"
        "# TYPE slidinglimit_deny_cache_hits_total counter\n"
        "slidinglimit_deny_cache_hits_total %" APR_UINT64_T_FMT "\n"
        "# HELP slidinglimit_breaker_open 1 while the store is "
        "considered down.\n"
        "# TYPE slidinglimit_breaker_open gauge\n"
        "slidinglimit_breaker_open %d\n",
        sl_atomic_read64(&g->store_calls),
        sl_atomic_read64(&g->store_round_trips),
        sl_atomic_read64(&g->store_errors), sl_atomic_read64(&g->fallback),
        sl_atomic_read64(&g->deny_cached), sl_breaker_is_open(&g->breaker));
    ap_rprintf(r,
               "# HELP slidinglimit_blocks_total Blocks started by block=.\n"
               "# TYPE slidinglimit_blocks_total counter\n"
               "slidinglimit_blocks_total %" APR_UINT64_T_FMT "\n",
               sl_atomic_read64(&g->blocks));
    ap_rputs("# HELP slidinglimit_store_latency_seconds Store round trip "
             "time.\n"
             "# TYPE slidinglimit_store_latency_seconds histogram\n",
             r);
    for (b = 0; b <= SL_NBUCKETS; b++) {
        cum += sl_atomic_read64(&g->latency[b]);
        if (b < SL_NBUCKETS) {
            ap_rprintf(r,
                       "slidinglimit_store_latency_seconds_bucket{le=\"%s\"} "
                       "%" APR_UINT64_T_FMT "\n",
                       sl_bucket_labels[b], cum);
        }
        else {
            ap_rprintf(r,
                       "slidinglimit_store_latency_seconds_bucket{le=\"+Inf\"}"
                       " %" APR_UINT64_T_FMT "\n",
                       cum);
        }
    }
    ap_rprintf(r,
               "slidinglimit_store_latency_seconds_sum %.6f\n"
               "slidinglimit_store_latency_seconds_count %" APR_UINT64_T_FMT
               "\n",
               (double) sl_atomic_read64(&g->latency_sum_us) / 1e6, cum);
}
