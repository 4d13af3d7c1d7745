/* A serialized HTTP/1.1 header block (a status line, its fields, the empty
 * line that ends it), as httpd writes an interim response to the
 * connection: where it ends, and the same block without some fields. APR
 * only, no httpd.h: tests/unit/sl_fields_test.c. */
#ifndef SL_FIELDS_H
#define SL_FIELDS_H

#include "apr.h"

/* The length of the header block DATA starts with, up to and including
 * the empty line that ends it (CRLF or a bare LF), or 0 when DATA does not
 * hold its end yet. */
apr_size_t sl_fields_end(const char *data, apr_size_t len);

/* Takes out of BLOCK (LEN bytes, a whole header block) every field whose
 * name is one of NAMES (N of them, without case), with any continuation
 * lines of it; the status line and the other fields stay as they were.
 * Works in place; returns the block's new length. */
apr_size_t sl_fields_strip(char *block, apr_size_t len,
                           const char *const *names, int n);

#endif
