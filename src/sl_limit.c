/* SPDX-License-Identifier: Apache-2.0 */
#include "sl_limit.h"
#include "sl_delay.h"

#include <apr_atomic.h>
#include <apr_base64.h>
#include <apr_lib.h>
#include <apr_sha1.h>
#include <apr_strings.h>

#include <errno.h>
#include <string.h>

/* Longest window and largest quota. Times stay below 2^53 us, where doubles
 * stop being exact; the few products beyond it (prev * window in the
 * counter) are divided back down before they are compared or rounded. */
#define SL_MAX_WINDOW   (apr_int64_t)(366 * 86400) * APR_USEC_PER_SEC
#define SL_MAX_REQUESTS 100000000
#define SL_MAX_COUNT    16
/* cost-unit=: up to 1 TiB, e.g. bytes to GiB. */
#define SL_MAX_COST_UNIT ((apr_int64_t) 1 << 40)

const char *sl_parse_int(apr_pool_t *p, const char *s, apr_int64_t min,
                         apr_int64_t max, apr_int64_t *out)
{
    char *end;
    apr_int64_t v;

    if (!s || !*s || !apr_isdigit(*s)) {
        return apr_psprintf(p, "'%s' is not a whole number", s ? s : "");
    }
    errno = 0;
    v = apr_strtoi64(s, &end, 10);
    if (errno || *end) {
        return apr_psprintf(p, "'%s' is not a whole number", s);
    }
    if (v < min || v > max) {
        return apr_psprintf(p,
                            "'%s' is out of range (%" APR_INT64_T_FMT
                            "..%" APR_INT64_T_FMT ")",
                            s, min, max);
    }
    *out = v;
    return NULL;
}

const char *sl_parse_duration(apr_pool_t *p, const char *s, apr_int64_t *us)
{
    static const struct {
        const char *unit;
        apr_int64_t us;
    } units[] = {{"", APR_USEC_PER_SEC},         {"ms", 1000},
                 {"s", APR_USEC_PER_SEC},        {"m", 60 * APR_USEC_PER_SEC},
                 {"min", 60 * APR_USEC_PER_SEC}, {"h", 3600 * APR_USEC_PER_SEC},
                 {"d", 86400 * APR_USEC_PER_SEC}};
    char *end;
    apr_int64_t v;
    size_t i;

    if (!s || !apr_isdigit(*s)) {
        return apr_psprintf(p, "'%s' is not a duration (e.g. 500ms, 30s, 1m)",
                            s ? s : "");
    }
    errno = 0;
    v = apr_strtoi64(s, &end, 10);
    if (errno || v <= 0) {
        return apr_psprintf(p, "'%s' is not a positive duration", s);
    }
    for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (!strcasecmp(end, units[i].unit)) {
            if (v > SL_MAX_WINDOW / units[i].us) {
                return apr_psprintf(p, "'%s' is too long (at most 366d)", s);
            }
            *us = v * units[i].us;
            return NULL;
        }
    }
    return apr_psprintf(
        p, "'%s' has an unknown unit (use ms, s, m or min, h or d)", s);
}

const char *sl_format_duration(apr_pool_t *p, apr_int64_t us)
{
    static const struct {
        const char *unit;
        apr_int64_t us;
    } units[] = {{"d", 86400 * APR_USEC_PER_SEC},
                 {"h", 3600 * APR_USEC_PER_SEC},
                 {"m", 60 * APR_USEC_PER_SEC},
                 {"s", APR_USEC_PER_SEC},
                 {"ms", 1000}};
    size_t i;

    for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (us % units[i].us == 0) {
            return apr_psprintf(p, "%" APR_INT64_T_FMT "%s", us / units[i].us,
                                units[i].unit);
        }
    }
    return apr_psprintf(p, "%" APR_INT64_T_FMT "us", us);
}

/* The algorithms by their SL_ALG_* number (sl_limit.h's rows). */
static const struct sl_algorithm {
    const char *name;
    char code;
    int option; /* an algorithm= value */
} sl_algorithms[] = {
#define SL_ALG_ROW(id, name, code, option) [SL_ALG_##id] = {name, code, option},
#define SL_ALG_OPTION(id, name, code)      SL_ALG_ROW(id, name, code, 1)
#define SL_ALG_OTHER(id, name, code)       SL_ALG_ROW(id, name, code, 0)
    SL_ALG_OPTIONS(SL_ALG_OPTION) SL_ALG_OTHERS(SL_ALG_OTHER)
#undef SL_ALG_OTHER
#undef SL_ALG_OPTION
#undef SL_ALG_ROW
};

const char *sl_parse_algorithm(apr_pool_t *p, const char *s, int *alg)
{
    const char *names = NULL;
    int i;

    for (i = 0; i < SL_ALG_COUNT; i++) {
        if (!sl_algorithms[i].option) {
            continue;
        }
        if (!strcasecmp(s, sl_algorithms[i].name)) {
            *alg = i;
            return NULL;
        }
        names = names ? apr_pstrcat(p, names, ", ", sl_algorithms[i].name, NULL)
                      : sl_algorithms[i].name;
    }
    return apr_psprintf(p, "'%s' is not an algorithm (%s)", s, names);
}

char sl_algorithm_code(int alg)
{
    return alg >= 0 && alg < SL_ALG_COUNT ? sl_algorithms[alg].code : 'l';
}

const char *sl_algorithm_name(int alg)
{
    return alg >= 0 && alg < SL_ALG_COUNT ? sl_algorithms[alg].name : "log";
}

/* base64 of the first n bytes of SHA-1(data), without padding: 12 bytes give
 * 16 characters. '+' and '/' are harmless in keys; braces never appear.
 * Policy ids keep 96 bits: a tenant who names a policy in .htaccess would
 * need about 2^96 tries to land on the id of another (48 bits, as they
 * once were, are within reach of a search offline). */
static const char *sl_hash(apr_pool_t *p, const char *data, apr_size_t len,
                           int n)
{
    unsigned char digest[APR_SHA1_DIGESTSIZE];
    apr_sha1_ctx_t ctx;
    char *out = apr_palloc(p, apr_base64_encode_len(n));

    apr_sha1_init(&ctx);
    apr_sha1_update_binary(&ctx, (const unsigned char *) data, len);
    apr_sha1_final(digest, &ctx);
    /* n is a multiple of 3 here, so there is no padding to strip. */
    apr_base64_encode_binary(out, digest, n);
    return out;
}

/* count=STATUS[,STATUS...]: final statuses 100-599, each listed once. */
static const char *sl_parse_count(apr_pool_t *p, const char *arg,
                                  const char *val, sl_limit_t *l)
{
    int *st = apr_pcalloc(p, sizeof(*st) * SL_MAX_COUNT);
    char *list = apr_pstrdup(p, val), *tok, *last;
    int n = 0, i;

    for (tok = apr_strtok(list, ",", &last); tok;
         tok = apr_strtok(NULL, ",", &last)) {
        apr_int64_t v;
        if (sl_parse_int(p, tok, 100, 599, &v)) {
            return apr_psprintf(p, "'%s': '%s' is not an HTTP status (100-599)",
                                arg, tok);
        }
        for (i = 0; i < n; i++) {
            if (st[i] == (int) v) {
                return apr_psprintf(p, "'%s': %s is listed twice", arg, tok);
            }
        }
        if (n == SL_MAX_COUNT) {
            return apr_psprintf(p, "'%s': at most %d statuses", arg,
                                SL_MAX_COUNT);
        }
        st[n++] = (int) v;
    }
    /* apr_strtok skips empty fields: "count=,401" or "401,,403" is a
     * typo, not a list. */
    if (!n || *val == ',' || val[strlen(val) - 1] == ',' || strstr(val, ",,")) {
        return apr_psprintf(p, "'%s': expected count=STATUS[,STATUS...]", arg);
    }
    l->count = st;
    l->ncount = n;
    return NULL;
}

void sl_limit_scope(apr_pool_t *p, sl_limit_t *l, const char *scope)
{
    const char *basis = apr_pstrcat(p, "n\n", scope, "\n", l->name, NULL);

    l->id = sl_hash(p, basis, strlen(basis), SL_POLICY_ID_BYTES);
}

int sl_limit_counts(const sl_limit_t *l, int status)
{
    int i;

    if (!l->count) {
        return 1;
    }
    for (i = 0; i < l->ncount; i++) {
        if (l->count[i] == status) {
            return 1;
        }
    }
    return 0;
}

static const char *sl_dup(apr_pool_t *p, const char *s)
{
    return s ? apr_pstrdup(p, s) : NULL;
}

sl_limit_t *sl_limit_copy(apr_pool_t *p, const sl_limit_t *l)
{
    sl_limit_t *c = apr_pmemdup(p, l, sizeof(*l));

    c->name = sl_dup(p, l->name);
    c->id = sl_dup(p, l->id);
    c->section = sl_dup(p, l->section);
    c->label = sl_dup(p, l->label);
    c->cost_expr = sl_dup(p, l->cost_expr);
    c->quota_expr = sl_dup(p, l->quota_expr);
    c->after_header = sl_dup(p, l->after_header);
    c->requests_text = sl_dup(p, l->requests_text);
    c->distinct = sl_dup(p, l->distinct);
    c->key = sl_dup(p, l->key);
    c->cost_prog = c->quota_prog = c->distinct_keys = c->key_keys = NULL;
    if (l->sf_name) {
        c->sf_name = apr_pstrmemdup(p, l->sf_name, l->sf_name_len);
    }
    if (l->policy_item) {
        c->policy_item = apr_pstrmemdup(p, l->policy_item, l->policy_item_len);
    }
    if (l->count) {
        c->count = apr_pmemdup(p, l->count, sizeof(*l->count) * l->ncount);
    }
    /* The metrics cell's index lives with the limit it was found for. */
    if (l->stats_cell) {
        apr_uint32_t *cell = apr_palloc(p, sizeof(*cell));
        *cell = apr_atomic_read32(l->stats_cell);
        c->stats_cell = cell;
    }
    if (l->script_args) {
        sl_script_args_t *a =
            apr_pmemdup(p, l->script_args, SL_ALG_COUNT * sizeof(*a));
        int alg;
        for (alg = 0; alg < SL_ALG_COUNT; alg++) {
            a[alg].text = apr_pmemdup(p, a[alg].text, a[alg].len);
        }
        c->script_args = a;
    }
    return c;
}

static int sl_valid_name(const char *s)
{
    if (!*s || strlen(s) > 64) {
        return 0;
    }
    for (; *s; s++) {
        if (!apr_isalnum(*s) && !strchr("-_.:/@", *s)) {
            return 0;
        }
    }
    return 1;
}

/* A named policy is one budget wherever it is used; an unnamed one is its
 * sections, its own values and, inside a virtual host, the host's name: so
 * it is stable across restarts and across servers whose configuration
 * agrees, and name-based hosts on one address keep their own. */
static const char *sl_limit_id(apr_pool_t *p, const sl_limit_t *l,
                               const char *host)
{
    const char *basis;

    if (l->named) {
        basis = apr_pstrcat(p, "n\n", l->name, NULL);
    }
    else if (l->quota_expr) {
        /* Not the quota of any request, nor quota-default=: a customer
         * whose quota changes keeps the same count. */
        basis = apr_psprintf(
            p, "s\n%s\nexpr:%s\n%" APR_INT64_T_FMT "\n%" APR_INT64_T_FMT "%s%s",
            l->section, l->quota_expr, l->window, l->burst, host ? "\nh\n" : "",
            host ? host : "");
    }
    else {
        basis = apr_psprintf(p,
                             "s\n%s\n%" APR_INT64_T_FMT "\n%" APR_INT64_T_FMT
                             "\n%" APR_INT64_T_FMT "%s%s%s",
                             l->section, l->requests, l->window, l->burst,
                             host ? "\nh\n" : "", host ? host : "",
                             /* N in flight is not N per lease. */
                             l->algorithm == SL_ALG_CONCURRENT ? "\ni" : "");
    }
    /* Two distinct= lines of one section over other sources are two
     * sets of values. */
    if (l->distinct && !l->named) {
        basis = apr_pstrcat(p, basis, "\nd\n", l->distinct, NULL);
    }
    /* Two lines of one section alike but for key= are two limits; a line
     * without it keeps the id it always had. */
    if (l->key && !l->named) {
        basis = apr_pstrcat(p, basis, "\nk\n", l->key, NULL);
    }
    return sl_hash(p, basis, strlen(basis), SL_POLICY_ID_BYTES);
}

void sl_limit_set_host(apr_pool_t *p, sl_limit_t *l, const char *host)
{
    if (!l->named) {
        l->id = sl_limit_id(p, l, host);
    }
}

/* The options of a SlidingLimit line: each parses its value (val, arg
 * being the whole NAME=VALUE for messages) into l. */
typedef const char *sl_option_fn(apr_pool_t *p, const char *arg,
                                 const char *val, sl_limit_t *l);

static const char *sl_opt_name(apr_pool_t *p, const char *arg, const char *val,
                               sl_limit_t *l)
{
    if (!sl_valid_name(val)) {
        return apr_psprintf(p,
                            "'%s': a name is 1-64 characters of "
                            "letters, digits and -_.:/@",
                            arg);
    }
    l->name = val;
    l->named = 1;
    return NULL;
}

static const char *sl_opt_algorithm(apr_pool_t *p, const char *arg,
                                    const char *val, sl_limit_t *l)
{
    if (l->distinct) {
        return apr_psprintf(p,
                            "'%s': a distinct= limit has no algorithm=", arg);
    }
    return sl_parse_algorithm(p, val, &l->algorithm);
}

/* distinct=SOURCE: any source SlidingLimitKey takes, parsed by
 * sl_config_limit.c (expressions need httpd); here only its text. */
static const char *sl_opt_distinct(apr_pool_t *p, const char *arg,
                                   const char *val, sl_limit_t *l)
{
    if (!*val) {
        return apr_psprintf(p, "'%s': needs a key source", arg);
    }
    if (l->distinct) {
        return apr_psprintf(p, "'%s': distinct= is given twice", arg);
    }
    if (l->algorithm != SL_ALG_UNSET) {
        return apr_psprintf(p,
                            "'%s': a distinct= limit has no algorithm=", arg);
    }
    l->distinct = val;
    l->algorithm = SL_ALG_DISTINCT;
    return NULL;
}

/* key=SOURCE: any source SlidingLimitKey takes, or none (the shared
 * bucket), parsed by sl_config_limit.c (expressions need httpd); here only
 * its text. */
static const char *sl_opt_key(apr_pool_t *p, const char *arg, const char *val,
                              sl_limit_t *l)
{
    if (!*val) {
        return apr_psprintf(p, "'%s': needs a key source", arg);
    }
    if (l->key) {
        return apr_psprintf(p, "'%s': key= is given twice", arg);
    }
    l->key = val;
    return NULL;
}

static const char *sl_opt_burst(apr_pool_t *p, const char *arg, const char *val,
                                sl_limit_t *l)
{
    (void) arg;
    const char *err = sl_parse_int(p, val, 1, SL_MAX_REQUESTS, &l->burst);
    return err ? apr_pstrcat(p, "burst ", err, NULL) : NULL;
}

/* cost=after:bytes, cost=after:header:NAME (a header field name: a
 * token, as RFC 9110 has it). */
static const char *sl_parse_after(apr_pool_t *p, const char *arg,
                                  const char *what, sl_limit_t *l)
{
    const char *s;

    if (!strcasecmp(what, "bytes")) {
        l->after = SL_AFTER_BYTES;
        return NULL;
    }
    if (!strncasecmp(what, "header:", 7) && what[7]) {
        for (s = what + 7; *s; s++) {
            if (!apr_isalnum(*s) && !strchr("!#$%&'*+-.^_`|~", *s)) {
                return apr_psprintf(p, "'%s': '%s' is not a header name", arg,
                                    what + 7);
            }
        }
        l->after = SL_AFTER_HEADER;
        l->after_header = what + 7;
        return NULL;
    }
    return apr_psprintf(p,
                        "'%s': expected cost=after:bytes or "
                        "cost=after:header:NAME",
                        arg);
}

static const char *sl_opt_cost(apr_pool_t *p, const char *arg, const char *val,
                               sl_limit_t *l)
{
    const char *err;

    if (l->cost_expr || l->cost != 1 || l->after) {
        return apr_psprintf(p, "'%s': cost= is given twice", arg);
    }
    if (!strncasecmp(val, "after:", 6)) {
        return sl_parse_after(p, arg, val + 6, l);
    }
    if (!strncasecmp(val, "expr:", 5)) {
        if (!val[5]) {
            return apr_psprintf(p, "'%s': needs an expression", arg);
        }
        l->cost_expr = val + 5;
        return NULL;
    }
    err = sl_parse_int(p, val, 1, SL_MAX_REQUESTS, &l->cost);
    return err ? apr_pstrcat(p, "cost ", err, NULL) : NULL;
}

static const char *sl_opt_quota_default(apr_pool_t *p, const char *arg,
                                        const char *val, sl_limit_t *l)
{
    const char *err;

    if (!l->quota_expr) {
        return apr_psprintf(p, "'%s' needs REQUESTS as expr:STRING", arg);
    }
    if (l->requests) {
        return apr_psprintf(p, "'%s': quota-default= is given twice", arg);
    }
    err = sl_parse_int(p, val, 1, SL_MAX_REQUESTS, &l->requests);
    return err ? apr_pstrcat(p, "quota-default ", err, NULL) : NULL;
}

static const char *sl_opt_cost_unit(apr_pool_t *p, const char *arg,
                                    const char *val, sl_limit_t *l)
{
    (void) arg;
    const char *err = sl_parse_int(p, val, 1, SL_MAX_COST_UNIT, &l->cost_unit);
    return err ? apr_pstrcat(p, "cost-unit ", err, NULL) : NULL;
}

static const char *sl_opt_block(apr_pool_t *p, const char *arg, const char *val,
                                sl_limit_t *l)
{
    (void) arg;
    const char *err = sl_parse_duration(p, val, &l->block);
    return err ? apr_pstrcat(p, "block ", err, NULL) : NULL;
}

static const char *sl_opt_delay(apr_pool_t *p, const char *arg, const char *val,
                                sl_limit_t *l)
{
    (void) arg;
    const char *err = sl_parse_duration(p, val, &l->delay);

    if (err) {
        return apr_pstrcat(p, "delay ", err, NULL);
    }
    if (l->delay > SL_MAX_DELAY) {
        return apr_psprintf(p, "delay '%s' is too long (at most 60s)", val);
    }
    return NULL;
}

static const char *sl_opt_count(apr_pool_t *p, const char *arg, const char *val,
                                sl_limit_t *l)
{
    return sl_parse_count(p, arg, val, l);
}

static const struct {
    const char *name;
    sl_option_fn *parse;
} sl_options[] = {
#define SL_LIMIT_OPTION_ROW(id, name, value) {name, sl_opt_##id},
    SL_LIMIT_OPTIONS(SL_LIMIT_OPTION_ROW)
#undef SL_LIMIT_OPTION_ROW
};
#define SL_NOPTIONS (sizeof(sl_options) / sizeof(sl_options[0]))

/* One NAME=VALUE option of a SlidingLimit line, into l. */
static const char *sl_parse_option(apr_pool_t *p, const char *arg,
                                   sl_limit_t *l)
{
    const char *eq = strchr(arg, '=');
    const char *names = "";
    apr_size_t klen = eq ? (apr_size_t) (eq - arg) : 0, i;

    for (i = 0; eq && i < SL_NOPTIONS; i++) {
        if (strlen(sl_options[i].name) == klen &&
            !strncasecmp(arg, sl_options[i].name, klen)) {
            return sl_options[i].parse(p, arg, eq + 1, l);
        }
    }
    for (i = 0; i < SL_NOPTIONS; i++) {
        names = apr_pstrcat(p, names,
                            !i                    ? ""
                            : i + 1 < SL_NOPTIONS ? ", "
                                                  : " or ",
                            sl_options[i].name, "=", NULL);
    }
    return apr_psprintf(p, "unknown option '%s' (expected %s)", arg, names);
}

/* distinct=: a request brings one value, counted once whatever it costs,
 * and a value is either among the window's or not: no cost, give-back,
 * wait or per-request quota applies to that. */
static const char *sl_limit_check_distinct(apr_pool_t *p, const sl_limit_t *l)
{
    if (l->quota_expr || l->cost_expr || l->after || l->cost != 1) {
        return "distinct= counts values, not units: no cost= and no "
               "REQUESTS as expr: on its line";
    }
    if (l->count || l->delay) {
        return "distinct= cannot be with count= or delay= on one line "
               "(use two lines)";
    }
    if (l->requests > SL_DISTINCT_MAX) {
        return apr_psprintf(p,
                            "distinct=%s: at most %d distinct values per "
                            "window (REQUESTS is %" APR_INT64_T_FMT ")",
                            l->distinct, SL_DISTINCT_MAX, l->requests);
    }
    return NULL;
}

/* What the options of one line must agree on, once all are read. */
static const char *sl_limit_check(apr_pool_t *p, sl_limit_t *l)
{
    double tau;

    if (l->distinct) {
        return sl_limit_check_distinct(p, l);
    }

    if (l->quota_expr && !l->requests) {
        return apr_psprintf(p,
                            "'expr:%s' needs quota-default=N (1-%d): the "
                            "quota of a request whose value is empty or not "
                            "a whole number",
                            l->quota_expr, SL_MAX_REQUESTS);
    }
    if (l->cost_unit && !l->cost_expr && !l->after) {
        return apr_psprintf(p,
                            "'cost-unit=%" APR_INT64_T_FMT
                            "' needs cost=expr: or cost=after: on the same "
                            "line",
                            l->cost_unit);
    }
    /* count= gives the admission back by the status; cost=after: charges
     * more by the response: one request would be both undone and
     * charged. */
    if (l->after && l->count) {
        return "cost=after: and count= cannot be on the same line (use two "
               "lines)";
    }
    if (!l->cost_unit) {
        l->cost_unit = 1;
    }
    /* A request that costs more than the limit holds could never pass. */
    if (l->cost > l->requests ||
        (l->algorithm == SL_ALG_GCRA && l->burst && l->cost > l->burst)) {
        return apr_psprintf(
            p,
            "'cost=%" APR_INT64_T_FMT
            "' is more than the limit holds (%" APR_INT64_T_FMT ")",
            l->cost,
            l->algorithm == SL_ALG_GCRA && l->burst && l->burst < l->requests
                ? l->burst
                : l->requests);
    }
    /* A refusal of a limit with block= starts or meets a block, which a
     * delayed request never waits through: delay= would never apply. */
    if (l->delay && l->block) {
        return "delay= and block= on one line: a blocked request never "
               "waits (give each its own line)";
    }
    /* The section's SlidingLimitAlgorithm may come later or be inherited,
     * so a burst= that would silently do nothing is refused here: on the
     * line, whatever the section says. */
    if (l->burst && l->algorithm != SL_ALG_GCRA) {
        return apr_psprintf(p,
                            "'burst=%" APR_INT64_T_FMT
                            "' needs algorithm=gcra on the same line",
                            l->burst);
    }
    /* GCRA keeps a TAT up to tau = burst * WINDOW / REQUESTS ahead of now,
     * and its key lives that long: bounded like a window, so the TAT stays
     * an exact double and the TTL one that SET PX takes. In doubles: the
     * product can pass 2^63, and only the boundary rounds. */
    /* An expression's quota may be as low as 1 per request. */
    tau = (double) l->burst * (double) l->window /
          (double) (l->quota_expr ? 1 : l->requests);
    if (l->burst && tau > (double) SL_MAX_WINDOW) {
        return apr_psprintf(p,
                            "'burst=%" APR_INT64_T_FMT
                            "': the tolerance burst x WINDOW / REQUESTS is "
                            "%.1f days, more than 366d",
                            l->burst, tau / (86400.0 * APR_USEC_PER_SEC));
    }
    return NULL;
}

const char *sl_parse_limit(apr_pool_t *p, int argc, char *const argv[],
                           const char *section, sl_limit_t **out)
{
    sl_limit_t *l = apr_pcalloc(p, sizeof(*l));
    const char *err;
    int i;

    if (argc < 2) {
        return "needs REQUESTS WINDOW (or 'off')";
    }
    if (!strncasecmp(argv[0], "expr:", 5)) {
        if (!argv[0][5]) {
            return apr_psprintf(p, "'%s': needs an expression", argv[0]);
        }
        l->quota_expr = argv[0] + 5;
    }
    else if ((err =
                  sl_parse_int(p, argv[0], 1, SL_MAX_REQUESTS, &l->requests))) {
        return apr_pstrcat(p, "REQUESTS ", err, NULL);
    }
    if ((err = sl_parse_duration(p, argv[1], &l->window))) {
        return apr_pstrcat(p, "WINDOW ", err, NULL);
    }
    l->algorithm = SL_ALG_UNSET;
    l->cost = 1;
    for (i = 2; i < argc; i++) {
        if ((err = sl_parse_option(p, argv[i], l))) {
            return err;
        }
    }
    if ((err = sl_limit_check(p, l))) {
        return err;
    }
    if (!l->name && l->quota_expr) {
        l->name =
            apr_psprintf(p, "expr-per-%s", sl_format_duration(p, l->window));
    }
    else if (!l->name) {
        l->name = apr_psprintf(p, "%" APR_INT64_T_FMT "-per-%s", l->requests,
                               sl_format_duration(p, l->window));
    }
    l->section = section ? section : "";
    l->id = sl_limit_id(p, l, NULL);
    *out = l;
    return NULL;
}

const char *sl_parse_concurrent(apr_pool_t *p, int argc, char *const argv[],
                                const char *section, sl_limit_t **out)
{
    sl_limit_t *l = apr_pcalloc(p, sizeof(*l));
    const char *err;
    int i;

    if (argc < 1) {
        return "needs N, the requests in flight at most";
    }
    if ((err = sl_parse_int(p, argv[0], 1, SL_MAX_REQUESTS, &l->requests))) {
        return apr_pstrcat(p, "N ", err, NULL);
    }
    l->algorithm = SL_ALG_CONCURRENT;
    l->cost = 1;
    l->cost_unit = 1;
    l->window = SL_LEASE_DEFAULT;
    for (i = 1; i < argc; i++) {
        const char *arg = argv[i], *eq = strchr(arg, '=');
        apr_size_t klen = eq ? (apr_size_t) (eq - arg) : 0;
        if (klen == 5 && !strncasecmp(arg, "lease", 5)) {
            if ((err = sl_parse_duration(p, eq + 1, &l->window))) {
                return apr_pstrcat(p, "lease ", err, NULL);
            }
            if (l->window < SL_LEASE_MIN || l->window > SL_LEASE_MAX) {
                return apr_psprintf(p, "'%s': a lease is 1s to 1h", arg);
            }
        }
        else if (klen == 4 && !strncasecmp(arg, "name", 4)) {
            if ((err = sl_parse_option(p, arg, l))) {
                return err;
            }
        }
        else {
            return apr_psprintf(p,
                                "unknown option '%s' (expected name= or "
                                "lease=)",
                                arg);
        }
    }
    if (!l->name) {
        l->name =
            apr_psprintf(p, "%" APR_INT64_T_FMT "-in-flight", l->requests);
    }
    l->section = section ? section : "";
    l->id = sl_limit_id(p, l, NULL);
    *out = l;
    return NULL;
}

int sl_cost_of(const char *v, apr_int64_t unit, apr_int64_t max,
               apr_int64_t *cost)
{
    apr_int64_t n = 0, c;
    int over = 0;
    const char *s;

    /* Every character is a digit before any is counted: "99...9x" is not
     * a number however large its digits are. */
    for (s = v ? v : ""; *s; s++) {
        if (!apr_isdigit(*s)) {
            return SL_COST_BAD;
        }
    }
    for (s = v ? v : ""; *s && !over; s++) {
        if (!(over = n > (APR_INT64_MAX - 9) / 10)) {
            n = n * 10 + (*s - '0');
        }
    }
    if (over || unit < 1) {
        return SL_COST_OVER;
    }
    c = n / unit + (n % unit != 0);
    c = c < 1 ? 1 : c;
    if (c > max) {
        return SL_COST_OVER;
    }
    *cost = c;
    return SL_COST_OK;
}

int sl_quota_of(const char *v, apr_int64_t *quota)
{
    apr_int64_t n = 0;
    const char *s;

    if (!v || !*v) {
        return SL_QUOTA_BAD;
    }
    /* At most 9 digits are counted (SL_MAX_REQUESTS has 9): no overflow,
     * however long the value. Leading zeros are a whole number too. */
    for (s = v; *s; s++) {
        if (!apr_isdigit(*s)) {
            return SL_QUOTA_BAD;
        }
        n = n * 10 + (*s - '0');
        if (n > SL_MAX_REQUESTS) {
            return SL_QUOTA_BAD;
        }
    }
    if (!n) {
        return SL_QUOTA_ZERO;
    }
    *quota = n;
    return SL_QUOTA_OK;
}

apr_int64_t sl_budget_capacity(const sl_budget_t *b)
{
    return b->algorithm == SL_ALG_GCRA && b->burst ? b->burst : b->requests;
}

int sl_cost_after(const char *v, apr_int64_t unit, apr_int64_t max,
                  apr_int64_t *extra)
{
    apr_int64_t c = 1;
    int why = sl_cost_of(v, unit, max, &c);

    /* The admission reserved one unit already. */
    *extra = why == SL_COST_OK ? c - 1 : max - 1;
    return why;
}
