/* SPDX-License-Identifier: Apache-2.0 */
/* Configuration: the store and the server-wide directives
 * (SlidingLimitStore, its password, the Sentinels' credentials, the
 * timeouts, the key prefix and secret, the shm size), the files and
 * variables secrets are read from, and the start-up check of a server's
 * store settings. */
#include "sl_config_private.h"

#include "http_log.h"
#include "apr_strings.h"
#include "apr_lib.h"

#include <stdlib.h>
#include <string.h>

APLOG_USE_MODULE(slidinglimit);

#define SL_SECRET_MIN 16
#define SL_SECRET_MAX 4096

/* Reads a file of at most SL_SECRET_MAX bytes, now: httpd reads its
 * configuration as root, before the children drop their privileges, so a
 * file readable by root only works. CR and LF at its end are not part of
 * the content, so a file written by an editor or by echo reads the same as
 * one written without them. A file others can read is accepted with a
 * warning: refusing it would stop a server over a mode bit. */
static const char *sl_read_secret_file(cmd_parms *cmd, const char *arg,
                                       unsigned char **out, apr_size_t *outlen)
{
    const char *path = ap_server_root_relative(cmd->temp_pool, arg);
    unsigned char *buf = NULL;
    apr_file_t *f;
    apr_finfo_t fi;
    apr_size_t len = 0;
    apr_status_t rv;
    char errbuf[128];

    if (!path) {
        return sl_err(cmd, apr_psprintf(cmd->pool, "'%s': bad path", arg));
    }
    rv = apr_file_open(&f, path, APR_FOPEN_READ | APR_FOPEN_BINARY,
                       APR_FPROT_OS_DEFAULT, cmd->temp_pool);
    if (rv == APR_SUCCESS) {
        rv = apr_file_info_get(
            &fi, APR_FINFO_TYPE | APR_FINFO_SIZE | APR_FINFO_PROT, f);
        if (rv == APR_SUCCESS && fi.filetype != APR_REG) {
            apr_file_close(f);
            return sl_err(
                cmd,
                apr_psprintf(cmd->pool, "'%s' is not a regular file", path));
        }
        if (rv == APR_SUCCESS && fi.size > SL_SECRET_MAX) {
            apr_file_close(f);
            return sl_err(cmd, apr_psprintf(cmd->pool,
                                            "'%s' is longer than %d bytes",
                                            path, SL_SECRET_MAX));
        }
        buf = apr_palloc(cmd->pool, SL_SECRET_MAX + 1);
        if (rv == APR_SUCCESS) {
            rv = apr_file_read_full(f, buf, SL_SECRET_MAX + 1, &len);
            rv = rv == APR_EOF ? APR_SUCCESS : rv;
        }
        apr_file_close(f);
    }
    if (rv != APR_SUCCESS) {
        return sl_err(cmd,
                      apr_psprintf(cmd->pool, "cannot read '%s': %s", path,
                                   apr_strerror(rv, errbuf, sizeof(errbuf))));
    }
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r')) {
        len--;
    }
    if (fi.protection & (APR_FPROT_GREAD | APR_FPROT_WREAD)) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, cmd->server,
                     "mod_slidinglimit: %s: '%s' is readable by others than "
                     "its owner; make it readable by root only (chmod 0400)",
                     cmd->cmd->name, path);
    }
    *out = buf;
    *outlen = len;
    return NULL;
}

/* A password given as file:PATH (one line, read now as root) or
 * env:NAME (httpd's environment at start-up), never written in the
 * configuration itself: mod_info and "httpd -D DUMP_CONFIG" show every
 * directive's arguments as written. */
static const char *sl_read_password(cmd_parms *cmd, const char *arg,
                                    const char **out)
{
    const char *v = NULL;
    apr_size_t len = 0;
    const char *err;

    if (!strncmp(arg, "file:", 5) && arg[5]) {
        unsigned char *buf;
        if ((err = sl_read_secret_file(cmd, arg + 5, &buf, &len))) {
            return err;
        }
        v = (const char *) buf;
        if (!len) {
            return sl_err(
                cmd, apr_psprintf(cmd->pool, "'%s': the file is empty", arg));
        }
    }
    else if (!strncmp(arg, "env:", 4) && arg[4]) {
        v = getenv(arg + 4);
        if (!v || !*v) {
            return sl_err(cmd,
                          apr_psprintf(cmd->pool, "'%s': the variable is %s",
                                       arg, v ? "empty" : "not set"));
        }
        len = strlen(v);
    }
    else {
        return sl_err(cmd, apr_psprintf(cmd->pool,
                                        "'%s' is neither file:PATH nor "
                                        "env:NAME",
                                        arg));
    }
    if (memchr(v, '\0', len) || memchr(v, '\n', len) || memchr(v, '\r', len)) {
        return sl_err(cmd, apr_psprintf(cmd->pool,
                                        "'%s': a password is one line, "
                                        "without NUL bytes",
                                        arg));
    }
    *out = apr_pstrmemdup(cmd->pool, v, len);
    return NULL;
}

/* The URL may name the user, never a password of its own as well. */
static const char *sl_url_give_password(cmd_parms *cmd, sl_store_url_t *u,
                                        const char *pw)
{
    if (u->kind == SL_URL_SHM) {
        return NULL; /* the check after the merge says it does nothing */
    }
    if (u->password && *u->password && !u->bare_userinfo) {
        return apr_psprintf(cmd->pool,
                            "%s: the store %s already holds a password in its "
                            "URL; give it in one place (SlidingLimitStore "
                            "redis://user@host with SlidingLimitStorePassword)",
                            cmd->cmd->name, u->display);
    }
    sl_url_set_password(u, pw);
    return NULL;
}

const char *sl_cmd_store(cmd_parms *cmd, void *dconf, const char *arg)
{
    sl_server_conf_t *sc = sl_config_server(cmd->server);
    sl_store_url_t *u = apr_pcalloc(cmd->pool, sizeof(*u));
    const char *err = sl_parse_store_url(cmd->pool, arg, u);
    (void) dconf;

    if (err) {
        /* Name the whole URL when the message names only a part of it,
         * without its password. */
        const char *shown = sl_redact_url(cmd->pool, arg);
        return sl_err(
            cmd, strstr(err, shown)
                     ? err
                     : apr_psprintf(cmd->pool, "%s (in '%s')", err, shown));
    }
    if (sc->store_password &&
        (err = sl_url_give_password(cmd, u, sc->store_password))) {
        return err;
    }
    sc->store_url = u;
    return NULL;
}

const char *sl_cmd_store_password(cmd_parms *cmd, void *dconf, const char *arg)
{
    sl_server_conf_t *sc = sl_config_server(cmd->server);
    const char *pw, *err;
    (void) dconf;

    if ((err = sl_read_password(cmd, arg, &pw))) {
        return err;
    }
    /* The store this record names itself (a virtual host's inherited one
     * gets it in the merge): whichever of the two directives comes last. */
    if (sc->store_url && (err = sl_url_give_password(cmd, sc->store_url, pw))) {
        return err;
    }
    sc->store_password = pw;
    return NULL;
}

const char *sl_cmd_sentinel_auth(cmd_parms *cmd, void *dconf, const char *a1,
                                 const char *a2)
{
    sl_server_conf_t *sc = sl_config_server(cmd->server);
    (void) dconf;

    const char *pw = a2 ? a2 : a1, *err;

    if (!*a1 || (a2 && !*a2)) {
        return sl_err(cmd, "needs [USER] PASSWORD, neither empty");
    }
    /* file:PATH and env:NAME keep the password out of the configuration
     * (and so out of mod_info and DUMP_CONFIG). */
    if ((!strncmp(pw, "file:", 5) || !strncmp(pw, "env:", 4)) &&
        (err = sl_read_password(cmd, pw, &pw))) {
        return err;
    }
    sc->sentinel_user = a2 ? a1 : NULL;
    sc->sentinel_password = pw;
    return NULL;
}

const char *sl_config_store_check(apr_pool_t *p, server_rec *s,
                                  const sl_server_conf_t *sc)
{
    const sl_store_url_t *u = sc->store_url;
    int tls = u && u->tls;

    if (tls && !SL_OR(sc->tls_verify, 1)) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s,
                     "mod_slidinglimit: SlidingLimitStoreTLSVerify off: the "
                     "certificate and name of %s are not verified; anyone on "
                     "the path can read and answer its traffic",
                     u->display);
    }
    if (!tls && (sc->tls_ca || sc->tls_cert || sc->tls_verify != -1)) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s,
                     "mod_slidinglimit: SlidingLimitStoreTLS* settings have "
                     "no effect: the store %s is not a TLS store "
                     "(rediss://, clusters://, sentinels://)",
                     u ? u->display : "shm");
    }
    if (sc->store_password && (!u || u->kind == SL_URL_SHM)) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s,
                     "mod_slidinglimit: SlidingLimitStorePassword has no "
                     "effect: the store is shm");
    }
    if (sc->sentinel_password && (!u || u->kind != SL_URL_SENTINEL)) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s,
                     "mod_slidinglimit: SlidingLimitSentinelAuth has no "
                     "effect: the store %s is not a Sentinel store",
                     u ? u->display : "shm");
    }
    return NULL;
}

const char *sl_cmd_timeout(cmd_parms *cmd, void *dconf, const char *a1,
                           const char *a2)
{
    sl_server_conf_t *sc = sl_config_server(cmd->server);
    apr_int64_t c, k;
    const char *err;
    (void) dconf;

    if ((err = sl_parse_duration(cmd->pool, a1, &c))) {
        return sl_err(cmd, apr_pstrcat(cmd->pool, "CONNECT ", err, NULL));
    }
    if (a2 && (err = sl_parse_duration(cmd->pool, a2, &k))) {
        return sl_err(cmd, apr_pstrcat(cmd->pool, "COMMAND ", err, NULL));
    }
    if (c > apr_time_from_sec(60) || (a2 && k > apr_time_from_sec(60))) {
        return sl_err(cmd, apr_psprintf(cmd->pool,
                                        "'%s': a store timeout above 60s "
                                        "would hold requests hostage",
                                        c > apr_time_from_sec(60) ? a1 : a2));
    }
    sc->connect_timeout = c;
    if (a2) {
        sc->command_timeout = k;
    }
    return NULL;
}

const char *sl_cmd_prefix(cmd_parms *cmd, void *dconf, const char *arg)
{
    sl_server_conf_t *sc = sl_config_server(cmd->server);
    const char *s;
    (void) dconf;

    if (!*arg || strlen(arg) > 64) {
        return sl_err(
            cmd, apr_psprintf(cmd->pool, "'%s' must be 1-64 characters", arg));
    }
    for (s = arg; *s; s++) {
        /* Braces would move the cluster hash tag. */
        if (!apr_isgraph(*s) || *s == '{' || *s == '}') {
            return sl_err(cmd, apr_psprintf(cmd->pool,
                                            "'%s' may not contain braces, "
                                            "spaces or control characters",
                                            arg));
        }
    }
    sc->prefix = arg;
    return NULL;
}

const char *sl_cmd_shm_size(cmd_parms *cmd, void *dconf, const char *arg)
{
    sl_server_conf_t *sc = sl_config_server(cmd->server);
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);
    apr_int64_t v;
    char *num = apr_pstrdup(cmd->pool, arg);
    apr_size_t len = strlen(num);
    apr_int64_t mult = 1;
    (void) dconf;

    if (err) {
        return err;
    }
    if (len && (num[len - 1] == 'K' || num[len - 1] == 'k')) {
        mult = 1024;
        num[len - 1] = '\0';
    }
    else if (len && (num[len - 1] == 'M' || num[len - 1] == 'm')) {
        mult = 1024 * 1024;
        num[len - 1] = '\0';
    }
    if ((err = sl_parse_int(cmd->pool, num, 1, APR_INT64_C(1) << 40, &v))) {
        return sl_err(cmd, err);
    }
    v *= mult;
    if (v < 64 * 1024 || v > APR_INT64_C(4096) * 1024 * 1024) {
        return sl_err(
            cmd,
            apr_psprintf(cmd->pool, "'%s' must be between 64K and 4096M", arg));
    }
    sc->shm_size = v;
    return NULL;
}

/* The identities' secret: every server that shares a store must read the
 * same bytes, or each counts its own budgets. */
const char *sl_cmd_secret(cmd_parms *cmd, void *dconf, const char *arg)
{
    sl_server_conf_t *sc = sl_config_server(cmd->server);
    unsigned char *buf;
    apr_size_t len;
    const char *err = sl_read_secret_file(cmd, arg, &buf, &len);
    (void) dconf;

    if (err) {
        return err;
    }
    if (len < SL_SECRET_MIN || len > SL_SECRET_MAX) {
        return sl_err(cmd,
                      apr_psprintf(cmd->pool,
                                   "'%s' holds %lu bytes; a secret needs "
                                   "%d to %d (e.g. 32 random bytes)",
                                   ap_server_root_relative(cmd->temp_pool, arg),
                                   (unsigned long) len, SL_SECRET_MIN,
                                   SL_SECRET_MAX));
    }
    sc->secret = buf;
    sc->secret_len = len;
    return NULL;
}
