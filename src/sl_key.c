/* SPDX-License-Identifier: Apache-2.0 */
#include "sl_key.h"
#include "sl_form.h"
#include "sl_ident.h"
#include "sl_memo.h"
#include "sl_proc.h"

#include "http_log.h"
#include "apr_base64.h"
#include "apr_lib.h"
#include "apr_strings.h"

#include <string.h>

APLOG_USE_MODULE(slidinglimit);

/* The user name a Basic Authorization header attempts, as sent: nobody
 * has checked it. What a section with count=, decided before
 * authentication, counts failed logins by (sl_key_user); never a key
 * anywhere else. NULL when there is none. */
static const char *sl_basic_user(request_rec *r)
{
    const char *h = apr_table_get(r->headers_in, "Authorization");
    char *dec, *colon;
    int len;

    if (!h || strncasecmp(h, "Basic", 5) || !apr_isspace(h[5])) {
        return NULL;
    }
    h += 5;
    while (apr_isspace(*h)) {
        h++;
    }
    dec = apr_palloc(r->pool, apr_base64_decode_len(h) + 1);
    len = apr_base64_decode(dec, h);
    dec[len > 0 ? len : 0] = '\0';
    if (!(colon = strchr(dec, ':'))) {
        return NULL;
    }
    *colon = '\0';
    return dec;
}

static const sl_key_source_t sl_key_ip = {SL_KEY_IP, NULL, NULL, 0};

/* The key sources of dc: SlidingLimitKey's, or ip. */
static const sl_key_source_t *sl_key_sources(const sl_dir_conf_t *dc, int *n)
{
    *n = dc->keys ? dc->keys->nelts : 1;
    return dc->keys ? (const sl_key_source_t *) dc->keys->elts : &sl_key_ip;
}

/* The address a as ip keys it: masked as SlidingLimitIPv6Prefix says; one
 * that does not parse keeps its own budget, as it is. */
static const char *sl_key_address(apr_pool_t *p, const sl_dir_conf_t *dc,
                                  const char *a)
{
    const char *m =
        sl_ip_key(p, a, SL_OR(dc->ipv6_prefix, SL_DEFAULT_IPV6_PREFIX));

    return m ? m : a;
}

/* sl_identity under sc's secret, from its key prepared once where the
 * memo m (NULL: none) has it. */
static const char *sl_key_digest(apr_pool_t *p, sl_memo_t *m,
                                 const sl_server_conf_t *sc, const char *source,
                                 const char *v, apr_size_t n)
{
    const sl_hmac_t *k = sl_memo_hmac(m, sc->secret, sc->secret_len);

    return k ? sl_identity_with(p, k, source, v, n)
             : sl_identity(p, sc->secret, sc->secret_len, source, v, n);
}

/* The identity of a user name (not empty). An authenticated one is
 * itself. One only attempted (sent: the Basic name a section with count=
 * reads before authentication) has a tag of its own, so that failed
 * logins as alice never spend what the authenticated alice has, and is
 * paired with the client address unless the source says any-address: a
 * lockout per name alone lets anyone lock alice out from anywhere, one per
 * name and address stops guessing her password from one address and
 * leaves her own address alone. */
static const char *
sl_key_user_make(apr_pool_t *p, sl_memo_t *m, const sl_server_conf_t *sc,
                 const sl_dir_conf_t *dc, const sl_key_source_t *src,
                 const char *name, int sent, const char *address)
{
    char *v = apr_pstrdup(p, name), *pair;
    apr_size_t n, alen;

    /* A login backend that ignores case (LDAP, many SQL setups) takes
     * Alice and alice for one account: one budget. */
    if (src->flags & SL_USER_NOCASE) {
        ap_str_tolower(v);
    }
    n = strlen(v);
    if (!sent) {
        return sl_key_digest(p, m, sc, "user", v, n);
    }
    if (src->flags & SL_USER_ANY_ADDRESS) {
        return sl_key_digest(p, m, sc, "sent-user", v, n);
    }
    /* Name, NUL, address: neither holds a NUL, so no two pairs meet. */
    address = sl_key_address(p, dc, address ? address : "");
    alen = strlen(address);
    pair = apr_palloc(p, n + 1 + alen);
    memcpy(pair, v, n + 1);
    memcpy(pair + n + 1, address, alen);
    return sl_key_digest(p, m, sc, "sent-user+ip", pair, n + 1 + alen);
}

/* The identity of the value v (not empty) of source src other than user:
 * with sl_key_user, the one function that makes identities, for requests
 * and for the operator's look. */
static const char *sl_key_hash_make(apr_pool_t *p, sl_memo_t *m,
                                    const sl_server_conf_t *sc,
                                    const sl_dir_conf_t *dc,
                                    const sl_key_source_t *src, const char *v)
{
    const char *tag = "ip";
    char *t;

    switch (src->type) {
    case SL_KEY_IP:
        v = sl_key_address(p, dc, v);
        break;
    case SL_KEY_USER:
        tag = "user";
        break;
    case SL_KEY_HEADER:
        tag = apr_pstrcat(p, "header:", src->name, NULL);
        break;
    case SL_KEY_ENV:
        tag = apr_pstrcat(p, "env:", src->name, NULL);
        break;
    case SL_KEY_EXPR:
        tag = apr_pstrcat(p, "expr:", src->name, NULL);
        break;
    case SL_KEY_FORM:
        /* The field's name as configured (PHP's are case-sensitive); the
         * value as a request's is normalised, also for the operator's. */
        t = (char *) sl_form_normal(p, v, strlen(v));
        return sl_key_digest(p, m, sc, apr_pstrcat(p, "form:", src->name, NULL),
                             t ? t : v, strlen(t ? t : v));
    }
    t = apr_pstrdup(p, tag);
    ap_str_tolower(t);
    return sl_key_digest(p, m, sc, t, v, strlen(v));
}

/* What an identity is made of, as the memo keys it (sl_memo.h): kind,
 * two small numbers (an IPv6 prefix, a user source's mode), then a and b,
 * each with its NUL (no part holds one). 0 when it does not fit. */
static apr_size_t sl_key_in(char *in, char kind, int x, int y, const char *a,
                            const char *b)
{
    apr_size_t n = strlen(a) + 1, m = strlen(b) + 1;

    if (3 + n + m > SL_MEMO_IN) {
        return 0;
    }
    in[0] = kind;
    in[1] = (char) x;
    in[2] = (char) y;
    memcpy(in + 3, a, n);
    memcpy(in + 3 + n, b, m);
    return 3 + n + m;
}

/* The identity the memo m holds for in (n bytes; 0: none), in p; *set
 * where sl_key_keep keeps it. */
static const char *sl_key_recall(apr_pool_t *p, sl_memo_t *m,
                                 const sl_server_conf_t *sc, const char *in,
                                 apr_size_t n, unsigned int *set)
{
    return n ? sl_memo_find(m, p, sc->secret, sc->secret_len, in, n, set)
             : NULL;
}

/* id, which in made, kept in the memo m. */
static const char *sl_key_keep(sl_memo_t *m, unsigned int set,
                               const sl_server_conf_t *sc, const char *in,
                               apr_size_t n, const char *id)
{
    if (n) {
        sl_memo_put(m, set, sc->secret, sc->secret_len, in, n, id);
    }
    return id;
}

/* sl_key_user_make's identity, through the memo m (NULL: none). */
static const char *sl_key_user(apr_pool_t *p, sl_memo_t *m,
                               const sl_server_conf_t *sc,
                               const sl_dir_conf_t *dc,
                               const sl_key_source_t *src, const char *name,
                               int sent, const char *address)
{
    char in[SL_MEMO_IN];
    int mode = (sent ? 1 : 0) | (src->flags & SL_USER_NOCASE ? 2 : 0) |
               (src->flags & SL_USER_ANY_ADDRESS ? 4 : 0);
    /* Only a name attempted from an address is paired with it. */
    const char *a = (mode & 5) == 1 && address ? address : "";
    apr_size_t n =
        m ? sl_key_in(in, 'U', mode,
                      SL_OR(dc->ipv6_prefix, SL_DEFAULT_IPV6_PREFIX), name, a)
          : 0;
    unsigned int set = 0;
    const char *id = sl_key_recall(p, m, sc, in, n, &set);

    return id ? id
              : sl_key_keep(
                    m, set, sc, in, n,
                    sl_key_user_make(p, m, sc, dc, src, name, sent, address));
}

/* sl_key_hash_make's identity, through the memo m (NULL: none). */
static const char *sl_key_hash(apr_pool_t *p, sl_memo_t *m,
                               const sl_server_conf_t *sc,
                               const sl_dir_conf_t *dc,
                               const sl_key_source_t *src, const char *v)
{
    static const char kinds[] = {
        [SL_KEY_IP] = 'i',  [SL_KEY_USER] = 'u', [SL_KEY_HEADER] = 'h',
        [SL_KEY_ENV] = 'e', [SL_KEY_EXPR] = 'x', [SL_KEY_FORM] = 'f'};
    char in[SL_MEMO_IN];
    apr_size_t n =
        m && src->type >= 0 && src->type < (int) sizeof(kinds)
            ? sl_key_in(in, kinds[src->type],
                        SL_OR(dc->ipv6_prefix, SL_DEFAULT_IPV6_PREFIX), 0,
                        src->name ? src->name : "", v)
            : 0;
    unsigned int set = 0;
    const char *id = sl_key_recall(p, m, sc, in, n, &set);

    return id ? id
              : sl_key_keep(m, set, sc, in, n,
                            sl_key_hash_make(p, m, sc, dc, src, v));
}

/* The shared bucket's identity, through the memo m (NULL: none). */
static const char *sl_key_none(apr_pool_t *p, sl_memo_t *m,
                               const sl_server_conf_t *sc)
{
    char in[SL_MEMO_IN];
    apr_size_t n = m ? sl_key_in(in, 'n', 0, 0, "", "") : 0;
    unsigned int set = 0;
    const char *id = sl_key_recall(p, m, sc, in, n, &set);

    return id ? id
              : sl_key_keep(m, set, sc, in, n,
                            sl_key_digest(p, m, sc, "none", "-", 1));
}

/* The one budget of the requests whose form body the source src did not
 * read (too large, no length): padding a login past the bound buys no
 * fresh budget, it shares this one with every other such request. */
static const char *sl_key_form_unread(apr_pool_t *p, sl_memo_t *m,
                                      const sl_server_conf_t *sc,
                                      const sl_key_source_t *src)
{
    char in[SL_MEMO_IN];
    apr_size_t n = m ? sl_key_in(in, 'F', 0, 0, src->name, "") : 0;
    unsigned int set = 0;
    const char *id = sl_key_recall(p, m, sc, in, n, &set);

    return id ? id
              : sl_key_keep(m, set, sc, in, n,
                            sl_key_digest(
                                p, m, sc,
                                apr_pstrcat(p, "form-unread:", src->name, NULL),
                                "-", 1));
}

/* The budget's identity: the first key source with a value, hashed. */
const char *sl_key_identity(request_rec *r, const sl_dir_conf_t *dc,
                            int before_auth)
{
    const sl_server_conf_t *sc = sl_config_server(r->server);
    int n, i, user = 0, form = 0;
    const sl_key_source_t *src = sl_key_sources(dc, &n);
    sl_memo_t *m = sc->proc ? sc->proc->memo : NULL;

    for (i = 0; i < n; i++) {
        const char *v = NULL, *err = NULL;
        switch (src[i].type) {
        case SL_KEY_IP:
            v = r->useragent_ip;
            break;
        case SL_KEY_USER:
            /* Only authentication makes r->user a user; the name a client
             * sends is nobody's until it has. */
            user = 1;
            v = before_auth ? sl_basic_user(r) : r->user;
            if (v && *v) {
                return sl_key_user(r->pool, m, sc, dc, &src[i], v, before_auth,
                                   r->useragent_ip);
            }
            continue;
        case SL_KEY_HEADER:
            v = apr_table_get(r->headers_in, src[i].name);
            break;
        case SL_KEY_ENV:
            v = apr_table_get(r->subprocess_env, src[i].name);
            break;
        case SL_KEY_EXPR:
            v = ap_expr_str_exec(r, src[i].expr, &err);
            if (err) {
                ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                              "mod_slidinglimit: key expression '%s' failed: "
                              "%s",
                              src[i].name, err);
                v = NULL;
            }
            break;
        case SL_KEY_FORM:
            /* Normalised already (sl_form_normal). */
            form = 1;
            switch (sl_form_value(r, src[i].name, &v)) {
            case SL_FORM_UNREAD:
                return sl_key_form_unread(r->pool, m, sc, &src[i]);
            case SL_FORM_VALUE:
                return sl_key_hash(r->pool, m, sc, dc, &src[i], v);
            }
            continue;
        }
        if (v && *v) {
            return sl_key_hash(r->pool, m, sc, dc, &src[i], v);
        }
    }
    /* Requests without a user are many clients (every browser's first try
     * sends no credentials): one shared bucket would let a few of them
     * spend, or block=, everybody's. A login without its account name
     * likewise. */
    if ((user || form) && r->useragent_ip) {
        return sl_key_hash(r->pool, m, sc, dc, &sl_key_ip, r->useragent_ip);
    }
    return sl_key_none(r->pool, m, sc);
}

/* The query's name of a source: "ip", "user", "header:NAME", "env:NAME",
 * "expr" (the section's first expression). */
static int sl_key_names(const sl_key_source_t *src, const char *source)
{
    switch (src->type) {
    case SL_KEY_IP:
        return !strcmp(source, "ip");
    case SL_KEY_USER:
        return !strcmp(source, "user");
    case SL_KEY_HEADER:
        return !strncmp(source, "header:", 7) &&
               !strcasecmp(source + 7, src->name);
    case SL_KEY_ENV:
        return !strncmp(source, "env:", 4) && !strcmp(source + 4, src->name);
    case SL_KEY_FORM:
        return !strncmp(source, "form:", 5) && !strcmp(source + 5, src->name);
    default:
        return !strcmp(source, "expr");
    }
}

/* The section's first source of type type, or NULL. */
static const sl_key_source_t *sl_key_user_source(const sl_key_source_t *src,
                                                 int n, int type)
{
    int i;

    for (i = 0; i < n; i++) {
        if (src[i].type == type) {
            return &src[i];
        }
    }
    return NULL;
}

/* The identity value gives under the source one, which the query named:
 * NULL with *err when the value cannot be one. */
static const char *sl_key_of_source(apr_pool_t *p, const sl_server_conf_t *sc,
                                    const sl_dir_conf_t *dc,
                                    const sl_key_source_t *one, int paired,
                                    int before_auth, const char *source,
                                    const char *value, const char *address,
                                    const char **err)
{
    if (!*value) {
        *err = apr_psprintf(p,
                            "%s: an empty value is no identity (the "
                            "next source, or none, would be used)",
                            source);
        return NULL;
    }
    if (one->type == SL_KEY_USER) {
        if (paired && !address) {
            *err = "user: this section decides before authentication "
                   "(count=) and keys the name attempted with the "
                   "client address: give ip=ADDR too";
            return NULL;
        }
        if (paired &&
            !sl_ip_key(p, address,
                       SL_OR(dc->ipv6_prefix, SL_DEFAULT_IPV6_PREFIX))) {
            *err = apr_psprintf(p, "ip: '%s' is not an IP address", address);
            return NULL;
        }
        return sl_key_user(p, NULL, sc, dc, one, value, before_auth, address);
    }
    if (one->type == SL_KEY_FORM && !sl_form_normal(p, value, strlen(value))) {
        *err = apr_psprintf(p,
                            "%s: a value of only spaces is no identity (the "
                            "address would be used)",
                            source);
        return NULL;
    }
    if (one->type == SL_KEY_IP &&
        !sl_ip_key(p, value, SL_OR(dc->ipv6_prefix, SL_DEFAULT_IPV6_PREFIX))) {
        *err = apr_psprintf(p, "ip: '%s' is not an IP address", value);
        return NULL;
    }
    return sl_key_hash(p, NULL, sc, dc, one, value);
}

/* The section's key sources as the query names them, for an error. */
static const char *sl_key_source_names(apr_pool_t *p,
                                       const sl_key_source_t *src, int n)
{
    const char *names = NULL;
    int i;

    for (i = 0; i < n; i++) {
        const char *one = src[i].type == SL_KEY_IP     ? "ip"
                          : src[i].type == SL_KEY_USER ? "user"
                          : src[i].type == SL_KEY_HEADER
                              ? apr_pstrcat(p, "header:", src[i].name, NULL)
                          : src[i].type == SL_KEY_ENV
                              ? apr_pstrcat(p, "env:", src[i].name, NULL)
                          : src[i].type == SL_KEY_FORM
                              ? apr_pstrcat(p, "form:", src[i].name, NULL)
                              : "expr";
        names = names ? apr_pstrcat(p, names, ", ", one, NULL) : one;
    }
    return names;
}

int sl_key_takes(const sl_dir_conf_t *dc, const char *source)
{
    int n, i;
    const sl_key_source_t *src = sl_key_sources(dc, &n);
    int by_ip = sl_key_user_source(src, n, SL_KEY_USER) ||
                sl_key_user_source(src, n, SL_KEY_FORM);

    if (!strcmp(source, "none")) {
        return !by_ip;
    }
    for (i = 0; i < n; i++) {
        if (sl_key_names(&src[i], source)) {
            return 1;
        }
    }
    return by_ip && !strcmp(source, "ip");
}

const char *sl_key_identity_of(apr_pool_t *p, const sl_server_conf_t *sc,
                               const sl_dir_conf_t *dc, int before_auth,
                               const char *source, const char *value,
                               const char *address, const char **err)
{
    int n, i;
    const sl_key_source_t *src = sl_key_sources(dc, &n);
    const sl_key_source_t *user = sl_key_user_source(src, n, SL_KEY_USER);
    /* Requests without a value of these are keyed by their address. */
    int by_ip = user || sl_key_user_source(src, n, SL_KEY_FORM);
    int paired = user && before_auth && !(user->flags & SL_USER_ANY_ADDRESS);

    *err = NULL;
    if (address && !paired) {
        *err = "one identity only: ip= goes with user= only where a "
               "section with count= keys the name attempted with the "
               "client address";
        return NULL;
    }
    if (!strcmp(source, "none")) {
        if (by_ip) {
            *err = "none: with user or form: among the key sources a "
                   "request with no key value is keyed by its address, "
                   "never the shared bucket: give ip=ADDR";
            return NULL;
        }
        return sl_identity(p, sc->secret, sc->secret_len, "none", "-", 1);
    }
    for (i = 0; i < n; i++) {
        if (sl_key_names(&src[i], source)) {
            return sl_key_of_source(p, sc, dc, &src[i], paired, before_auth,
                                    source, value, address, err);
        }
    }
    /* A request without a user: keyed by its address (sl_key_identity). */
    if (by_ip && !strcmp(source, "ip")) {
        if (!sl_ip_key(p, value,
                       SL_OR(dc->ipv6_prefix, SL_DEFAULT_IPV6_PREFIX))) {
            *err = apr_psprintf(p, "ip: '%s' is not an IP address", value);
            return NULL;
        }
        return sl_key_hash(p, NULL, sc, dc, &sl_key_ip, value);
    }
    *err = apr_psprintf(p,
                        "%s is not a key source here; the section's are: "
                        "%s (%s)",
                        source, sl_key_source_names(p, src, n),
                        by_ip ? "or ip, the address of a request without a "
                                "user or form value"
                              : "or none, the shared bucket");
    return NULL;
}
