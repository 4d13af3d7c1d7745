/* SPDX-License-Identifier: Apache-2.0 */
/* A form body's parts, without httpd (sl_form_parse.h). */
#include "sl_form_parse.h"

#include <apr_strings.h>

#include <string.h>
#include <strings.h>

static int sl_form_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == '\v' ||
           ch == '\f';
}

/* ASCII only, whatever locale an application (mod_php) set. */
const char *sl_form_normal(apr_pool_t *p, const char *v, apr_size_t len)
{
    char *s;
    apr_size_t i;

    while (len && sl_form_space(*v)) {
        v++;
        len--;
    }
    while (len && sl_form_space(v[len - 1])) {
        len--;
    }
    if (!len) {
        return NULL;
    }
    s = apr_pstrmemdup(p, v, len);
    for (i = 0; i < len; i++) {
        if (s[i] >= 'A' && s[i] <= 'Z') {
            s[i] = (char) (s[i] - 'A' + 'a');
        }
    }
    return *s ? s : NULL;
}

int sl_form_field_ok(const char *name)
{
    const unsigned char *s = (const unsigned char *) name;

    if (!*s) {
        return 0;
    }
    for (; *s; s++) {
        if (*s <= 0x20 || *s == 0x7f || strchr("\"\\=&;%+", *s)) {
            return 0;
        }
    }
    return 1;
}

int sl_form_kind(const char *ct)
{
    apr_size_t n = 0;

    if (!ct) {
        return 0;
    }
    n = strcspn(ct, "; \t");
    if (n == 33 && !strncasecmp(ct, "application/x-www-form-urlencoded", n)) {
        return SL_FORM_URLENCODED;
    }
    if (n == 19 && !strncasecmp(ct, "multipart/form-data", n)) {
        return SL_FORM_MULTIPART;
    }
    return 0;
}

/* The first n bytes at s within h (hl bytes), or NULL. */
static const char *sl_form_find(const char *h, apr_size_t hl, const char *s,
                                apr_size_t n)
{
    apr_size_t i;

    for (i = 0; n && i + n <= hl; i++) {
        if (h[i] == s[0] && !memcmp(h + i, s, n)) {
            return h + i;
        }
    }
    return NULL;
}

/* The boundary a multipart Content-Type names, or NULL. */
static const char *sl_form_boundary(apr_pool_t *p, const char *ct)
{
    const char *b = ct, *e;

    while (*b && strncasecmp(b, "boundary=", 9)) {
        b++;
    }
    if (!*b) {
        return NULL;
    }
    b += 9;
    if (*b == '"') {
        e = strchr(++b, '"');
    }
    else {
        e = b + strcspn(b, "; \t");
    }
    /* RFC 2046: 1 to 70 characters. */
    if (!e || e == b || e - b > 70) {
        return NULL;
    }
    return apr_pstrmemdup(p, b, e - b);
}

/* Whether a Content-Disposition's parameters s (after the type) name the
 * field field, and no file: a file part is no field to PHP. Quoted values
 * are read whole, so a file name holding "; name=" names nothing. */
static int sl_form_disposition(const char *s, const char *field)
{
    int named = 0, file = 0;

    s = strchr(s, ';');
    while (s && *s == ';') {
        const char *k, *ke, *v, *ve;
        s++;
        while (*s == ' ' || *s == '\t') {
            s++;
        }
        k = s;
        s += strcspn(s, "=;");
        ke = s;
        while (ke > k && (ke[-1] == ' ' || ke[-1] == '\t')) {
            ke--;
        }
        v = ve = s;
        if (*s == '=') {
            s++;
            while (*s == ' ' || *s == '\t') {
                s++;
            }
            if (*s == '"') {
                v = ++s;
                while (*s && *s != '"') {
                    s += (*s == '\\' && s[1]) ? 2 : 1;
                }
                ve = s;
            }
            else {
                v = s;
                s += strcspn(s, "; \t");
                ve = s;
            }
            s += strcspn(s, ";");
        }
        if (ke - k == 4 && !strncasecmp(k, "name", 4)) {
            named = (apr_size_t) (ve - v) == strlen(field) &&
                    !memcmp(v, field, ve - v);
        }
        else if (ke - k >= 8 && !strncasecmp(k, "filename", 8)) {
            file = 1;
        }
    }
    return named && !file;
}

/* Whether the part headers h (hl bytes) make the part the field field. */
static int sl_form_part_is(apr_pool_t *p, const char *h, apr_size_t hl,
                           const char *field)
{
    char *hs = apr_pstrmemdup(p, h, hl), *line, *last;

    for (line = apr_strtok(hs, "\r\n", &last); line;
         line = apr_strtok(NULL, "\r\n", &last)) {
        if (!strncasecmp(line, "Content-Disposition:", 20)) {
            return sl_form_disposition(line + 20, field);
        }
    }
    return 0;
}

const char *sl_form_multipart(apr_pool_t *p, const char *ct, const char *body,
                              apr_size_t len, const char *field,
                              apr_size_t *vlen)
{
    const char *b = sl_form_boundary(p, ct), *end = body + len, *at;
    const char *found = NULL, *delim;
    apr_size_t dn;

    if (!b) {
        return NULL;
    }
    delim = apr_pstrcat(p, "\r\n--", b, NULL);
    dn = strlen(delim);
    /* The first delimiter may open the body, without a CRLF before it. */
    if (len >= dn - 2 && !memcmp(body, delim + 2, dn - 2)) {
        at = body + dn - 2;
    }
    else if ((at = sl_form_find(body, len, delim, dn))) {
        at += dn;
    }
    else {
        return NULL;
    }
    for (;;) {
        const char *hend, *next;
        /* After a delimiter: "--" closes the body, else padding, CRLF. */
        if (end - at >= 2 && at[0] == '-' && at[1] == '-') {
            break;
        }
        while (at < end && (*at == ' ' || *at == '\t')) {
            at++;
        }
        if (end - at < 2 || at[0] != '\r' || at[1] != '\n') {
            break;
        }
        /* From the CRLF, so that a part without headers ends them there. */
        if (!(hend = sl_form_find(at, end - at, "\r\n\r\n", 4))) {
            break;
        }
        at += 2;
        if (!(next = sl_form_find(hend + 4, end - (hend + 4), delim, dn))) {
            break;
        }
        if (hend > at && sl_form_part_is(p, at, hend - at, field)) {
            found = hend + 4;
            *vlen = next - found;
        }
        at = next + dn;
    }
    return found;
}
