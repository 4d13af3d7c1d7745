#include "sl_config.h"
#include "sl_stats.h"
#include "sl_transport.h"

#include "http_log.h"
#include "http_protocol.h"
#include "apr_strings.h"
#include "apr_lib.h"
#include "apr_hash.h"

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
static void sl_store_set_password(sl_store_url_t *u, const char *pw)
{
    if (u->bare_userinfo) {
        u->user = u->password;
        u->bare_userinfo = 0;
    }
    u->password = pw;
}

/* "ServerName:port" of a virtual host, lower case; its ServerAlias names
 * when it has no ServerName. */
static const char *sl_host_label(apr_pool_t *p, const server_rec *s)
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
    if (add->store) {
        c->store = add->store;
        c->store_password = add->store_password;
    }
    else if (add->store_password && base->store &&
             base->store->kind != SL_STORE_SHM) {
        sl_store_url_t *u = apr_pmemdup(p, base->store, sizeof(*u));
        if (base->store_password) {
            u->bare_userinfo = 0; /* its user is already the user */
        }
        sl_store_set_password(u, add->store_password);
        c->store = u;
        c->store_password = add->store_password;
    }
    else {
        c->store = base->store;
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
    c->section = dir;
    return c;
}

#define SL_MERGE_INT(f) c->f = add->f != -1 ? add->f : base->f

void *sl_merge_dir_conf(apr_pool_t *p, void *basev, void *addv)
{
    sl_dir_conf_t *base = basev, *add = addv;
    sl_dir_conf_t *c = apr_pcalloc(p, sizeof(*c));

    /* An inner section's own SlidingLimit lines replace the inherited list;
     * an .htaccess file that may only add adds its own to it, and those
     * stay when a section merged after the file (a <Location>, an <If>)
     * sets its own. Everything else merges value by value. */
    c->added = base->added;
    if (add->limits && add->htaccess_add) {
        c->limits = base->limits && !base->limits_off
                        ? apr_array_append(p, base->limits, add->limits)
                        : add->limits;
        c->added = base->added ? apr_array_append(p, base->added, add->limits)
                               : add->limits;
    }
    else if (add->limits) {
        c->limits = base->added ? apr_array_append(p, add->limits, base->added)
                                : add->limits;
        c->limits_off = add->limits_off && !base->added;
    }
    else {
        c->limits = base->limits;
        c->limits_off = base->limits_off;
    }
    c->keys = add->keys ? add->keys : base->keys;
    SL_MERGE_INT(ipv6_prefix);
    SL_MERGE_INT(algorithm);
    SL_MERGE_INT(fail_mode);
    SL_MERGE_INT(local_fallback);
    SL_MERGE_INT(headers);
    SL_MERGE_INT(status_page);
    SL_MERGE_INT(status);
    SL_MERGE_INT(fail_status);
    SL_MERGE_INT(dry_run);
    c->section = add->section ? add->section : base->section;
    return c;
}

static const char *sl_err(cmd_parms *cmd, const char *msg)
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
static int sl_in_htaccess(const cmd_parms *cmd)
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
static const char *sl_htaccess_check(cmd_parms *cmd, int loosens,
                                     const char *value)
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

/* The configuration sections that enclose this directive, outermost first:
 * "<VirtualHost *:80>\n<Location /api>\n<If ...>". Not the file or line, so
 * the identity survives edits elsewhere and agrees across servers. */
static const char *sl_section(cmd_parms *cmd)
{
    const ap_directive_t *d;
    const char *path = "";

    /* An .htaccess file is its directory's section. */
    if (sl_in_htaccess(cmd)) {
        path = apr_pstrcat(cmd->pool, ".htaccess ", cmd->path, "\n", NULL);
    }

    for (d = cmd->directive ? cmd->directive->parent : NULL; d; d = d->parent) {
        path = apr_pstrcat(cmd->pool, d->directive, " ", d->args, "\n", path,
                           NULL);
    }
    return path;
}

static const char *sl_args(apr_pool_t *p, int argc, char *const argv[])
{
    const char *s = "";
    int i;

    for (i = 0; i < argc; i++) {
        s = apr_pstrcat(p, s, i ? " " : "", argv[i], NULL);
    }
    return s;
}

/* A name is one budget wherever it is used, so every use must define the
 * same limit: otherwise two sections would read one store key with
 * different quotas, and whichever ran last would decide. The algorithm is
 * compared as it applies (sl_algorithms_agree). The state lives in the
 * configuration pool, so each read of the configuration starts empty. */
typedef struct sl_named_state {
    apr_hash_t *first; /* name -> the first sl_limit_t with that name */
    apr_hash_t *uses;  /* name -> array of sl_named_use_t */
    apr_hash_t *algs;  /* section (ap_directive_t *) -> sl_dir_conf_t * that
                          set SlidingLimitAlgorithm there */
} sl_named_state_t;

typedef struct sl_named_use {
    const sl_limit_t *l;
    const ap_directive_t *line;
} sl_named_use_t;

static sl_named_state_t *sl_named_state(apr_pool_t *p)
{
    static const char key[] = "slidinglimit-named-policies";
    sl_named_state_t *st = NULL;

    apr_pool_userdata_get((void **) &st, key, p);
    if (!st) {
        st = apr_pcalloc(p, sizeof(*st));
        st->first = apr_hash_make(p);
        st->uses = apr_hash_make(p);
        st->algs = apr_hash_make(p);
        apr_pool_userdata_set(st, key, apr_pool_cleanup_null, p);
    }
    return st;
}

static const char *sl_place(apr_pool_t *p, const ap_directive_t *d)
{
    return d ? apr_psprintf(p, "%s:%d", d->filename, d->line_num) : "?";
}

/* Whether two count= lists hold the same statuses (each lists a status
 * once), in whatever order. */
static int sl_counts_agree(const sl_limit_t *a, const sl_limit_t *b)
{
    int i;

    if (!a->count != !b->count || a->ncount != b->ncount) {
        return 0;
    }
    for (i = 0; i < a->ncount; i++) {
        if (!sl_limit_counts(b, a->count[i])) {
            return 0;
        }
    }
    return 1;
}

static const char *sl_count_text(apr_pool_t *p, const sl_limit_t *l)
{
    const char *s = "count=";
    int i;

    for (i = 0; i < l->ncount; i++) {
        s = apr_psprintf(p, "%s%s%d", s, i ? "," : "", l->count[i]);
    }
    return s;
}

/* What the store does with a name's budget, as the message shows it. */
static const char *sl_limit_text(apr_pool_t *p, const sl_limit_t *l)
{
    return apr_psprintf(
        p, "%" APR_INT64_T_FMT " per %s%s%s%s%s%s%s", l->requests,
        sl_format_duration(p, l->window), l->burst ? ", burst=" : "",
        l->burst ? sl_i64toa(p, l->burst) : "", l->block ? ", block=" : "",
        l->block ? sl_format_duration(p, l->block) : "", l->count ? ", " : "",
        l->count ? sl_count_text(p, l) : "");
}

/* Every use of a name must agree on what the store does with its budget:
 * the quota, window and burst; block=, since a refusal through a use
 * without it writes no block, and a use without it ignores one that runs;
 * count=, since a use that gives admissions back frees room that another
 * use's deny cache entry says cannot be there. cost= may differ: it is what
 * a request through that section takes from the one budget. */
static const char *sl_named_agree(cmd_parms *cmd, const sl_limit_t *l)
{
    sl_named_state_t *st = sl_named_state(cmd->pool);
    const sl_limit_t *o = apr_hash_get(st->first, l->name, APR_HASH_KEY_STRING);
    apr_array_header_t *uses;
    sl_named_use_t *u;
    const char *diff = NULL;

    if (!o) {
        apr_hash_set(st->first, l->name, APR_HASH_KEY_STRING, l);
        uses = apr_array_make(cmd->pool, 2, sizeof(sl_named_use_t));
        apr_hash_set(st->uses, l->name, APR_HASH_KEY_STRING, uses);
    }
    else if (o->requests != l->requests || o->window != l->window ||
             o->burst != l->burst) {
        diff = apr_pstrcat(cmd->pool, "this use is ",
                           sl_limit_text(cmd->pool, l), NULL);
    }
    else if (o->block != l->block) {
        diff = l->block
                   ? apr_pstrcat(cmd->pool, "this use has block=",
                                 sl_format_duration(cmd->pool, l->block), NULL)
                   : "this use has no block=";
    }
    else if (!sl_counts_agree(o, l)) {
        diff = l->count ? apr_pstrcat(cmd->pool, "this use has ",
                                      sl_count_text(cmd->pool, l), NULL)
                        : "this use has no count=";
    }
    uses = apr_hash_get(st->uses, l->name, APR_HASH_KEY_STRING);
    if (diff) {
        const sl_named_use_t *first = &APR_ARRAY_IDX(uses, 0, sl_named_use_t);
        return apr_psprintf(cmd->pool,
                            "name '%s' is already a different limit at %s "
                            "(%s); %s; every use of a name must be the same "
                            "limit",
                            l->name, sl_place(cmd->pool, first->line),
                            sl_limit_text(cmd->pool, o), diff);
    }
    u = apr_array_push(uses);
    u->l = l;
    u->line = cmd->directive;
    return NULL;
}

/* The algorithm a line applies: its own algorithm=, else the
 * SlidingLimitAlgorithm of the nearest enclosing section that sets one
 * (the line's own, an <If>'s <Location>, the virtual host, the main
 * server), else log: the order in which httpd merges them. */
static int sl_line_algorithm(const sl_named_state_t *st,
                             const sl_named_use_t *u)
{
    const ap_directive_t *d = u->line;

    if (u->l->algorithm != SL_ALG_UNSET) {
        return u->l->algorithm;
    }
    do {
        const sl_dir_conf_t *dc;
        d = d ? d->parent : NULL;
        dc = apr_hash_get(st->algs, &d, sizeof(d));
        if (dc && dc->algorithm != -1) {
            return dc->algorithm;
        }
    } while (d);
    return SL_ALG_LOG;
}

/* Every use of each name must apply one algorithm, or the name would be
 * two budgets (the algorithm is part of the store key). Checked after
 * every SlidingLimit with a name and every SlidingLimitAlgorithm, as
 * either can come last: the last one read that splits a name is refused. */
static const char *sl_algorithms_agree(cmd_parms *cmd)
{
    sl_named_state_t *st = sl_named_state(cmd->pool);
    apr_hash_index_t *hi;
    int i;

    for (hi = apr_hash_first(cmd->temp_pool, st->uses); hi;
         hi = apr_hash_next(hi)) {
        void *val;
        const apr_array_header_t *uses;
        const sl_named_use_t *a;
        int alg;

        apr_hash_this(hi, NULL, NULL, &val);
        uses = val;
        a = &APR_ARRAY_IDX(uses, 0, sl_named_use_t);
        alg = sl_line_algorithm(st, a);

        for (i = 1; i < uses->nelts; i++) {
            const sl_named_use_t *b = &APR_ARRAY_IDX(uses, i, sl_named_use_t);
            int other = sl_line_algorithm(st, b);
            if (other != alg) {
                return apr_psprintf(
                    cmd->pool,
                    "name '%s' would be two budgets: algorithm %s at %s and "
                    "%s at %s (through algorithm= or SlidingLimitAlgorithm); "
                    "every use of a name must be the same limit",
                    a->l->name, sl_algorithm_name(alg),
                    sl_place(cmd->pool, a->line), sl_algorithm_name(other),
                    sl_place(cmd->pool, b->line));
            }
        }
    }
    return NULL;
}

/* A limit's expression compiled, and what its line alone must hold. */
static const char *sl_limit_compile(cmd_parms *cmd, sl_limit_t *l)
{
    const char *err = NULL;

    if (l->cost_expr) {
        /* The response does not vary with what it costs: never a
         * "Vary: Content-Length", which would defeat caches. */
        l->cost_prog = ap_expr_parse_cmd(
            cmd, l->cost_expr,
            AP_EXPR_FLAG_STRING_RESULT | AP_EXPR_FLAG_DONT_VARY, &err, NULL);
        if (err) {
            return sl_err(cmd, apr_psprintf(cmd->pool,
                                            "'cost=expr:%s': cannot parse "
                                            "the expression: %s",
                                            l->cost_expr, err));
        }
    }
    /* The section's SlidingLimitAlgorithm may come later or be inherited,
     * so a burst= that would silently do nothing is refused here. */
    if (l->burst && l->algorithm != SL_ALG_GCRA) {
        return sl_err(cmd, apr_psprintf(cmd->pool,
                                        "'burst=%" APR_INT64_T_FMT
                                        "' needs algorithm=gcra on the "
                                        "same line",
                                        l->burst));
    }
    return NULL;
}

/* One policy per id and per name in a section; a named one is the same
 * policy wherever its name is used, or its directory's own in .htaccess. */
static const char *sl_limit_unique(cmd_parms *cmd, sl_dir_conf_t *dc,
                                   sl_limit_t *l)
{
    const char *err;
    int i;

    if (!dc->limits) {
        dc->limits = apr_array_make(cmd->pool, 2, sizeof(sl_limit_t *));
    }
    for (i = 0; i < dc->limits->nelts; i++) {
        const sl_limit_t *o = APR_ARRAY_IDX(dc->limits, i, sl_limit_t *);
        if (!strcmp(o->id, l->id) || !strcmp(o->name, l->name)) {
            return sl_err(cmd, apr_psprintf(cmd->pool,
                                            "policy '%s' is set twice in "
                                            "this section",
                                            l->name));
        }
    }
    /* A name in an .htaccess file is that directory's own: a file that
     * its owner may edit never reaches the budgets of the server's (or
     * another directory's) policy of the same name. */
    if (l->named && sl_in_htaccess(cmd)) {
        sl_limit_scope(cmd->pool, l, sl_section(cmd));
    }
    else if (l->named && ((err = sl_named_agree(cmd, l)) ||
                          (err = sl_algorithms_agree(cmd)))) {
        return sl_err(cmd, err);
    }
    return NULL;
}

/* The limit joins its section, and an unnamed one its virtual host. */
static void sl_limit_keep(cmd_parms *cmd, sl_dir_conf_t *dc, sl_limit_t *l)
{
    /* Made here, not per decision: it scans the section's text. */
    l->label = sl_stats_policy(cmd->pool, l);
    APR_ARRAY_PUSH(dc->limits, sl_limit_t *) = l;
    if (!l->named && cmd->server->is_virtual && sl_in_htaccess(cmd)) {
        /* The whole configuration is read by now: the host's names are
         * known, and this line is the host's own at once. */
        sl_limit_set_host(cmd->pool, l, sl_host_label(cmd->pool, cmd->server));
    }
    else if (!l->named && cmd->server->is_virtual) {
        sl_server_conf_t *sc = sl_config_server(cmd->server);
        if (!sc->unnamed) {
            sc->unnamed = apr_array_make(cmd->pool, 4, sizeof(sl_limit_t *));
        }
        APR_ARRAY_PUSH(sc->unnamed, sl_limit_t *) = l;
    }
}

static const char *sl_cmd_limit(cmd_parms *cmd, void *dconf, int argc,
                                char *const argv[])
{
    sl_dir_conf_t *dc = dconf;
    sl_limit_t *l;
    const char *err;

    if ((err = sl_htaccess_check(cmd, argc == 1 && !strcasecmp(argv[0], "off"),
                                 "off"))) {
        return err;
    }
    if (sl_in_htaccess(cmd)) {
        dc->htaccess_add = SL_OR(sl_config_server(cmd->server)->override,
                                 SL_OVERRIDE_ADD) == SL_OVERRIDE_ADD;
    }
    if (argc == 1 && !strcasecmp(argv[0], "off")) {
        if (dc->limits && dc->limits->nelts) {
            return sl_err(cmd, "'off' cannot be combined with limits in the "
                               "same section");
        }
        dc->limits = apr_array_make(cmd->pool, 1, sizeof(sl_limit_t *));
        dc->limits_off = 1;
        return NULL;
    }
    if (dc->limits_off) {
        return sl_err(cmd, apr_psprintf(cmd->pool,
                                        "'%s' cannot follow 'SlidingLimit "
                                        "off' in the same section",
                                        sl_args(cmd->pool, argc, argv)));
    }
    if (argc < 2) {
        return sl_err(cmd, apr_psprintf(cmd->pool,
                                        "'%s': needs REQUESTS WINDOW (or "
                                        "'off')",
                                        sl_args(cmd->pool, argc, argv)));
    }
    if ((err = sl_parse_limit(cmd->pool, argc, argv, sl_section(cmd), &l))) {
        return sl_err(cmd, err);
    }
    if ((err = sl_limit_compile(cmd, l)) ||
        (err = sl_limit_unique(cmd, dc, l))) {
        return err;
    }
    sl_limit_keep(cmd, dc, l);
    return NULL;
}

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

static const char *sl_cmd_key(cmd_parms *cmd, void *dconf, int argc,
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
        else {
            return sl_err(cmd, apr_psprintf(cmd->pool,
                                            "'%s' is not a key source (ip, "
                                            "user[:nocase,any-address], "
                                            "header:NAME, env:NAME, "
                                            "expr:STRING)",
                                            a));
        }
    }
    return NULL;
}

static const char *sl_cmd_ipv6(cmd_parms *cmd, void *dconf, const char *arg)
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

static const char *sl_cmd_algorithm(cmd_parms *cmd, void *dconf,
                                    const char *arg)
{
    sl_dir_conf_t *dc = dconf;
    sl_named_state_t *st;
    const ap_directive_t **section;
    const char *err = sl_htaccess_check(cmd, 1, NULL);

    if (err) {
        return err;
    }
    if ((err = sl_parse_algorithm(cmd->pool, arg, &dc->algorithm))) {
        return sl_err(cmd, err);
    }
    /* A name in an .htaccess file is the file's own (sl_limit_scope): there
     * is nothing to agree with, and no state to keep. */
    if (sl_in_htaccess(cmd)) {
        return NULL;
    }
    st = sl_named_state(cmd->pool);
    section = apr_palloc(cmd->pool, sizeof(*section));
    /* The section whose default this is (NULL: the main server). */
    *section = cmd->directive ? cmd->directive->parent : NULL;
    apr_hash_set(st->algs, section, sizeof(*section), dc);
    return (err = sl_algorithms_agree(cmd)) ? sl_err(cmd, err) : NULL;
}

static const char *sl_cmd_fail_mode(cmd_parms *cmd, void *dconf,
                                    const char *arg)
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

static const char *sl_onoff(cmd_parms *cmd, const char *arg, int *out)
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

static const char *sl_cmd_fallback(cmd_parms *cmd, void *dconf, const char *arg)
{
    sl_dir_conf_t *dc = dconf;
    const char *err = sl_onoff(cmd, arg, &dc->local_fallback);

    return err ? err : sl_htaccess_check(cmd, !dc->local_fallback, arg);
}

static const char *sl_cmd_dry_run(cmd_parms *cmd, void *dconf, const char *arg)
{
    sl_dir_conf_t *dc = dconf;
    const char *err = sl_onoff(cmd, arg, &dc->dry_run);

    return err ? err : sl_htaccess_check(cmd, dc->dry_run, arg);
}

static const char *sl_cmd_headers(cmd_parms *cmd, void *dconf, int argc,
                                  char *const argv[])
{
    sl_dir_conf_t *dc = dconf;
    const char *err = sl_htaccess_check(cmd, 0, NULL);
    int flags = 0, i;

    if (err) {
        return err;
    }
    if (argc < 1) {
        return sl_err(cmd, "needs ietf, draft03, x-ratelimit or off");
    }
    for (i = 0; i < argc; i++) {
        if (!strcasecmp(argv[i], "off") && argc == 1) {
            flags = 0;
        }
        else if (!strcasecmp(argv[i], "ietf")) {
            flags |= SL_HDR_IETF;
        }
        else if (!strcasecmp(argv[i], "draft03")) {
            flags |= SL_HDR_DRAFT03;
        }
        else if (!strcasecmp(argv[i], "x-ratelimit")) {
            flags |= SL_HDR_XRL;
        }
        else {
            return sl_err(cmd, apr_psprintf(cmd->pool,
                                            "'%s' is not a header set (ietf, "
                                            "draft03, x-ratelimit, or off "
                                            "alone)",
                                            argv[i]));
        }
    }
    dc->headers = flags;
    return NULL;
}

/* SlidingLimitStatus and SlidingLimitFailStatus: the field is cmd->info. */
static const char *sl_cmd_status(cmd_parms *cmd, void *dconf, const char *arg)
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
static const char *sl_store_give_password(cmd_parms *cmd, sl_store_url_t *u,
                                          const char *pw)
{
    if (u->kind == SL_STORE_SHM) {
        return NULL; /* the check after the merge says it does nothing */
    }
    if (u->password && *u->password && !u->bare_userinfo) {
        return apr_psprintf(cmd->pool,
                            "%s: the store %s already holds a password in its "
                            "URL; give it in one place (SlidingLimitStore "
                            "redis://user@host with SlidingLimitStorePassword)",
                            cmd->cmd->name, u->display);
    }
    sl_store_set_password(u, pw);
    return NULL;
}

static const char *sl_cmd_store(cmd_parms *cmd, void *dconf, const char *arg)
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
        (err = sl_store_give_password(cmd, u, sc->store_password))) {
        return err;
    }
    sc->store = u;
    return NULL;
}

static const char *sl_cmd_store_password(cmd_parms *cmd, void *dconf,
                                         const char *arg)
{
    sl_server_conf_t *sc = sl_config_server(cmd->server);
    const char *pw, *err;
    (void) dconf;

    if ((err = sl_read_password(cmd, arg, &pw))) {
        return err;
    }
    /* The store this record names itself (a virtual host's inherited one
     * gets it in the merge): whichever of the two directives comes last. */
    if (sc->store && (err = sl_store_give_password(cmd, sc->store, pw))) {
        return err;
    }
    sc->store_password = pw;
    return NULL;
}

static const char *sl_cmd_sentinel_auth(cmd_parms *cmd, void *dconf,
                                        const char *a1, const char *a2)
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

/* Paths are read (and parsed) now, as root, so that apachectl -t refuses a
 * file the server could not use. */
static const char *sl_cmd_tls_ca(cmd_parms *cmd, void *dconf, const char *arg)
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

static const char *sl_cmd_tls_cert(cmd_parms *cmd, void *dconf, const char *a1,
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

static const char *sl_cmd_tls_verify(cmd_parms *cmd, void *dconf,
                                     const char *arg)
{
    (void) dconf;
    return sl_onoff(cmd, arg, &sl_config_server(cmd->server)->tls_verify);
}

const char *sl_config_tls_setup(apr_pool_t *p, sl_server_conf_t *sc)
{
    const char *err;

    sc->tls = NULL;
    if (!sc->store || !sc->store->tls) {
        return NULL;
    }
    err = sl_tls_create(p, sc->tls_ca, sc->tls_cert, sc->tls_key,
                        SL_OR(sc->tls_verify, 1), &sc->tls);
    return err ? apr_psprintf(p, "store %s: %s", sc->store->display, err)
               : NULL;
}

const char *sl_config_store_check(apr_pool_t *p, server_rec *s,
                                  const sl_server_conf_t *sc)
{
    const sl_store_url_t *u = sc->store;
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
    if (sc->store_password && (!u || u->kind == SL_STORE_SHM)) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s,
                     "mod_slidinglimit: SlidingLimitStorePassword has no "
                     "effect: the store is shm");
    }
    if (sc->sentinel_password && (!u || u->kind != SL_STORE_SENTINEL)) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s,
                     "mod_slidinglimit: SlidingLimitSentinelAuth has no "
                     "effect: the store %s is not a Sentinel store",
                     u ? u->display : "shm");
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

static const char *sl_cmd_timeout(cmd_parms *cmd, void *dconf, const char *a1,
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

static const char *sl_cmd_prefix(cmd_parms *cmd, void *dconf, const char *arg)
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

static const char *sl_cmd_shm_size(cmd_parms *cmd, void *dconf, const char *arg)
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
static const char *sl_cmd_secret(cmd_parms *cmd, void *dconf, const char *arg)
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

/* SlidingLimitStatusPage: what the status handler may do in this section.
 * The level is the server configuration's alone (its context has no
 * override class, so httpd refuses it in .htaccess, also inside <If> and
 * <Files>): a tenant who may set a handler there (SetHandler, AddHandler,
 * RewriteRule [H=] under AllowOverride FileInfo) gets no more than the
 * administrator opened around it. */
static const char *sl_cmd_status_page(cmd_parms *cmd, void *dconf,
                                      const char *arg)
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
                      "REQUESTS WINDOW [name=NAME] [algorithm=log|counter|"
                      "gcra] [burst=N] [cost=N|expr:STRING] [cost-unit=N] "
                      "[block=DURATION] [count=STATUS,...], or off"),
    AP_INIT_TAKE_ARGV("SlidingLimitKey", sl_cmd_key, NULL, SL_DIR_CONF,
                      "whose budget: ip, user, header:NAME, env:NAME, "
                      "expr:STRING; the first with a value wins"),
    AP_INIT_TAKE1("SlidingLimitIPv6Prefix", sl_cmd_ipv6, NULL, SL_DIR_CONF,
                  "IPv6 clients share a budget per prefix of this many bits "
                  "(default 64)"),
    AP_INIT_TAKE1("SlidingLimitAlgorithm", sl_cmd_algorithm, NULL, SL_DIR_CONF,
                  "log, counter or gcra (default log)"),
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
    AP_INIT_TAKE1(
        "SlidingLimitStatusPage", sl_cmd_status_page, NULL,
        RSRC_CONF | ACCESS_CONF,
        "off, metrics, inspect or reset: what the slidinglimit-status "
        "handler serves here (default off; never in .htaccess)"),
    {NULL}};
