/* SPDX-License-Identifier: Apache-2.0 */
/* SlidingLimit expr:STRING: a limit's quota read from each request (see
 * sl_quota.h). The budget's key never depends on it (sl_limit.c's id), so
 * a customer whose quota changes keeps the same count, and the deny cache
 * holds a refusal only for the quota it was made under. */
#include "sl_quota.h"

#include "http_log.h"
#include "ap_expr.h"

#include "apr_strings.h"

APLOG_USE_MODULE(slidinglimit);

int sl_quota_eval(request_rec *r, request_rec *target, const sl_limit_t *l,
                  apr_int64_t *quota)
{
    const char *v, *err = NULL;
    int why;

    v = ap_expr_str_exec(target, l->quota_prog, &err);
    why = err ? SL_QUOTA_BAD : sl_quota_of(v, quota);
    if (why == SL_QUOTA_ZERO) {
        *quota = 0;
    }
    else if (why == SL_QUOTA_BAD) {
        /* The value may be a client's: escaped, and cut short, and below
         * the default LogLevel unless the expression itself failed (the
         * operator's to fix), so that requests without the value, or a
         * client sending bad ones, never fill the error log: an absent
         * value (empty) is the common case of a request without a
         * contract. */
        ap_log_rerror(
            APLOG_MARK,
            err         ? APLOG_WARNING
            : (v && *v) ? APLOG_INFO
                        : APLOG_DEBUG,
            0, r,
            "mod_slidinglimit: policy %s: quota %s%s%s is not a whole number "
            "0-100000000 (expr:%s); using quota-default=%" APR_INT64_T_FMT,
            ap_escape_logitem(r->pool, l->name),
            err ? "expression failed: " : "'",
            err ? ap_escape_logitem(r->pool, err)
                : ap_escape_logitem(r->pool,
                                    apr_pstrndup(r->pool, v ? v : "", 32)),
            err ? "" : "'", l->quota_expr, l->requests);
        *quota = l->requests;
    }
    return why;
}

int sl_quota_apply(request_rec *r, request_rec *target,
                   const apr_array_header_t **limits, sl_budget_t *budgets,
                   int n)
{
    apr_array_header_t *own = NULL;
    int i, zero = 0;

    for (i = 0; i < n; i++) {
        const sl_limit_t *l = APR_ARRAY_IDX(*limits, i, sl_limit_t *);
        sl_limit_t *mine;
        apr_int64_t q;

        if (!l->quota_prog) {
            continue;
        }
        if (!own) {
            own = apr_array_copy(r->pool, *limits);
        }
        if (sl_quota_eval(r, target, l, &q) == SL_QUOTA_ZERO) {
            zero++;
        }
        else {
            budgets[i].requests = q;
        }
        /* requests_text and policy_item are NULL (sl_wire_limit): the
         * headers write this request's quota. */
        mine = apr_pmemdup(r->pool, l, sizeof(*l));
        mine->requests = q;
        APR_ARRAY_IDX(own, i, sl_limit_t *) = mine;
    }
    if (own) {
        *limits = own;
    }
    return zero;
}
