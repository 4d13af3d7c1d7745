/* What of a request a client chooses, read from an expr: quota's text:
 * each form that reads a request header, the request line's variables,
 * and what the server sets (not an input). */
#include "sl_quota_inputs.h"

#include "apr_general.h"
#include "apr_strings.h"

#include <string.h>

#include "sl_expect.h"

static apr_pool_t *p;

/* The inputs of expr as "h:NAME v:NAME ...". */
static const char *inputs(const char *expr)
{
    apr_array_header_t *a = sl_quota_inputs(p, expr);
    const char *s = "";
    int i;

    for (i = 0; i < a->nelts; i++) {
        const sl_quota_input_t *in = &APR_ARRAY_IDX(a, i, sl_quota_input_t);
        s = apr_pstrcat(p, s, i ? " " : "", in->header ? "h:" : "v:", in->name,
                        NULL);
    }
    return s;
}

static void reads(const char *expr, const char *want)
{
    const char *got = inputs(expr);
    EXPECT(!strcmp(got, want), "'%s': '%s', expected '%s'", expr, got, want);
}

int main(void)
{
    apr_initialize();
    apr_pool_create(&p, NULL);

    reads("%{HTTP:X-Customer-Quota}", "h:X-Customer-Quota");
    reads("%{http:X-Quota}", "h:X-Quota");
    reads("%{req:X-Quota}", "h:X-Quota");
    reads("%{req_novary:X-Quota}", "h:X-Quota");
    reads("%{ HTTP : X-Quota }", "h:X-Quota");
    reads("%{HTTP_USER_AGENT}", "h:User-Agent");
    reads("%{HTTP_COOKIE}", "h:Cookie");
    reads("%{HTTP_PROXY_CONNECTION}", "h:Proxy-Connection");
    reads("%{QUERY_STRING}", "v:QUERY_STRING");
    reads("%{REQUEST_URI}%{THE_REQUEST}%{PATH_INFO}",
          "v:REQUEST_URI v:THE_REQUEST v:PATH_INFO");
    /* Once each, headers without case. */
    reads("%{HTTP:X-Q}%{req:x-q}", "h:X-Q");
    reads("1%{HTTP:A}0%{HTTP:B}", "h:A h:B");
    /* A function call, in a word expression. */
    reads("%{:req('X-Word'):}", "h:X-Word");
    reads("%{: http( \"X-Word\" ) :}", "h:X-Word");
    reads("%{:req_novary('X-N'):}", "h:X-N");
    /* A name made per request: unknown. */
    reads("%{:req(%{reqenv:NAME}):}", "h:*");
    reads("%{:req('X-' . %{reqenv:N}):}", "h:*");
    /* What the server sets is no input. */
    reads("%{reqenv:CUSTOMER_QUOTA}", "");
    reads("%{env:PLAN_QUOTA}", "");
    reads("%{REMOTE_USER}%{CONN_REMOTE_ADDR}%{REMOTE_ADDR}", "");
    reads("%{resp:X-Tokens}", "");
    reads("%{note:quota}", "");
    reads("500", "");
    reads("", "");
    /* Longer names are other functions. */
    reads("%{:myreq('X'):}", "");
    reads("%{:tolower(req('X-L')):}", "h:X-L");
    /* Unterminated: read up to where it stops. */
    reads("%{HTTP:X-A}%{HTTP:X-B", "h:X-A");

    printf("sl_quota_inputs_test: %d passed, %d failed\n", passed, failed);
    apr_terminate();
    return failed != 0;
}
