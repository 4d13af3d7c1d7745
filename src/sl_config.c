/* SPDX-License-Identifier: Apache-2.0 */
/* Configuration: the per-server and per-directory records, their create
 * and merge, what every directive uses (the .htaccess rules,
 * SlidingLimitOverride) and the one command table. The directives
 * themselves are in sl_config_limit.c, sl_config_dir.c, sl_config_store.c
 * and sl_config_tls.c, behind sl_config_private.h. */
#include "sl_config_private.h"

#include "http_log.h"
#include "apr_strings.h"
#include "apr_lib.h"

#include <string.h>

APLOG_USE_MODULE(slidinglimit);

void *sl_create_server_conf(apr_pool_t *p, server_rec *s)
{
    sl_server_conf_t *c = apr_pcalloc(p, sizeof(*c));

    c->server = s;
    c->connect_timeout = -1;
    c->command_timeout = -1;
    c->shm_size = -1;
    c->tls_verify = -1;
    c->override = -1;
    return c;
}

/* SlidingLimitStorePassword's password becomes the URL's: the URL may
 * name the user ("redis://user@host", the userinfo without ':' read as the
 * user here), never a password of its own as well. */
void sl_url_set_password(sl_store_url_t *u, const char *pw)
{
    if (u->bare_userinfo) {
        u->user = u->password;
        u->bare_userinfo = 0;
    }
    u->password = pw;
}

/* "ServerName:port" of a virtual host, lower case; its ServerAlias names
 * when it has no ServerName. */
const char *sl_host_label(apr_pool_t *p, const server_rec *s)
{
    char *name = apr_pstrdup(p, s->server_hostname ? s->server_hostname : "");
    char *c;
    int i;

    if (!*name && s->names) {
        for (i = 0; i < s->names->nelts; i++) {
            name = apr_pstrcat(p, name, i ? " " : "",
                               APR_ARRAY_IDX(s->names, i, const char *), NULL);
        }
    }
    for (c = name; *c; c++) {
        *c = apr_tolower(*c);
    }
    return apr_psprintf(p, "%s:%d", name, (int) s->port);
}

void *sl_merge_server_conf(apr_pool_t *p, void *basev, void *addv)
{
    sl_server_conf_t *base = basev, *add = addv;
    sl_server_conf_t *c = apr_pcalloc(p, sizeof(*c));
    int i;

    /* Each virtual host is merged once, after the whole configuration is
     * read: the first moment its ServerName, which may follow its sections,
     * is known. Its unnamed limits become its own, so that name-based hosts
     * on one address, whose sections read the same, keep apart budgets. */
    if (add->unnamed && add->server) {
        const char *host = sl_host_label(p, add->server);
        for (i = 0; i < add->unnamed->nelts; i++) {
            sl_limit_set_host(p, APR_ARRAY_IDX(add->unnamed, i, sl_limit_t *),
                              host);
        }
        add->unnamed = NULL;
    }

    /* The password goes with the store: a virtual host that inherits the
     * store and sets a password of its own gets a copy that carries it. */
    if (add->store_url) {
        c->store_url = add->store_url;
        c->store_password = add->store_password;
    }
    else if (add->store_password && base->store_url &&
             base->store_url->kind != SL_URL_SHM) {
        sl_store_url_t *u = apr_pmemdup(p, base->store_url, sizeof(*u));
        if (base->store_password) {
            u->bare_userinfo = 0; /* its user is already the user */
        }
        sl_url_set_password(u, add->store_password);
        c->store_url = u;
        c->store_password = add->store_password;
    }
    else {
        c->store_url = base->store_url;
        c->store_password =
            add->store_password ? add->store_password : base->store_password;
    }
    c->connect_timeout = add->connect_timeout != -1 ? add->connect_timeout
                                                    : base->connect_timeout;
    c->command_timeout = add->command_timeout != -1 ? add->command_timeout
                                                    : base->command_timeout;
    c->prefix = add->prefix ? add->prefix : base->prefix;
    c->shm_size = base->shm_size;
    if (add->secret) {
        c->secret = add->secret;
        c->secret_len = add->secret_len;
    }
    else {
        c->secret = base->secret;
        c->secret_len = base->secret_len;
    }
    if (add->sentinel_password) {
        c->sentinel_user = add->sentinel_user;
        c->sentinel_password = add->sentinel_password;
    }
    else {
        c->sentinel_user = base->sentinel_user;
        c->sentinel_password = base->sentinel_password;
    }
    c->tls_ca = add->tls_ca ? add->tls_ca : base->tls_ca;
    if (add->tls_cert) {
        c->tls_cert = add->tls_cert;
        c->tls_key = add->tls_key;
    }
    else {
        c->tls_cert = base->tls_cert;
        c->tls_key = base->tls_key;
    }
    c->tls_verify = add->tls_verify != -1 ? add->tls_verify : base->tls_verify;
    c->override = add->override != -1 ? add->override : base->override;
    return c;
}

void *sl_create_dir_conf(apr_pool_t *p, char *dir)
{
    sl_dir_conf_t *c = apr_pcalloc(p, sizeof(*c));

    c->ipv6_prefix = -1;
    c->algorithm = -1;
    c->fail_mode = -1;
    c->local_fallback = -1;
    c->headers = -1;
    c->status_page = -1;
    c->status = -1;
    c->fail_status = -1;
    c->dry_run = -1;
    c->delay_max = -1;
    c->allotment = -1;
    c->section = dir;
    return c;
}

#define SL_MERGE_INT(f) c->f = add->f != -1 ? add->f : base->f

/* Whether c sets none of the values a merge reads from it, as a section
 * without this module's directives: merged with it, the other record is
 * the result (section names no limit after start-up). */
static int sl_dir_unset(const sl_dir_conf_t *c)
{
    return !c->limits && !c->keys && !c->added && !c->limits_off && !c->needs &&
           !c->added_needs && !c->keys_needs && !c->htaccess_add &&
           c->ipv6_prefix == -1 && c->algorithm == -1 && c->fail_mode == -1 &&
           c->local_fallback == -1 && c->headers == -1 &&
           c->status_page == -1 && c->status == -1 && c->fail_status == -1 &&
           c->dry_run == -1 && c->delay_max == -1 && c->allotment == -1;
}

void *sl_merge_dir_conf(apr_pool_t *p, void *basev, void *addv)
{
    sl_dir_conf_t *base = basev, *add = addv;
    sl_dir_conf_t *c;

    /* httpd merges every section a request passes through, on every
     * request: most sections set nothing of ours, and a record is never
     * written after start-up, so the other one serves as it is. An
     * .htaccess file's limits (htaccess_add) always take the long way:
     * they join base's added. */
    if (sl_dir_unset(add)) {
        return base;
    }
    if (sl_dir_unset(base) && !add->htaccess_add && !add->added &&
        !add->added_needs &&
        (add->limits || (!add->needs && !add->limits_off)) &&
        (add->keys || !add->keys_needs)) {
        return add;
    }
    c = apr_pcalloc(p, sizeof(*c));

    /* An inner section's own SlidingLimit lines replace the inherited list;
     * an .htaccess file that may only add adds its own to it, and those
     * stay when a section merged after the file (a <Location>, an <If>)
     * sets its own. Everything else merges value by value. */
    c->added = base->added;
    c->added_needs = base->added_needs;
    if (add->limits && add->htaccess_add) {
        int inherit = base->limits && !base->limits_off;

        c->limits = inherit ? apr_array_append(p, base->limits, add->limits)
                            : add->limits;
        c->needs = (inherit ? base->needs : 0) | add->needs;
        c->added = base->added ? apr_array_append(p, base->added, add->limits)
                               : add->limits;
        c->added_needs = base->added_needs | add->needs;
    }
    else if (add->limits) {
        c->limits = base->added ? apr_array_append(p, add->limits, base->added)
                                : add->limits;
        c->needs = add->needs | base->added_needs;
        c->limits_off = add->limits_off && !base->added;
    }
    else {
        c->limits = base->limits;
        c->needs = base->needs;
        c->limits_off = base->limits_off;
    }
    c->keys = add->keys ? add->keys : base->keys;
    c->keys_needs = add->keys ? add->keys_needs : base->keys_needs;
    SL_MERGE_INT(ipv6_prefix);
    SL_MERGE_INT(algorithm);
    SL_MERGE_INT(fail_mode);
    SL_MERGE_INT(local_fallback);
    SL_MERGE_INT(headers);
    SL_MERGE_INT(status_page);
    SL_MERGE_INT(status);
    SL_MERGE_INT(fail_status);
    SL_MERGE_INT(dry_run);
    SL_MERGE_INT(delay_max);
    SL_MERGE_INT(allotment);
    c->section = add->section ? add->section : base->section;
    return c;
}

const char *sl_err(cmd_parms *cmd, const char *msg)
{
    return apr_pstrcat(cmd->pool, cmd->cmd->name, ": ", msg, NULL);
}

/* Whether this directive is read from an .htaccess file: at request time,
 * with the request's pool, by as many threads as there are requests. Such
 * a directive writes its own per-directory record only: never the server's
 * record, a static, or the userdata of a pool that outlives the request.
 * httpd gives .htaccess files the AllowOverride classes alone as
 * cmd->override (the configuration files always carry ACCESS_CONF or
 * RSRC_CONF, also inside <If>), and the request's pool as both pools (what
 * its own NOT_IN_HTACCESS check tests); either is taken as an .htaccess
 * file, so that a change in one still never lets a file write server
 * state. */
int sl_in_htaccess(const cmd_parms *cmd)
{
    return cmd->pool == cmd->temp_pool ||
           !(cmd->override & (ACCESS_CONF | RSRC_CONF));
}

sl_server_conf_t *sl_config_server(const server_rec *s)
{
    return ap_get_module_config(s->module_config, &slidinglimit_module);
}

static const char *const sl_override_names[] = {"none", "add", "all"};

/* What SlidingLimitOverride lets an .htaccess file do with this directive:
 * NULL when it may (always outside .htaccess), else the refusal, which
 * httpd answers with a 500 and logs with the file's name. loosens: the
 * value would weaken the limits the server configuration sets above the
 * file (switch them off or to a dry run, key them differently, let them
 * fail open, change their status or algorithm). The server's record is
 * only read here: it is the merged one of the request's server. */
const char *sl_htaccess_check(cmd_parms *cmd, int loosens, const char *value)
{
    int mode;

    if (!sl_in_htaccess(cmd)) {
        return NULL;
    }
    mode = SL_OR(sl_config_server(cmd->server)->override, SL_OVERRIDE_ADD);
    if (mode == SL_OVERRIDE_ALL || (mode == SL_OVERRIDE_ADD && !loosens)) {
        return NULL;
    }
    if (mode == SL_OVERRIDE_NONE) {
        value = NULL;
    }
    return apr_psprintf(
        cmd->pool,
        "%s: not allowed in .htaccess under SlidingLimitOverride %s%s%s%s",
        cmd->cmd->name, sl_override_names[mode], value ? " ('" : "",
        value ? value : "",
        value ? "' would loosen the limits of the server configuration)" : "");
}

const char *sl_onoff(cmd_parms *cmd, const char *arg, int *out)
{
    if (!strcasecmp(arg, "on")) {
        *out = 1;
    }
    else if (!strcasecmp(arg, "off")) {
        *out = 0;
    }
    else {
        return sl_err(
            cmd, apr_psprintf(cmd->pool, "'%s' is neither on nor off", arg));
    }
    return NULL;
}

static const char *sl_cmd_override(cmd_parms *cmd, void *dconf, const char *arg)
{
    int i;
    (void) dconf;

    for (i = 0; i < 3; i++) {
        if (!strcasecmp(arg, sl_override_names[i])) {
            sl_config_server(cmd->server)->override = i;
            return NULL;
        }
    }
    return sl_err(
        cmd, apr_psprintf(cmd->pool, "'%s' is none of none, add, all", arg));
}

/* The per-directory directives are also allowed in .htaccess under
 * AllowOverride Limit: they control access, like Require and Allow/Deny
 * (which that class has always covered). The store and server-wide ones
 * stay in the server configuration. */
#define SL_DIR_CONF (RSRC_CONF | ACCESS_CONF | OR_LIMIT)

const command_rec sl_cmds[] = {
    AP_INIT_TAKE1("SlidingLimitStore", sl_cmd_store, NULL, RSRC_CONF,
                  "redis[s]://[user:password@]host[:port][/db], "
                  "unix:[user:password@]/path[?db=N], "
                  "cluster[s]://[user:password@]host:port[,...], "
                  "sentinel[s]://[user:password@]host:port[,...]/MASTER[/db] "
                  "or shm"),
    AP_INIT_TAKE1("SlidingLimitStorePassword", sl_cmd_store_password, NULL,
                  RSRC_CONF,
                  "file:PATH or env:NAME: the store's password, kept out of "
                  "the configuration"),
    AP_INIT_TAKE12("SlidingLimitSentinelAuth", sl_cmd_sentinel_auth, NULL,
                   RSRC_CONF,
                   "[USER] PASSWORD of the Sentinels (PASSWORD may be "
                   "file:PATH or env:NAME)"),
    AP_INIT_TAKE1("SlidingLimitStoreTLSCA", sl_cmd_tls_ca, NULL, RSRC_CONF,
                  "CA file or directory that verifies the store (default: "
                  "the system's)"),
    AP_INIT_TAKE12("SlidingLimitStoreTLSCert", sl_cmd_tls_cert, NULL, RSRC_CONF,
                   "CERTFILE [KEYFILE]: client certificate"),
    AP_INIT_TAKE1("SlidingLimitStoreTLSVerify", sl_cmd_tls_verify, NULL,
                  RSRC_CONF,
                  "on or off: verify the store's certificate and name "
                  "(default on)"),
    AP_INIT_TAKE12("SlidingLimitStoreTimeout", sl_cmd_timeout, NULL, RSRC_CONF,
                   "connect and command timeouts, e.g. 100ms 50ms"),
    AP_INIT_TAKE1("SlidingLimitKeyPrefix", sl_cmd_prefix, NULL, RSRC_CONF,
                  "prefix of every store key (default sl)"),
    AP_INIT_TAKE1("SlidingLimitKeySecret", sl_cmd_secret, NULL, RSRC_CONF,
                  "file whose content keys the hash of every identity; the "
                  "same on every server that shares the store"),
    AP_INIT_TAKE1("SlidingLimitShmSize", sl_cmd_shm_size, NULL, RSRC_CONF,
                  "size of the shared memory store, e.g. 8M (default 8M)"),
    AP_INIT_TAKE1("SlidingLimitOverride", sl_cmd_override, NULL, RSRC_CONF,
                  "what .htaccess files may do: none, add (limits, never "
                  "loosen the server's; the default) or all"),
    AP_INIT_TAKE_ARGV("SlidingLimit", sl_cmd_limit, NULL, SL_DIR_CONF,
                      SL_LIMIT_HELP),
    AP_INIT_TAKE_ARGV("SlidingLimitConcurrent", sl_cmd_concurrent, NULL,
                      SL_DIR_CONF,
                      "N [name=NAME] [lease=DURATION]: at most N requests "
                      "in flight"),
    AP_INIT_TAKE_ARGV("SlidingLimitKey", sl_cmd_key, NULL, SL_DIR_CONF,
                      "whose budget: ip, user, header:NAME, env:NAME, "
                      "expr:STRING; the first with a value wins"),
    AP_INIT_TAKE1("SlidingLimitIPv6Prefix", sl_cmd_ipv6, NULL, SL_DIR_CONF,
                  "IPv6 clients share a budget per prefix of this many bits "
                  "(default 64)"),
    AP_INIT_TAKE1("SlidingLimitAlgorithm", sl_cmd_algorithm, NULL, SL_DIR_CONF,
                  "one of: " SL_ALG_HELP_NAMES "(default log)"),
    AP_INIT_TAKE1("SlidingLimitFailMode", sl_cmd_fail_mode, NULL, SL_DIR_CONF,
                  "open or closed: when the store does not answer"),
    AP_INIT_TAKE1("SlidingLimitLocalFallback", sl_cmd_fallback, NULL,
                  SL_DIR_CONF,
                  "on or off: enforce limits locally while the store is down"),
    AP_INIT_TAKE_ARGV("SlidingLimitHeaders", sl_cmd_headers, NULL, SL_DIR_CONF,
                      "ietf, draft03, x-ratelimit, or off"),
    AP_INIT_TAKE1("SlidingLimitStatus", sl_cmd_status,
                  (void *) APR_OFFSETOF(sl_dir_conf_t, status), SL_DIR_CONF,
                  "status of a denied request, 400-599 (default 429)"),
    AP_INIT_TAKE1("SlidingLimitFailStatus", sl_cmd_status,
                  (void *) APR_OFFSETOF(sl_dir_conf_t, fail_status),
                  SL_DIR_CONF,
                  "status answered under fail-closed while the store is down, "
                  "400-599 (default 503)"),
    AP_INIT_TAKE1("SlidingLimitDryRun", sl_cmd_dry_run, NULL, SL_DIR_CONF,
                  "on or off: decide and report, never block"),
    AP_INIT_TAKE1("SlidingLimitDelayMax", sl_cmd_delay_max, NULL, SL_DIR_CONF,
                  "requests of one child that may wait for delay= at once; "
                  "0: none waits (default a quarter of ThreadsPerChild, 0 "
                  "under prefork)"),
    AP_INIT_TAKE1("SlidingLimitAllotment", sl_cmd_allotment, NULL,
                  RSRC_CONF | ACCESS_CONF,
                  "off or auto: admit from units the store allots this "
                  "server ahead, never more than the limit (default off)"),
    AP_INIT_TAKE1(
        "SlidingLimitStatusPage", sl_cmd_status_page, NULL,
        RSRC_CONF | ACCESS_CONF,
        "off, metrics, inspect or reset: what the slidinglimit-status "
        "handler serves here (default off; never in .htaccess)"),
    {NULL}};
