/* The inputs a client chooses in an expr: quota (see sl_quota_inputs.h).
 * A reading of the text, not of httpd's tree: the tree's nodes are
 * private to httpd and change between its releases, while the syntax that
 * names a header is fixed. A string expression is literal text around
 * %{...}; a function call (req('X')) only means one inside %{: ... :},
 * and is read wherever it stands, so that no form that reads a header is
 * missed (a false reading costs a warning, a missed one a client's quota). */
#include "sl_quota_inputs.h"

#include "apr_lib.h"
#include "apr_strings.h"

#include <string.h>

/* The request-line variables a client writes as it likes. */
static const char *const sl_line_vars[] = {"QUERY_STRING", "REQUEST_URI",
                                           "THE_REQUEST", "PATH_INFO", NULL};

/* The functions that read a request header. */
static const char *const sl_header_funcs[] = {"http", "req", "req_novary",
                                              NULL};

static int sl_listed(const char *const *list, const char *s, apr_size_t n)
{
    int i;

    for (i = 0; list[i]; i++) {
        if (strlen(list[i]) == n && !strncasecmp(list[i], s, n)) {
            return 1;
        }
    }
    return 0;
}

static void sl_add(apr_array_header_t *out, const char *name, int header)
{
    sl_quota_input_t *in;
    int i;

    for (i = 0; i < out->nelts; i++) {
        in = &APR_ARRAY_IDX(out, i, sl_quota_input_t);
        if (in->header == header && !strcasecmp(in->name, name)) {
            return;
        }
    }
    in = apr_array_push(out);
    in->name = name;
    in->header = header;
}

/* HTTP_USER_AGENT: the header User-Agent. */
static const char *sl_header_of_var(apr_pool_t *p, const char *v, apr_size_t n)
{
    char *h = apr_pstrmemdup(p, v + 5, n - 5);
    char *c;
    int start = 1;

    for (c = h; *c; c++) {
        if (*c == '_') {
            *c = '-';
            start = 1;
        }
        else {
            *c = start ? apr_toupper(*c) : apr_tolower(*c);
            start = 0;
        }
    }
    return h;
}

static void sl_trim(const char **s, apr_size_t *n)
{
    while (*n && apr_isspace(**s)) {
        (*s)++;
        (*n)--;
    }
    while (*n && apr_isspace((*s)[*n - 1])) {
        (*n)--;
    }
}

/* %{NAME} or %{FUNC:ARG}: v is its inside, n its length. */
static void sl_read_var(apr_pool_t *p, apr_array_header_t *out, const char *v,
                        apr_size_t n)
{
    const char *colon = memchr(v, ':', n);

    if (colon) {
        const char *arg = colon + 1;
        apr_size_t fn = (apr_size_t) (colon - v), an = n - fn - 1;
        sl_trim(&v, &fn);
        sl_trim(&arg, &an);
        if (sl_listed(sl_header_funcs, v, fn)) {
            sl_add(out, an ? apr_pstrmemdup(p, arg, an) : "*", 1);
        }
        return;
    }
    sl_trim(&v, &n);
    if (n > 5 && !strncasecmp(v, "HTTP_", 5)) {
        sl_add(out, sl_header_of_var(p, v, n), 1);
    }
    else if (sl_listed(sl_line_vars, v, n)) {
        sl_add(out, apr_pstrmemdup(p, v, n), 0);
    }
}

/* FUNC( at s (FUNC one of sl_header_funcs, not the end of a longer
 * name): the header its argument names, "*" unless a quoted literal. */
static const char *sl_read_call(apr_pool_t *p, const char *start, const char *s)
{
    const char *name = s, *q;
    apr_size_t n;

    while (name > start && (apr_isalnum(name[-1]) || name[-1] == '_')) {
        name--;
    }
    n = (apr_size_t) (s - name);
    if (!n || !sl_listed(sl_header_funcs, name, n) ||
        (name > start && (name[-1] == '%' || name[-1] == '{'))) {
        return NULL;
    }
    s++;
    while (apr_isspace(*s)) {
        s++;
    }
    if ((*s == '\'' || *s == '"') && (q = strchr(s + 1, *s)) != NULL) {
        const char *after = q + 1;
        while (apr_isspace(*after)) {
            after++;
        }
        if (*after == ')' && q > s + 1) {
            return apr_pstrmemdup(p, s + 1, (apr_size_t) (q - s - 1));
        }
    }
    return "*";
}

apr_array_header_t *sl_quota_inputs(apr_pool_t *p, const char *expr)
{
    apr_array_header_t *out = apr_array_make(p, 2, sizeof(sl_quota_input_t));
    const char *s;

    for (s = expr; *s; s++) {
        if (s[0] == '%' && s[1] == '{' && s[2] != ':') {
            const char *end = strchr(s + 2, '}');
            if (!end) {
                break;
            }
            sl_read_var(p, out, s + 2, (apr_size_t) (end - s - 2));
            s = end;
        }
        else if (*s == '(') {
            const char *h = sl_read_call(p, expr, s);
            if (h) {
                sl_add(out, h, 1);
            }
        }
    }
    return out;
}
