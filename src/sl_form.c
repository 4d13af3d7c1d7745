/* SPDX-License-Identifier: Apache-2.0 */
/* SlidingLimitKey form:FIELD (sl_form.h). The body is read as
 * mod_auth_form reads a login: through the request's input filters, before
 * the handler, and kept in r->kept_body, which mod_request's KEPT_BODY
 * filter gives the handler again: mod_request's insert_filter hook adds
 * that filter to any request with a kept body. A urlencoded body is parsed
 * by ap_parse_form_data, through a KEPT_BODY filter of its own; httpd has
 * no parser for multipart/form-data, whose parts sl_form_parse.c finds. */
#include "sl_form.h"

#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "http_protocol.h"
#include "http_request.h"
#include "util_filter.h"

#include "apr_hash.h"
#include "apr_strings.h"

#include <string.h>

APLOG_USE_MODULE(slidinglimit);

/* The pool's user data naming what the first request of a client's found */
#define SL_FORM_NOTE "slidinglimit:form"

typedef struct sl_form {
    int unread;         /* a form body not read */
    apr_hash_t *values; /* field: normalised value */
} sl_form_t;

/* The first request of the client's request r belongs to. */
static request_rec *sl_form_first(request_rec *r)
{
    for (;;) {
        if (r->main) {
            r = r->main;
        }
        else if (r->prev) {
            r = r->prev;
        }
        else {
            return r;
        }
    }
}

/* The lists of key sources of dc one by one: at = 0 its SlidingLimitKey,
 * then each limit's key= and distinct= (either may be NULL); 0 past the
 * last. A line's own source reads the body as a section's does. */
static int sl_form_list(const sl_dir_conf_t *dc, int at,
                        const apr_array_header_t **list)
{
    const sl_limit_t *l;

    if (!at) {
        *list = dc->keys;
        return 1;
    }
    at--;
    if (!dc->limits || at / 2 >= dc->limits->nelts) {
        return 0;
    }
    l = APR_ARRAY_IDX(dc->limits, at / 2, sl_limit_t *);
    *list = at % 2 ? l->distinct_keys : l->key_keys;
    return 1;
}

int sl_form_wanted(const sl_dir_conf_t *dc)
{
    return ((dc->needs | dc->keys_needs) & SL_NEEDS_FORM) != 0;
}

/* The status a body that could not be read answers, as httpd's own
 * readers map it. */
static int sl_form_failed(request_rec *r, apr_status_t rv)
{
    ap_log_rerror(APLOG_MARK, APLOG_INFO, rv, r,
                  "mod_slidinglimit: form: the request body could not be "
                  "read (the client stopped sending, or sent too much)");
    if (rv == AP_FILTER_ERROR) {
        return AP_FILTER_ERROR;
    }
    if (APR_STATUS_IS_TIMEUP(rv) || APR_STATUS_IS_ETIMEDOUT(rv)) {
        return HTTP_REQUEST_TIME_OUT;
    }
    if (APR_STATUS_IS_ENOSPC(rv)) {
        return HTTP_REQUEST_ENTITY_TOO_LARGE;
    }
    return HTTP_BAD_REQUEST;
}

/* Reads the body of r (len bytes by its Content-Length) through its input
 * filters into *out (*n bytes), each read waiting at most the connection's
 * Timeout. OK, or the status a failed read answers. */
static int sl_form_take(request_rec *r, apr_off_t len, char **out,
                        apr_size_t *n)
{
    apr_bucket_brigade *bb =
        apr_brigade_create(r->pool, r->connection->bucket_alloc);
    char *buf = apr_palloc(r->pool, (apr_size_t) len + 1);
    apr_size_t got = 0;
    int eos = 0;

    while (!eos) {
        apr_bucket *b;
        apr_status_t rv =
            ap_get_brigade(r->input_filters, bb, AP_MODE_READBYTES,
                           APR_BLOCK_READ, HUGE_STRING_LEN);
        if (rv != APR_SUCCESS) {
            apr_brigade_destroy(bb);
            return sl_form_failed(r, rv);
        }
        for (b = APR_BRIGADE_FIRST(bb); b != APR_BRIGADE_SENTINEL(bb);
             b = APR_BUCKET_NEXT(b)) {
            const char *d;
            apr_size_t dn;
            if (APR_BUCKET_IS_EOS(b)) {
                eos = 1;
                break;
            }
            if (AP_BUCKET_IS_ERROR(b)) {
                int status = ((ap_bucket_error *) b->data)->status;
                apr_brigade_destroy(bb);
                return status;
            }
            if (APR_BUCKET_IS_METADATA(b)) {
                continue;
            }
            rv = apr_bucket_read(b, &d, &dn, APR_BLOCK_READ);
            if (rv != APR_SUCCESS || dn > (apr_size_t) len - got) {
                apr_brigade_destroy(bb);
                return sl_form_failed(r, rv == APR_SUCCESS ? APR_EGENERAL : rv);
            }
            memcpy(buf + got, d, dn);
            got += dn;
        }
        apr_brigade_cleanup(bb);
    }
    apr_brigade_destroy(bb);
    buf[got] = '\0';
    *out = buf;
    *n = got;
    return OK;
}

/* The fields of a urlencoded body, kept in r->kept_body, by
 * ap_parse_form_data reading it through a KEPT_BODY filter of its own
 * (removed after, so that mod_request adds a fresh one for the handler). */
static apr_array_header_t *sl_form_pairs(request_rec *r, ap_filter_rec_t *kept,
                                         apr_size_t len)
{
    apr_array_header_t *pairs = NULL;
    ap_filter_t *f = ap_add_input_filter_handle(kept, NULL, r, r->connection);
    int rv = ap_parse_form_data(r, NULL, &pairs, -1, len + 1);

    ap_remove_input_filter(f);
    if (rv != OK) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                      "mod_slidinglimit: form: the body does not parse (%d)",
                      rv);
        return NULL;
    }
    return pairs;
}

/* The last value of field among pairs, as PHP takes it. */
static const char *sl_form_pair(request_rec *r, apr_array_header_t *pairs,
                                const char *field, apr_size_t *vlen)
{
    int i;

    for (i = pairs ? pairs->nelts - 1 : -1; i >= 0; i--) {
        ap_form_pair_t *pair = &APR_ARRAY_IDX(pairs, i, ap_form_pair_t);
        char *v;
        if (!strcmp(pair->name, field) &&
            apr_brigade_pflatten(pair->value, &v, vlen, r->pool) ==
                APR_SUCCESS) {
            return v;
        }
    }
    return NULL;
}

/* The values of dc's form: fields in the body (len bytes, kept). */
static void sl_form_fields(request_rec *r, const sl_dir_conf_t *dc,
                           sl_form_t *st, int kind, ap_filter_rec_t *kept,
                           const char *body, apr_size_t len)
{
    apr_array_header_t *pairs =
        kind == SL_FORM_URLENCODED ? sl_form_pairs(r, kept, len) : NULL;
    const char *ct = apr_table_get(r->headers_in, "Content-Type");
    const apr_array_header_t *keys;
    int at, i;

    for (at = 0; sl_form_list(dc, at, &keys); at++) {
        for (i = 0; keys && i < keys->nelts; i++) {
            const sl_key_source_t *src =
                &APR_ARRAY_IDX(keys, i, sl_key_source_t);
            const char *v;
            apr_size_t vlen = 0;
            if (src->type != SL_KEY_FORM ||
                apr_hash_get(st->values, src->name, APR_HASH_KEY_STRING)) {
                continue;
            }
            v = kind == SL_FORM_URLENCODED
                    ? sl_form_pair(r, pairs, src->name, &vlen)
                    : sl_form_multipart(r->pool, ct, body, len, src->name,
                                        &vlen);
            if (v && (v = sl_form_normal(r->pool, v, vlen))) {
                apr_hash_set(st->values, src->name, APR_HASH_KEY_STRING, v);
            }
        }
    }
}

/* A form body is read when its Content-Length says it is small enough;
 * one without (chunked) could only be known too large once part of it
 * was taken from the application. */
static int sl_form_fits(request_rec *r, apr_off_t *len)
{
    const char *cl = apr_table_get(r->headers_in, "Content-Length");
    char *end;

    return cl && *cl >= '0' && *cl <= '9' &&
           apr_strtoff(len, cl, &end, 10) == APR_SUCCESS && !*end &&
           *len >= 0 && *len <= SL_FORM_MAX_BODY;
}

int sl_form_read(request_rec *r, const sl_dir_conf_t *dc)
{
    sl_form_t *st;
    void *seen = NULL;
    ap_filter_rec_t *kept;
    apr_off_t len = 0;
    apr_size_t n = 0;
    char *body = NULL;
    int kind, rv;

    if (r->main || r->prev || !sl_form_wanted(dc)) {
        return OK;
    }
    apr_pool_userdata_get(&seen, SL_FORM_NOTE, r->pool);
    if (seen) {
        return OK;
    }
    st = apr_pcalloc(r->pool, sizeof(*st));
    st->values = apr_hash_make(r->pool);
    apr_pool_userdata_setn(st, SL_FORM_NOTE, NULL, r->pool);
    kind = sl_form_kind(apr_table_get(r->headers_in, "Content-Type"));
    if (!kind || !ap_request_has_body(r)) {
        return OK;
    }
    kept = ap_get_input_filter_handle("KEPT_BODY");
    if (!kept || r->kept_body || !sl_form_fits(r, &len)) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                      "mod_slidinglimit: form: body not read (%s)",
                      !kept          ? "mod_request is not loaded"
                      : r->kept_body ? "another module kept it"
                                     : "no Content-Length, or over 64 KiB");
        st->unread = 1;
        return OK;
    }
    if ((rv = sl_form_take(r, len, &body, &n)) != OK) {
        return rv;
    }
    r->kept_body = apr_brigade_create(r->pool, r->connection->bucket_alloc);
    APR_BRIGADE_INSERT_TAIL(
        r->kept_body,
        apr_bucket_immortal_create(body, n, r->connection->bucket_alloc));
    sl_form_fields(r, dc, st, kind, kept, body, n);
    return OK;
}

int sl_form_value(request_rec *r, const char *field, const char **v)
{
    void *data = NULL;
    const sl_form_t *st;

    apr_pool_userdata_get(&data, SL_FORM_NOTE, sl_form_first(r)->pool);
    if (!(st = data)) {
        return SL_FORM_NONE;
    }
    if (st->unread) {
        return SL_FORM_UNREAD;
    }
    *v = apr_hash_get(st->values, field, APR_HASH_KEY_STRING);
    return *v ? SL_FORM_VALUE : SL_FORM_NONE;
}
