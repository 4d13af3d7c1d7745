/* SPDX-License-Identifier: Apache-2.0 */
/* mod_slidinglimit: distributed sliding-window rate limits for httpd.
 *
 * This file is the glue: the module record and its hooks. pre_config,
 * post_config and child_init build the per-process state (sl_proc.c) and
 * the stores (sl_store.c); access_checker counts a request before
 * authentication (count= sections) and ends the status handler's look-up;
 * fixups decides (FIRST), and again (REALLY_LAST) for the file mod_dir's
 * DirectoryIndex or FallbackResource serves instead; log_transaction gives
 * back what count= did not count and charges what cost=after: cost, whose
 * header (cost=after:header:) an output filter, added by insert_filter and
 * insert_error_filter, takes out of the response; the handler is the
 * status page. Where the rest lives: docs/DEVELOPMENT.md's file map
 * (tests/filemap.sh fails when a file of src/ or lua/ is missing from it). */

#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "http_main.h"
#include "http_protocol.h"
#include "http_request.h"
#include "mod_core.h"

#include "src/sl_budget.h"
#include "src/sl_config.h"
#include "src/sl_key.h"
#include "src/sl_decide.h"
#include "src/sl_delay.h"
#include "src/sl_inspect.h"
#include "src/sl_proc.h"
#include "src/sl_quota.h"
#include "src/sl_store.h"

APLOG_USE_MODULE(slidinglimit);

#define SL_HANDLER "slidinglimit-status"

static sl_proc_t *sl_proc_of(server_rec *s)
{
    return sl_config_server(s)->proc;
}

static int sl_pre_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp)
{
    (void) plog;
    (void) ptemp;
    return sl_proc_pre_config(pconf) == APR_SUCCESS
               ? OK
               : HTTP_INTERNAL_SERVER_ERROR;
}

static int sl_post_config(apr_pool_t *pconf, apr_pool_t *plog,
                          apr_pool_t *ptemp, server_rec *s)
{
    (void) plog;

    /* The first pass of a start only checks the configuration. */
    if (ap_state_query(AP_SQ_MAIN_STATE) == AP_SQ_MS_CREATE_PRE_CONFIG) {
        return OK;
    }
    if (!sl_key_lines_check(pconf, s) ||
        sl_proc_create(pconf, ptemp, s) != APR_SUCCESS ||
        sl_store_post_config(pconf, ptemp, s) != APR_SUCCESS) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    sl_quota_check(pconf, ptemp, s);
    sl_delay_check(pconf, ptemp, s);
    sl_allot_check(pconf, ptemp, s);
    sl_inherit_check(ptemp, s);
    return OK;
}

/* httpd -t runs no post_config: its warnings, here. */
static void sl_test_config(apr_pool_t *pconf, server_rec *s)
{
    sl_delay_check(pconf, pconf, s);
    sl_allot_check(pconf, pconf, s);
    sl_inherit_check(pconf, s);
}

static void sl_child_init(apr_pool_t *pchild, server_rec *s)
{
    sl_proc_t *proc = sl_proc_of(s);

    if (proc) {
        sl_proc_child_init(pchild, s, proc);
    }
}

/* The configuration of r's section when it has limits; NULL otherwise. */
static sl_dir_conf_t *sl_dir_with_limits(request_rec *r, sl_server_conf_t **sc)
{
    sl_dir_conf_t *dc;

    dc = ap_get_module_config(r->per_dir_config, &slidinglimit_module);
    if (!dc->limits || !dc->limits->nelts) {
        return NULL;
    }
    *sc = sl_config_server(r->server);
    return (*sc)->proc ? dc : NULL;
}

/* The section's configuration when an initial request has limits to
 * decide here (subrequests such as DirectoryIndex, mod_include and
 * look-ups never count); NULL otherwise. */
static sl_dir_conf_t *sl_limited(request_rec *r, sl_server_conf_t **sc)
{
    return r->main ? NULL : sl_dir_with_limits(r, sc);
}

/* mod_dir's look-up of its main request's target (the index file, the
 * FallbackResource) meets the file's own authentication, and mod_dir sends
 * its 401 for the directory URL: the file's count= section decides here,
 * for the main request, while that request is between our first fixups
 * and our last. Any other subrequest never counts. */
static int sl_access_lookup(request_rec *rr)
{
    sl_server_conf_t *sc;
    sl_dir_conf_t *dc;

    if (rr->main->main || rr->finfo.filetype != APR_REG ||
        !(dc = sl_dir_with_limits(rr, &sc)) || !sl_budget_counts(dc)) {
        return DECLINED;
    }
    return sl_decide_lookup(rr, sc, dc);
}

/* Sections with count= decide here, before authentication: mod_auth_basic
 * answers 401 before fixups, and a failed login is what they count. */
static int sl_access(request_rec *r)
{
    sl_server_conf_t *sc;
    sl_dir_conf_t *dc;

    if (r->main) {
        return sl_access_lookup(r);
    }
    dc = sl_limited(r, &sc);
    if (!dc || !sl_budget_counts(dc)) {
        return DECLINED;
    }
    return sl_decide(r, sc, dc);
}

static int sl_log_transaction(request_rec *r)
{
    sl_after_give_back(r);
    sl_after_charge(r);
    return DECLINED;
}

/* The limits of the request's section that were not decided for it yet:
 * the access checker decides count= sections, and a fast redirect gives it
 * the sections of another file. */
static int sl_fixups_decide(request_rec *r)
{
    sl_server_conf_t *sc;
    sl_dir_conf_t *dc;

    /* Subrequests (DirectoryIndex, mod_include, look-ups) never count; an
     * internal redirect to a place without limits keeps the variables of
     * the decision before it (an ErrorDocument after a refusal). */
    if (!(dc = sl_limited(r, &sc))) {
        if (r->prev) {
            sl_answer_carry_env(r);
        }
        return DECLINED;
    }
    if (sl_decide_done(r)) {
        return DECLINED;
    }
    return sl_decide(r, sc, dc);
}

/* First, so that a refused request costs no other module's fixups (nor
 * mod_dir's subrequests). A directory, or a URL of no file and no handler,
 * is what mod_dir's fixup then looks up a target for. */
static int sl_fixups(request_rec *r)
{
    int rv = sl_fixups_decide(r);

    if (rv == DECLINED && !r->main &&
        (r->finfo.filetype == APR_DIR ||
         (r->finfo.filetype == APR_NOFILE && !r->handler))) {
        sl_decide_resolving(r, 1);
    }
    return rv;
}

/* After mod_dir's fixup (APR_HOOK_LAST): DirectoryIndex and
 * FallbackResource serve another file by ap_internal_fast_redirect, which
 * gives the request that file's per-directory configuration; its limits
 * apply as they do to a request for the file itself, less the budgets
 * already decided. (MultiViews redirects in the type checker, before
 * fixups; a type map by an internal redirect.) */
static int sl_fixups_target(request_rec *r)
{
    if (!r->main) {
        sl_decide_resolving(r, 0);
    }
    return sl_fixups_decide(r);
}

/* The counters (GET without a query); with a query, one client's budgets:
 * GET shows them, POST resets them (sl_inspect.c); each only where the
 * server configuration opened it with SlidingLimitStatusPage, however the
 * handler was set. Elsewhere it declines, as if the module had no handler:
 * a tenant's file stays the tenant's file. Like any handler it runs after
 * the access checks: Require guards every level. */
static int sl_status_handler(request_rec *r)
{
    const sl_dir_conf_t *dc;
    sl_proc_t *proc;
    int level;

    if (!r->handler || strcmp(r->handler, SL_HANDLER)) {
        return DECLINED;
    }
    dc = ap_get_module_config(r->per_dir_config, &slidinglimit_module);
    level = SL_OR(dc->status_page, SL_STATUS_PAGE_OFF);
    if (level == SL_STATUS_PAGE_OFF) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                      "mod_slidinglimit: " SL_HANDLER " handler not enabled "
                      "here: add SlidingLimitStatusPage metrics (or inspect, "
                      "reset) to the server configuration's section that "
                      "serves %s",
                      ap_escape_logitem(r->pool, r->uri));
        return DECLINED;
    }
    /* What OPTIONS and a 405 announce (Allow): the level's methods. */
    ap_allow_standard_methods(r, REPLACE_ALLOW, M_GET, M_OPTIONS,
                              level >= SL_STATUS_PAGE_RESET ? M_POST : -1, -1);
    if (r->method_number == M_OPTIONS) {
        return ap_send_http_options(r);
    }
    if (r->method_number != M_GET &&
        !(r->method_number == M_POST && level >= SL_STATUS_PAGE_RESET)) {
        return HTTP_METHOD_NOT_ALLOWED;
    }
    proc = sl_proc_of(r->server);
    if (!proc) {
        return HTTP_SERVICE_UNAVAILABLE;
    }
    if (r->method_number == M_POST || (r->args && *r->args)) {
        return sl_inspect(r, proc, level);
    }
    ap_set_content_type(r, "text/plain; version=0.0.4; charset=utf-8");
    if (!r->header_only) {
        sl_stats_write(proc->stats, r,
                       sl_store_breakers(r->pool, ap_server_conf));
    }
    return OK;
}

static void sl_register_hooks(apr_pool_t *p)
{
    /* After mod_logio's: cost=after:bytes reads what it counted. */
    static const char *const logio[] = {"mod_logio.c", NULL};

    (void) p;
    ap_hook_pre_config(sl_pre_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_post_config(sl_post_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_test_config(sl_test_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_child_init(sl_child_init, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_fixups(sl_fixups, NULL, NULL, APR_HOOK_FIRST);
    ap_hook_fixups(sl_fixups_target, NULL, NULL, APR_HOOK_REALLY_LAST);
    ap_hook_access_checker(sl_inspect_lookup_end, NULL, NULL,
                           APR_HOOK_REALLY_FIRST);
    ap_hook_access_checker(sl_access, NULL, NULL, APR_HOOK_FIRST);
    ap_hook_log_transaction(sl_log_transaction, logio, NULL, APR_HOOK_MIDDLE);
    ap_hook_insert_filter(sl_after_insert_filter, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_insert_error_filter(sl_after_insert_filter, NULL, NULL,
                                APR_HOOK_MIDDLE);
    sl_after_register_filter();
    ap_hook_handler(sl_status_handler, NULL, NULL, APR_HOOK_MIDDLE);
}

module AP_MODULE_DECLARE_DATA slidinglimit_module = {
    STANDARD20_MODULE_STUFF,    sl_create_dir_conf,   sl_merge_dir_conf,
    sl_create_server_conf,      sl_merge_server_conf, sl_cmds,
    sl_register_hooks,
#if defined(AP_MODULE_FLAG_ALWAYS_MERGE)
    AP_MODULE_FLAG_ALWAYS_MERGE
#endif
};
