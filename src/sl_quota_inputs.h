/* What of a request a client chooses, read by an ap_expr string
 * expression (SlidingLimit expr:'s quota): the request headers it reads
 * and the parts of the request line. APR only, no httpd.h: it reads the
 * expression's text, since httpd keeps its parsed tree private
 * (tests/unit/sl_quota_inputs_test.c). */
#ifndef SL_QUOTA_INPUTS_H
#define SL_QUOTA_INPUTS_H

#include "apr_pools.h"
#include "apr_tables.h"

/* One input a client chooses: a request header (header 1, name as the
 * expression writes it, "*" when the expression computes the name per
 * request) or a variable of the request line (header 0, QUERY_STRING,
 * REQUEST_URI, THE_REQUEST, PATH_INFO). */
typedef struct sl_quota_input {
    const char *name;
    int header;
} sl_quota_input_t;

/* The inputs of expr a client chooses, each once (headers without case),
 * in the order the text reads them: an array of sl_quota_input_t from p,
 * empty when there is none. It reads %{HTTP:NAME}, %{req:NAME},
 * %{http:NAME}, %{req_novary:NAME}, the HTTP_* variables (%{HTTP_COOKIE}
 * is Cookie), and req('NAME'), http('NAME'), req_novary('NAME') where the
 * expression calls a function; what the server sets (%{reqenv:NAME},
 * %{REMOTE_USER}, %{CONN_REMOTE_ADDR}) is not an input. */
apr_array_header_t *sl_quota_inputs(apr_pool_t *p, const char *expr);

#endif
