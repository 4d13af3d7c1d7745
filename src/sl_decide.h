/* The decision of one request: the budgets of its limits, the deny cache,
 * the store, the fail mode and the local fallback (the ladder is
 * sl_outcome.c), and the answer: quota headers, environment, statistics and
 * the refusal. */
#ifndef SL_DECIDE_H
#define SL_DECIDE_H

#include "httpd.h"

#include "sl_config.h"

/* The fixups of a request under dc's limits: DECLINED when it passes, else
 * what the hook returns (the refusal's status, or DONE once answered). An
 * internal redirect is decided only for the budgets no earlier request of
 * its chain was decided for. */
int sl_decide(request_rec *r, sl_server_conf_t *sc, sl_dir_conf_t *dc);

/* An internal redirect after a decision (an ErrorDocument): the new request
 * carries the decision's variables under their own names, so that
 * %{SLIDINGLIMIT_RESULT}e logs it. */
void sl_decide_carry_env(request_rec *r);

#endif
