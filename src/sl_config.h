/* SPDX-License-Identifier: Apache-2.0 */
/* Configuration: the directives, and the per-server and per-directory
 * records with their merge rules. */
#ifndef SL_CONFIG_H
#define SL_CONFIG_H

#include "httpd.h"
#include "http_config.h"
#include "ap_expr.h"

#include "sl_limit.h"
#include "sl_url.h"
#include "sl_wire.h"

struct sl_proc;
struct sl_store;

#define SL_KEY_IP     0
#define SL_KEY_USER   1
#define SL_KEY_HEADER 2
#define SL_KEY_ENV    3
#define SL_KEY_EXPR   4
#define SL_KEY_FORM   5 /* form:FIELD, sl_form.c */

/* Options of the user source (user:nocase,any-address): fold ASCII
 * letters to lower case; count= sections: the attempted name alone, not
 * with the address. */
#define SL_USER_NOCASE      1
#define SL_USER_ANY_ADDRESS 2

#define SL_FAIL_OPEN   0
#define SL_FAIL_CLOSED 1

/* SlidingLimitStatusPage: each level allows what the ones below it do. */
#define SL_STATUS_PAGE_OFF     0
#define SL_STATUS_PAGE_METRICS 1
#define SL_STATUS_PAGE_INSPECT 2
#define SL_STATUS_PAGE_RESET   3

/* SlidingLimitOverride: what an .htaccess file may do */
#define SL_OVERRIDE_NONE 0 /* no SlidingLimit directive at all */
#define SL_OVERRIDE_ADD  1 /* add limits, never loosen (the default) */
#define SL_OVERRIDE_ALL  2 /* as in <Directory> */

/* Defaults, applied where a value is read (never in merge). */
#define SL_DEFAULT_CONNECT_TIMEOUT apr_time_from_msec(100)
#define SL_DEFAULT_COMMAND_TIMEOUT apr_time_from_msec(50)
#define SL_DEFAULT_PREFIX          "sl"
#define SL_DEFAULT_IPV6_PREFIX     64
#define SL_DEFAULT_HEADERS         (SL_HDR_IETF | SL_HDR_XRL)
#define SL_DEFAULT_STATUS          429
#define SL_DEFAULT_FAIL_STATUS     503
#define SL_DEFAULT_SHM_SIZE        (8 * 1024 * 1024)

typedef struct sl_key_source {
    int type;
    const char *name; /* header, variable or form field name; the token for
                         expr */
    ap_expr_info_t *expr;
    int flags; /* user: SL_USER_* */
} sl_key_source_t;

typedef struct sl_server_conf {
    sl_store_url_t *store_url;           /* NULL: unset (shm) */
    apr_interval_time_t connect_timeout; /* -1: unset */
    apr_interval_time_t command_timeout; /* -1: unset */
    const char *prefix;                  /* NULL: unset */
    apr_int64_t shm_size;                /* -1: unset */
    /* SlidingLimitKeySecret's content; NULL: unset (unkeyed identities) */
    const unsigned char *secret;
    apr_size_t secret_len;
    /* SlidingLimitSentinelAuth: both NULL unset; user NULL with a
     * password: the default user */
    const char *sentinel_user;
    const char *sentinel_password;
    /* SlidingLimitStorePassword, as read from its file or variable; NULL:
     * unset (the URL's, if any). Given to this record's store URL. */
    const char *store_password;
    const char *tls_ca;   /* NULL: unset (the system's CAs) */
    const char *tls_cert; /* NULL: unset (no client certificate) */
    const char *tls_key;
    int tls_verify; /* -1: unset (on) */
    int override;   /* SL_OVERRIDE_*; -1: unset (add) */
    /* Until the merge: this record's server, and the unnamed limits
     * written in its sections (a virtual host's, see sl_merge_server_conf). */
    server_rec *server;
    apr_array_header_t *unnamed;
    /* made in post_config (shared by all records) and child_init */
    struct sl_proc *proc;
    struct sl_tls *tls;     /* TLS stores: the client context */
    struct sl_store *store; /* the store that decides here (sl_store.c) */
} sl_server_conf_t;

/* What a section's lines read of a request beyond its key, kept as bits
 * with the lists at start-up and in each merge, so that a decision skips
 * the scans no line needs. */
#define SL_NEEDS_COUNT    1 /* a count= line: decided before authentication */
#define SL_NEEDS_KEY      2 /* a key= line */
#define SL_NEEDS_DISTINCT 4 /* a distinct= line */
#define SL_NEEDS_FORM     8 /* a form: source, in any of them: the body */

typedef struct sl_dir_conf {
    /* sl_limit_t *; NULL: inherit; empty with limits_off: "SlidingLimit off" */
    apr_array_header_t *limits;
    int limits_off;
    apr_array_header_t *keys; /* sl_key_source_t; NULL: inherit */
    /* SL_NEEDS_* of limits, of added and of keys */
    unsigned int needs, added_needs, keys_needs;
    int ipv6_prefix; /* -1: unset, as below */
    int algorithm;
    int fail_mode;
    int local_fallback;
    int headers;
    int status_page; /* SL_STATUS_PAGE_*; -1: unset (off) */
    int status;
    int fail_status;
    int dry_run;
    int delay_max;       /* SlidingLimitDelayMax; -1: unset (sl_delay.h) */
    int allotment;       /* SlidingLimitAllotment auto; -1: unset (off) */
    const char *section; /* identifies unnamed limits */
    /* Read from .htaccess under SlidingLimitOverride add: its limits are
     * added to the ones it inherits instead of replacing them. */
    int htaccess_add;
    /* The limits .htaccess files added (the end of limits): kept when a
     * section merged later (a <Location>, an <If>) sets its own. */
    apr_array_header_t *added;
} sl_dir_conf_t;

extern const command_rec sl_cmds[];

/* A server's record of this module. */
sl_server_conf_t *sl_config_server(const server_rec *s);

void *sl_create_server_conf(apr_pool_t *p, server_rec *s);
void *sl_merge_server_conf(apr_pool_t *p, void *basev, void *addv);
void *sl_create_dir_conf(apr_pool_t *p, char *dir);
void *sl_merge_dir_conf(apr_pool_t *p, void *basev, void *addv);

/* Start-up checks of a server's store settings, after the merge: logs
 * what an operator should know (verification off, TLS settings without a
 * TLS store); an error when the server must not start. */
const char *sl_config_store_check(apr_pool_t *p, server_rec *s,
                                  const sl_server_conf_t *sc);

/* Start-up and httpd -t (src/sl_inherit_check.c): one warning for each
 * section whose SlidingLimit lines replace limits that an enclosing
 * section sets and it does not repeat by name. */
void sl_inherit_check(apr_pool_t *ptemp, server_rec *s);

/* A TLS store's client context (sc->tls), made in post_config: before
 * fork, as root, like mod_ssl's, so that a key file readable by root only
 * works; no connection is opened before fork. */
const char *sl_config_tls_setup(apr_pool_t *p, sl_server_conf_t *sc);

/* SlidingLimitAllotment auto lines, kept as they are read
 * (sl_allot_note), and at start-up and under httpd -t one warning for each
 * counter limit in their sections, which takes no allotments
 * (src/sl_allot_check.c). */
void sl_allot_note(cmd_parms *cmd);
void sl_allot_check(apr_pool_t *pconf, apr_pool_t *ptemp, server_rec *s);
/* Whether the configuration read into pconf has such a line. */
int sl_allot_noted(apr_pool_t *pconf);

/* Effective values, defaults applied. */
#define SL_OR(v, d) ((v) == -1 ? (d) : (v))

#endif
