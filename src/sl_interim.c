/* cost=after:header:NAME and interim (1xx) responses. httpd 2.4 writes an
 * interim response (ap_send_interim_response: mod_proxy_http relaying a
 * back end's 103 Early Hints, mod_http2's H2EarlyHints) straight to the
 * connection's filters, from r->headers_out, with no hook and past every
 * request filter, so the cost filter never sees it. The only place NAME can
 * be taken out is a connection filter, in the serialized block: one is
 * added to a connection the first time a request on it is charged by a
 * header, and it reads the bytes that pass while that request's status is 1xx
 * (ap_send_interim_response requires it), that is, its interim responses,
 * each a whole block followed by a flush. Under HTTP/2 the request's
 * connection is the stream's, whose filters below turn the block into
 * frames. */
#include "sl_decide_private.h"

#include "http_log.h"
#include "http_protocol.h"
#include "util_filter.h"

#include "apr_strings.h"

#include "sl_fields.h"

#include <string.h>
APLOG_USE_MODULE(slidinglimit);

/* The request a connection's filter watches, and what it holds of an
 * interim response's block not whole yet. */
typedef struct sl_watch {
    struct sl_interim *in; /* the connection's */
    request_rec *r;
    const char **names;
    int n;
    apr_bucket_brigade *held;
    int done; /* a 101: what follows is another protocol's */
} sl_watch_t;

/* The connection filter's own, in the connection's pool: the request whose
 * interim responses it reads (NULL: none). */
typedef struct sl_interim {
    sl_watch_t *watch;
    /* What goes on: the connection's, since what it passes may end the
     * request (its end of request bucket) and its pool with it. */
    apr_bucket_brigade *out;
} sl_interim_t;

/* A request's pool outlives its turn on the connection (its end is written
 * after the next request may have started, with pipelining): it lets go
 * only of its own watch. */
static apr_status_t sl_unwatch(void *data)
{
    sl_watch_t *w = data;

    if (w->in->watch == w) {
        w->in->watch = NULL;
    }
    return APR_SUCCESS;
}

/* The block held, whole at last (DATA, LEN bytes, a copy in the request's
 * pool, the block END bytes of it): without the names, ahead of what
 * followed it in the same bucket. */
static void sl_interim_emit(sl_watch_t *w, char *data, apr_size_t len,
                            apr_size_t end)
{
    apr_size_t n = sl_fields_strip(data, end, w->names, w->n);

    memmove(data + n, data + end, len - end);
    APR_BRIGADE_INSERT_TAIL(
        w->in->out, apr_bucket_pool_create(data, n + len - end, w->r->pool,
                                           w->r->connection->bucket_alloc));
    apr_brigade_cleanup(w->held);
    if (w->r->status == HTTP_SWITCHING_PROTOCOLS) {
        w->done = 1;
    }
}

/* One bucket of an interim response: held until its block is whole. */
static void sl_interim_take(sl_watch_t *w, apr_bucket *b)
{
    char *data;
    apr_size_t len, end;

    if (APR_BUCKET_IS_METADATA(b)) {
        /* ap_send_interim_response flushes only after the empty line: a
         * block cut by a flush is none of its, and goes on as it came. */
        if (!APR_BRIGADE_EMPTY(w->held)) {
            ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, w->r,
                          "mod_slidinglimit: an interim response's header "
                          "block ended early; passed as it is");
            APR_BRIGADE_CONCAT(w->in->out, w->held);
            w->done = 1;
        }
        APR_BRIGADE_INSERT_TAIL(w->in->out, b);
        return;
    }
    /* A transient bucket's data is the caller's until it returns. */
    apr_bucket_setaside(b, w->r->pool);
    APR_BRIGADE_INSERT_TAIL(w->held, b);
    if (apr_brigade_pflatten(w->held, &data, &len, w->r->pool) != APR_SUCCESS) {
        APR_BRIGADE_CONCAT(w->in->out, w->held);
        w->done = 1;
        return;
    }
    if ((end = sl_fields_end(data, len))) {
        sl_interim_emit(w, data, len, end);
    }
}

static apr_status_t sl_interim_filter(ap_filter_t *f, apr_bucket_brigade *bb)
{
    sl_interim_t *in = f->ctx;
    sl_watch_t *w = in->watch;
    apr_status_t rv;

    if (!w || w->done ||
        (APR_BRIGADE_EMPTY(w->held) && !ap_is_HTTP_INFO(w->r->status))) {
        return ap_pass_brigade(f->next, bb);
    }
    while (!APR_BRIGADE_EMPTY(bb) && !w->done) {
        apr_bucket *b = APR_BRIGADE_FIRST(bb);
        APR_BUCKET_REMOVE(b);
        sl_interim_take(w, b);
    }
    APR_BRIGADE_CONCAT(in->out, bb);
    rv = ap_pass_brigade(f->next, in->out);
    apr_brigade_cleanup(in->out);
    return rv;
}

void sl_interim_watch(request_rec *r, const char **names, int n)
{
    conn_rec *c = r->connection;
    ap_filter_t *f;
    sl_interim_t *in = NULL;
    sl_watch_t *w;

    /* A request charged by no header leaves the filter as it is: a watch
     * it finds is of a request before it whose pool lives on, with its
     * final status, whose interim responses are over. */
    if (!n) {
        return;
    }
    for (f = c->output_filters; f; f = f->next) {
        if (f->frec->filter_func.out_func == sl_interim_filter) {
            in = f->ctx;
            break;
        }
    }
    if (in && in->watch && in->watch->r == r) {
        return;
    }
    if (!in) {
        in = apr_pcalloc(c->pool, sizeof(*in));
        in->out = apr_brigade_create(c->pool, c->bucket_alloc);
        ap_add_output_filter(SL_INTERIM_FILTER, in, r, c);
    }
    w = apr_pcalloc(r->pool, sizeof(*w));
    w->in = in;
    w->r = r;
    w->names = names;
    w->n = n;
    w->held = apr_brigade_create(r->pool, c->bucket_alloc);
    in->watch = w;
    apr_pool_cleanup_register(r->pool, w, sl_unwatch, apr_pool_cleanup_null);
}

void sl_interim_register(void)
{
    /* Above the connection's other filters (TLS, the network's). */
    ap_register_output_filter(SL_INTERIM_FILTER, sl_interim_filter, NULL,
                              AP_FTYPE_CONNECTION);
}
