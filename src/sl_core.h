/* The pure core of mod_slidinglimit: limit specifications, durations, store
 * keys, script results and the wire formats. APR only, no httpd.h, so that it
 * is unit-tested without a server (tests/unit). */
#ifndef SL_CORE_H
#define SL_CORE_H

#include <apr_pools.h>
#include <apr_tables.h>
#include <apr_time.h>

#define SL_ALG_UNSET   -1
#define SL_ALG_LOG     0
#define SL_ALG_COUNTER 1
#define SL_ALG_GCRA    2

/* SlidingLimitHeaders flags; 0 is "off" */
#define SL_HDR_IETF    1
#define SL_HDR_DRAFT03 2
#define SL_HDR_XRL     4

#define SL_POLICY_ID_BYTES 12

typedef struct sl_limit {
    const char *name;     /* policy name in headers, logs and metrics */
    const char *id;       /* stable policy id (part of store keys): 16
                             characters, 96 bits of SHA-1 */
    apr_int64_t requests; /* quota */
    apr_int64_t window;   /* rolling window, microseconds */
    apr_int64_t burst;    /* gcra tolerance in requests; 0: requests */
    int algorithm;        /* SL_ALG_*; SL_ALG_UNSET: the section default */
    int named;            /* name= was given: shared across sections */
    const char *section;  /* the enclosing sections (see sl_parse_limit) */
    /* the metrics' policy label (sl_stats_policy), made once when the line
     * is read; NULL: name */
    const char *label;
    apr_int64_t cost; /* units per request (cost=); 1 by default */
    /* cost=expr:STRING: the expression's text (NULL: cost= is fixed), its
     * compiled form (an ap_expr_info_t *, made by sl_config.c: the core
     * has no httpd.h), and cost-unit= (1 by default). */
    const char *cost_expr;
    const void *cost_prog;
    apr_int64_t cost_unit;
    apr_int64_t block; /* block=, microseconds; 0: none */
    /* count=: the final statuses that count, NULL: every status. The
     * request is reserved at the decision and given back afterwards when
     * its status is not listed. */
    const int *count;
    int ncount;
} sl_limit_t;

/* One limit as it is sent to a store. */
typedef struct sl_budget {
    const char *key;
    apr_size_t key_len;
    /* The store that decides it (sl_store_url_t.tag): two virtual hosts
     * with their own stores and one key prefix make the same keys, which
     * are still two budgets. */
    apr_uint32_t store;
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
} sl_budget_t;

typedef struct sl_quota {
    int ok;                /* this limit had room */
    apr_int64_t remaining; /* after this request if admitted, else now */
    apr_int64_t reset;     /* microseconds until more quota; 0: all of it */
} sl_quota_t;

typedef struct sl_decision {
    apr_int64_t now; /* store time, microseconds since the epoch */
    int admitted;
    int n;
    sl_quota_t *quota; /* per limit, in order */
} sl_decision_t;

/* Every parser returns NULL on success or an error message naming the bad
 * token, allocated from p. */
/* An RFC 9110 token, what a header field name may be (httpd's
 * ap_scan_http_token came with 2.4.24). */
int sl_is_token(const char *s);

const char *sl_parse_duration(apr_pool_t *p, const char *s, apr_int64_t *us);
const char *sl_parse_int(apr_pool_t *p, const char *s, apr_int64_t min,
                         apr_int64_t max, apr_int64_t *out);
const char *sl_parse_algorithm(apr_pool_t *p, const char *s, int *alg);
const char *sl_format_duration(apr_pool_t *p, apr_int64_t us);
char sl_algorithm_code(int alg);
const char *sl_algorithm_name(int alg);

/* SlidingLimit REQUESTS WINDOW [name=] [algorithm=] [burst=] [cost=]
 * [block=] [count=]; section names the enclosing configuration section and
 * identifies unnamed limits. */
const char *sl_parse_limit(apr_pool_t *p, int argc, char *const argv[],
                           const char *section, sl_limit_t **out);

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

/* The most units one request may cost under a budget: its burst under
 * gcra, else its requests. */
apr_int64_t sl_budget_capacity(const sl_budget_t *b);

/* An unnamed limit written inside a virtual host belongs to that host:
 * host (its "ServerName:port") becomes part of the id. Named limits keep
 * theirs. */
void sl_limit_set_host(apr_pool_t *p, sl_limit_t *l, const char *host);

/* Client address as a budget key: IPv6 masked to v6bits; IPv6 forms that
 * carry an IPv4 client (mapped, compatible, NAT64 64:ff9b::/96, 6to4,
 * Teredo) as that IPv4 address. Returns NULL when ip is not an address. */
const char *sl_ip_key(apr_pool_t *p, const char *ip, int v6bits);

/* Hash of a key value (source tag + the whole value): no raw value reaches
 * the store, and no byte of the value can change the key's shape or hash
 * slot. 16 characters of base64: 96 bits of HMAC-SHA1 keyed with secret
 * (SlidingLimitKeySecret), or of plain SHA-1 when secret is NULL. */
const char *sl_identity(apr_pool_t *p, const unsigned char *secret,
                        apr_size_t slen, const char *source, const char *value,
                        apr_size_t len);

/* PREFIX:{identity}POLICY.A -- the braces make every key of one identity
 * share a Redis Cluster hash slot. POLICY is the limit's id, or with a
 * secret (SlidingLimitKeySecret) sl_identity of source "policy" and the
 * id: 16 characters either way. */
const char *sl_store_key(apr_pool_t *p, const char *prefix,
                         const char *identity, const sl_limit_t *l, int alg,
                         const unsigned char *secret, apr_size_t slen);

/* Reads the script's integer reply; refuses anything out of shape. */
/* Makes a named limit's budget the one of its name within scope only (the
 * section text of an .htaccess file). */
void sl_limit_scope(apr_pool_t *p, sl_limit_t *l, const char *scope);

/* Whether a final status counts on a limit with count= (always without). */
int sl_limit_counts(const sl_limit_t *l, int status);

const char *sl_decision_parse(apr_pool_t *p, const long long *v, apr_size_t nv,
                              int nlimits, sl_decision_t *d);

/* The reply of the check script's peek (lua/sl_check.lua, "peek"): *d as
 * sl_decision_parse reads it (the state now: admitted 1 when the next
 * request would be), then blocked[i], the microseconds until limit i's
 * block ends (0: none), from an array it allocates. */
const char *sl_peek_parse(apr_pool_t *p, const long long *v, apr_size_t nv,
                          int nlimits, sl_decision_t *d, apr_int64_t **blocked);

/* The limit that the headers describe: among denying limits the one with
 * the longest wait, otherwise the fewest remaining, ties to the longer t. */
int sl_decision_pick(const sl_decision_t *d);

/* Whole seconds, rounded up, at least 1: never earlier than the true time. */
apr_int64_t sl_ceil_seconds(apr_int64_t us);
apr_int64_t sl_retry_after(const sl_decision_t *d);

/* Header sets; add(ctx, name, value) is called once per header. */
typedef void sl_header_fn(void *ctx, const char *name, const char *value);
const char *sl_sf_string(apr_pool_t *p, const char *s);
void sl_quota_headers(apr_pool_t *p, int flags,
                      const apr_array_header_t *limits, const sl_decision_t *d,
                      sl_header_fn *add, void *ctx);

/* Decimal text of v, without apr_psprintf's formatter (see sl_core.c). */
const char *sl_i64toa(apr_pool_t *p, apr_int64_t v);

const char *sl_json_body(apr_pool_t *p, int unavailable, apr_int64_t retry);

/* The body of a refusal for a cost (SL_COST_BAD or SL_COST_OVER) under the
 * policy named policy, which holds max units. */
const char *sl_json_cost_body(apr_pool_t *p, int why, const char *policy,
                              apr_int64_t max);

/* s as a JSON string, quotes included: '"', '\\' and control characters
 * escaped, other bytes as they are (the caller's text is UTF-8 or ASCII). */
const char *sl_json_string(apr_pool_t *p, const char *s);

/* SlidingLimitStore */
#define SL_STORE_SHM      0
#define SL_STORE_TCP      1
#define SL_STORE_UNIX     2
#define SL_STORE_CLUSTER  3
#define SL_STORE_SENTINEL 4

typedef struct sl_hostport {
    const char *host;
    int port;
} sl_hostport_t;

typedef struct sl_store_url {
    int kind;
    int tls; /* rediss://, clusters://, sentinels:// */
    /* sl_hostport_t: one node, the cluster seeds, or the Sentinels */
    apr_array_header_t *nodes;
    const char *path;   /* unix socket */
    const char *master; /* Sentinel: the master's name */
    int db;
    const char *user; /* the data node's credentials */
    const char *password;
    /* The userinfo had no ':': a password, or the user name where
     * SlidingLimitStorePassword gives the password. */
    int bare_userinfo;
    const char *display; /* for logs: "user:***@" at most, never a password */
    apr_uint32_t tag;    /* the same for URLs naming the same data */
} sl_store_url_t;

/* Every error names the bad token without the URL's password. */
const char *sl_parse_store_url(apr_pool_t *p, const char *url,
                               sl_store_url_t *out);

/* url, well formed or not, with its userinfo (user and password) replaced
 * by "***": what an error message may quote. */
const char *sl_redact_url(apr_pool_t *p, const char *url);

/* FNV-1a over len bytes, continuing from h (SL_FNV_INIT to start): the
 * spread of the shm store's stripes, the deny cache's slots and store
 * tags. Not for anything a client could aim at collisions with. */
#define SL_FNV_INIT 2166136261u
apr_uint32_t sl_fnv1a(apr_uint32_t h, const void *data, apr_size_t len);

/* The part of a key that places it, as Redis Cluster reads it: what lies
 * between the first '{' and the next '}' when that is not empty, else the
 * whole key. The shm store's stripes follow the same rule. */
const char *sl_hash_tag(const char *key, apr_size_t len, apr_size_t *tag_len);

/* Redis Cluster hash slot of a key (CRC16/XMODEM of its hash tag). */
unsigned int sl_key_slot(const char *key, apr_size_t len);

#endif
