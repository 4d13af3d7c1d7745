/* SPDX-License-Identifier: Apache-2.0 */
/* A Redis store's prerequisites: INFO's text read, the rules applied, and
 * the shared table that has each node asked once per generation (see
 * sl_prereq.h). */
#include "sl_prereq.h"
#include "sl_claim.h"
#include "sl_wire.h"

#include <apr_atomic.h>
#include <apr_sha1.h>
#include <apr_strings.h>

#include <stdlib.h>
#include <string.h>

/* A decimal number of at most 9 digits at *s, moved past; -1 if none. */
static int sl_info_number(const char **s, const char *end)
{
    int v = 0, digits = 0;

    while (*s < end && **s >= '0' && **s <= '9' && digits < 9) {
        v = v * 10 + (**s - '0');
        (*s)++;
        digits++;
    }
    return digits && (*s == end || **s < '0' || **s > '9') ? v : -1;
}

/* MAJOR.MINOR[.PATCH], then anything that is not a digit (a fork's
 * suffix). */
static int sl_info_version(const char *s, const char *end, sl_info_t *out)
{
    out->major = sl_info_number(&s, end);
    if (out->major < 0 || s == end || *s++ != '.') {
        return 0;
    }
    out->minor = sl_info_number(&s, end);
    if (out->minor < 0) {
        return 0;
    }
    out->patch = 0;
    if (s < end && *s == '.') {
        s++;
        out->patch = sl_info_number(&s, end);
    }
    return out->patch >= 0;
}

/* What the reading keeps for itself: whether redis_version is one, and
 * Valkey's own name and version for sl_info_t's server. */
typedef struct sl_info_read {
    int version_ok;
    int valkey;
    const char *valkey_version;
} sl_info_read_t;

static void sl_info_field(apr_pool_t *p, const char *name, apr_size_t nlen,
                          const char *v, const char *end, sl_info_t *out,
                          sl_info_read_t *rd)
{
#define SL_IS(field) (nlen == sizeof(field) - 1 && !memcmp(name, field, nlen))
    if (SL_IS("redis_version")) {
        out->version = apr_pstrmemdup(p, v, end - v);
        rd->version_ok = sl_info_version(v, end, out);
    }
    else if (SL_IS("server_name")) {
        rd->valkey = end - v == 6 && !memcmp(v, "valkey", 6);
    }
    else if (SL_IS("valkey_version") && end > v) {
        rd->valkey_version = apr_pstrmemdup(p, v, end - v);
    }
    else if (SL_IS("cluster_enabled") && end - v == 1 &&
             (*v == '0' || *v == '1')) {
        out->cluster = *v - '0';
    }
    else if (SL_IS("redis_mode") && out->cluster < 0 && end - v == 7 &&
             !memcmp(v, "cluster", 7)) {
        out->cluster = 1;
    }
    else if (SL_IS("maxmemory")) {
        const char *s = v;
        apr_int64_t m = 0;
        while (s < end && *s >= '0' && *s <= '9' && m < APR_INT64_C(1) << 56) {
            m = m * 10 + (*s++ - '0');
        }
        out->maxmemory = s == end && s > v ? m : -1;
    }
    else if (SL_IS("maxmemory_policy") && end > v) {
        out->policy = apr_pstrmemdup(p, v, end - v);
    }
#undef SL_IS
}

const char *sl_info_parse(apr_pool_t *p, const char *text, apr_size_t len,
                          sl_info_t *out)
{
    const char *s = text, *end = text + len;
    sl_info_read_t rd = {0, 0, NULL};

    memset(out, 0, sizeof(*out));
    out->cluster = -1;
    out->maxmemory = -1;
    while (s < end) {
        const char *eol = memchr(s, '\n', end - s), *colon;
        const char *stop = eol ? eol : end;
        const char *vend = stop > s && stop[-1] == '\r' ? stop - 1 : stop;
        colon = memchr(s, ':', vend - s);
        if (colon && *s != '#') {
            sl_info_field(p, s, colon - s, colon + 1, vend, out, &rd);
        }
        s = eol ? eol + 1 : end;
    }
    if (!out->version) {
        return "no redis_version";
    }
    if (!rd.version_ok) {
        return apr_psprintf(p, "redis_version '%.32s' is not a version",
                            out->version);
    }
    if (!rd.valkey) {
        out->server = apr_pstrcat(p, "Redis ", out->version, NULL);
    }
    else if (rd.valkey_version) {
        out->server = apr_pstrcat(p, "Valkey ", rd.valkey_version, NULL);
    }
    else {
        out->server =
            apr_pstrcat(p, "Valkey (redis_version ", out->version, ")", NULL);
    }
    return NULL;
}

static const char *sl_prereq_where(apr_pool_t *p, const sl_store_url_t *url,
                                   const char *node)
{
    /* A plain store's display names its one node already. */
    if (url->kind == SL_URL_CLUSTER || url->kind == SL_URL_SENTINEL) {
        return apr_psprintf(p, "store %s, node %s", url->display, node);
    }
    return apr_psprintf(p, "store %s", url->display);
}

int sl_prereq_problems(apr_pool_t *p, const sl_info_t *info,
                       const sl_store_url_t *url, const char *node,
                       sl_prereq_t *out)
{
    const char *where = sl_prereq_where(p, url, node);
    int n = 0;

    if (info->major < SL_PREREQ_MAJOR ||
        (info->major == SL_PREREQ_MAJOR && info->minor < SL_PREREQ_MINOR)) {
        out[n].level = SL_PREREQ_ERROR;
        out[n++].text = apr_psprintf(
            p,
            "%s runs %s: the rate limit scripts write after reading "
            "TIME, which needs Redis %d.%d or later (effects replication), "
            "so every decision fails; upgrade that Redis",
            where, info->server, SL_PREREQ_MAJOR, SL_PREREQ_MINOR);
    }
    if (url->kind != SL_URL_CLUSTER && info->cluster == 1) {
        out[n].level = SL_PREREQ_WARNING;
        out[n++].text = apr_psprintf(
            p,
            "%s is a Redis Cluster node (cluster_enabled:1): every request "
            "for a slot it does not serve is redirected (MOVED), a second "
            "round trip each time; use SlidingLimitStore %s://%s with the "
            "same credentials",
            where, url->tls ? "clusters" : "cluster",
            url->kind == SL_URL_UNIX ? "HOST:PORT" : node);
    }
    else if (url->kind == SL_URL_CLUSTER && info->cluster == 0) {
        out[n].level = SL_PREREQ_WARNING;
        out[n++].text = apr_psprintf(
            p,
            "%s is not a Redis Cluster node (cluster_enabled:0): the slot "
            "map is asked for again and again; use SlidingLimitStore "
            "%s://%s with the same credentials",
            where, url->tls ? "rediss" : "redis", node);
    }
    /* Every key the scripts write has a TTL, so the volatile-* policies
     * choose them as readily as the allkeys-* ones. */
    if (info->maxmemory > 0 && info->policy &&
        strcmp(info->policy, "noeviction")) {
        out[n].level = SL_PREREQ_WARNING;
        out[n++].text = apr_psprintf(
            p,
            "%s has maxmemory %s with maxmemory-policy %s: Redis may evict "
            "live rate limit keys, and an evicted key starts its client's "
            "budget afresh; set maxmemory-policy noeviction (a full Redis "
            "then refuses decisions and the fail mode applies) or maxmemory "
            "0",
            where, sl_i64toa(p, info->maxmemory), info->policy);
    }
    return n;
}

/* ---- who checks, once per generation ---- */

typedef struct sl_prereq_cell {
    sl_claim_id_t id;
    volatile apr_uint32_t
        claimed; /* generation + 1 of the last claim; 0 none */
} sl_prereq_cell_t;

/* The segment itself: zeroed, every cell free. */
struct sl_prereqs {
    sl_prereq_cell_t cell[SL_PREREQ_CELLS];
};

apr_size_t sl_prereqs_size(void)
{
    return sizeof(sl_prereqs_t);
}

sl_prereqs_t *sl_prereqs_attach(void *base)
{
    return base;
}

/* The cell of (display, node): a digest, as a cluster store's display
 * may be long. */
static sl_prereq_cell_t *sl_prereqs_cell(sl_prereqs_t *t, const char *display,
                                         const char *node)
{
    unsigned char digest[APR_SHA1_DIGESTSIZE];
    apr_sha1_ctx_t ctx;
    int i;

    apr_sha1_init(&ctx);
    apr_sha1_update(&ctx, display, (unsigned int) strlen(display) + 1);
    apr_sha1_update(&ctx, node, (unsigned int) strlen(node));
    apr_sha1_final(digest, &ctx);
    i = sl_claim_digest(t->cell, sizeof(sl_prereq_cell_t), SL_PREREQ_CELLS,
                        digest, NULL);
    return i < 0 ? NULL : &t->cell[i];
}

int sl_prereqs_claim(sl_prereqs_t *t, const char *display, const char *node,
                     apr_uint32_t config_gen)
{
    sl_prereq_cell_t *cell = sl_prereqs_cell(t, display, node);
    apr_uint32_t mine = config_gen + 1, seen;

    if (!cell) {
        return 0;
    }
    /* Only forward: a child of the generation before, still finishing its
     * requests, does not ask again what the new one asked. */
    for (;;) {
        seen = apr_atomic_read32(&cell->claimed);
        if (seen >= mine) {
            return 0;
        }
        if (apr_atomic_cas32(&cell->claimed, mine, seen) == seen) {
            return 1;
        }
    }
}

void sl_prereqs_release(sl_prereqs_t *t, const char *display, const char *node,
                        apr_uint32_t config_gen)
{
    sl_prereq_cell_t *cell = sl_prereqs_cell(t, display, node);

    if (cell) {
        apr_atomic_cas32(&cell->claimed, config_gen, config_gen + 1);
    }
}
