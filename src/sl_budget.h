/* SPDX-License-Identifier: Apache-2.0 */
/* The budgets of a section's limits for one identity: what a request is
 * decided on (sl_decide.c) and what the operator's look at a client reads
 * and resets (sl_inspect.c), made in one place so that both find the same
 * store keys. */
#ifndef SL_BUDGET_H
#define SL_BUDGET_H

#include "sl_config.h"
#include "sl_memo.h"

/* Limit l's budget for identity under section dc on sc's store: the key,
 * algorithm, store, requests, window, burst and block; cost and reserve
 * are the caller's. */
void sl_budget_make(apr_pool_t *p, const sl_server_conf_t *sc,
                    const sl_dir_conf_t *dc, const sl_limit_t *l,
                    const char *identity, sl_budget_t *b);

/* A request's budgets, one per limit of limits (sl_limit_t *) under dc:
 * each limit's cost= (cost=expr: the request's own, later) and whether it
 * reserves (count=), *reserve whether any does. memo (the process's; NULL:
 * none) keeps the policies' keyed parts. */
sl_budget_t *sl_budgets_build(apr_pool_t *p, const sl_server_conf_t *sc,
                              const sl_dir_conf_t *dc,
                              const apr_array_header_t *limits,
                              const char *identity, sl_memo_t *memo,
                              int *reserve);

/* key=: b, limit l's budget, keyed by identity instead of the one it was
 * made for (its algorithm and the rest unchanged). */
void sl_budget_rekey(apr_pool_t *p, const sl_server_conf_t *sc,
                     const sl_limit_t *l, const char *identity, sl_memo_t *memo,
                     sl_budget_t *b);

/* The operator's look at limit l: the budget a request of identity has
 * for one more unit. */
void sl_budget_look(apr_pool_t *p, const sl_server_conf_t *sc,
                    const sl_dir_conf_t *dc, const sl_limit_t *l,
                    const char *identity, sl_budget_t *b);

/* count=: whether a section has a limit with count=; such sections decide
 * in the access checker (before authentication answers 401), and their
 * identity is the user name attempted. */
int sl_budget_counts(const sl_dir_conf_t *dc);

#endif
