/* SlidingLimit expr:'s quota and what a client chooses: at start-up, one
 * warning for each quota expression that reads a request header (or the
 * request line) that nothing removes before the module reads it, since a
 * client then picks its own quota by sending it.
 *
 * mod_headers keeps its settings to itself, so the configuration's tree
 * (ap_conftree) is read instead: a "RequestHeader unset NAME early" or
 * "RequestHeader set NAME VALUE early" in the server configuration or in
 * the line's virtual host replaces a client's header before any section
 * is merged. The same line inside <Location> or <Directory> is accepted by
 * httpd but never runs, and without "early" it runs in the fixups, after
 * the module's first pass has read the quota: neither counts. */
#include "sl_quota.h"
#include "sl_quota_inputs.h"

#include "http_config.h"
#include "http_log.h"
#include "httpd.h"

#include "apr_hash.h"
#include "apr_strings.h"

APLOG_USE_MODULE(slidinglimit);

#define SL_QUOTA_NOTES "slidinglimit-quota-expressions"

typedef struct sl_quota_use {
    const char *expr;
    const ap_directive_t *line;
} sl_quota_use_t;

void sl_quota_note(cmd_parms *cmd, const char *expr)
{
    apr_array_header_t *uses = NULL;
    sl_quota_use_t *u;

    /* pconf's userdata: each read of the configuration starts empty. */
    apr_pool_userdata_get((void **) &uses, SL_QUOTA_NOTES, cmd->pool);
    if (!uses) {
        uses = apr_array_make(cmd->pool, 4, sizeof(sl_quota_use_t));
        apr_pool_userdata_set(uses, SL_QUOTA_NOTES, apr_pool_cleanup_null,
                              cmd->pool);
    }
    u = apr_array_push(uses);
    u->expr = expr;
    u->line = cmd->directive;
}

/* The <VirtualHost> around d, or NULL for the main server. */
static const ap_directive_t *sl_vhost_of(const ap_directive_t *d)
{
    for (; d; d = d->parent) {
        if (!strcasecmp(d->directive, "<VirtualHost")) {
            return d;
        }
    }
    return NULL;
}

static const char *sl_covered_key(apr_pool_t *p, const ap_directive_t *vhost,
                                  const char *header)
{
    char *k = apr_psprintf(p, "%pp %s", (const void *) vhost, header);
    ap_str_tolower(k);
    return k;
}

/* "RequestHeader unset NAME early" or "RequestHeader set NAME VALUE
 * early", nothing else (a condition would let a client's header through
 * where it does not hold): NAME, else NULL. */
static const char *sl_early_header(apr_pool_t *p, const char *args)
{
    const char *w[5];
    int n = 0;

    while (*args && n < 5) {
        w[n++] = ap_getword_conf(p, &args);
    }
    if (*args || n < 3 || strcasecmp(w[n - 1], "early")) {
        return NULL;
    }
    if ((n == 3 && !strcasecmp(w[0], "unset")) ||
        (n == 4 && !strcasecmp(w[0], "set"))) {
        return w[1];
    }
    return NULL;
}

/* The early RequestHeader lines of the server configuration and of each
 * virtual host. <IfModule>, <IfDefine> and Include are resolved as the
 * tree is read: their lines stand in the section around them. */
static void sl_early_walk(apr_pool_t *p, const ap_directive_t *d,
                          const ap_directive_t *vhost, apr_hash_t *covered)
{
    for (; d; d = d->next) {
        const char *h;
        if (!strcasecmp(d->directive, "<VirtualHost") && !vhost) {
            sl_early_walk(p, d->first_child, d, covered);
        }
        else if (!strcasecmp(d->directive, "RequestHeader") && d->args &&
                 (h = sl_early_header(p, d->args))) {
            apr_hash_set(covered, sl_covered_key(p, vhost, h),
                         APR_HASH_KEY_STRING, "");
        }
    }
}

static int sl_is_covered(apr_pool_t *p, apr_hash_t *covered,
                         const ap_directive_t *line, const char *header)
{
    return apr_hash_get(covered, sl_covered_key(p, NULL, header),
                        APR_HASH_KEY_STRING) ||
           apr_hash_get(covered, sl_covered_key(p, sl_vhost_of(line), header),
                        APR_HASH_KEY_STRING);
}

/* What of use's expression a client chooses and nothing removes first:
 * "the request header X-Quota, QUERY_STRING", or NULL; *headers tells
 * whether a header is among them. */
static const char *sl_uncovered(apr_pool_t *p, apr_hash_t *covered,
                                const sl_quota_use_t *use, int *headers)
{
    const apr_array_header_t *in = sl_quota_inputs(p, use->expr);
    const char *s = NULL;
    int i;

    for (i = 0; i < in->nelts; i++) {
        const sl_quota_input_t *x = &APR_ARRAY_IDX(in, i, sl_quota_input_t);
        const char *what;
        if (x->header && strcmp(x->name, "*") &&
            sl_is_covered(p, covered, use->line, x->name)) {
            continue;
        }
        what = !x->header ? x->name
               : strcmp(x->name, "*")
                   ? apr_pstrcat(p, "the request header ", x->name, NULL)
                   : "a request header named per request";
        *headers |= x->header;
        s = s ? apr_pstrcat(p, s, ", ", what, NULL) : what;
    }
    return s;
}

void sl_quota_check(apr_pool_t *pconf, apr_pool_t *ptemp, server_rec *s)
{
    apr_array_header_t *uses = NULL;
    apr_hash_t *covered, *warned;
    int i;

    apr_pool_userdata_get((void **) &uses, SL_QUOTA_NOTES, pconf);
    if (!uses || !uses->nelts) {
        return;
    }
    covered = apr_hash_make(ptemp);
    warned = apr_hash_make(ptemp);
    sl_early_walk(ptemp, ap_conftree, NULL, covered);
    for (i = 0; i < uses->nelts; i++) {
        const sl_quota_use_t *u = &APR_ARRAY_IDX(uses, i, sl_quota_use_t);
        const char *what;
        int headers = 0;

        if (apr_hash_get(warned, u->expr, APR_HASH_KEY_STRING) ||
            !(what = sl_uncovered(ptemp, covered, u, &headers))) {
            continue;
        }
        apr_hash_set(warned, u->expr, APR_HASH_KEY_STRING, "");
        ap_log_error(
            APLOG_MARK, APLOG_WARNING, 0, s,
            "mod_slidinglimit: SlidingLimit expr:%s (%s:%d) reads %s, "
            "which a client sends as it likes: a client can choose its own "
            "quota. %stake the quota from a variable that a rule of the "
            "server configuration sets from what it trusts, such as "
            "SetEnvIfExpr on the proxy's CONN_REMOTE_ADDR (docs/REFERENCE.md "
            "\"Limits "
            "from an expression\")",
            u->expr, u->line ? u->line->filename : "?",
            u->line ? u->line->line_num : 0, what,
            headers ? "Remove a client's header with \"RequestHeader unset "
                      "NAME early\" in the server configuration or the "
                      "virtual host (not in <Location> or <Directory>, where "
                      "early never runs), if httpd itself sets it later; or "
                    : "Instead, ");
    }
}
