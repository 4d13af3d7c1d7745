/* SPDX-License-Identifier: Apache-2.0 */
/* What the files of a request's decision share (sl_decide.c decides,
 * sl_answer.c answers, sl_after.c settles what an admission leaves to the
 * request's end): the case being decided and the request's note. */
#ifndef SL_DECIDE_PRIVATE_H
#define SL_DECIDE_PRIVATE_H

#include "sl_decide.h"

#include "http_config.h"

#include "sl_lease.h"
#include "sl_outcome.h"
#include "sl_reply.h"
#include "sl_store.h"

/* One request's limits, as the stores see them. */
typedef struct sl_case {
    request_rec *r;      /* the client's request: note, headers, answer */
    request_rec *target; /* whose section and key: r, or mod_dir's look-up
                          * of r's target */
    const sl_dir_conf_t *dc;
    sl_proc_t *proc;
    sl_store_t *store;
    const apr_array_header_t *limits; /* sl_limit_t *, one per budget */
    sl_budget_t *budgets;
    int n;
    apr_interval_time_t wait; /* for another request's store call */
    int reserve;              /* some limit has count= */
    const char *member;       /* of the store call, for a give-back */
    apr_interval_time_t held; /* delay=: how long it waited; -1: never */
} sl_case_t;

/* A count= decision's reservation, given back after the response when the
 * status the client got is not listed. */
typedef struct sl_reserved {
    struct sl_reserved *next;
    sl_store_t *store; /* the store that admitted: its own, or the shm store */
    sl_proc_t *proc;
    const apr_array_header_t *limits;
    sl_budget_t *budgets;
    int n;
    const char *member;
    apr_time_t at;
    request_rec *r; /* the client's request, whose pool ends the leases */
    /* mod_dir's look-up that decided it (NULL: r did): the look-up's status
     * judges it if mod_dir drops the look-up (sl_after.c) */
    request_rec *lookup;
    sl_budget_t *leases; /* its SlidingLimitConcurrent budgets */
    int nleases;
    sl_lease_t *held; /* renewed while it runs; NULL: not renewed */
} sl_reserved_t;

/* A cost=after: decision's charge: its limits are charged their real cost
 * once the response is known (log_transaction). */
typedef struct sl_charge {
    struct sl_charge *next;
    sl_store_t *store; /* the store that admitted */
    sl_proc_t *proc;
    const apr_array_header_t *limits;
    sl_budget_t *budgets;
    int n;
    const char *member;
} sl_charge_t;

/* One decision's budgets (its sl_case_t's, which only their costs change
 * after). */
typedef struct sl_seen {
    struct sl_seen *next;
    const sl_budget_t *budgets;
    int n;
} sl_seen_t;

/* What was decided for a request: r->request_config. */
typedef struct sl_note {
    /* The per-directory configuration it was last decided under: a fast
     * redirect (mod_dir) gives it its target's, which the fixups after it
     * decide. */
    const ap_conf_vector_t *dir;
    /* Every budget decided for it, one list entry per decision: neither a
     * second decision of the same request nor a later internal redirect of
     * the same client request decides them again. */
    struct sl_seen *seen;
    /* Between the first fixups and the last: mod_dir's look-ups of its
     * target may decide for it. */
    int resolving;
    sl_reserved_t *reserved;
    sl_charge_t *charges; /* cost=after: charges, made after the response */
    /* cost=after:header:NAME: the values the cost filter took out of the
     * response, by NAME. */
    apr_table_t *after_values;
    /* cost=after:bytes: the bytes of the response's head (sl_sent.c). */
    apr_off_t *head;
    /* The limits its quota headers describe, and their quota. */
    const apr_array_header_t *shown_limits;
    sl_decision_t shown;
} sl_note_t;

/* The request's note (r->request_config), made on first use. */
sl_note_t *sl_note(request_rec *r);

/* c's limits in its client request's pool, and its budgets' script
 * arguments pointed into them, when c is mod_dir's look-up (sl_after.c):
 * what outlives the decision (a count= reservation, a cost=after: charge,
 * the leases, the quota headers' list) reads them at the request's end,
 * and mod_dir destroys a look-up it does not take, with the limits an
 * .htaccess that only it read made. */
void sl_case_own(sl_case_t *c);

/* sl_answer.c: the answer to c's decision d under o (headers, environment,
 * statistics, the refusal), and the refusal of a request whose cost is
 * bad (why, SL_COST_*) for its limit at. */
int sl_answer(const sl_case_t *c, const sl_outcome_t *o,
              const sl_decision_t *d);
int sl_refuse_cost(const sl_case_t *c, const sl_mode_t *m, int why, int at);

/* sl_interim.c: cost=after:header:: the interim (1xx) responses of r,
 * which httpd writes to the connection past every request filter, go
 * without the fields NAMES (N of them; 0: r is charged by none). */
#define SL_INTERIM_FILTER "SLIDINGLIMIT_INTERIM"
void sl_interim_register(void);
void sl_interim_watch(request_rec *r, const char **names, int n);

/* sl_sent.c: cost=after:bytes: the bytes of the body of the response to
 * r's chain (r the client's request, FIRST its note) that left the
 * server, once it is over (log_transaction, after mod_logio's); the
 * filter that counts the response's head is added to the chain once. */
#define SL_HEAD_FILTER "SLIDINGLIMIT_HEAD"
void sl_sent_register(void);
void sl_sent_watch(request_rec *r, sl_note_t *first);
apr_off_t sl_sent_body(request_rec *r, const sl_note_t *first);

/* sl_after.c: what c's admission (by store, at d's time) leaves to the
 * request's end: count= reservations, SlidingLimitConcurrent leases,
 * cost=after: charges. */
void sl_after_keep(const sl_case_t *c, sl_store_t *store,
                   const sl_decision_t *d);

/* sl_allot_decide.c: SlidingLimitAllotment auto: SL_STEP_ADMITTED with *d
 * filled when c is admitted from this child's allotments or a new grant;
 * -1: decide as without them. */
int sl_allot_decide(sl_case_t *c, sl_decision_t *d);

#endif
