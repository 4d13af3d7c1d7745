/* SPDX-License-Identifier: Apache-2.0 */
/* The operator's look at one client's budgets, and their reset: the status
 * handler with a query. The query names a URL (path=, whose section's
 * limits apply, found as the client's request for it finds it: the <If>
 * walk sees the client's address, user and headers, with from= and
 * with:NAME= for those that only choose the section) and the client as a
 * key source would see it (ip=, user=, header:NAME=, env:NAME=, expr=,
 * none=); the keys are made by the request's own functions (sl_key.c,
 * sl_ident.c).
 * GET shows each limit's state, read without a write; POST deletes the
 * budgets on the store (and in the shm store, which stands in for it) and
 * forgets their refusals in the deny cache every child reads, then shows the
 * state. The answer is JSON. A reset needs a request that a page of another
 * site cannot make a browser send (the header X-SlidingLimit-Reset, no
 * cross-site Origin or Sec-Fetch-Site): the operator's browser, which
 * passes Require, must not reset budgets for whoever it visits. */
#ifndef SL_INSPECT_H
#define SL_INSPECT_H

#include "httpd.h"

#include "sl_proc.h"

/* The handler's answer to r (GET, HEAD or POST with a query) under the
 * section's SlidingLimitStatusPage level (SL_STATUS_PAGE_*): a look needs
 * inspect; the handler sends POST only under reset. */
int sl_inspect(request_rec *r, sl_proc_t *proc, int level);

/* An access checker, first of all: ends the look-up of a section for a
 * query (DONE) once its walks have chosen the section; DECLINED for any
 * other request. */
int sl_inspect_lookup_end(request_rec *r);

#endif
