/* SPDX-License-Identifier: Apache-2.0 */
/* Configuration: SlidingLimit (a line's limit, its expression, its
 * section and virtual host), the named policies that must agree wherever a
 * name is used, and SlidingLimitAlgorithm, which they must agree under. */
#include "sl_config_private.h"
#include "sl_delay.h"
#include "sl_quota.h"
#include "sl_redis.h"
#include "sl_shm.h"
#include "sl_stats.h"
#include "sl_wire.h"

#include "http_log.h"
#include "apr_strings.h"
#include "apr_hash.h"

#include <string.h>

APLOG_USE_MODULE(slidinglimit);

/* The configuration sections that enclose this directive, outermost first:
 * "<VirtualHost *:80>\n<Location /api>\n<If ...>". Not the file or line, so
 * the identity survives edits elsewhere and agrees across servers. */
static const char *sl_section_path(cmd_parms *cmd)
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
#define SL_NAMED_STATE "slidinglimit-named-policies"

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
    static const char key[] = SL_NAMED_STATE;
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

/* The names the server configuration uses, read by .htaccess files at
 * request time: the state of the configuration pool as the last read of
 * the configuration left it, never made here (pconf is not the request's
 * to write). */
static int sl_server_name(cmd_parms *cmd, const char *name)
{
    sl_named_state_t *st = NULL;
    apr_hash_index_t *hi;

    apr_pool_userdata_get((void **) &st, SL_NAMED_STATE,
                          cmd->server->process->pconf);
    if (!st) {
        return 0;
    }
    /* Case-insensitive: a log reader that matches names without case
     * must not take a tenant's "Login" for the server's "login". */
    for (hi = apr_hash_first(cmd->temp_pool, st->first); hi;
         hi = apr_hash_next(hi)) {
        const void *key;
        apr_hash_this(hi, &key, NULL, NULL);
        if (!strcasecmp(key, name)) {
            return 1;
        }
    }
    return 0;
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
static const char *sl_limit_describe(apr_pool_t *p, const sl_limit_t *l)
{
    return apr_psprintf(
        p, "%s%" APR_INT64_T_FMT "%s per %s%s%s%s%s%s%s%s%s",
        l->quota_expr
            ? apr_pstrcat(p, "expr:", l->quota_expr, " (quota-default=", NULL)
            : "",
        l->requests, l->quota_expr ? ")" : "", sl_format_duration(p, l->window),
        l->burst ? ", burst=" : "", l->burst ? sl_i64toa(p, l->burst) : "",
        l->block ? ", block=" : "",
        l->block ? sl_format_duration(p, l->block) : "", l->count ? ", " : "",
        l->count ? sl_count_text(p, l) : "",
        l->distinct ? apr_pstrcat(p, ", distinct=", l->distinct, NULL) : "",
        l->key ? apr_pstrcat(p, ", key=", l->key, NULL) : "");
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
             o->burst != l->burst ||
             strcmp(o->quota_expr ? o->quota_expr : "",
                    l->quota_expr ? l->quota_expr : "") ||
             /* As written: env: names differ by case, so a use that
              * differs only so is refused rather than merged. */
             strcmp(o->distinct ? o->distinct : "",
                    l->distinct ? l->distinct : "") ||
             /* key=: a use keyed otherwise would count the name's budget
              * for other clients than the first use does. */
             strcmp(o->key ? o->key : "", l->key ? l->key : "")) {
        diff = apr_pstrcat(cmd->pool, "this use is ",
                           sl_limit_describe(cmd->pool, l), NULL);
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
                            sl_limit_describe(cmd->pool, o), diff);
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

/* distinct=SOURCE parsed as SlidingLimitKey parses a source, by the
 * same function: whatever source it takes, distinct= takes. Not in an
 * .htaccess file, whose sources are the tenant's to choose and whose
 * SlidingLimitKey the server's override may refuse. */
static const char *sl_limit_distinct(cmd_parms *cmd, sl_limit_t *l)
{
    sl_dir_conf_t one;
    char *argv[1];
    const char *err;

    if (sl_in_htaccess(cmd)) {
        return sl_err(cmd, apr_psprintf(cmd->pool,
                                        "'distinct=%s' belongs in the "
                                        "server configuration, not in "
                                        ".htaccess",
                                        l->distinct));
    }
    memset(&one, 0, sizeof(one));
    argv[0] = apr_pstrdup(cmd->pool, l->distinct);
    if ((err = sl_cmd_key(cmd, &one, 1, argv))) {
        return apr_pstrcat(cmd->pool, err, " (in distinct=)", NULL);
    }
    l->distinct_keys = one.keys;
    return NULL;
}

/* key=SOURCE parsed as SlidingLimitKey parses a source, by the same
 * function, or none: the one shared bucket of the inspect's none=, every
 * request one budget (no source, so sl_key_identity finds no value). Not
 * in an .htaccess file: a request's budgets with several identities need
 * the stores to know it when they are made (sl_shm.h), before any
 * .htaccess file is read. */
static const char *sl_limit_key(cmd_parms *cmd, sl_limit_t *l)
{
    sl_dir_conf_t one;
    char *argv[1];
    const char *err;

    if (sl_in_htaccess(cmd)) {
        return sl_err(cmd, apr_psprintf(cmd->pool,
                                        "'key=%s' belongs in the server "
                                        "configuration, not in .htaccess",
                                        l->key));
    }
    /* Read by the stores when they are made (post_config): pconf. */
    apr_pool_userdata_setn("", SL_SHM_ONE_STRIPE, NULL, cmd->pool);
    if (!strcasecmp(l->key, "none")) {
        l->key_keys = apr_array_make(cmd->pool, 1, sizeof(sl_key_source_t));
        return NULL;
    }
    memset(&one, 0, sizeof(one));
    argv[0] = apr_pstrdup(cmd->pool, l->key);
    if ((err = sl_cmd_key(cmd, &one, 1, argv))) {
        return apr_pstrcat(cmd->pool, err,
                           " (in key=, which also takes none: one budget "
                           "for every client)",
                           NULL);
    }
    l->key_keys = one.keys;
    return NULL;
}

/* A limit's expression compiled, and what its line alone must hold. */
static const char *sl_limit_compile(cmd_parms *cmd, sl_limit_t *l)
{
    const char *err = NULL;

    if (l->distinct && (err = sl_limit_distinct(cmd, l))) {
        return err;
    }
    if (l->key && (err = sl_limit_key(cmd, l))) {
        return err;
    }

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
    if (l->quota_expr) {
        /* As cost=expr:, never a Vary: the quota is the server's reading
         * of the request (a header the authenticating proxy sets), not a
         * variant of the response. */
        l->quota_prog = ap_expr_parse_cmd(
            cmd, l->quota_expr,
            AP_EXPR_FLAG_STRING_RESULT | AP_EXPR_FLAG_DONT_VARY, &err, NULL);
        if (err) {
            return sl_err(cmd, apr_psprintf(cmd->pool,
                                            "'expr:%s': cannot parse "
                                            "the expression: %s",
                                            l->quota_expr, err));
        }
        /* An .htaccess file is read per request, after start-up's warning. */
        if (!sl_in_htaccess(cmd)) {
            sl_quota_note(cmd, l->quota_expr);
        }
    }
    if (l->delay && !sl_in_htaccess(cmd)) {
        sl_delay_note(cmd);
    }
    /* burst= without algorithm=gcra on its line is sl_parse_limit's to
     * refuse (sl_limit.c): the section's algorithm may come later. */
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
     * another directory's) policy of the same name. Nor does it take a
     * server policy's name: the headers, the metrics and the block's log
     * line (which fail2ban reads) would show the tenant's limit as the
     * server's. */
    if (l->named && sl_in_htaccess(cmd)) {
        if (sl_server_name(cmd, l->name)) {
            return sl_err(cmd, apr_psprintf(cmd->pool,
                                            "name '%s' is a policy of the "
                                            "server configuration; an "
                                            ".htaccess file may not use "
                                            "it: choose another name",
                                            l->name));
        }
        sl_limit_scope(cmd->pool, l, sl_section_path(cmd));
    }
    else if (l->named && ((err = sl_named_agree(cmd, l)) ||
                          (err = sl_algorithms_agree(cmd)))) {
        return sl_err(cmd, err);
    }
    return NULL;
}

/* SL_NEEDS_FORM when the sources keys (sl_key_source_t, or NULL) read a
 * form field. */
static unsigned int sl_keys_need(const void *sources)
{
    const apr_array_header_t *keys = sources;
    int i;

    for (i = 0; keys && i < keys->nelts; i++) {
        if (APR_ARRAY_IDX(keys, i, sl_key_source_t).type == SL_KEY_FORM) {
            return SL_NEEDS_FORM;
        }
    }
    return 0;
}

/* The limit joins its section, and an unnamed one its virtual host. */
static void sl_limit_keep(cmd_parms *cmd, sl_dir_conf_t *dc, sl_limit_t *l)
{
    /* Made here, not per decision: it scans the section's text. */
    l->htaccess = sl_in_htaccess(cmd);
    l->label = sl_stats_policy(cmd->pool, l);
    l->stats_cell = apr_pcalloc(cmd->pool, sizeof(*l->stats_cell));
    sl_wire_limit(cmd->pool, l);
    sl_redis_limit_args(cmd->pool, l);
    APR_ARRAY_PUSH(dc->limits, sl_limit_t *) = l;
    dc->needs |= (l->count ? SL_NEEDS_COUNT : 0) |
                 (l->key_keys ? SL_NEEDS_KEY : 0) |
                 (l->distinct_keys ? SL_NEEDS_DISTINCT : 0) |
                 (sl_keys_need(l->key_keys) | sl_keys_need(l->distinct_keys));
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

const char *sl_cmd_limit(cmd_parms *cmd, void *dconf, int argc,
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
    if ((err =
             sl_parse_limit(cmd->pool, argc, argv, sl_section_path(cmd), &l))) {
        return sl_err(cmd, err);
    }
    if ((err = sl_limit_compile(cmd, l)) ||
        (err = sl_limit_unique(cmd, dc, l))) {
        return err;
    }
    sl_limit_keep(cmd, dc, l);
    return NULL;
}

/* A SlidingLimitConcurrent line is one more limit of its section's list:
 * inherited, replaced and decided with the SlidingLimit lines. */
const char *sl_cmd_concurrent(cmd_parms *cmd, void *dconf, int argc,
                              char *const argv[])
{
    sl_dir_conf_t *dc = dconf;
    sl_limit_t *l;
    const char *err;

    if ((err = sl_htaccess_check(cmd, 0, NULL))) {
        return err;
    }
    if (sl_in_htaccess(cmd)) {
        dc->htaccess_add = SL_OR(sl_config_server(cmd->server)->override,
                                 SL_OVERRIDE_ADD) == SL_OVERRIDE_ADD;
    }
    if (dc->limits_off) {
        return sl_err(cmd, apr_psprintf(cmd->pool,
                                        "'%s' cannot follow 'SlidingLimit "
                                        "off' in the same section",
                                        sl_args(cmd->pool, argc, argv)));
    }
    if ((err = sl_parse_concurrent(cmd->pool, argc, argv, sl_section_path(cmd),
                                   &l))) {
        return sl_err(cmd, apr_psprintf(cmd->pool, "'%s': %s",
                                        sl_args(cmd->pool, argc, argv), err));
    }
    if ((err = sl_limit_unique(cmd, dc, l))) {
        return err;
    }
    sl_limit_keep(cmd, dc, l);
    return NULL;
}

const char *sl_cmd_algorithm(cmd_parms *cmd, void *dconf, const char *arg)
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
