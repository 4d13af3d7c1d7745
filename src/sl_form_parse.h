/* SPDX-License-Identifier: Apache-2.0 */
/* What a form: source reads in a body, without httpd: the form's type, a
 * multipart body's field, the value as it keys, the names it takes. Pure:
 * APR only (tests/unit/sl_form_parse_test.c). */
#ifndef SL_FORM_PARSE_H
#define SL_FORM_PARSE_H

#include <apr_pools.h>

#define SL_FORM_URLENCODED 1
#define SL_FORM_MULTIPART  2

/* The form type a Content-Type ct (NULL: none) names: SL_FORM_URLENCODED,
 * SL_FORM_MULTIPART, or 0 for anything else. */
int sl_form_kind(const char *ct);

/* The value of the field field in a multipart body (len bytes) of the
 * Content-Type ct: the last one, as PHP takes it, with *vlen its length;
 * NULL when it has none. A part with a filename is a file, no field. */
const char *sl_form_multipart(apr_pool_t *p, const char *ct, const char *body,
                              apr_size_t len, const char *field,
                              apr_size_t *vlen);

/* v (len bytes) as form: keys it: surrounding whitespace taken off, ASCII
 * letters in lower case (a login looks an account up so: WordPress trims
 * the name and MySQL's collation ignores case). NULL when nothing is
 * left. */
const char *sl_form_normal(apr_pool_t *p, const char *v, apr_size_t len);

/* Whether name is a field name a form: source can take: not empty, no
 * spaces, control characters, quote, backslash, '=', '&', ';', '%' or
 * '+' (what a urlencoded or a multipart body could not name as is). */
int sl_form_field_ok(const char *name);

#endif
