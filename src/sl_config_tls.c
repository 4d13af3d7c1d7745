/* SPDX-License-Identifier: Apache-2.0 */
/* Configuration: a TLS store's directives (its CA, the client
 * certificate, verification) and its client context, made in
 * post_config. */
#include "sl_config_private.h"
#include "sl_transport.h"

#include "http_log.h"
#include "apr_strings.h"

APLOG_USE_MODULE(slidinglimit);

/* Paths are read (and parsed) now, as root, so that apachectl -t refuses a
 * file the server could not use. */
const char *sl_cmd_tls_ca(cmd_parms *cmd, void *dconf, const char *arg)
{
    const char *path = ap_server_root_relative(cmd->pool, arg);
    const char *err;
    (void) dconf;

    if (!path) {
        return sl_err(cmd, apr_psprintf(cmd->pool, "'%s': bad path", arg));
    }
    if ((err = sl_tls_check_ca(cmd->pool, path))) {
        return sl_err(cmd, err);
    }
    sl_config_server(cmd->server)->tls_ca = path;
    return NULL;
}

const char *sl_cmd_tls_cert(cmd_parms *cmd, void *dconf, const char *a1,
                            const char *a2)
{
    sl_server_conf_t *sc = sl_config_server(cmd->server);
    const char *cert = ap_server_root_relative(cmd->pool, a1);
    const char *key = a2 ? ap_server_root_relative(cmd->pool, a2) : cert;
    const char *err;
    (void) dconf;

    if (!cert || !key) {
        return sl_err(
            cmd, apr_psprintf(cmd->pool, "'%s': bad path", cert ? a2 : a1));
    }
    if ((err = sl_tls_check_cert(cmd->pool, cert, key))) {
        return sl_err(cmd, err);
    }
    sc->tls_cert = cert;
    sc->tls_key = key;
    return NULL;
}

const char *sl_cmd_tls_verify(cmd_parms *cmd, void *dconf, const char *arg)
{
    (void) dconf;
    return sl_onoff(cmd, arg, &sl_config_server(cmd->server)->tls_verify);
}

const char *sl_config_tls_setup(apr_pool_t *p, sl_server_conf_t *sc)
{
    const char *err;

    sc->tls = NULL;
    if (!sc->store_url || !sc->store_url->tls) {
        return NULL;
    }
    err = sl_tls_create(p, sc->tls_ca, sc->tls_cert, sc->tls_key,
                        SL_OR(sc->tls_verify, 1), &sc->tls);
    return err ? apr_psprintf(p, "store %s: %s", sc->store_url->display, err)
               : NULL;
}
