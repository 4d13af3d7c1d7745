/* SPDX-License-Identifier: Apache-2.0 */
/* The leases of this child's requests and their renewer (see sl_lease.h).
 *
 * Locking: one mutex guards the list and every lease's fields. The
 * renewer marks a lease busy and renews it outside the lock (a store call
 * may take its timeout); a request that ends meanwhile waits for it
 * (done), so the lease and the budgets in its pool stay valid for the call
 * and the give-back names the renewed time. The work is one store call
 * per lease per third of its lease, one lease at a time. */
#include "sl_lease.h"

#include "http_log.h"

#include "apr_thread_cond.h"
#include "apr_thread_mutex.h"
#include "apr_thread_proc.h"
#include "apr_time.h"

APLOG_USE_MODULE(slidinglimit);

/* The longest the renewer sleeps: a new lease due earlier wakes it. */
#define SL_RENEW_IDLE (5 * APR_USEC_PER_SEC)

struct sl_lease {
    struct sl_lease *prev, *next;
    sl_store_t *store;
    const sl_budget_t *budgets;
    int n;
    const char *member;
    apr_time_t at;             /* admission or last renewal, store time */
    apr_time_t due;            /* the next renewal, this host's time */
    apr_interval_time_t every; /* a third of the shortest lease */
    int busy;                  /* being renewed */
};

struct sl_leases {
    server_rec *s;
    apr_pool_t *pool; /* the renewer's, unmanaged: no other thread's */
    apr_thread_mutex_t *mutex;
    apr_thread_cond_t *wake; /* the renewer: a new lease, or stop */
    apr_thread_cond_t *done; /* a request: its lease's renewal ended */
    sl_lease_t *head;
    apr_thread_t *thread;
    int started; /* 1: running, -1: could not start */
    int stop;
    /* When the renewer wakes next, while it sleeps (0: it is awake and
     * reads the list again before it sleeps): a new lease wakes it only
     * when due before that, not once per request. */
    apr_time_t sleep_until;
};

/* The next lease due by now, marked busy; else NULL with *wait the time
 * until one is. Under the mutex. */
static sl_lease_t *sl_lease_due(sl_leases_t *ls, apr_time_t now,
                                apr_interval_time_t *wait)
{
    sl_lease_t *l;

    *wait = SL_RENEW_IDLE;
    for (l = ls->head; l; l = l->next) {
        /* at 0: the store found the leases gone (they expired before a
         * renewal came, this child being stopped or starved): they are
         * not brought back, and their request runs on without them. */
        if (l->busy || !l->at) {
            continue;
        }
        if (l->due <= now) {
            l->busy = 1;
            return l;
        }
        if (l->due - now < *wait) {
            *wait = l->due - now;
        }
    }
    return NULL;
}

static void *APR_THREAD_FUNC sl_renewer(apr_thread_t *thread, void *data)
{
    sl_leases_t *ls = data;
    apr_interval_time_t wait;
    apr_pool_t *p;

    (void) thread;
    apr_thread_mutex_lock(ls->mutex);
    while (!ls->stop) {
        sl_lease_t *l = sl_lease_due(ls, apr_time_now(), &wait);
        apr_time_t at;
        if (!l) {
            ls->sleep_until = apr_time_now() + wait;
            apr_thread_cond_timedwait(ls->wake, ls->mutex, wait);
            ls->sleep_until = 0;
            continue;
        }
        at = l->at;
        apr_thread_mutex_unlock(ls->mutex);
        if (apr_pool_create_unmanaged_ex(&p, NULL, NULL) == APR_SUCCESS) {
            /* A failure is the store's to log (once per outage); the
             * lease is tried again a third later, and expires if the
             * store stays away. */
            sl_store_renew(l->store, ls->s, p, l->budgets, l->n, l->member,
                           &at);
            apr_pool_destroy(p);
        }
        apr_thread_mutex_lock(ls->mutex);
        l->at = at;
        l->due = apr_time_now() + l->every;
        l->busy = 0;
        apr_thread_cond_broadcast(ls->done);
    }
    apr_thread_mutex_unlock(ls->mutex);
    /* A return, not apr_thread_exit: pthread_exit would unwind this frame
     * without leaving it, and under AddressSanitizer the thread's end then
     * writes into what it takes for a live frame (a stack-buffer-overflow
     * in its sigaltstack call). Nothing reads the exit status; the
     * thread's pool goes with the renewer's (sl_leases_stop). */
    return NULL;
}

/* Child exit (the workers gone, the stores not yet: this cleanup was
 * registered after them, and cleanups run in reverse). */
static apr_status_t sl_leases_stop(void *data)
{
    sl_leases_t *ls = data;
    apr_status_t rv;

    apr_thread_mutex_lock(ls->mutex);
    ls->stop = 1;
    apr_thread_cond_broadcast(ls->wake);
    apr_thread_mutex_unlock(ls->mutex);
    if (ls->started == 1) {
        apr_thread_join(&rv, ls->thread);
    }
    apr_pool_destroy(ls->pool);
    return APR_SUCCESS;
}

sl_leases_t *sl_leases_create(apr_pool_t *pchild, server_rec *s)
{
    sl_leases_t *ls = apr_pcalloc(pchild, sizeof(*ls));

    ls->s = s;
    if (apr_pool_create_unmanaged_ex(&ls->pool, NULL, NULL) != APR_SUCCESS) {
        return NULL;
    }
    if (apr_thread_mutex_create(&ls->mutex, APR_THREAD_MUTEX_DEFAULT, pchild) !=
            APR_SUCCESS ||
        apr_thread_cond_create(&ls->wake, pchild) != APR_SUCCESS ||
        apr_thread_cond_create(&ls->done, pchild) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s,
                     "mod_slidinglimit: cannot make the lease renewer's "
                     "locks; leases are not renewed in this child");
        apr_pool_destroy(ls->pool);
        return NULL;
    }
    apr_pool_cleanup_register(pchild, ls, sl_leases_stop,
                              apr_pool_cleanup_null);
    return ls;
}

/* Under the mutex: the renewer, on the first lease of the child (most
 * configurations have none: no thread for them). */
static int sl_leases_started(sl_leases_t *ls)
{
    if (!ls->started) {
        apr_status_t rv =
            apr_thread_create(&ls->thread, NULL, sl_renewer, ls, ls->pool);
        ls->started = rv == APR_SUCCESS ? 1 : -1;
        if (rv != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_ERR, rv, ls->s,
                         "mod_slidinglimit: cannot start the lease renewer; "
                         "leases are not renewed in this child");
        }
    }
    return ls->started == 1;
}

sl_lease_t *sl_lease_hold(sl_leases_t *ls, apr_pool_t *p, sl_store_t *st,
                          const sl_budget_t *budgets, int n, const char *member,
                          apr_time_t at)
{
    sl_lease_t *l;
    int i;

    if (!ls || !member || n < 1) {
        return NULL;
    }
    l = apr_pcalloc(p, sizeof(*l));
    l->store = st;
    l->budgets = budgets;
    l->n = n;
    l->member = member;
    l->at = at;
    l->every = SL_LEASE_MAX;
    for (i = 0; i < n; i++) {
        if (budgets[i].window / 3 < l->every) {
            l->every = budgets[i].window / 3;
        }
    }
    l->due = apr_time_now() + l->every;
    apr_thread_mutex_lock(ls->mutex);
    if (ls->stop || !sl_leases_started(ls)) {
        apr_thread_mutex_unlock(ls->mutex);
        return NULL;
    }
    l->next = ls->head;
    if (ls->head) {
        ls->head->prev = l;
    }
    ls->head = l;
    if (ls->sleep_until && l->due < ls->sleep_until) {
        apr_thread_cond_signal(ls->wake);
    }
    apr_thread_mutex_unlock(ls->mutex);
    return l;
}

apr_time_t sl_lease_drop(sl_leases_t *ls, sl_lease_t *l)
{
    apr_time_t at;

    apr_thread_mutex_lock(ls->mutex);
    while (l->busy) {
        apr_thread_cond_wait(ls->done, ls->mutex);
    }
    if (l->prev) {
        l->prev->next = l->next;
    }
    else {
        ls->head = l->next;
    }
    if (l->next) {
        l->next->prev = l->prev;
    }
    at = l->at;
    apr_thread_mutex_unlock(ls->mutex);
    return at;
}
