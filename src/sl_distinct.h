/* SPDX-License-Identifier: Apache-2.0 */
/* distinct=SOURCE limits: at most N distinct values of a key source per
 * key in any window. A request whose value is among the window's passes as
 * far as such a limit goes; a new one passes while fewer than N are, and
 * is then recorded; a refused one is not. The value each request brings
 * (sl_distinct.c), its place among lua/sl_check.lua's arguments, and the
 * shm store's set of values (sl_table_distinct.c). */
#ifndef SL_DISTINCT_H
#define SL_DISTINCT_H

#include "sl_config.h"

/* Every distinct= budget of budgets (one per limit of limits, built by
 * sl_budgets_build) gets the request's value of its source: the identity
 * the key source alone would give the request (hashed as keys are, with
 * that source's case folding and its fallback where it has no value), so
 * a request without one brings one value of its own. The values are
 * copied into p, as sl_key_lines makes its keys. */
void sl_distinct_values(apr_pool_t *p, request_rec *r, const sl_dir_conf_t *dc,
                        const apr_array_header_t *limits, sl_budget_t *budgets,
                        int before_auth);

/* The bytes lua/sl_check.lua's arguments of budgets need beyond six
 * numbers per budget. */
apr_size_t sl_distinct_size(const sl_budget_t *budgets, int n);

/* A distinct= budget's first four script arguments at o: its algorithm
 * with the value ("d" and the 16 characters; "d" alone for a look that
 * brings none), requests, window and burst. Returns where the next one
 * goes. */
char *sl_distinct_head(char *o, const sl_budget_t *b);

#endif
