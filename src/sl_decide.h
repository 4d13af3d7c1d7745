/* SPDX-License-Identifier: Apache-2.0 */
/* The decision of one request: the budgets of its limits, the deny cache,
 * the store, the fail mode and the shm store standing in (the ladder is
 * sl_outcome.c), and the answer: quota headers, environment, statistics and
 * the refusal. */
#ifndef SL_DECIDE_H
#define SL_DECIDE_H

#include "httpd.h"

#include "sl_config.h"
#include "sl_limit.h"

/* The fixups of a request under dc's limits: DECLINED when it passes, else
 * what the hook returns (the refusal's status, or DONE once answered). Only
 * the budgets not yet decided for the request (under the section it had
 * before a fast redirect) nor for an earlier request of its chain (an
 * internal redirect's) are decided. */
int sl_decide(request_rec *r, sl_server_conf_t *sc, sl_dir_conf_t *dc);

/* mod_dir's look-up rr of the target of its main request (DirectoryIndex,
 * FallbackResource), in its access checker: the target's section dc
 * decides for the main request, before the target's own authentication,
 * whose 401 mod_dir sends for the directory URL. Only while the main
 * request is between its first fixups and its last
 * (sl_decide_resolving); DECLINED otherwise. A refusal returns its status
 * alone, for mod_dir to send. */
int sl_decide_lookup(request_rec *rr, sl_server_conf_t *sc, sl_dir_conf_t *dc);
void sl_decide_resolving(request_rec *r, int on);

/* Whether r was decided under its current per-directory configuration: a
 * fast redirect since (mod_dir's) gives it its target's. */
int sl_decide_done(request_rec *r);

/* After the response (log_transaction): the reservations of limits whose
 * count= does not list the status the client got go back to the store. */
void sl_after_give_back(request_rec *r);

/* An internal redirect after a decision (an ErrorDocument): the new request
 * carries the decision's variables under their own names, so that
 * %{SLIDINGLIMIT_RESULT}e logs it. */
void sl_answer_carry_env(request_rec *r);

/* cost=after:: the charges of r's chain (r the client's request), made
 * once its response is known (log_transaction). */
void sl_after_charge(request_rec *r);

/* cost=after:header:: the filter that takes the header out of the
 * response, registered once and added to each request of a chain that
 * is charged by a header (insert_filter, insert_error_filter). */
#define SL_COST_FILTER "SLIDINGLIMIT_COST"
void sl_after_register_filter(void);
void sl_after_insert_filter(request_rec *r);

#endif
