#include "sl_core.h"

#include <apr_base64.h>
#include <apr_lib.h>
#include <apr_sha1.h>
#include <apr_strings.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
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

int sl_is_token(const char *s)
{
    if (!*s) {
        return 0;
    }
    for (; *s; s++) {
        /* Not strchr: it would take the terminating NUL as a match. */
        if (!apr_isalnum(*s) && !memchr("!#$%&'*+-.^_`|~", *s, 15)) {
            return 0;
        }
    }
    return 1;
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

const char *sl_parse_algorithm(apr_pool_t *p, const char *s, int *alg)
{
    if (!strcasecmp(s, "log")) {
        *alg = SL_ALG_LOG;
    }
    else if (!strcasecmp(s, "counter")) {
        *alg = SL_ALG_COUNTER;
    }
    else if (!strcasecmp(s, "gcra")) {
        *alg = SL_ALG_GCRA;
    }
    else {
        return apr_psprintf(p, "'%s' is not an algorithm (log, counter, gcra)",
                            s);
    }
    return NULL;
}

char sl_algorithm_code(int alg)
{
    return alg == SL_ALG_COUNTER ? 'c' : alg == SL_ALG_GCRA ? 'g' : 'l';
}

const char *sl_algorithm_name(int alg)
{
    return alg == SL_ALG_COUNTER ? "counter"
           : alg == SL_ALG_GCRA  ? "gcra"
                                 : "log";
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
    else {
        basis = apr_psprintf(p,
                             "s\n%s\n%" APR_INT64_T_FMT "\n%" APR_INT64_T_FMT
                             "\n%" APR_INT64_T_FMT "%s%s",
                             l->section, l->requests, l->window, l->burst,
                             host ? "\nh\n" : "", host ? host : "");
    }
    return sl_hash(p, basis, strlen(basis), SL_POLICY_ID_BYTES);
}

void sl_limit_set_host(apr_pool_t *p, sl_limit_t *l, const char *host)
{
    if (!l->named) {
        l->id = sl_limit_id(p, l, host);
    }
}

/* One NAME=VALUE option of a SlidingLimit line, into l. */
static const char *sl_parse_option(apr_pool_t *p, const char *arg,
                                   sl_limit_t *l)
{
    const char *err;
    const char *eq = strchr(arg, '=');
    const char *val = eq ? eq + 1 : "";
    apr_size_t klen = eq ? (apr_size_t) (eq - arg) : 0;

    if (klen == 4 && !strncasecmp(arg, "name", 4)) {
        if (!sl_valid_name(val)) {
            return apr_psprintf(p,
                                "'%s': a name is 1-64 characters of "
                                "letters, digits and -_.:/@",
                                arg);
        }
        l->name = val;
        l->named = 1;
    }
    else if (klen == 9 && !strncasecmp(arg, "algorithm", 9)) {
        if ((err = sl_parse_algorithm(p, val, &l->algorithm))) {
            return err;
        }
    }
    else if (klen == 5 && !strncasecmp(arg, "burst", 5)) {
        if ((err = sl_parse_int(p, val, 1, SL_MAX_REQUESTS, &l->burst))) {
            return apr_pstrcat(p, "burst ", err, NULL);
        }
    }
    else if (klen == 4 && !strncasecmp(arg, "cost", 4) &&
             (l->cost_expr || l->cost != 1)) {
        return apr_psprintf(p, "'%s': cost= is given twice", arg);
    }
    else if (klen == 4 && !strncasecmp(arg, "cost", 4) &&
             !strncasecmp(val, "expr:", 5)) {
        if (!val[5]) {
            return apr_psprintf(p, "'%s': needs an expression", arg);
        }
        l->cost_expr = val + 5;
    }
    else if (klen == 4 && !strncasecmp(arg, "cost", 4)) {
        if ((err = sl_parse_int(p, val, 1, SL_MAX_REQUESTS, &l->cost))) {
            return apr_pstrcat(p, "cost ", err, NULL);
        }
    }
    else if (klen == 9 && !strncasecmp(arg, "cost-unit", 9)) {
        if ((err = sl_parse_int(p, val, 1, SL_MAX_COST_UNIT, &l->cost_unit))) {
            return apr_pstrcat(p, "cost-unit ", err, NULL);
        }
    }
    else if (klen == 5 && !strncasecmp(arg, "block", 5)) {
        if ((err = sl_parse_duration(p, val, &l->block))) {
            return apr_pstrcat(p, "block ", err, NULL);
        }
    }
    else if (klen == 5 && !strncasecmp(arg, "count", 5)) {
        if ((err = sl_parse_count(p, arg, val, l))) {
            return err;
        }
    }
    else {
        return apr_psprintf(p,
                            "unknown option '%s' (expected name=, "
                            "algorithm=, burst=, cost=, cost-unit=, "
                            "block= or count=)",
                            arg);
    }
    return NULL;
}

/* What the options of one line must agree on, once all are read. */
static const char *sl_limit_check(apr_pool_t *p, sl_limit_t *l)
{
    double tau;

    if (l->cost_unit && !l->cost_expr) {
        return apr_psprintf(p,
                            "'cost-unit=%" APR_INT64_T_FMT
                            "' needs cost=expr: on the same line",
                            l->cost_unit);
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
    if (l->burst && l->algorithm != SL_ALG_GCRA &&
        l->algorithm != SL_ALG_UNSET) {
        return apr_psprintf(
            p, "'burst=%" APR_INT64_T_FMT "' only applies to algorithm=gcra",
            l->burst);
    }
    /* GCRA keeps a TAT up to tau = burst * WINDOW / REQUESTS ahead of now,
     * and its key lives that long: bounded like a window, so the TAT stays
     * an exact double and the TTL one that SET PX takes. In doubles: the
     * product can pass 2^63, and only the boundary rounds. */
    tau = (double) l->burst * (double) l->window / (double) l->requests;
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
    if ((err = sl_parse_int(p, argv[0], 1, SL_MAX_REQUESTS, &l->requests))) {
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
    if (!l->name) {
        l->name = apr_psprintf(p, "%" APR_INT64_T_FMT "-per-%s", l->requests,
                               sl_format_duration(p, l->window));
    }
    l->section = section ? section : "";
    l->id = sl_limit_id(p, l, NULL);
    *out = l;
    return NULL;
}

/* The IPv4 address an IPv6 address stands for, if any: IPv4-mapped
 * (::ffff:V4), IPv4-compatible (::V4), the well-known NAT64/SIIT prefix
 * (64:ff9b::V4, RFC 6052), 6to4 (2002:V4::/48, RFC 3056) and Teredo (the
 * client's public address, bits inverted, RFC 4380). A translator puts
 * every IPv4 client in one /64, and a 6to4 site holds 65,536 of them, so
 * these are keyed as the IPv4 client they carry. 0.0.0.0/8 is no client
 * (it leaves :: and ::1 alone), except where the form is unambiguous. */
static const unsigned char *sl_embedded_ipv4(const unsigned char *a,
                                             unsigned char *out)
{
    static const unsigned char zero[12],
        mapped[12] = {[10] = 0xff, [11] = 0xff},
        nat64[12] = {0, 0x64, 0xff, 0x9b};
    const unsigned char *v4 = NULL;
    int i;

    if (!memcmp(a, mapped, 12)) {
        return a + 12;
    }
    if (!memcmp(a, zero, 12) || !memcmp(a, nat64, 12)) {
        v4 = a + 12;
    }
    else if (a[0] == 0x20 && a[1] == 0x02) {
        v4 = a + 2;
    }
    else if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0) {
        for (i = 0; i < 4; i++) {
            out[i] = (unsigned char) ~a[12 + i];
        }
        v4 = out;
    }
    return v4 && v4[0] ? v4 : NULL;
}

const char *sl_ip_key(apr_pool_t *p, const char *ip, int v6bits)
{
    unsigned char a[16], v4buf[4];
    const unsigned char *v4;
    char buf[INET6_ADDRSTRLEN];
    int i;

    if (!ip) {
        return NULL;
    }
    /* A link-local address may carry its zone ("fe80::1%eth0"). */
    if (strchr(ip, '%')) {
        ip = apr_pstrmemdup(p, ip, strchr(ip, '%') - ip);
    }
    /* glibc's inet_pton takes IPv4 only in its one canonical dotted form,
     * so an address it accepts is already its own key: no reformatting on
     * the busiest path. */
    if (inet_pton(AF_INET, ip, a) == 1) {
        return ip;
    }
    if (inet_pton(AF_INET6, ip, a) != 1) {
        return NULL;
    }
    if ((v4 = sl_embedded_ipv4(a, v4buf))) {
        return inet_ntop(AF_INET, v4, buf, sizeof(buf)) ? apr_pstrdup(p, buf)
                                                        : NULL;
    }
    for (i = 0; i < 16; i++) {
        int keep = v6bits - 8 * i;
        if (keep <= 0) {
            a[i] = 0;
        }
        else if (keep < 8) {
            a[i] &= (unsigned char) (0xff << (8 - keep));
        }
    }
    if (!inet_ntop(AF_INET6, a, buf, sizeof(buf))) {
        return NULL;
    }
    return apr_psprintf(p, "%s/%d", buf, v6bits);
}

/* HMAC-SHA1 (RFC 2104) rather than SipHash: the secret is a file of any
 * length, which HMAC takes as it is, and its 160 bits leave the 96 that
 * the key keeps (SipHash gives 64 per key); it is also what any language's
 * standard library computes, for tools and tests that must find a key. */
static void sl_identity_hmac(const unsigned char *secret, apr_size_t slen,
                             const char *source, const char *value,
                             apr_size_t len,
                             unsigned char digest[APR_SHA1_DIGESTSIZE])
{
    unsigned char k[64] = {0}, pad[64];
    apr_sha1_ctx_t ctx;
    int i;

    if (slen > sizeof(k)) {
        apr_sha1_init(&ctx);
        apr_sha1_update_binary(&ctx, secret, (unsigned int) slen);
        apr_sha1_final(k, &ctx);
    }
    else {
        memcpy(k, secret, slen);
    }
    for (i = 0; i < 64; i++) {
        pad[i] = k[i] ^ 0x36;
    }
    apr_sha1_init(&ctx);
    apr_sha1_update_binary(&ctx, pad, sizeof(pad));
    apr_sha1_update_binary(&ctx, (const unsigned char *) source,
                           strlen(source) + 1);
    apr_sha1_update_binary(&ctx, (const unsigned char *) value,
                           (unsigned int) len);
    apr_sha1_final(digest, &ctx);
    for (i = 0; i < 64; i++) {
        pad[i] = k[i] ^ 0x5c;
    }
    apr_sha1_init(&ctx);
    apr_sha1_update_binary(&ctx, pad, sizeof(pad));
    apr_sha1_update_binary(&ctx, digest, APR_SHA1_DIGESTSIZE);
    apr_sha1_final(digest, &ctx);
    memset(k, 0, sizeof(k));
    memset(pad, 0, sizeof(pad));
}

const char *sl_identity(apr_pool_t *p, const unsigned char *secret,
                        apr_size_t slen, const char *source, const char *value,
                        apr_size_t len)
{
    unsigned char digest[APR_SHA1_DIGESTSIZE];
    apr_sha1_ctx_t ctx;
    char *out = apr_palloc(p, apr_base64_encode_len(12));

    /* The whole value is hashed, never a prefix: values that differ only
     * after some cut would share a budget. Its length is already bounded by
     * httpd (LimitRequestFieldSize, LimitRequestFields). The source tag and
     * a NUL keep "user bob" and "header bob" apart. */
    if (secret) {
        sl_identity_hmac(secret, slen, source, value, len, digest);
    }
    else {
        apr_sha1_init(&ctx);
        apr_sha1_update_binary(&ctx, (const unsigned char *) source,
                               strlen(source) + 1);
        apr_sha1_update_binary(&ctx, (const unsigned char *) value, len);
        apr_sha1_final(digest, &ctx);
    }
    apr_base64_encode_binary(out, digest, 12);
    return out;
}

const char *sl_store_key(apr_pool_t *p, const char *prefix,
                         const char *identity, const sl_limit_t *l, int alg,
                         const unsigned char *secret, apr_size_t slen)
{
    char code[2] = {sl_algorithm_code(alg), '\0'};
    /* Under a secret the policy's part is keyed too, like the identity:
     * nobody without it can name a policy whose key is another's. Made
     * here because a section's limits are read before the server's secret
     * may be, and one section may serve hosts with different secrets. */
    const char *policy =
        secret ? sl_identity(p, secret, slen, "policy", l->id, strlen(l->id))
               : l->id;

    return apr_pstrcat(p, prefix, ":{", identity, "}", policy, ".", code, NULL);
}

const char *sl_decision_parse(apr_pool_t *p, const long long *v, apr_size_t nv,
                              int nlimits, sl_decision_t *d)
{
    int i;

    if (nlimits < 1 || nv != 3 + 3 * (apr_size_t) nlimits) {
        return apr_psprintf(p, "reply has %lu values, expected %d",
                            (unsigned long) nv, 3 + 3 * nlimits);
    }
    if (v[0] <= 0 || v[1] < 0 || v[1] >= APR_USEC_PER_SEC ||
        (v[2] != 0 && v[2] != 1)) {
        return "reply header out of range";
    }
    d->now = (apr_int64_t) v[0] * APR_USEC_PER_SEC + v[1];
    d->admitted = (int) v[2];
    d->n = nlimits;
    d->quota = apr_pcalloc(p, sizeof(*d->quota) * nlimits);
    for (i = 0; i < nlimits; i++) {
        const long long *x = v + 3 + 3 * i;
        if ((x[0] != 0 && x[0] != 1) || x[1] < 0 || x[2] < 0) {
            return apr_psprintf(p, "reply for limit %d out of range", i + 1);
        }
        if (d->admitted && !x[0]) {
            return "reply admits a request that a limit refused";
        }
        d->quota[i].ok = (int) x[0];
        d->quota[i].remaining = x[1];
        d->quota[i].reset = x[2];
    }
    if (!d->admitted) {
        for (i = 0; i < nlimits && d->quota[i].ok; i++) {
        }
        if (i == nlimits) {
            return "reply refuses a request that every limit admitted";
        }
    }
    return NULL;
}

const char *sl_peek_parse(apr_pool_t *p, const long long *v, apr_size_t nv,
                          int nlimits, sl_decision_t *d, apr_int64_t **blocked)
{
    const char *err;
    int i;

    if (nlimits < 1 || nv != 3 + 4 * (apr_size_t) nlimits) {
        return apr_psprintf(p, "reply has %lu values, expected %d",
                            (unsigned long) nv, 3 + 4 * nlimits);
    }
    if ((err =
             sl_decision_parse(p, v, nv - (apr_size_t) nlimits, nlimits, d))) {
        return err;
    }
    *blocked = apr_palloc(p, sizeof(**blocked) * nlimits);
    for (i = 0; i < nlimits; i++) {
        const long long b = v[3 + 3 * nlimits + i];
        if (b < 0 || (b > 0 && d->quota[i].ok)) {
            return apr_psprintf(p,
                                "reply for the block of limit %d out of "
                                "range",
                                i + 1);
        }
        (*blocked)[i] = b;
    }
    return NULL;
}

int sl_decision_pick(const sl_decision_t *d)
{
    int best = 0, i;

    for (i = 1; i < d->n; i++) {
        const sl_quota_t *a = &d->quota[i], *b = &d->quota[best];
        if (!d->admitted) {
            /* The request waits for the slowest refusing limit. */
            if (!a->ok && (b->ok || a->reset > b->reset)) {
                best = i;
            }
        }
        else if (a->remaining < b->remaining ||
                 (a->remaining == b->remaining && a->reset > b->reset)) {
            best = i;
        }
    }
    return best;
}

apr_int64_t sl_ceil_seconds(apr_int64_t us)
{
    apr_int64_t s = (us + APR_USEC_PER_SEC - 1) / APR_USEC_PER_SEC;
    return s < 1 ? 1 : s;
}

apr_int64_t sl_retry_after(const sl_decision_t *d)
{
    return sl_ceil_seconds(d->quota[sl_decision_pick(d)].reset);
}

const char *sl_sf_string(apr_pool_t *p, const char *s)
{
    /* RFC 8941 sf-string: printable ASCII, '"' and '\' escaped. */
    char *out = apr_palloc(p, 2 * strlen(s) + 3), *o = out;

    *o++ = '"';
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') {
            *o++ = '\\';
        }
        *o++ = (*s >= 0x20 && *s < 0x7f) ? *s : '_';
    }
    *o++ = '"';
    *o = '\0';
    return out;
}

const char *sl_json_string(apr_pool_t *p, const char *s)
{
    char *out = apr_palloc(p, 6 * strlen(s) + 3), *o = out;

    *o++ = '"';
    for (; *s; s++) {
        unsigned char c = (unsigned char) *s;
        if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char) c;
        }
        else if (c < 0x20 || c == 0x7f) {
            o += apr_snprintf(o, 7, "\\u%04x", c);
        }
        else {
            *o++ = (char) c;
        }
    }
    *o++ = '"';
    *o = '\0';
    return out;
}

static apr_int64_t sl_reset_seconds(apr_int64_t us)
{
    return us <= 0 ? 0 : sl_ceil_seconds(us);
}

/* Every request with a limit carries these headers, so they are built with
 * apr_pstrcat and apr_off_t_toa: apr_psprintf's formatter took a third of
 * the request path's instructions (bench/profile.sh). apr_off_t is 64 bits
 * (large-file builds, as sl_redis.c also assumes). */
const char *sl_i64toa(apr_pool_t *p, apr_int64_t v)
{
    return apr_off_t_toa(p, (apr_off_t) v);
}

void sl_quota_headers(apr_pool_t *p, int flags,
                      const apr_array_header_t *limits, const sl_decision_t *d,
                      sl_header_fn *add, void *ctx)
{
    const sl_limit_t *const *l = (const sl_limit_t *const *) limits->elts;
    int pick = sl_decision_pick(d);
    const sl_quota_t *r = &d->quota[pick];
    apr_int64_t t = sl_reset_seconds(r->reset);
    int i;

    if (flags & SL_HDR_IETF) {
        char *policy = NULL;
        for (i = 0; i < d->n; i++) {
            char *one = apr_pstrcat(
                p, sl_sf_string(p, l[i]->name),
                ";q=", sl_i64toa(p, l[i]->requests),
                ";w=", sl_i64toa(p, sl_ceil_seconds(l[i]->window)), NULL);
            policy = policy ? apr_pstrcat(p, policy, ", ", one, NULL) : one;
        }
        add(ctx, "RateLimit-Policy", policy);
        add(ctx, "RateLimit",
            apr_pstrcat(p, sl_sf_string(p, l[pick]->name),
                        ";r=", sl_i64toa(p, r->remaining),
                        ";t=", sl_i64toa(p, t), NULL));
    }
    if (flags & SL_HDR_DRAFT03) {
        add(ctx, "RateLimit-Limit", sl_i64toa(p, l[pick]->requests));
        add(ctx, "RateLimit-Remaining", sl_i64toa(p, r->remaining));
        add(ctx, "RateLimit-Reset", sl_i64toa(p, t));
    }
    if (flags & SL_HDR_XRL) {
        add(ctx, "X-RateLimit-Limit", sl_i64toa(p, l[pick]->requests));
        add(ctx, "X-RateLimit-Remaining", sl_i64toa(p, r->remaining));
        add(ctx, "X-RateLimit-Reset",
            sl_i64toa(p, (d->now + (r->reset > 0 ? r->reset : 0) +
                          APR_USEC_PER_SEC - 1) /
                             APR_USEC_PER_SEC));
    }
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

apr_int64_t sl_budget_capacity(const sl_budget_t *b)
{
    return b->algorithm == SL_ALG_GCRA && b->burst ? b->burst : b->requests;
}

const char *sl_json_cost_body(apr_pool_t *p, int why, const char *policy,
                              apr_int64_t max)
{
    /* A policy name is letters, digits and -_.:/@ (sl_valid_name): nothing
     * to escape. */
    if (why == SL_COST_BAD) {
        return apr_psprintf(p,
                            "{\"error\":{\"code\":\"BAD_COST\",\"message\":"
                            "\"The cost of this request is not a whole "
                            "number.\",\"policy\":\"%s\"}}\n",
                            policy);
    }
    return apr_psprintf(p,
                        "{\"error\":{\"code\":\"COST_EXCEEDS_LIMIT\","
                        "\"message\":\"This request costs more than the "
                        "limit holds (%" APR_INT64_T_FMT
                        " units); it can never be admitted.\",\"policy\":"
                        "\"%s\",\"limit\":%" APR_INT64_T_FMT "}}\n",
                        max, policy, max);
}

const char *sl_json_body(apr_pool_t *p, int unavailable, apr_int64_t retry)
{
    const char *unit = retry == 1 ? "second" : "seconds";

    if (unavailable) {
        return apr_psprintf(
            p,
            "{\"error\":{\"code\":\"SERVICE_UNAVAILABLE\",\"message\":"
            "\"Rate limiting is unavailable. Try again in %" APR_INT64_T_FMT
            " %s.\",\"retry_after_seconds\":%" APR_INT64_T_FMT "}}\n",
            retry, unit, retry);
    }
    return apr_psprintf(
        p,
        "{\"error\":{\"code\":\"TOO_MANY_REQUESTS\",\"message\":"
        "\"Rate limit exceeded. Try again in %" APR_INT64_T_FMT
        " %s.\",\"retry_after_seconds\":%" APR_INT64_T_FMT "}}\n",
        retry, unit, retry);
}

static const char *sl_parse_hostport(apr_pool_t *p, const char *s,
                                     sl_hostport_t *hp)
{
    const char *colon;
    apr_int64_t port = hp->port ? hp->port : 6379;
    const char *err;

    if (*s == '[') {
        const char *end = strchr(s, ']');
        if (!end) {
            return apr_psprintf(p, "'%s': unbalanced '['", s);
        }
        hp->host = apr_pstrmemdup(p, s + 1, end - s - 1);
        colon = end[1] == ':' ? end + 1 : NULL;
        if (end[1] && !colon) {
            return apr_psprintf(p, "'%s': junk after ']'", s);
        }
    }
    else {
        colon = strchr(s, ':');
        /* host:port:port is a typo and a bare IPv6 address is ambiguous
         * (is its last group the port?): neither is taken as a host. */
        if (colon && strchr(colon + 1, ':')) {
            return apr_psprintf(p,
                                "'%s': more than one ':' (an IPv6 address "
                                "goes in brackets: [::1]:6379)",
                                s);
        }
        hp->host = colon ? apr_pstrmemdup(p, s, colon - s) : apr_pstrdup(p, s);
    }
    if (!*hp->host) {
        return apr_psprintf(p, "'%s': no host", s);
    }
    if (colon && (err = sl_parse_int(p, colon + 1, 1, 65535, &port))) {
        return apr_pstrcat(p, "port ", err, NULL);
    }
    hp->port = (int) port;
    return NULL;
}

/* The userinfo of a store URL ends at the last '@' before the location, so
 * a password may hold '@'. The display form shows neither. */
static const char *sl_split_userinfo(apr_pool_t *p, const char *rest,
                                     const char *at, sl_store_url_t *out)
{
    const char *colon;

    if (!at) {
        return rest;
    }
    colon = memchr(rest, ':', at - rest);
    if (colon) {
        out->user = colon > rest ? apr_pstrmemdup(p, rest, colon - rest) : NULL;
        out->password = apr_pstrmemdup(p, colon + 1, at - colon - 1);
    }
    else {
        out->password = apr_pstrmemdup(p, rest, at - rest);
        out->bare_userinfo = 1;
    }
    return at + 1;
}

/* Neither the password nor the user name is ever shown: the display form
 * says only that credentials are there. */
static const char *sl_display_userinfo(apr_pool_t *p, const sl_store_url_t *u)
{
    (void) p;
    return u->user || u->password ? "***@" : "";
}

const char *sl_redact_url(apr_pool_t *p, const char *url)
{
    const char *at = strrchr(url, '@');
    const char *start, *scheme;

    if (!at) {
        return url;
    }
    scheme = strstr(url, "://");
    if (scheme && scheme < at) {
        start = scheme + 3;
    }
    else if (!strncasecmp(url, "unix:", 5)) {
        start = url + 5;
    }
    else {
        start = url;
    }
    return apr_pstrcat(p, apr_pstrmemdup(p, url, start - url), "***@", at + 1,
                       NULL);
}

/* host:port[,host:port...]: one node, cluster seeds or Sentinels. */
static const char *sl_parse_nodes(apr_pool_t *p, const char *list,
                                  int default_port, int many,
                                  sl_store_url_t *out)
{
    char *copy = apr_pstrdup(p, list), *tok, *state;
    const char *err;

    if (!many) {
        sl_hostport_t *hp = apr_array_push(out->nodes);
        hp->port = default_port;
        return sl_parse_hostport(p, copy, hp);
    }
    for (tok = apr_strtok(copy, ",", &state); tok;
         tok = apr_strtok(NULL, ",", &state)) {
        sl_hostport_t *hp = apr_array_push(out->nodes);
        hp->port = default_port;
        if ((err = sl_parse_hostport(p, tok, hp))) {
            return err;
        }
    }
    if (!out->nodes->nelts) {
        return apr_psprintf(p, "'%s': no node", list);
    }
    return NULL;
}

static const char *sl_parse_db(apr_pool_t *p, const char *s, int *db)
{
    apr_int64_t v = 0;
    const char *err;

    if (s && *s && (err = sl_parse_int(p, s, 0, 65535, &v))) {
        return apr_pstrcat(p, "db ", err, NULL);
    }
    *db = (int) v;
    return NULL;
}

static const char *sl_nodes_text(apr_pool_t *p, const sl_store_url_t *u)
{
    const char *s = "";
    int i;

    for (i = 0; i < u->nodes->nelts; i++) {
        const sl_hostport_t *hp = &APR_ARRAY_IDX(u->nodes, i, sl_hostport_t);
        s = apr_psprintf(p, "%s%s%s%s%s:%d", s, i ? "," : "",
                         strchr(hp->host, ':') ? "[" : "", hp->host,
                         strchr(hp->host, ':') ? "]" : "", hp->port);
    }
    return s;
}

static const char *sl_parse_unix(apr_pool_t *p, const char *url,
                                 sl_store_url_t *out)
{
    const char *rest = url + 5, *q, *at = NULL, *s;
    const char *err;

    out->kind = SL_STORE_UNIX;
    if (!strncmp(rest, "//", 2)) {
        rest += 2;
    }
    /* unix:[user:password@]/path: the credentials end at the last "@/". */
    for (s = rest; (s = strstr(s, "@/")); s++) {
        at = s;
    }
    rest = sl_split_userinfo(p, rest, at, out);
    q = strchr(rest, '?');
    out->path = q ? apr_pstrmemdup(p, rest, q - rest) : apr_pstrdup(p, rest);
    if (*out->path != '/') {
        return apr_psprintf(p, "'%s': a unix socket path must be absolute",
                            sl_redact_url(p, url));
    }
    if (q) {
        if (strncmp(q, "?db=", 4)) {
            return apr_psprintf(p, "'%s': the only option is ?db=N", q);
        }
        if ((err = sl_parse_db(p, q + 4, &out->db))) {
            return err;
        }
    }
    out->display =
        apr_pstrcat(p, "unix:", sl_display_userinfo(p, out), out->path, NULL);
    return NULL;
}

/* redis[s]://, cluster[s]://, sentinel[s]:// after the scheme. */
static const char *sl_parse_network(apr_pool_t *p, const char *scheme,
                                    const char *rest, sl_store_url_t *out)
{
    const char *slash, *err, *nodes;
    const char *at = strrchr(rest, '@');

    if (out->kind == SL_STORE_SENTINEL) {
        /* An '@' after the last '/' is the master name's. */
        const char *last = strrchr(rest, '/');
        if (at && last && last < at) {
            at = NULL;
        }
    }
    rest = sl_split_userinfo(p, rest, at, out);
    slash = strchr(rest, '/');
    nodes = slash ? apr_pstrmemdup(p, rest, slash - rest) : rest;
    if (!*nodes) {
        return apr_psprintf(p, "'%s': no host", rest);
    }
    if ((err = sl_parse_nodes(p, nodes,
                              out->kind == SL_STORE_SENTINEL ? 26379 : 6379,
                              out->kind != SL_STORE_TCP, out))) {
        return err;
    }
    if (out->kind == SL_STORE_SENTINEL) {
        const char *name = slash ? slash + 1 : "";
        const char *db = strchr(name, '/');
        out->master = db ? apr_pstrmemdup(p, name, db - name) : name;
        if (!*out->master) {
            return apr_psprintf(p,
                                "'%s': a Sentinel URL names the master: "
                                "host:port[,...]/MASTERNAME[/db]",
                                nodes);
        }
        for (name = out->master; *name; name++) {
            if (!apr_isgraph(*name)) {
                return apr_psprintf(p, "'%s' is not a master name",
                                    out->master);
            }
        }
        if ((err = sl_parse_db(p, db ? db + 1 : NULL, &out->db))) {
            return err;
        }
    }
    else if (out->kind == SL_STORE_CLUSTER) {
        /* A cluster has only database 0. */
        if (slash && slash[1] && strcmp(slash + 1, "0")) {
            return apr_psprintf(p, "'%s': a cluster has only database 0",
                                slash + 1);
        }
    }
    else if ((err = sl_parse_db(p, slash ? slash + 1 : NULL, &out->db))) {
        return err;
    }
    out->display = apr_psprintf(
        p, "%s://%s%s%s%s%s", scheme, sl_display_userinfo(p, out),
        sl_nodes_text(p, out), out->master ? "/" : "",
        out->master ? out->master : "",
        out->kind == SL_STORE_CLUSTER ? "" : apr_psprintf(p, "/%d", out->db));
    return NULL;
}

static const char *sl_parse_store_url_only(apr_pool_t *p, const char *url,
                                           sl_store_url_t *out)
{
    static const struct {
        const char *scheme;
        int kind, tls;
    } schemes[] = {{"redis", SL_STORE_TCP, 0},
                   {"rediss", SL_STORE_TCP, 1},
                   {"cluster", SL_STORE_CLUSTER, 0},
                   {"clusters", SL_STORE_CLUSTER, 1},
                   {"sentinel", SL_STORE_SENTINEL, 0},
                   {"sentinels", SL_STORE_SENTINEL, 1}};
    apr_size_t i;

    memset(out, 0, sizeof(*out));
    out->nodes = apr_array_make(p, 1, sizeof(sl_hostport_t));
    if (!strcasecmp(url, "shm")) {
        out->kind = SL_STORE_SHM;
        out->display = "shm";
        return NULL;
    }
    if (!strncasecmp(url, "unix:", 5)) {
        return sl_parse_unix(p, url, out);
    }
    for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
        apr_size_t n = strlen(schemes[i].scheme);
        if (!strncasecmp(url, schemes[i].scheme, n) &&
            !strncmp(url + n, "://", 3)) {
            out->kind = schemes[i].kind;
            out->tls = schemes[i].tls;
            return sl_parse_network(p, schemes[i].scheme, url + n + 3, out);
        }
    }
    return apr_psprintf(
        p,
        "'%s' is not a store (redis[s]://[user:password@]host[:port][/db], "
        "unix:[user:password@]/path[?db=N], cluster[s]://host:port[,...], "
        "sentinel[s]://host:port[,...]/MASTERNAME[/db] or shm)",
        sl_redact_url(p, url));
}

const char *sl_parse_store_url(apr_pool_t *p, const char *url,
                               sl_store_url_t *out)
{
    const char *err = sl_parse_store_url_only(p, url, out);

    if (err) {
        return err;
    }
    /* What names the data: where (the display form, which holds no
     * password) and the database. Two spellings of one server only cost
     * the deny cache a store call. */
    out->tag = (sl_fnv1a(SL_FNV_INIT, out->display, strlen(out->display)) ^
                (apr_uint32_t) out->db) *
               16777619u;
    return NULL;
}

apr_uint32_t sl_fnv1a(apr_uint32_t h, const void *data, apr_size_t len)
{
    const unsigned char *b = data;

    while (len--) {
        h = (h ^ *b++) * 16777619u;
    }
    return h;
}

const char *sl_hash_tag(const char *key, apr_size_t len, apr_size_t *tag_len)
{
    const char *open = memchr(key, '{', len);

    if (open) {
        const char *close =
            memchr(open + 1, '}', len - (apr_size_t) (open + 1 - key));
        if (close && close > open + 1) {
            *tag_len = (apr_size_t) (close - open - 1);
            return open + 1;
        }
    }
    *tag_len = len;
    return key;
}

unsigned int sl_key_slot(const char *key, apr_size_t len)
{
    unsigned int crc = 0;
    apr_size_t i;

    key = sl_hash_tag(key, len, &len);
    for (i = 0; i < len; i++) {
        int b;
        crc ^= (unsigned int) (unsigned char) key[i] << 8;
        for (b = 0; b < 8; b++) {
            crc = (crc & 0x8000) ? ((crc << 1) ^ 0x1021) : (crc << 1);
        }
    }
    return (crc & 0xffff) % 16384;
}
