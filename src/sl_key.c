#include "sl_key.h"

#include "http_log.h"
#include "apr_base64.h"
#include "apr_lib.h"
#include "apr_strings.h"

#include <string.h>

APLOG_USE_MODULE(slidinglimit);

/* The user name a Basic Authorization header attempts, as sent (before
 * authentication has run, or when it failed): what count= counts failed
 * logins by. NULL when there is none. */
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

static const sl_key_source_t sl_key_ip = {SL_KEY_IP, NULL, NULL};

/* The key sources of dc: SlidingLimitKey's, or ip. */
static const sl_key_source_t *sl_key_sources(const sl_dir_conf_t *dc, int *n)
{
    *n = dc->keys ? dc->keys->nelts : 1;
    return dc->keys ? (const sl_key_source_t *) dc->keys->elts : &sl_key_ip;
}

/* The identity of the value v (not empty) of source src: the one function
 * that makes identities, for requests and for the operator's look. An
 * address is masked as SlidingLimitIPv6Prefix says; one that does not
 * parse keeps its own budget, as it is. */
static const char *sl_key_hash(apr_pool_t *p, const sl_server_conf_t *sc,
                               const sl_dir_conf_t *dc,
                               const sl_key_source_t *src, const char *v)
{
    const char *tag = "ip";
    char *t;

    switch (src->type) {
    case SL_KEY_IP: {
        const char *m =
            sl_ip_key(p, v, SL_OR(dc->ipv6_prefix, SL_DEFAULT_IPV6_PREFIX));
        v = m ? m : v;
        break;
    }
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
    }
    t = apr_pstrdup(p, tag);
    ap_str_tolower(t);
    return sl_identity(p, sc->secret, sc->secret_len, t, v, strlen(v));
}

/* The budget's identity: the first key source with a value, hashed. */
const char *sl_key_identity(request_rec *r, const sl_dir_conf_t *dc)
{
    const sl_server_conf_t *sc =
        ap_get_module_config(r->server->module_config, &slidinglimit_module);
    int n, i;
    const sl_key_source_t *src = sl_key_sources(dc, &n);

    for (i = 0; i < n; i++) {
        const char *v = NULL, *err = NULL;
        switch (src[i].type) {
        case SL_KEY_IP:
            v = r->useragent_ip;
            break;
        case SL_KEY_USER:
            v = r->user ? r->user : sl_basic_user(r);
            break;
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
        }
        if (v && *v) {
            return sl_key_hash(r->pool, sc, dc, &src[i], v);
        }
    }
    return sl_identity(r->pool, sc->secret, sc->secret_len, "none", "-", 1);
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
    default:
        return !strcmp(source, "expr");
    }
}

const char *sl_key_identity_of(apr_pool_t *p, const sl_server_conf_t *sc,
                               const sl_dir_conf_t *dc, const char *source,
                               const char *value, const char **err)
{
    int n, i;
    const sl_key_source_t *src = sl_key_sources(dc, &n);
    const char *names = NULL;

    *err = NULL;
    if (!strcmp(source, "none")) {
        return sl_identity(p, sc->secret, sc->secret_len, "none", "-", 1);
    }
    for (i = 0; i < n; i++) {
        if (!sl_key_names(&src[i], source)) {
            continue;
        }
        if (!*value) {
            *err = apr_psprintf(p,
                                "%s: an empty value is no identity (the "
                                "next source, or none, would be used)",
                                source);
            return NULL;
        }
        if (src[i].type == SL_KEY_IP &&
            !sl_ip_key(p, value,
                       SL_OR(dc->ipv6_prefix, SL_DEFAULT_IPV6_PREFIX))) {
            *err = apr_psprintf(p, "ip: '%s' is not an IP address", value);
            return NULL;
        }
        return sl_key_hash(p, sc, dc, &src[i], value);
    }
    for (i = 0; i < n; i++) {
        const char *one = src[i].type == SL_KEY_IP     ? "ip"
                          : src[i].type == SL_KEY_USER ? "user"
                          : src[i].type == SL_KEY_HEADER
                              ? apr_pstrcat(p, "header:", src[i].name, NULL)
                          : src[i].type == SL_KEY_ENV
                              ? apr_pstrcat(p, "env:", src[i].name, NULL)
                              : "expr";
        names = names ? apr_pstrcat(p, names, ", ", one, NULL) : one;
    }
    *err = apr_psprintf(p,
                        "%s is not a key source here; the section's are: "
                        "%s (or none, the shared bucket)",
                        source, names);
    return NULL;
}
