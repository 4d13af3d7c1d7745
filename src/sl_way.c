/* SPDX-License-Identifier: Apache-2.0 */
/* A call's way through the Redis store (src/sl_way.h): which node it
 * asks, and what every reply asks next. No I/O of its own: the trips and
 * the slot map are sl_way_ops_t's. */
#include "sl_way.h"

#include <apr_strings.h>

/* The slot's master in a map loaded now (if due: the caller's error says
 * the map is out of date); 1 when that is another node that is up, which
 * the way asks from now on. */
static int sl_way_reroute(sl_way_t *w)
{
    sl_node_t *other = w->ops->route(w->ctx, w->p, w->slot, 1);

    if (other && other != w->node && !sl_breaker_is_open(&other->health)) {
        w->ops->unref(w->ctx, w->node);
        w->node = other;
        w->asking = 0;
        return 1;
    }
    w->ops->unref(w->ctx, other);
    return 0;
}

/* One trip to the way's node (the first may share a batch; a second one,
 * after a reload, a redirection or a stale connection, goes on its own)
 * and what its outcome is (SL_REPLY_*), with *reply, or *rv and
 * *err. A cluster node's health follows. */
static int sl_way_trip(sl_way_t *w, int attempt, redisReply **reply,
                       apr_status_t *rv, const char **err, int *trips)
{
    /* Only a cluster node's health is timed. */
    apr_time_t start = w->cluster ? apr_time_now() : 0;
    int stale = 0, cls;

    *rv = w->ops->trip(w, attempt == 0, reply, &stale, err, trips);
    cls = sl_reply_classify(*rv, stale, *reply);
    if (cls == SL_REPLY_NOSCRIPT && (!w->script || w->reloads++ >= 2)) {
        cls = SL_REPLY_FATAL;
    }
    if (w->cluster && cls == SL_REPLY_FAILED) {
        sl_breaker_failure(&w->node->health, start, apr_time_now());
    }
    else if (w->cluster && cls != SL_REPLY_RETRY) {
        sl_breaker_success(&w->node->health, start, apr_time_now());
    }
    /* Redis restarted or SCRIPT FLUSH: load and run again in one round
     * trip, after ASK with ASKING again. */
    w->asking = w->asking && cls == SL_REPLY_NOSCRIPT;
    w->reload = cls == SL_REPLY_NOSCRIPT;
    return cls;
}

/* What a trip's outcome other than the script's answer asks: 1 for
 * another trip, 0 when *rv (and *err) is the decision's failure. */
static int sl_way_next(sl_way_t *w, int cls, const redisReply *reply,
                       apr_status_t *rv, const char **err)
{
    switch (cls) {
    case SL_REPLY_NOSCRIPT:
        return 1;
    case SL_REPLY_MOVED:
    case SL_REPLY_ASK:
        w->asking = cls == SL_REPLY_ASK;
        w->node = w->ops->redirect(w->ctx, reply->str, w->node);
        return 1;
    case SL_REPLY_RETRY:
        /* A stale pooled connection fails on first use: one retry on a
         * fresh one. */
        if (!w->retried) {
            w->retried = 1;
            return 1;
        }
        *rv = *rv == APR_TIMEUP ? APR_TIMEUP : APR_EGENERAL;
        return 0;
    case SL_REPLY_TRYAGAIN:
        if (!w->cluster) {
            break;
        }
        /* A multi-key call while its slot migrates: the keys are split
         * between the two nodes for a moment. */
        w->ops->migrating(w->ctx, apr_time_from_msec(5 << w->waits++));
        return 1;
    case SL_REPLY_REROUTE:
        /* Not run (READONLY from a demoted master, CLUSTERDOWN): the
         * master of a map loaded now, if that is another node. A Sentinel
         * store's master that is one no more (a child idle through a
         * failover finds the old master back as a replica): once more, on
         * the master the Sentinels name now (sl_conn_error_reply made the
         * address this child knew doubted). */
        if (!w->cluster) {
            if (w->sentinel && !w->rediscovered &&
                sl_error_demoted(reply->str)) {
                w->rediscovered = 1;
                return 1;
            }
            break;
        }
        if (sl_way_reroute(w)) {
            return 1;
        }
        *err = apr_pstrdup(w->p, reply->str ? reply->str : "");
        *rv = SL_STORE_PART_DOWN;
        return 0;
    case SL_REPLY_FAILED:
        if (!w->cluster) {
            return 0;
        }
        /* A refused connection ran nothing: another master if the map
         * names one now. After a timeout or a broken reply the script may
         * have run: never sent again. */
        if (sl_way_reroute(w) && *rv == APR_ECONNREFUSED) {
            return 1;
        }
        *rv = w->ops->down(
            w->ctx,
            *rv == APR_ECONNREFUSED || *rv == APR_TIMEUP ? *rv : APR_EGENERAL,
            err);
        return 0;
    }
    if (reply) {
        *err = sl_error_text(w->p, reply->str ? reply->str : "");
        *rv = APR_EGENERAL;
    }
    return 0;
}

apr_status_t sl_way_run(sl_way_t *w, redisReply **reply, const char **err,
                        int *trips)
{
    apr_status_t rv = APR_EGENERAL;
    int attempt;

    w->node = w->ops->route(w->ctx, w->p, w->slot, 0);
    *trips = 0;
    for (attempt = 0; attempt < SL_MAX_TRIPS; attempt++) {
        int cls, more;

        *reply = NULL;
        if (!w->node) {
            *err = w->cluster ? "no node of the cluster answers"
                              : "cluster redirection to an unusable node";
            rv = APR_EGENERAL;
            break;
        }
        if (w->cluster && !sl_breaker_allow(&w->node->health, apr_time_now())) {
            /* Down, and another request probes it: a map loaded since
             * may name another master for the slot. */
            if (sl_way_reroute(w)) {
                continue;
            }
            *err = "the slot's master does not answer";
            rv = w->ops->down(w->ctx, APR_ECONNREFUSED, err);
            break;
        }
        cls = sl_way_trip(w, attempt, reply, &rv, err, trips);
        if (cls == SL_REPLY_OK) {
            rv = APR_SUCCESS;
            break;
        }
        more = sl_way_next(w, cls, *reply, &rv, err);
        if (*reply) {
            sl_reply_free(*reply);
            *reply = NULL;
        }
        if (!more) {
            break;
        }
    }
    if (attempt == SL_MAX_TRIPS) {
        *err = "too many redirections";
        rv = APR_EGENERAL;
    }
    w->ops->unref(w->ctx, w->node);
    return rv;
}
