/* SPDX-License-Identifier: Apache-2.0 */
/* A SlidingLimit line: its values, their parsers, the policy id, and the
 * budget it becomes for one request (sl_budget_t, what a store decides).
 * Pure: APR only, no httpd.h (tests/unit/sl_limit_test.c). */
#ifndef SL_LIMIT_H
#define SL_LIMIT_H

#include <apr_pools.h>
#include <apr_time.h>

#include "sl_script_layout.h"

/* The algorithms, one row each: its SL_ALG_ name, the name SlidingLimit's
 * algorithm= and SlidingLimitAlgorithm take, and the letter the scripts
 * read (lua/sl_check.lua's branch). SL_ALG_OPTIONS are algorithm= values;
 * SL_ALG_OTHERS are not: SlidingLimitConcurrent (at most requests in
 * flight, each holding a lease of window microseconds: a log entry the
 * request's end removes, which expires by itself when nothing does) is a
 * directive of its own; SlidingLimit N W distinct=SOURCE (at most N distinct
 * values of SOURCE per key in any window W, sl_distinct.c) is set by its
 * option. The enum, the names, the count, the parser and the
 * help strings come from these rows; no switch on an sl_alg_t has a
 * default, so -Wswitch names each one a new row must add a case to. */
#define SL_ALG_OPTIONS(X)                                                      \
    X(LOG, "log", 'l')                                                         \
    X(COUNTER, "counter", 'c')                                                 \
    X(GCRA, "gcra", 'g')
#define SL_ALG_OTHERS(X)                                                       \
    X(CONCURRENT, "concurrent", 'n')                                           \
    X(DISTINCT, "distinct", 'd')

#define SL_ALG_ENUM(id, name, code) SL_ALG_##id,
typedef enum sl_alg {
    SL_ALG_OPTIONS(SL_ALG_ENUM) SL_ALG_OTHERS(SL_ALG_ENUM)
} sl_alg_t;
#undef SL_ALG_ENUM

/* How many algorithms there are (a count, not one of them). */
#define SL_ALG_ONE(id, name, code) +1
#define SL_ALG_COUNT               (0 SL_ALG_OPTIONS(SL_ALG_ONE) SL_ALG_OTHERS(SL_ALG_ONE))
/* The algorithm= values, each followed by a space, for help strings. */
#define SL_ALG_NAME_SP(id, name, code) name " "
#define SL_ALG_HELP_NAMES              SL_ALG_OPTIONS(SL_ALG_NAME_SP)

/* SlidingLimit's NAME=VALUE options, one row each: sl_limit.c's parser
 * sl_opt_ID, the name, and what its value is, for the help string. The
 * parser's table, its error and the help come from these rows. */
#define SL_LIMIT_OPTIONS(X)                                                    \
    X(name, "name", "NAME")                                                    \
    X(algorithm, "algorithm", "ALG")                                           \
    X(burst, "burst", "N")                                                     \
    X(cost, "cost", "N|expr:STRING|after:bytes|after:header:NAME")             \
    X(cost_unit, "cost-unit", "N")                                             \
    X(block, "block", "DURATION")                                              \
    X(delay, "delay", "DURATION")                                              \
    X(count, "count", "STATUS,...")                                            \
    X(quota_default, "quota-default", "N")                                     \
    X(distinct, "distinct", "SOURCE")                                          \
    X(key, "key", "SOURCE|none")
#define SL_LIMIT_OPTION_HELP(id, name, value) " [" name "=" value "]"
#define SL_LIMIT_HELP                                                          \
    "REQUESTS|expr:STRING WINDOW" SL_LIMIT_OPTIONS(                            \
        SL_LIMIT_OPTION_HELP) ", or off; ALG: " SL_ALG_HELP_NAMES

/* An int algorithm field's "none given": the section's default. */
#define SL_ALG_UNSET -1
/* distinct=: the most values a limit may count, so that a key's set (a
 * Redis sorted set, an shm cell's values) stays small and a refusal's
 * scan short. One number with lua/sl_check.lua's DISTINCT_MAX. */
#define SL_DISTINCT_MAX SL_CHECK_DISTINCT_MAX

/* SlidingLimitConcurrent's lease= bounds and default, and the longest wait
 * its refusal announces: nothing tells when a request in flight ends. */
#define SL_LEASE_MIN     (1 * APR_USEC_PER_SEC)
#define SL_LEASE_MAX     (3600 * APR_USEC_PER_SEC)
#define SL_LEASE_DEFAULT (60 * APR_USEC_PER_SEC)
#define SL_LEASE_WAIT    (1 * APR_USEC_PER_SEC)

#define SL_POLICY_ID_BYTES 12

/* lua/sl_check.lua's arguments of a limit that every request repeats (its
 * algorithm, requests, window and burst) as the Redis store writes them,
 * and the values they say: a budget uses text only while it holds those
 * values. */
typedef struct sl_script_args {
    apr_int64_t requests;
    apr_int64_t window;
    apr_int64_t burst;
    const char *text;
    apr_size_t len;
} sl_script_args_t;

typedef struct sl_limit {
    const char *name;     /* policy name in headers, logs and metrics */
    const char *id;       /* stable policy id (part of store keys): 16
                             characters, 96 bits of SHA-1 */
    apr_int64_t requests; /* quota */
    apr_int64_t window;   /* rolling window, microseconds */
    apr_int64_t burst;    /* gcra tolerance in requests; 0: requests */
    int algorithm;        /* SL_ALG_*; SL_ALG_UNSET: the section default */
    int named;            /* name= was given: shared across sections */
    int htaccess;         /* read from an .htaccess file (a tenant's) */
    const char *section;  /* the enclosing sections (see sl_parse_limit) */
    /* the metrics' policy label (sl_stats_policy), made once when the line
     * is read; NULL: name */
    const char *label;
    /* Its metrics cell in this process, plus one (0: not looked up yet):
     * sl_stats.c finds it by label once, not on every decision. */
    volatile apr_uint32_t *stats_cell;
    apr_int64_t cost; /* units per request (cost=); 1 by default */
    /* cost=expr:STRING: the expression's text (NULL: cost= is fixed), its
     * compiled form (an ap_expr_info_t *, made by sl_config_limit.c: the core
     * has no httpd.h), and cost-unit= (1 by default). */
    const char *cost_expr;
    const void *cost_prog;
    apr_int64_t cost_unit;
    apr_int64_t block; /* block=, microseconds; 0: none */
    /* SlidingLimit expr:STRING: the quota's expression (NULL: requests is
     * the quota) and its compiled form (an ap_expr_info_t *, as cost_prog).
     * requests is then quota-default=, what a request whose value is empty
     * or not a quota gets. */
    const char *quota_expr;
    const void *quota_prog;
    /* delay=, microseconds (at most SL_MAX_DELAY, sl_delay.h): the longest
     * a request that would be refused may wait for its admission; 0:
     * none */
    apr_int64_t delay;
    /* count=: the final statuses that count, NULL: every status. The
     * request is reserved at the decision and given back afterwards when
     * its status is not listed. */
    const int *count;
    int ncount;
    /* cost=after:bytes or cost=after:header:NAME (SL_AFTER_*; 0: none):
     * the request is admitted for one unit and its real cost, known once
     * the response is, charged in log_transaction (sl_after.c's
     * sl_decide_charge). */
    int after;
    const char *after_header;
    /* What the quota headers say of the limit whatever the request, made
     * once when the line is read (sl_wire_limit): its name as an
     * sf-string, its requests in decimal, its RateLimit-Policy item
     * ("\"api\";q=100;w=60"). NULL: made for each request. */
    const char *sf_name;
    apr_size_t sf_name_len;
    const char *requests_text;
    const char *policy_item;
    apr_size_t policy_item_len;
    /* The same for the Redis store, one per algorithm (a line without
     * algorithm= takes its section's), made once when the line is read
     * (sl_redis_limit_args): formatting the window and the quota for each
     * call was a twentieth of a decision's instructions. NULL: made for
     * each request. */
    const sl_script_args_t *script_args;
    /* distinct=SOURCE: the source's text as written (NULL: none) and its
     * parsed form (an apr_array_header_t * of one sl_key_source_t, made by
     * sl_config_limit.c: the core has no httpd.h). */
    const char *distinct;
    const void *distinct_keys;
    /* key=SOURCE: whose budget this line counts, instead of the section's
     * SlidingLimitKey: the source's text as written (NULL: the section's)
     * and its parsed form (an apr_array_header_t * of sl_key_source_t, none
     * for "none", the shared bucket; made by sl_config_limit.c). */
    const char *key;
    const void *key_keys;
} sl_limit_t;

/* One limit as it is sent to a store. */
typedef struct sl_budget {
    const char *key;
    apr_size_t key_len;
    /* The store that decides it (sl_store_url_t.tag): two virtual hosts
     * with their own stores and one key prefix make the same keys, which
     * are still two budgets. */
    apr_uint32_t store_tag;
    int algorithm;
    apr_int64_t requests;
    apr_int64_t window;
    apr_int64_t burst;
    apr_int64_t cost;  /* units this request consumes; 0 or 1: one */
    apr_int64_t block; /* microseconds; 0: none */
    /* count=: an admission is a reservation that may be given back, so
     * neither its exhaustion nor a refusal is answered from the deny cache
     * (a give-back can free room before the reset). */
    int reserve;
    /* its limit's script_args for its algorithm; NULL: none */
    const sl_script_args_t *script_args;
    /* distinct=: the hashed value this request brings (16 characters);
     * NULL: a look at the budget, which brings none (sl_distinct.c). */
    const char *distinct;
} sl_budget_t;

#define SL_AFTER_BYTES  1
#define SL_AFTER_HEADER 2

/* Every parser returns NULL on success or an error message naming the bad
 * token, allocated from p. */
const char *sl_parse_duration(apr_pool_t *p, const char *s, apr_int64_t *us);
const char *sl_parse_int(apr_pool_t *p, const char *s, apr_int64_t min,
                         apr_int64_t max, apr_int64_t *out);
const char *sl_parse_algorithm(apr_pool_t *p, const char *s, int *alg);
const char *sl_format_duration(apr_pool_t *p, apr_int64_t us);
/* An unset or unknown number is the default, the log. */
char sl_algorithm_code(int alg);
const char *sl_algorithm_name(int alg);

/* SlidingLimit REQUESTS|expr:STRING WINDOW [OPTION=VALUE]..., the options
 * being sl_limit.c's sl_options rows; section names the enclosing
 * configuration section and identifies unnamed limits. */
const char *sl_parse_limit(apr_pool_t *p, int argc, char *const argv[],
                           const char *section, sl_limit_t **out);

/* SlidingLimitConcurrent N [name=NAME] [lease=DURATION]: a limit of
 * algorithm SL_ALG_CONCURRENT, N its requests, the lease its window. */
const char *sl_parse_concurrent(apr_pool_t *p, int argc, char *const argv[],
                                const char *section, sl_limit_t **out);

/* An unnamed limit written inside a virtual host belongs to that host:
 * host (its "ServerName:port") becomes part of the id. Named limits keep
 * theirs. */
void sl_limit_set_host(apr_pool_t *p, sl_limit_t *l, const char *host);

/* Makes a named limit's budget the one of its name within scope only (the
 * section text of an .htaccess file). */
void sl_limit_scope(apr_pool_t *p, sl_limit_t *l, const char *scope);

/* Whether a final status counts on a limit with count= (always without). */
int sl_limit_counts(const sl_limit_t *l, int status);

/* l and what it points to, in p: for what outlives the pool l was read in
 * (an .htaccess that only mod_dir's look-up read dies with the look-up).
 * The compiled expressions and key sources serve a decision only and are
 * NULL in the copy; their texts are kept. */
sl_limit_t *sl_limit_copy(apr_pool_t *p, const sl_limit_t *l);

/* cost=expr:: what an expression's value v costs under a limit that holds
 * max units: a whole decimal number (digits only: no sign, space, exponent
 * or fraction) divided by unit and rounded up. Every request consumes at
 * least one unit: an empty value and 0 cost 1, so that no client makes its
 * requests free. SL_COST_OK with *cost set, SL_COST_BAD (not a whole
 * number) or SL_COST_OVER (more than max, however many digits). */
#define SL_COST_OK   0
#define SL_COST_BAD  1
#define SL_COST_OVER 2
int sl_cost_of(const char *v, apr_int64_t unit, apr_int64_t max,
               apr_int64_t *cost);

/* SlidingLimit expr:: what an expression's value v is as a quota under
 * the largest literal one: SL_QUOTA_OK with *quota 1..SL_MAX_REQUESTS,
 * SL_QUOTA_ZERO for "0" (no requests at all), SL_QUOTA_BAD for anything
 * else (empty, sign, space, fraction, too large). */
#define SL_QUOTA_OK   0
#define SL_QUOTA_ZERO 1
#define SL_QUOTA_BAD  2
int sl_quota_of(const char *v, apr_int64_t *quota);
/* cost=after:: the units to charge after the response for a measured
 * value v (bytes sent, or a header's text; NULL: none) under a limit that
 * holds max units, besides the one unit reserved at admission: v divided
 * by unit, rounded up, at least 1 and at most max, less that unit.
 * SL_COST_OK, or SL_COST_BAD / SL_COST_OVER with *extra the fallback
 * (max - 1: a value the back end got wrong costs the most, never
 * nothing). */
int sl_cost_after(const char *v, apr_int64_t unit, apr_int64_t max,
                  apr_int64_t *extra);

/* The most units one request may cost under a budget: its burst under
 * gcra, else its requests. */
apr_int64_t sl_budget_capacity(const sl_budget_t *b);

#endif
