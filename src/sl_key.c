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

/* The budget's identity: the first key source with a value, hashed. */
const char *sl_key_identity(request_rec *r, const sl_dir_conf_t *dc)
{
    static const sl_key_source_t ip = {SL_KEY_IP, NULL, NULL};
    const sl_key_source_t *src =
        dc->keys ? (sl_key_source_t *) dc->keys->elts : &ip;
    const sl_server_conf_t *sc =
        ap_get_module_config(r->server->module_config, &slidinglimit_module);
    int n = dc->keys ? dc->keys->nelts : 1, i;

    for (i = 0; i < n; i++) {
        const char *v = NULL, *tag = NULL, *err = NULL;
        switch (src[i].type) {
        case SL_KEY_IP:
            v = sl_ip_key(r->pool, r->useragent_ip,
                          SL_OR(dc->ipv6_prefix, SL_DEFAULT_IPV6_PREFIX));
            /* An address that does not parse still keeps its own budget
             * rather than joining the shared one. */
            if (!v) {
                v = r->useragent_ip;
            }
            tag = "ip";
            break;
        case SL_KEY_USER:
            v = r->user ? r->user : sl_basic_user(r);
            tag = "user";
            break;
        case SL_KEY_HEADER:
            v = apr_table_get(r->headers_in, src[i].name);
            tag = apr_pstrcat(r->pool, "header:", src[i].name, NULL);
            break;
        case SL_KEY_ENV:
            v = apr_table_get(r->subprocess_env, src[i].name);
            tag = apr_pstrcat(r->pool, "env:", src[i].name, NULL);
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
            tag = apr_pstrcat(r->pool, "expr:", src[i].name, NULL);
            break;
        }
        if (v && *v) {
            char *t = apr_pstrdup(r->pool, tag);
            ap_str_tolower(t);
            return sl_identity(r->pool, sc->secret, sc->secret_len, t, v,
                               strlen(v));
        }
    }
    return sl_identity(r->pool, sc->secret, sc->secret_len, "none", "-", 1);
}
