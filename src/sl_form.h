/* SPDX-License-Identifier: Apache-2.0 */
/* SlidingLimitKey form:FIELD: the account a form login posts, read from
 * the request body before the application runs, the body kept for it. */
#ifndef SL_FORM_H
#define SL_FORM_H

#include "sl_config.h"
#include "sl_form_parse.h"

/* The largest body read for a form: source (Content-Length). A login form
 * is a few hundred bytes; a body above this is not read (SL_FORM_UNREAD). */
#define SL_FORM_MAX_BODY 65536

/* What a form: source found in a request */
#define SL_FORM_NONE   0 /* no value: no body, not a form, no such field */
#define SL_FORM_VALUE  1 /* the field's value, normalised */
#define SL_FORM_UNREAD 2 /* a form body not read: too large, no length */

/* Reads the fields the section dc's form: sources name, once per request
 * and only for the first request of a client's (not a subrequest, not an
 * internal redirect), keeping the body for the application (r->kept_body,
 * which mod_request's KEPT_BODY filter gives the handler). OK, or the
 * status a body that cannot be read answers (a client that stops sending
 * within Timeout: 408). */
int sl_form_read(request_rec *r, const sl_dir_conf_t *dc);

/* Whether dc has a form: source, in its keys or its lines' key= and
 * distinct= (kept as a bit: no scan). */
int sl_form_wanted(const sl_dir_conf_t *dc);

/* What the form: source field found for r (any request of the client's
 * one: a subrequest or an internal redirect asks the first), with *v the
 * normalised value for SL_FORM_VALUE. */
int sl_form_value(request_rec *r, const char *field, const char **v);

#endif
