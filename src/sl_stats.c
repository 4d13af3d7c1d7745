/* SPDX-License-Identifier: Apache-2.0 */
/* The server's counters (decisions per policy and result, store calls,
 * latency) in one shared segment kept across graceful restarts, and the
 * Prometheus text of the status page. */
#include "sl_stats.h"
#include "sl_atomic.h"
#include "sl_claim.h"
#include "sl_ident.h"
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

/* A count= policy's admissions, once the response's status is known:
 * counted (a listed status: a failed login) or given back. */
#define SL_COUNTED    0
#define SL_GIVEN_BACK 1

typedef struct sl_policy_cell {
    volatile apr_uint32_t state; /* SL_CLAIM_* */
    char name[SL_STATS_NAME];
    volatile apr_uint64_t count[SL_RESULT_COUNT];
    volatile apr_uint64_t counted[2];
} sl_policy_cell_t;

/* Stores are found by their display URL (no credentials: it is a label),
 * like policies; one past the table's end, or with a longer URL, is counted
 * under "other". */
#define SL_STATS_STORES     32
#define SL_STATS_STORE_NAME 200

typedef struct sl_store_counters {
    volatile apr_uint64_t calls;
    volatile apr_uint64_t round_trips;
    volatile apr_uint64_t errors;
    volatile apr_uint64_t latency[SL_NBUCKETS + 1];
    volatile apr_uint64_t latency_sum_us;
} sl_store_counters_t;

typedef struct sl_store_cell {
    volatile apr_uint32_t state; /* SL_CLAIM_* */
    char name[SL_STATS_STORE_NAME];
    sl_store_counters_t c;
} sl_store_cell_t;

typedef struct sl_stats_seg {
    sl_breaker_t breaker;
    volatile apr_uint64_t fallback;
    volatile apr_uint64_t deny_cached;
    volatile apr_uint64_t other[SL_RESULT_COUNT];
    volatile apr_uint64_t other_counted[2];
    sl_policy_cell_t policies[SL_STATS_POLICIES];
    sl_store_counters_t other_store;
    sl_store_cell_t stores[SL_STATS_STORES];
    volatile apr_uint64_t blocks;
    /* A digest of the store the breaker belongs to (sl_stats_breaker). */
    unsigned char breaker_of[APR_SHA1_DIGESTSIZE];
    /* delay=: waits by their end, their total time, the requests waiting
     * now, and the refusals of a full cap */
    volatile apr_uint64_t delayed[2];
    volatile apr_uint64_t delay_us;
    volatile apr_uint64_t delay_waiting;
    volatile apr_uint64_t delay_full;
    /* cost=after:'s charges after the response: done, failed (the store
     * was down: the request had been served), and the units charged. */
    volatile apr_uint64_t charges[2];
    volatile apr_uint64_t charged_units;
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

static int sl_policy_match(const void *cell, const void *name)
{
    return !strcmp(((const sl_policy_cell_t *) cell)->name, name);
}

static void sl_policy_fill(void *cell, const void *name)
{
    strcpy(((sl_policy_cell_t *) cell)->name, name);
}

static sl_policy_cell_t *sl_policy_cell(sl_stats_t *st, const char *policy)
{
    apr_size_t len = strlen(policy);
    int i;

    if (len >= SL_STATS_NAME) {
        return NULL;
    }
    i = sl_claim(st->seg->policies, sizeof(sl_policy_cell_t), SL_STATS_POLICIES,
                 sl_fnv1a(SL_FNV_INIT, policy, len), policy, sl_policy_match,
                 sl_policy_fill);
    return i < 0 ? NULL : &st->seg->policies[i];
}

const char *sl_stats_policy(apr_pool_t *p, const sl_limit_t *l)
{
    const char *sec, *end, *sp;

    /* Unnamed limits are named by their values ("3-per-1m"), which two
     * sections can share: the label adds the innermost section's argument
     * ("<Location /login>": "3-per-1m@/login"), stable across restarts. */
    if (l->named || !l->section || !*l->section) {
        return l->name;
    }
    end = l->section + strlen(l->section);
    if (end > l->section && end[-1] == '\n') {
        end--;
    }
    for (sec = end; sec > l->section && sec[-1] != '\n'; sec--) {
    }
    sp = memchr(sec, ' ', (apr_size_t) (end - sec));
    if (!sp) {
        return l->name;
    }
    sec = sp + 1;
    if (end > sec && end[-1] == '>') {
        end--;
    }
    if (end - sec >= 2 && *sec == '"' && end[-1] == '"') {
        sec++;
        end--;
    }
    return apr_pstrcat(p, l->name, "@",
                       apr_pstrmemdup(p, sec, (apr_size_t) (end - sec)), NULL);
}

/* l's cell (NULL: the "-" of a decision no limit made), found by its label
 * once per process and then by the index kept in l: a cell keeps its name
 * while the segment lives, and a restart reads the limits anew. */
static sl_policy_cell_t *sl_limit_cell(sl_stats_t *st, const sl_limit_t *l)
{
    apr_uint32_t at = l && l->stats_cell ? apr_atomic_read32(l->stats_cell) : 0;
    sl_policy_cell_t *cell;

    if (at) {
        return &st->seg->policies[at - 1];
    }
    cell = sl_policy_cell(st, l ? sl_limit_label(l) : "-");
    if (cell && l && l->stats_cell) {
        apr_atomic_set32(l->stats_cell,
                         (apr_uint32_t) (cell - st->seg->policies) + 1);
    }
    return cell;
}

void sl_stats_decision(sl_stats_t *st, const sl_limit_t *l, int result)
{
    sl_policy_cell_t *cell;

    if (!st || result < 0 || result >= SL_RESULT_COUNT) {
        return;
    }
    cell = sl_limit_cell(st, l);
    sl_atomic_inc64(cell ? &cell->count[result] : &st->seg->other[result]);
}

void sl_stats_counted(sl_stats_t *st, const sl_limit_t *l, int counted)
{
    sl_policy_cell_t *cell;
    int k = counted ? SL_COUNTED : SL_GIVEN_BACK;

    if (!st) {
        return;
    }
    cell = sl_limit_cell(st, l);
    sl_atomic_inc64(cell ? &cell->counted[k] : &st->seg->other_counted[k]);
}

static int sl_store_match(const void *cell, const void *name)
{
    return !strcmp(((const sl_store_cell_t *) cell)->name, name);
}

static void sl_store_fill(void *cell, const void *name)
{
    strcpy(((sl_store_cell_t *) cell)->name, name);
}

static sl_store_counters_t *sl_store_counters(sl_stats_t *st, const char *name,
                                              apr_uint32_t hash)
{
    int i;

    if (strlen(name) >= SL_STATS_STORE_NAME) {
        return &st->seg->other_store;
    }
    i = sl_claim(st->seg->stores, sizeof(sl_store_cell_t), SL_STATS_STORES,
                 hash, name, sl_store_match, sl_store_fill);
    return i < 0 ? &st->seg->other_store : &st->seg->stores[i].c;
}

void sl_stats_store(sl_stats_t *st, const char *name, apr_uint32_t name_hash,
                    apr_interval_time_t latency, int error, int trips)
{
    sl_store_counters_t *c;
    size_t b;

    if (!st) {
        return;
    }
    c = sl_store_counters(st, name, name_hash);
    sl_atomic_inc64(&c->calls);
    if (error) {
        sl_atomic_inc64(&c->errors);
    }
    if (trips > 0) {
        sl_atomic_add64(&c->round_trips, (apr_uint64_t) trips);
    }
    for (b = 0; b < SL_NBUCKETS && latency > sl_buckets[b]; b++) {
    }
    sl_atomic_inc64(&c->latency[b]);
    sl_atomic_add64(&c->latency_sum_us,
                    (apr_uint64_t) (latency > 0 ? latency : 0));
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

void sl_stats_delay_waiting(sl_stats_t *st, int change)
{
    if (st) {
        /* A child killed while a request waits leaves its count here: the
         * gauge is for watching, the cap is each child's own count. */
        sl_atomic_add64(&st->seg->delay_waiting, (apr_uint64_t) change);
    }
}

void sl_stats_delayed(sl_stats_t *st, apr_int64_t waited, int admitted)
{
    if (st) {
        sl_atomic_inc64(&st->seg->delayed[admitted ? 1 : 0]);
        sl_atomic_add64(&st->seg->delay_us,
                        (apr_uint64_t) (waited > 0 ? waited : 0));
    }
}

void sl_stats_delay_full(sl_stats_t *st)
{
    if (st) {
        sl_atomic_inc64(&st->seg->delay_full);
    }
}

/* The delay= counters. */
static void sl_write_delays(sl_stats_seg_t *g, request_rec *r)
{
    ap_rprintf(
        r,
        "# HELP slidinglimit_delayed_total Requests delay= held, by what "
        "their last decision was.\n"
        "# TYPE slidinglimit_delayed_total counter\n"
        "slidinglimit_delayed_total{outcome=\"admitted\"} %" APR_UINT64_T_FMT
        "\n"
        "slidinglimit_delayed_total{outcome=\"refused\"} %" APR_UINT64_T_FMT
        "\n"
        "# HELP slidinglimit_delay_seconds_total Time requests were held by "
        "delay=.\n"
        "# TYPE slidinglimit_delay_seconds_total counter\n"
        "slidinglimit_delay_seconds_total %.6f\n"
        "# HELP slidinglimit_delay_waiting Requests held by delay= now.\n"
        "# TYPE slidinglimit_delay_waiting gauge\n"
        "slidinglimit_delay_waiting %" APR_INT64_T_FMT "\n"
        "# HELP slidinglimit_delay_full_total Refusals that could have "
        "waited, with SlidingLimitDelayMax requests of the child waiting.\n"
        "# TYPE slidinglimit_delay_full_total counter\n"
        "slidinglimit_delay_full_total %" APR_UINT64_T_FMT "\n",
        sl_atomic_read64(&g->delayed[1]), sl_atomic_read64(&g->delayed[0]),
        (double) sl_atomic_read64(&g->delay_us) / APR_USEC_PER_SEC,
        (apr_int64_t) sl_atomic_read64(&g->delay_waiting),
        sl_atomic_read64(&g->delay_full));
}

void sl_stats_charge(sl_stats_t *st, int failed, apr_int64_t units)
{
    if (!st) {
        return;
    }
    sl_atomic_inc64(&st->seg->charges[failed ? 1 : 0]);
    if (!failed && units > 0) {
        sl_atomic_add64(&st->seg->charged_units, (apr_uint64_t) units);
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

/* One store's series, for the status page. */
typedef struct sl_store_row {
    const char *label; /* escaped */
    sl_store_counters_t *c;
} sl_store_row_t;

/* The store families, each whole after its HELP and TYPE lines (the text
 * format wants a family's samples together), one series per store. */
static void sl_write_stores(request_rec *r, const apr_array_header_t *rows)
{
    static const char *const counters[3][2] = {
        {"slidinglimit_store_calls_total", "Calls to the store."},
        {"slidinglimit_store_round_trips_total",
         "Round trips to the store; fewer than calls when threads share "
         "them."},
        {"slidinglimit_store_errors_total",
         "Store calls that failed or timed out."}};
    int f, i;
    size_t b;

    for (f = 0; f < 3; f++) {
        ap_rprintf(r, "# HELP %s %s\n# TYPE %s counter\n", counters[f][0],
                   counters[f][1], counters[f][0]);
        for (i = 0; i < rows->nelts; i++) {
            const sl_store_row_t *row = &APR_ARRAY_IDX(rows, i, sl_store_row_t);
            volatile apr_uint64_t *v = f == 0   ? &row->c->calls
                                       : f == 1 ? &row->c->round_trips
                                                : &row->c->errors;
            ap_rprintf(r, "%s{store=\"%s\"} %" APR_UINT64_T_FMT "\n",
                       counters[f][0], row->label, sl_atomic_read64(v));
        }
    }
    ap_rputs("# HELP slidinglimit_store_latency_seconds Store round trip "
             "time.\n"
             "# TYPE slidinglimit_store_latency_seconds histogram\n",
             r);
    for (i = 0; i < rows->nelts; i++) {
        const sl_store_row_t *row = &APR_ARRAY_IDX(rows, i, sl_store_row_t);
        apr_uint64_t cum = 0;
        for (b = 0; b <= SL_NBUCKETS; b++) {
            cum += sl_atomic_read64(&row->c->latency[b]);
            ap_rprintf(r,
                       "slidinglimit_store_latency_seconds_bucket{store=\"%s\","
                       "le=\"%s\"} %" APR_UINT64_T_FMT "\n",
                       row->label,
                       b < SL_NBUCKETS ? sl_bucket_labels[b] : "+Inf", cum);
        }
        ap_rprintf(r,
                   "slidinglimit_store_latency_seconds_sum{store=\"%s\"} %.6f\n"
                   "slidinglimit_store_latency_seconds_count{store=\"%s\"} "
                   "%" APR_UINT64_T_FMT "\n",
                   row->label,
                   (double) sl_atomic_read64(&row->c->latency_sum_us) / 1e6,
                   row->label, cum);
    }
}

static void sl_store_row(request_rec *r, apr_array_header_t *rows,
                         const char *name, sl_store_counters_t *c)
{
    sl_store_row_t *row = apr_array_push(rows);

    row->label = sl_label(r->pool, name);
    row->c = c;
}

/* Sums each policy's decisions into seen and its count= outcomes into
 * counted, by name: children that named one policy in different cells
 * add up to one series. */
static void sl_sum_policies(sl_stats_seg_t *g, apr_pool_t *p, apr_hash_t *seen,
                            apr_hash_t *counted)
{
    int i, k;

    for (i = 0; i < SL_STATS_POLICIES; i++) {
        sl_policy_cell_t *cell = &g->policies[i];
        apr_uint64_t *sum, c0, c1;
        if (apr_atomic_read32(&cell->state) != SL_CLAIM_READY) {
            continue;
        }
        sum = apr_hash_get(seen, cell->name, APR_HASH_KEY_STRING);
        if (!sum) {
            sum = apr_pcalloc(p, sizeof(*sum) * SL_RESULT_COUNT);
            apr_hash_set(seen, apr_pstrdup(p, cell->name), APR_HASH_KEY_STRING,
                         sum);
        }
        for (k = 0; k < SL_RESULT_COUNT; k++) {
            sum[k] += sl_atomic_read64(&cell->count[k]);
        }
        c0 = sl_atomic_read64(&cell->counted[SL_COUNTED]);
        c1 = sl_atomic_read64(&cell->counted[SL_GIVEN_BACK]);
        if (c0 || c1) {
            sum = apr_hash_get(counted, cell->name, APR_HASH_KEY_STRING);
            if (!sum) {
                sum = apr_pcalloc(p, sizeof(*sum) * 2);
                apr_hash_set(counted, apr_pstrdup(p, cell->name),
                             APR_HASH_KEY_STRING, sum);
            }
            sum[SL_COUNTED] += c0;
            sum[SL_GIVEN_BACK] += c1;
        }
    }
}

/* The policies that found no cell, as "other", where they decided
 * anything. */
static void sl_sum_other(sl_stats_seg_t *g, apr_pool_t *p, apr_hash_t *seen,
                         apr_hash_t *counted)
{
    apr_uint64_t *other = apr_pcalloc(p, sizeof(*other) * SL_RESULT_COUNT);
    int k;

    for (k = 0; k < SL_RESULT_COUNT; k++) {
        other[k] = sl_atomic_read64(&g->other[k]);
    }
    for (k = 0; k < SL_RESULT_COUNT && !other[k]; k++) {
    }
    if (k < SL_RESULT_COUNT) {
        apr_hash_set(seen, "other", APR_HASH_KEY_STRING, other);
    }
    other = apr_pcalloc(p, sizeof(*other) * 2);
    other[SL_COUNTED] = sl_atomic_read64(&g->other_counted[SL_COUNTED]);
    other[SL_GIVEN_BACK] = sl_atomic_read64(&g->other_counted[SL_GIVEN_BACK]);
    if (other[SL_COUNTED] || other[SL_GIVEN_BACK]) {
        apr_hash_set(counted, "other", APR_HASH_KEY_STRING, other);
    }
}

static void sl_write_decisions(request_rec *r, apr_hash_t *seen)
{
    apr_hash_index_t *hi;
    int k;

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

static void sl_write_counted(request_rec *r, apr_hash_t *counted)
{
    apr_hash_index_t *hi;

    ap_rputs("# HELP slidinglimit_counted_total Admissions of count= "
             "policies by the response's status: counted (a listed status) "
             "or given back.\n"
             "# TYPE slidinglimit_counted_total counter\n",
             r);
    for (hi = apr_hash_first(r->pool, counted); hi; hi = apr_hash_next(hi)) {
        const void *key;
        void *val;
        const char *name;
        apr_uint64_t *sum;
        /* apr_hash_this: apr_hash_this_key/_val came with APR 1.5. */
        apr_hash_this(hi, &key, NULL, &val);
        name = sl_label(r->pool, key);
        sum = val;
        ap_rprintf(r,
                   "slidinglimit_counted_total{policy=\"%s\",outcome="
                   "\"counted\"} %" APR_UINT64_T_FMT "\n"
                   "slidinglimit_counted_total{policy=\"%s\",outcome="
                   "\"given-back\"} %" APR_UINT64_T_FMT "\n",
                   name, sum[SL_COUNTED], name, sum[SL_GIVEN_BACK]);
    }
}

/* The module-wide counters and each store's breaker, once per store;
 * stores collects the stores named. */
static void sl_write_globals(sl_stats_seg_t *g, request_rec *r,
                             const apr_array_header_t *breakers,
                             apr_hash_t *stores)
{
    int i;

    ap_rprintf(r,
               "# HELP slidinglimit_charges_total Charges of cost=after: "
               "policies after the response: charged, or failed (the store "
               "did not answer; the request had been served).\n"
               "# TYPE slidinglimit_charges_total counter\n"
               "slidinglimit_charges_total{outcome=\"charged\"} "
               "%" APR_UINT64_T_FMT "\n"
               "slidinglimit_charges_total{outcome=\"failed\"} "
               "%" APR_UINT64_T_FMT "\n"
               "# HELP slidinglimit_charged_units_total Units charged after "
               "the response, beyond the unit of each admission.\n"
               "# TYPE slidinglimit_charged_units_total counter\n"
               "slidinglimit_charged_units_total %" APR_UINT64_T_FMT "\n",
               sl_atomic_read64(&g->charges[0]),
               sl_atomic_read64(&g->charges[1]),
               sl_atomic_read64(&g->charged_units));
    ap_rprintf(r,
               "# HELP slidinglimit_local_fallback_total Decisions made from "
               "shared memory while the store was down.\n"
               "# TYPE slidinglimit_local_fallback_total counter\n"
               "slidinglimit_local_fallback_total %" APR_UINT64_T_FMT "\n"
               "# HELP slidinglimit_deny_cache_hits_total Refusals answered "
               "without a store call.\n"
               "# TYPE slidinglimit_deny_cache_hits_total counter\n"
               "slidinglimit_deny_cache_hits_total %" APR_UINT64_T_FMT "\n"
               "# HELP slidinglimit_blocks_total Blocks started by block=.\n"
               "# TYPE slidinglimit_blocks_total counter\n"
               "slidinglimit_blocks_total %" APR_UINT64_T_FMT "\n"
               "# HELP slidinglimit_breaker_open 1 while the store is "
               "considered down.\n"
               "# TYPE slidinglimit_breaker_open gauge\n",
               sl_atomic_read64(&g->fallback),
               sl_atomic_read64(&g->deny_cached), sl_atomic_read64(&g->blocks));
    for (i = 0; breakers && i < breakers->nelts; i++) {
        const sl_stats_breaker_state_t *b =
            &APR_ARRAY_IDX(breakers, i, sl_stats_breaker_state_t);
        if (apr_hash_get(stores, b->name, APR_HASH_KEY_STRING)) {
            continue;
        }
        apr_hash_set(stores, b->name, APR_HASH_KEY_STRING, b);
        ap_rprintf(r, "slidinglimit_breaker_open{store=\"%s\"} %d\n",
                   sl_label(r->pool, b->name), b->open);
    }
}

/* Every store that was called, and those configured not yet called (at 0),
 * so that a rate or a ratio has its series from the start. */
static void sl_write_store_rows(sl_stats_seg_t *g, request_rec *r,
                                apr_hash_t *stores)
{
    apr_array_header_t *rows =
        apr_array_make(r->pool, 8, sizeof(sl_store_row_t));
    apr_hash_t *done = apr_hash_make(r->pool);
    apr_hash_index_t *hi;
    static sl_store_counters_t zero;
    int i;

    for (i = 0; i < SL_STATS_STORES; i++) {
        sl_store_cell_t *cell = &g->stores[i];
        if (apr_atomic_read32(&cell->state) != SL_CLAIM_READY ||
            apr_hash_get(done, cell->name, APR_HASH_KEY_STRING)) {
            continue;
        }
        apr_hash_set(done, cell->name, APR_HASH_KEY_STRING, cell);
        sl_store_row(r, rows, cell->name, &cell->c);
    }
    if (sl_atomic_read64(&g->other_store.calls)) {
        sl_store_row(r, rows, "other", &g->other_store);
    }
    for (hi = apr_hash_first(r->pool, stores); hi; hi = apr_hash_next(hi)) {
        const void *key;
        const char *name;
        apr_hash_this(hi, &key, NULL, NULL);
        name = key;
        if (!apr_hash_get(done, name, APR_HASH_KEY_STRING)) {
            sl_store_row(r, rows, name, &zero);
        }
    }
    sl_write_stores(r, rows);
}

void sl_stats_write(sl_stats_t *st, request_rec *r,
                    const apr_array_header_t *breakers)
{
    apr_hash_t *seen = apr_hash_make(r->pool);
    apr_hash_t *counted = apr_hash_make(r->pool);
    apr_hash_t *stores = apr_hash_make(r->pool);

    ap_rputs("# HELP slidinglimit_decisions_total Rate limit decisions by "
             "result and policy.\n"
             "# TYPE slidinglimit_decisions_total counter\n",
             r);
    sl_sum_policies(st->seg, r->pool, seen, counted);
    sl_sum_other(st->seg, r->pool, seen, counted);
    sl_write_decisions(r, seen);
    sl_write_counted(r, counted);
    sl_write_delays(st->seg, r);
    sl_write_globals(st->seg, r, breakers, stores);
    sl_write_store_rows(st->seg, r, stores);
}
