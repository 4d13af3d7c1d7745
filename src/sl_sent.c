/* cost=after:bytes: the bytes of a response's body that left the server.
 * The body as httpd passed it on is r->bytes_sent (what %B logs, counted
 * below the content filters, so a Range's parts, a compressed body), less
 * what HTTP_HEADER then drops: all of it for a HEAD, a 204 or a 304. What
 * was written to the network is known only to the core's output filter,
 * which tells mod_logio alone (ap_logio_add_bytes_out), and mod_logio
 * lets other modules read only a request's bytes in and out together,
 * once its own log_transaction has run (the charge runs after it). Those
 * matter only when the client went away (c->aborted): every byte passed
 * on is written before httpd logs a request otherwise (the end of request
 * bucket goes after them). Then the body is what was written, less the
 * response's head, never more than was passed on: over by at most the
 * bytes the request itself sent. */
#include "sl_decide_private.h"

#include "http_core.h"
#include "http_protocol.h"
#include "util_filter.h"

#include "apr_optional.h"

/* Below HTTP_HEADER: the head it writes, passed before anything of the
 * body (r->sent_bodyct says which). */
static apr_status_t sl_head_filter(ap_filter_t *f, apr_bucket_brigade *bb)
{
    apr_off_t *head = f->ctx;
    apr_bucket *b;

    if (f->r->sent_bodyct) {
        ap_remove_output_filter(f);
        return ap_pass_brigade(f->next, bb);
    }
    for (b = APR_BRIGADE_FIRST(bb); b != APR_BRIGADE_SENTINEL(bb);
         b = APR_BUCKET_NEXT(b)) {
        if (!APR_BUCKET_IS_METADATA(b) && b->length != (apr_size_t) -1) {
            *head += (apr_off_t) b->length;
        }
    }
    return ap_pass_brigade(f->next, bb);
}

void sl_sent_watch(request_rec *r, sl_note_t *first)
{
    /* A protocol filter stays with the chain's internal redirects. */
    if (first->head) {
        return;
    }
    first->head = apr_pcalloc(r->pool, sizeof(*first->head));
    ap_add_output_filter(SL_HEAD_FILTER, first->head, r, r->connection);
}

apr_off_t sl_sent_body(request_rec *r, const sl_note_t *first)
{
    const request_rec *last = r;
    apr_off_t body;

    while (last->next) {
        last = last->next;
    }
    if (last->header_only || AP_STATUS_IS_HEADER_ONLY(last->status) ||
        last->bytes_sent <= 0) {
        return 0;
    }
    body = last->bytes_sent;
    if (r->connection->aborted) {
        APR_OPTIONAL_FN_TYPE(ap_logio_get_last_bytes) *io =
            APR_RETRIEVE_OPTIONAL_FN(ap_logio_get_last_bytes);
        if (io) {
            apr_off_t out =
                io(r->connection) - (first->head ? *first->head : 0);
            if (out < body) {
                body = out > 0 ? out : 0;
            }
        }
    }
    return body;
}

void sl_sent_register(void)
{
    ap_register_output_filter(SL_HEAD_FILTER, sl_head_filter, NULL,
                              AP_FTYPE_PROTOCOL + 5);
}
