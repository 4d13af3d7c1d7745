/* SPDX-License-Identifier: Apache-2.0 */
#include "sl_url.h"
#include "sl_ident.h"
#include "sl_limit.h"

#include <apr_lib.h>
#include <apr_strings.h>

#include <string.h>

static const char *sl_parse_hostport(apr_pool_t *p, const char *s,
                                     sl_hostport_t *hp)
{
    const char *colon;
    apr_int64_t port = hp->port ? hp->port : 6379;
    const char *err;

    if (*s == '[') {
        const char *end = strchr(s, ']');
        if (!end) {
            return apr_psprintf(p, "'%s': unbalanced '['", s);
        }
        hp->host = apr_pstrmemdup(p, s + 1, end - s - 1);
        colon = end[1] == ':' ? end + 1 : NULL;
        if (end[1] && !colon) {
            return apr_psprintf(p, "'%s': junk after ']'", s);
        }
    }
    else {
        colon = strchr(s, ':');
        /* host:port:port is a typo and a bare IPv6 address is ambiguous
         * (is its last group the port?): neither is taken as a host. */
        if (colon && strchr(colon + 1, ':')) {
            return apr_psprintf(p,
                                "'%s': more than one ':' (an IPv6 address "
                                "goes in brackets: [::1]:6379)",
                                s);
        }
        hp->host = colon ? apr_pstrmemdup(p, s, colon - s) : apr_pstrdup(p, s);
    }
    if (!*hp->host) {
        return apr_psprintf(p, "'%s': no host", s);
    }
    if (colon && (err = sl_parse_int(p, colon + 1, 1, 65535, &port))) {
        return apr_pstrcat(p, "port ", err, NULL);
    }
    hp->port = (int) port;
    return NULL;
}

/* The userinfo of a store URL ends at the last '@' before the location, so
 * a password may hold '@'. The display form shows neither. */
static const char *sl_split_userinfo(apr_pool_t *p, const char *rest,
                                     const char *at, sl_store_url_t *out)
{
    const char *colon;

    if (!at) {
        return rest;
    }
    colon = memchr(rest, ':', at - rest);
    if (colon) {
        out->user = colon > rest ? apr_pstrmemdup(p, rest, colon - rest) : NULL;
        out->password = apr_pstrmemdup(p, colon + 1, at - colon - 1);
    }
    else {
        out->password = apr_pstrmemdup(p, rest, at - rest);
        out->bare_userinfo = 1;
    }
    return at + 1;
}

/* Neither the password nor the user name is ever shown: the display form
 * says only that credentials are there. */
static const char *sl_display_userinfo(apr_pool_t *p, const sl_store_url_t *u)
{
    (void) p;
    return u->user || u->password ? "***@" : "";
}

const char *sl_redact_url(apr_pool_t *p, const char *url)
{
    const char *at = strrchr(url, '@');
    const char *start, *scheme;

    if (!at) {
        return url;
    }
    scheme = strstr(url, "://");
    if (scheme && scheme < at) {
        start = scheme + 3;
    }
    else if (!strncasecmp(url, "unix:", 5)) {
        start = url + 5;
    }
    else {
        start = url;
    }
    return apr_pstrcat(p, apr_pstrmemdup(p, url, start - url), "***@", at + 1,
                       NULL);
}

/* host:port[,host:port...]: one node, cluster seeds or Sentinels. */
static const char *sl_parse_nodes(apr_pool_t *p, const char *list,
                                  int default_port, int many,
                                  sl_store_url_t *out)
{
    char *copy = apr_pstrdup(p, list), *tok, *state;
    const char *err;

    if (!many) {
        sl_hostport_t *hp = apr_array_push(out->nodes);
        hp->port = default_port;
        return sl_parse_hostport(p, copy, hp);
    }
    for (tok = apr_strtok(copy, ",", &state); tok;
         tok = apr_strtok(NULL, ",", &state)) {
        sl_hostport_t *hp = apr_array_push(out->nodes);
        hp->port = default_port;
        if ((err = sl_parse_hostport(p, tok, hp))) {
            return err;
        }
    }
    if (!out->nodes->nelts) {
        return apr_psprintf(p, "'%s': no node", list);
    }
    return NULL;
}

static const char *sl_parse_db(apr_pool_t *p, const char *s, int *db)
{
    apr_int64_t v = 0;
    const char *err;

    if (s && *s && (err = sl_parse_int(p, s, 0, 65535, &v))) {
        return apr_pstrcat(p, "db ", err, NULL);
    }
    *db = (int) v;
    return NULL;
}

static const char *sl_nodes_text(apr_pool_t *p, const sl_store_url_t *u)
{
    const char *s = "";
    int i;

    for (i = 0; i < u->nodes->nelts; i++) {
        const sl_hostport_t *hp = &APR_ARRAY_IDX(u->nodes, i, sl_hostport_t);
        s = apr_psprintf(p, "%s%s%s%s%s:%d", s, i ? "," : "",
                         strchr(hp->host, ':') ? "[" : "", hp->host,
                         strchr(hp->host, ':') ? "]" : "", hp->port);
    }
    return s;
}

static const char *sl_parse_unix(apr_pool_t *p, const char *url,
                                 sl_store_url_t *out)
{
    const char *rest = url + 5, *q, *at = NULL, *s;
    const char *err;

    out->kind = SL_URL_UNIX;
    if (!strncmp(rest, "//", 2)) {
        rest += 2;
    }
    /* unix:[user:password@]/path: the credentials end at the last "@/". */
    for (s = rest; (s = strstr(s, "@/")); s++) {
        at = s;
    }
    rest = sl_split_userinfo(p, rest, at, out);
    q = strchr(rest, '?');
    out->path = q ? apr_pstrmemdup(p, rest, q - rest) : apr_pstrdup(p, rest);
    if (*out->path != '/') {
        return apr_psprintf(p, "'%s': a unix socket path must be absolute",
                            sl_redact_url(p, url));
    }
    if (q) {
        if (strncmp(q, "?db=", 4)) {
            return apr_psprintf(p, "'%s': the only option is ?db=N", q);
        }
        if ((err = sl_parse_db(p, q + 4, &out->db))) {
            return err;
        }
    }
    out->display =
        apr_pstrcat(p, "unix:", sl_display_userinfo(p, out), out->path, NULL);
    return NULL;
}

/* redis[s]://, cluster[s]://, sentinel[s]:// after the scheme. */
static const char *sl_parse_network(apr_pool_t *p, const char *scheme,
                                    const char *rest, sl_store_url_t *out)
{
    const char *slash, *err, *nodes;
    const char *at = strrchr(rest, '@');

    if (out->kind == SL_URL_SENTINEL) {
        /* An '@' after the last '/' is the master name's. */
        const char *last = strrchr(rest, '/');
        if (at && last && last < at) {
            at = NULL;
        }
    }
    rest = sl_split_userinfo(p, rest, at, out);
    slash = strchr(rest, '/');
    nodes = slash ? apr_pstrmemdup(p, rest, slash - rest) : rest;
    if (!*nodes) {
        return apr_psprintf(p, "'%s': no host", rest);
    }
    if ((err = sl_parse_nodes(p, nodes,
                              out->kind == SL_URL_SENTINEL ? 26379 : 6379,
                              out->kind != SL_URL_TCP, out))) {
        return err;
    }
    if (out->kind == SL_URL_SENTINEL) {
        const char *name = slash ? slash + 1 : "";
        const char *db = strchr(name, '/');
        out->master = db ? apr_pstrmemdup(p, name, db - name) : name;
        if (!*out->master) {
            return apr_psprintf(p,
                                "'%s': a Sentinel URL names the master: "
                                "host:port[,...]/MASTERNAME[/db]",
                                nodes);
        }
        for (name = out->master; *name; name++) {
            if (!apr_isgraph(*name)) {
                return apr_psprintf(p, "'%s' is not a master name",
                                    out->master);
            }
        }
        if ((err = sl_parse_db(p, db ? db + 1 : NULL, &out->db))) {
            return err;
        }
    }
    else if (out->kind == SL_URL_CLUSTER) {
        /* A cluster has only database 0. */
        if (slash && slash[1] && strcmp(slash + 1, "0")) {
            return apr_psprintf(p, "'%s': a cluster has only database 0",
                                slash + 1);
        }
    }
    else if ((err = sl_parse_db(p, slash ? slash + 1 : NULL, &out->db))) {
        return err;
    }
    out->display = apr_psprintf(
        p, "%s://%s%s%s%s%s", scheme, sl_display_userinfo(p, out),
        sl_nodes_text(p, out), out->master ? "/" : "",
        out->master ? out->master : "",
        out->kind == SL_URL_CLUSTER ? "" : apr_psprintf(p, "/%d", out->db));
    return NULL;
}

static const char *sl_parse_store_url_only(apr_pool_t *p, const char *url,
                                           sl_store_url_t *out)
{
    static const struct {
        const char *scheme;
        int kind, tls;
    } schemes[] = {
        {"redis", SL_URL_TCP, 0},         {"rediss", SL_URL_TCP, 1},
        {"cluster", SL_URL_CLUSTER, 0},   {"clusters", SL_URL_CLUSTER, 1},
        {"sentinel", SL_URL_SENTINEL, 0}, {"sentinels", SL_URL_SENTINEL, 1}};
    apr_size_t i;

    memset(out, 0, sizeof(*out));
    out->nodes = apr_array_make(p, 1, sizeof(sl_hostport_t));
    if (!strcasecmp(url, "shm")) {
        out->kind = SL_URL_SHM;
        out->display = "shm";
        out->display_hash = sl_fnv1a(SL_FNV_INIT, "shm", 3);
        return NULL;
    }
    if (!strncasecmp(url, "unix:", 5)) {
        return sl_parse_unix(p, url, out);
    }
    for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
        apr_size_t n = strlen(schemes[i].scheme);
        if (!strncasecmp(url, schemes[i].scheme, n) &&
            !strncmp(url + n, "://", 3)) {
            out->kind = schemes[i].kind;
            out->tls = schemes[i].tls;
            return sl_parse_network(p, schemes[i].scheme, url + n + 3, out);
        }
    }
    return apr_psprintf(
        p,
        "'%s' is not a store (redis[s]://[user:password@]host[:port][/db], "
        "unix:[user:password@]/path[?db=N], cluster[s]://host:port[,...], "
        "sentinel[s]://host:port[,...]/MASTERNAME[/db] or shm)",
        sl_redact_url(p, url));
}

const char *sl_parse_store_url(apr_pool_t *p, const char *url,
                               sl_store_url_t *out)
{
    const char *err = sl_parse_store_url_only(p, url, out);

    if (err) {
        return err;
    }
    /* What names the data: where (the display form, which holds no
     * password) and the database. Two spellings of one server only cost
     * the deny cache a store call. */
    out->display_hash =
        sl_fnv1a(SL_FNV_INIT, out->display, strlen(out->display));
    out->tag = (out->display_hash ^ (apr_uint32_t) out->db) * 16777619u;
    return NULL;
}
