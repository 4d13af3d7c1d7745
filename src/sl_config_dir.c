/* SPDX-License-Identifier: Apache-2.0 */
/* Configuration: the per-directory directives besides SlidingLimit and
 * SlidingLimitAlgorithm: whose budget (SlidingLimitKey,
 * SlidingLimitIPv6Prefix), the answer when the store fails, the headers,
 * the statuses, the dry run and the status page's level. */
#include "sl_config_private.h"
#include "sl_form.h"

#include "http_log.h"
#include "http_protocol.h"
#include "util_filter.h"
#include "apr_strings.h"

#include <string.h>

APLOG_USE_MODULE(slidinglimit);

/* user:OPTION[,OPTION...]: the options after the colon of a, as flags.
 * NULL, or what is wrong. */
static const char *sl_user_options(apr_pool_t *p, const char *a, int *flags)
{
    char *opts = apr_pstrdup(p, a + 5), *tok, *last;

    if (!*opts) {
        return apr_psprintf(p, "'%s': no option after the colon", a);
    }
    for (tok = apr_strtok(opts, ",", &last); tok;
         tok = apr_strtok(NULL, ",", &last)) {
        if (!strcasecmp(tok, "nocase")) {
            *flags |= SL_USER_NOCASE;
        }
        else if (!strcasecmp(tok, "any-address")) {
            *flags |= SL_USER_ANY_ADDRESS;
        }
        else {
            return apr_psprintf(p,
                                "'%s': '%s' is not an option of user "
                                "(nocase, any-address)",
                                a, tok);
        }
    }
    /* apr_strtok skips empty tokens: "user:nocase," is a slip too. */
    if (strstr(a + 5, ",,") || a[5] == ',' || a[strlen(a) - 1] == ',') {
        return apr_psprintf(p, "'%s': an empty option", a);
    }
    return NULL;
}

/* form:FIELD: what is wrong with a, or NULL. The body is kept for the
 * application by mod_request's KEPT_BODY filter: without mod_request the
 * source could not be read without taking the body from it. */
static const char *sl_form_check(apr_pool_t *p, const char *a)
{
    if (!a[5]) {
        return apr_psprintf(p, "'%s': no field name after the colon", a);
    }
    if (!sl_form_field_ok(a + 5)) {
        return apr_psprintf(p,
                            "'%s': '%s' is not a form field name (no "
                            "spaces, control characters or any of "
                            "\"\\=&;%%+)",
                            a, a + 5);
    }
    if (!ap_get_input_filter_handle("KEPT_BODY")) {
        return apr_psprintf(p,
                            "'%s' needs mod_request, loaded before this "
                            "line (LoadModule request_module, a2enmod "
                            "request): it gives the application the body "
                            "read here",
                            a);
    }
    return NULL;
}

const char *sl_cmd_key(cmd_parms *cmd, void *dconf, int argc,
                       char *const argv[])
{
    sl_dir_conf_t *dc = dconf;
    const char *err = sl_htaccess_check(cmd, 1, NULL);
    int i;

    if (err) {
        return err;
    }
    if (argc < 1) {
        return sl_err(cmd, "needs at least one source");
    }
    dc->keys = apr_array_make(cmd->pool, argc, sizeof(sl_key_source_t));
    dc->keys_needs = 0;
    for (i = 0; i < argc; i++) {
        sl_key_source_t *k = apr_array_push(dc->keys);
        const char *a = argv[i];

        memset(k, 0, sizeof(*k));
        if (!strcasecmp(a, "ip")) {
            k->type = SL_KEY_IP;
        }
        else if (!strncasecmp(a, "user", 4) && (!a[4] || a[4] == ':')) {
            const char *err;
            k->type = SL_KEY_USER;
            if (a[4] && (err = sl_user_options(cmd->pool, a, &k->flags))) {
                return sl_err(cmd, err);
            }
        }
        else if (!strncasecmp(a, "header:", 7) && a[7]) {
            k->type = SL_KEY_HEADER;
            k->name = a + 7;
            if (!sl_is_token(k->name)) {
                return sl_err(cmd, apr_psprintf(cmd->pool,
                                                "'%s' is not a header name "
                                                "(an RFC 9110 token)",
                                                a));
            }
        }
        else if (!strncasecmp(a, "env:", 4) && a[4]) {
            k->type = SL_KEY_ENV;
            k->name = a + 4;
            if (strpbrk(k->name, " \t\r\n")) {
                return sl_err(
                    cmd,
                    apr_psprintf(cmd->pool, "'%s' is not a variable name", a));
            }
        }
        else if (!strncasecmp(a, "expr:", 5) && a[5]) {
            const char *err = NULL;
            k->type = SL_KEY_EXPR;
            k->name = a + 5;
            k->expr = ap_expr_parse_cmd(cmd, a + 5, AP_EXPR_FLAG_STRING_RESULT,
                                        &err, NULL);
            if (err) {
                return sl_err(cmd, apr_psprintf(cmd->pool,
                                                "'%s': cannot parse the "
                                                "expression: %s",
                                                a, err));
            }
        }
        else if (!strncasecmp(a, "form:", 5)) {
            k->type = SL_KEY_FORM;
            dc->keys_needs = SL_NEEDS_FORM;
            k->name = a + 5;
            if ((err = sl_form_check(cmd->pool, a))) {
                return sl_err(cmd, err);
            }
        }
        else {
            return sl_err(cmd, apr_psprintf(cmd->pool,
                                            "'%s' is not a key source (ip, "
                                            "user[:nocase,any-address], "
                                            "header:NAME, env:NAME, "
                                            "expr:STRING, form:FIELD)",
                                            a));
        }
    }
    return NULL;
}

const char *sl_cmd_ipv6(cmd_parms *cmd, void *dconf, const char *arg)
{
    sl_dir_conf_t *dc = dconf;
    apr_int64_t v;
    const char *err = sl_htaccess_check(cmd, 1, NULL);

    if (err) {
        return err;
    }
    if ((err = sl_parse_int(cmd->pool, arg, 1, 128, &v))) {
        return sl_err(cmd, err);
    }
    dc->ipv6_prefix = (int) v;
    return NULL;
}

const char *sl_cmd_fail_mode(cmd_parms *cmd, void *dconf, const char *arg)
{
    sl_dir_conf_t *dc = dconf;

    if (!strcasecmp(arg, "open")) {
        dc->fail_mode = SL_FAIL_OPEN;
    }
    else if (!strcasecmp(arg, "closed")) {
        dc->fail_mode = SL_FAIL_CLOSED;
    }
    else {
        return sl_err(
            cmd,
            apr_psprintf(cmd->pool, "'%s' is neither open nor closed", arg));
    }
    return sl_htaccess_check(cmd, dc->fail_mode == SL_FAIL_OPEN, arg);
}

const char *sl_cmd_fallback(cmd_parms *cmd, void *dconf, const char *arg)
{
    sl_dir_conf_t *dc = dconf;
    const char *err = sl_onoff(cmd, arg, &dc->local_fallback);

    return err ? err : sl_htaccess_check(cmd, !dc->local_fallback, arg);
}

/* SlidingLimitAllotment off|auto (not in .htaccess: the directive's
 * context). */
const char *sl_cmd_allotment(cmd_parms *cmd, void *dconf, const char *arg)
{
    sl_dir_conf_t *dc = dconf;

    if (!strcasecmp(arg, "off")) {
        dc->allotment = 0;
    }
    else if (!strcasecmp(arg, "auto")) {
        dc->allotment = 1;
        sl_allot_note(cmd);
    }
    else {
        return sl_err(cmd, apr_pstrcat(cmd->pool, "needs off or auto, not '",
                                       arg, "'", NULL));
    }
    return NULL;
}

const char *sl_cmd_dry_run(cmd_parms *cmd, void *dconf, const char *arg)
{
    sl_dir_conf_t *dc = dconf;
    const char *err = sl_onoff(cmd, arg, &dc->dry_run);

    return err ? err : sl_htaccess_check(cmd, dc->dry_run, arg);
}

const char *sl_cmd_headers(cmd_parms *cmd, void *dconf, int argc,
                           char *const argv[])
{
    sl_dir_conf_t *dc = dconf;
    const char *err = sl_htaccess_check(cmd, 0, NULL);
    int flags = 0, i;

    if (err) {
        return err;
    }
    if (argc < 1) {
        return sl_err(cmd, apr_pstrcat(cmd->pool, "needs ",
                                       sl_header_set_names(cmd->pool),
                                       " or off", NULL));
    }
    for (i = 0; i < argc; i++) {
        int set = sl_header_set(argv[i]);

        if (!strcasecmp(argv[i], "off") && argc == 1) {
            flags = 0;
        }
        else if (set) {
            flags |= set;
        }
        else {
            return sl_err(cmd, apr_psprintf(cmd->pool,
                                            "'%s' is not a header set (%s, "
                                            "or off alone)",
                                            argv[i],
                                            sl_header_set_names(cmd->pool)));
        }
    }
    dc->headers = flags;
    return NULL;
}

/* SlidingLimitStatus and SlidingLimitFailStatus: the field is cmd->info. */
const char *sl_cmd_status(cmd_parms *cmd, void *dconf, const char *arg)
{
    apr_int64_t v;
    const char *err = sl_htaccess_check(cmd, 1, NULL);

    if (err) {
        return err;
    }
    if ((err = sl_parse_int(cmd->pool, arg, 400, 599, &v))) {
        return sl_err(cmd, err);
    }
    /* httpd sends a status it has no status line for as 500 (451 has one
     * from httpd 2.4.23 on): refused rather than sent as another. */
    if (strncmp(ap_get_status_line((int) v),
                apr_psprintf(cmd->temp_pool, "%d ", (int) v), 4) != 0) {
        return sl_err(cmd, apr_psprintf(cmd->pool,
                                        "'%s': this httpd has no status line "
                                        "for it and would send 500 instead",
                                        arg));
    }
    *(int *) ((char *) dconf + (apr_size_t) cmd->info) = (int) v;
    return NULL;
}

/* SlidingLimitStatusPage: what the status handler may do in this section.
 * The level is the server configuration's alone (its context has no
 * override class, so httpd refuses it in .htaccess, also inside <If> and
 * <Files>): a tenant who may set a handler there (SetHandler, AddHandler,
 * RewriteRule [H=] under AllowOverride FileInfo) gets no more than the
 * administrator opened around it. */
const char *sl_cmd_status_page(cmd_parms *cmd, void *dconf, const char *arg)
{
    static const char *const levels[] = {"off", "metrics", "inspect", "reset"};
    int i;

    for (i = 0; i < (int) (sizeof(levels) / sizeof(levels[0])); i++) {
        if (!strcasecmp(arg, levels[i])) {
            ((sl_dir_conf_t *) dconf)->status_page = i;
            return NULL;
        }
    }
    return sl_err(cmd, apr_psprintf(cmd->pool,
                                    "'%s' is not off, metrics, inspect or "
                                    "reset",
                                    arg));
}

/* SlidingLimitDelayMax: how many requests of one child delay= may hold at
 * once. The cap guards the server's threads, not a budget: an .htaccess
 * file sets it only under SlidingLimitOverride all. */
const char *sl_cmd_delay_max(cmd_parms *cmd, void *dconf, const char *arg)
{
    sl_dir_conf_t *dc = dconf;
    apr_int64_t v;
    const char *err = sl_htaccess_check(cmd, 1, NULL);

    if (err) {
        return err;
    }
    if ((err = sl_parse_int(cmd->pool, arg, 0, 100000, &v))) {
        return sl_err(cmd, err);
    }
    dc->delay_max = (int) v;
    return NULL;
}
