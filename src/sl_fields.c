/* A serialized header block (see sl_fields.h). */
#include "sl_fields.h"

#include "apr_strings.h"

#include <string.h>

/* The length of the line at DATA, its LF included, or 0 when it has none
 * within LEN. */
static apr_size_t sl_line(const char *data, apr_size_t len)
{
    const char *lf = memchr(data, '\n', len);

    return lf ? (apr_size_t) (lf - data) + 1 : 0;
}

static int sl_line_empty(const char *line, apr_size_t n)
{
    return n == 1 || (n == 2 && line[0] == '\r');
}

apr_size_t sl_fields_end(const char *data, apr_size_t len)
{
    apr_size_t at = 0, n;
    int first = 1;

    while ((n = sl_line(data + at, len - at))) {
        /* The status line is never the empty one: a block that starts
         * with an empty line is not one. */
        if (!first && sl_line_empty(data + at, n)) {
            return at + n;
        }
        first = 0;
        at += n;
    }
    return 0;
}

/* Whether LINE (N bytes) is a field named one of NAMES. */
static int sl_named(const char *line, apr_size_t n, const char *const *names,
                    int count)
{
    const char *colon = memchr(line, ':', n);
    apr_size_t nlen;
    int i;

    if (!colon) {
        return 0;
    }
    nlen = (apr_size_t) (colon - line);
    for (i = 0; i < count; i++) {
        if (strlen(names[i]) == nlen && !strncasecmp(line, names[i], nlen)) {
            return 1;
        }
    }
    return 0;
}

apr_size_t sl_fields_strip(char *block, apr_size_t len,
                           const char *const *names, int n)
{
    apr_size_t in = 0, out = 0, k;
    int first = 1, dropping = 0, done = 0;

    while (in < len && (k = sl_line(block + in, len - in))) {
        const char *line = block + in;
        if (first || done) {
            dropping = 0;
        }
        else if (sl_line_empty(line, k)) {
            /* What follows the block is not ours to read. */
            dropping = 0;
            done = 1;
        }
        else if (line[0] != ' ' && line[0] != '\t') {
            /* A continuation line (obsolete folding) goes with its field. */
            dropping = sl_named(line, k, names, n);
        }
        if (!dropping) {
            memmove(block + out, line, k);
            out += k;
        }
        first = 0;
        in += k;
    }
    /* A last line without its LF stays as it was. */
    memmove(block + out, block + in, len - in);
    return out + (len - in);
}
