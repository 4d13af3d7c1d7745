/* SPDX-License-Identifier: Apache-2.0 */
/* What the configuration's files share: sl_config.c (the records, their
 * merge, the command table and what every directive uses),
 * sl_config_limit.c (SlidingLimit, its named policies and
 * SlidingLimitAlgorithm), sl_config_dir.c (the other per-directory
 * directives), sl_config_store.c (the store and the server-wide
 * directives) and sl_config_tls.c (a TLS store's). Nothing here is seen
 * outside the configuration. */
#ifndef SL_CONFIG_PRIVATE_H
#define SL_CONFIG_PRIVATE_H

#include "sl_config.h"

/* "DIRECTIVE: msg", the form of every refusal. */
const char *sl_err(cmd_parms *cmd, const char *msg);

/* Whether this directive is read from an .htaccess file (see sl_config.c
 * for what such a directive may write). */
int sl_in_htaccess(const cmd_parms *cmd);

/* NULL when SlidingLimitOverride lets an .htaccess file set this
 * directive (always outside .htaccess), else the refusal; loosens: the
 * value would weaken the limits set above the file. */
const char *sl_htaccess_check(cmd_parms *cmd, int loosens, const char *value);

/* on or off into *out, or the refusal. */
const char *sl_onoff(cmd_parms *cmd, const char *arg, int *out);

/* "ServerName:port" of a virtual host, lower case. */
const char *sl_host_label(apr_pool_t *p, const server_rec *s);

/* SlidingLimitStorePassword's password becomes the URL's. */
void sl_url_set_password(sl_store_url_t *u, const char *pw);

/* The directives, for sl_cmds. */
const char *sl_cmd_concurrent(cmd_parms *cmd, void *dconf, int argc,
                              char *const argv[]);
const char *sl_cmd_limit(cmd_parms *cmd, void *dconf, int argc,
                         char *const argv[]);
const char *sl_cmd_algorithm(cmd_parms *cmd, void *dconf, const char *arg);

const char *sl_cmd_key(cmd_parms *cmd, void *dconf, int argc,
                       char *const argv[]);
const char *sl_cmd_ipv6(cmd_parms *cmd, void *dconf, const char *arg);
const char *sl_cmd_fail_mode(cmd_parms *cmd, void *dconf, const char *arg);
const char *sl_cmd_fallback(cmd_parms *cmd, void *dconf, const char *arg);
const char *sl_cmd_allotment(cmd_parms *cmd, void *dconf, const char *arg);
const char *sl_cmd_dry_run(cmd_parms *cmd, void *dconf, const char *arg);
const char *sl_cmd_headers(cmd_parms *cmd, void *dconf, int argc,
                           char *const argv[]);
const char *sl_cmd_status(cmd_parms *cmd, void *dconf, const char *arg);
const char *sl_cmd_status_page(cmd_parms *cmd, void *dconf, const char *arg);
const char *sl_cmd_delay_max(cmd_parms *cmd, void *dconf, const char *arg);

const char *sl_cmd_store(cmd_parms *cmd, void *dconf, const char *arg);
const char *sl_cmd_store_password(cmd_parms *cmd, void *dconf, const char *arg);
const char *sl_cmd_sentinel_auth(cmd_parms *cmd, void *dconf, const char *a1,
                                 const char *a2);
const char *sl_cmd_timeout(cmd_parms *cmd, void *dconf, const char *a1,
                           const char *a2);
const char *sl_cmd_prefix(cmd_parms *cmd, void *dconf, const char *arg);
const char *sl_cmd_shm_size(cmd_parms *cmd, void *dconf, const char *arg);
const char *sl_cmd_secret(cmd_parms *cmd, void *dconf, const char *arg);

const char *sl_cmd_tls_ca(cmd_parms *cmd, void *dconf, const char *arg);
const char *sl_cmd_tls_cert(cmd_parms *cmd, void *dconf, const char *a1,
                            const char *a2);
const char *sl_cmd_tls_verify(cmd_parms *cmd, void *dconf, const char *arg);

#endif
