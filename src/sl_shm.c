/* SPDX-License-Identifier: Apache-2.0 */
/* The embedded store as an httpd citizen: "SlidingLimitStore shm", which
 * also stands in for a Redis store that is down. The budgets live in up to 8
 * stripes (tables of sl_table.c), each an anonymous shared memory segment under
 * its own global mutex; this file makes the segments, registers and reattaches
 * the mutexes, picks the stripe of a request, locks it around sl_table_decide
 * and logs each change of the store's state once.
 *
 * Also the one way the module keeps shared memory across restarts
 * (sl_shm_retain): the store's stripes, the statistics and the breaker
 * table use it. */

/* What apr-1-config --cppflags gives the real build: apr.h needs it for
 * PATH_MAX under a strict -std=c99. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sl_shm.h"
#include "sl_table.h"

#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "util_mutex.h"

#include <apr_file_io.h>
#include <apr_global_mutex.h>
#include <apr_sha1.h>
#include <apr_shm.h>
#include <apr_strings.h>

#include <apr_portable.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

APLOG_USE_MODULE(slidinglimit);

/* ---- memory kept across restarts ---- */

/* Kept with ap_retained_data, which httpd provides for exactly this: the
 * record survives every generation of pconf, and the segment it names lives
 * in the process pool, so a graceful restart finds both again instead of
 * mapping a new segment per generation (children of the old generation keep
 * their mapping until they exit). A plain restart of httpd's process starts
 * afresh. */
typedef struct sl_retained {
    apr_shm_t *shm;
    apr_size_t size;
    apr_global_mutex_t *mutex; /* the shm store's, kept with its stripe */
} sl_retained_t;

static apr_status_t sl_retain(server_rec *s, const char *name, apr_size_t size,
                              sl_retained_t **out, void **base, int *fresh)
{
    char key[64];
    sl_retained_t *rd;
    apr_status_t rv;

    /* "seg-": never the name of a record that an earlier build kept in
     * this process with another layout (a graceful restart onto a new
     * build finds those). httpd copies the name: no memory per restart. */
    apr_snprintf(key, sizeof(key), "mod_slidinglimit-seg-%s", name);
    rd = ap_retained_data_get(key);
    if (!rd) {
        rd = ap_retained_data_create(key, sizeof(*rd));
    }
    *fresh = 0;
    if (rd->shm && rd->size != size) {
        /* Children of the old generation keep their own mapping. */
        apr_shm_destroy(rd->shm);
        rd->shm = NULL;
    }
    if (!rd->shm) {
        rv = apr_shm_create(&rd->shm, size, NULL, s->process->pool);
        if (rv != APR_SUCCESS) {
            rd->shm = NULL;
            return rv;
        }
        if (apr_shm_size_get(rd->shm) < size) {
            apr_shm_destroy(rd->shm);
            rd->shm = NULL;
            return APR_ENOMEM;
        }
        rd->size = size;
        memset(apr_shm_baseaddr_get(rd->shm), 0, size);
        *fresh = 1;
    }
    *out = rd;
    *base = apr_shm_baseaddr_get(rd->shm);
    return APR_SUCCESS;
}

apr_status_t sl_shm_retain(server_rec *s, const char *name, apr_size_t size,
                           void **base, int *fresh)
{
    sl_retained_t *rd;

    return sl_retain(s, name, size, &rd, base, fresh);
}

/* ---- the stripes ---- */

typedef struct sl_stripe {
    sl_table_t *table;
    apr_global_mutex_t *mutex;
    server_rec *s;
} sl_stripe_t;

/* The store is split into stripes, each its own segment, index and lock,
 * chosen by the identity's hash tag: every key of one request has the same
 * tag, so a decision still takes exactly one lock and stays atomic, while
 * requests of other identities take other locks. One lock for everything
 * made every thread wait whenever its holder was preempted. */
#define SL_SHM_STRIPES    8
#define SL_SHM_MIN_STRIPE (64 * 1024)

struct sl_shm {
    int n;
    sl_stripe_t *stripe[SL_SHM_STRIPES];
    /* The secret of the stripe choice: drawn when the store is first made
     * and kept with it, so that an identity stays in its stripe across
     * graceful restarts (and old and new children agree on it). */
    const unsigned char *key;
};

apr_status_t sl_shm_pre_config(apr_pool_t *pconf)
{
    return ap_mutex_register(pconf, SL_SHM_MUTEX, NULL, APR_LOCK_DEFAULT, 0);
}

/* The mutex is kept with the segment: children of the old generation that
 * are still finishing requests after a graceful restart take the same lock
 * as the new ones, so two generations never write a stripe at once. The
 * price: a changed "Mutex slidinglimit-shm" takes effect at the next full
 * restart. */
static apr_status_t sl_stripe_create(apr_pool_t *pconf, server_rec *s,
                                     apr_size_t size, int i,
                                     const unsigned char *image,
                                     sl_stripe_t **out)
{
    sl_stripe_t *st = apr_pcalloc(pconf, sizeof(*st));
    sl_retained_t *rd;
    apr_uint32_t ncells, nchains;
    void *base;
    apr_status_t rv;
    int fresh, kept;

    if (size < sl_table_min_size()) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s,
                     "mod_slidinglimit: shm store stripe of %" APR_SIZE_T_FMT
                     " bytes is too small (at least %" APR_SIZE_T_FMT ")",
                     size, sl_table_min_size());
        return APR_EINVAL;
    }
    rv = sl_retain(s, apr_psprintf(pconf, "shm-%d", i), size, &rd, &base,
                   &fresh);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, s,
                     "mod_slidinglimit: cannot create the shm store "
                     "(%" APR_SIZE_T_FMT " bytes)",
                     size);
        return rv;
    }
    if (fresh && image) {
        /* A cold start with the state of the last stop: the table checks
         * it as it checks a region kept across a graceful restart. */
        memcpy(base, image, size);
        fresh = 0;
    }
    rv = sl_table_attach(pconf, base, size, fresh, &kept, &st->table);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, s,
                     "mod_slidinglimit: cannot set up the shm store");
        return rv;
    }
    if (!rd->mutex) {
        rv = ap_global_mutex_create(&rd->mutex, NULL, SL_SHM_MUTEX,
                                    apr_itoa(s->process->pool, i), s,
                                    s->process->pool, 0);
        if (rv != APR_SUCCESS) {
            rd->mutex = NULL;
            return rv;
        }
    }
    st->mutex = rd->mutex;
    st->s = s;
    sl_table_geometry(st->table, &ncells, &nchains);
    ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, s,
                 "mod_slidinglimit: shm store stripe %d %s: %" APR_SIZE_T_FMT
                 " bytes, %u cells of %d bytes, %u hash chains",
                 i, kept ? "kept" : "created", size, ncells,
                 SL_TABLE_CELL_BYTES, nchains);
    *out = st;
    return APR_SUCCESS;
}

/* ---- the store's state across a stop and a start ----
 *
 * A graceful restart keeps the segments; a stop ("service apache2
 * restart" is a stop and a start) ends the process that held them, and
 * with it every budget and every block. So the parent writes the stripes
 * to a file in the runtime directory when it exits, and a cold start reads
 * them back: the stripe key, then each stripe's region as it was, checked
 * by a digest and by the table itself, and the file is removed once read.
 * A file of another size or stripe count (SlidingLimitShmSize changed), of
 * another build's layout, or damaged, is discarded with a log line; a
 * budget whose limit changed meanwhile is what it would be in Redis, which
 * keeps its keys across a restart of httpd too. */
#define SL_STATE_FILE  "slidinglimit-shm.state"
#define SL_STATE_MAGIC "mod_slidinglimit shm state 1\n"

typedef struct sl_state_head {
    char magic[32];
    apr_uint64_t stripes;
    apr_uint64_t stripe_size;
    unsigned char digest[APR_SHA1_DIGESTSIZE]; /* of what follows */
} sl_state_head_t;

/* What the parent needs when it stops. */
typedef struct sl_state_exit {
    pid_t parent;
    int n;
    apr_size_t stripe;
    void *base[SL_SHM_STRIPES];
    apr_global_mutex_t *mutex[SL_SHM_STRIPES];
    const unsigned char *key;
    const char *path;
    server_rec *s;
} sl_state_exit_t;

/* The state file opened for reading only if it is a regular file: a link
 * is not followed and a FIFO planted there would hold the start for ever
 * (O_NONBLOCK); either is removed, with a warning. */
static apr_status_t sl_state_open(apr_pool_t *p, server_rec *s,
                                  const char *path, apr_file_t **f)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

    if (fd < 0 && errno == ENOENT) {
        return APR_ENOENT;
    }
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        apr_status_t rv = APR_FROM_OS_ERROR(errno);
        if (fd >= 0) {
            close(fd);
            rv = APR_EGENERAL;
        }
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, s,
                     "mod_slidinglimit: %s is not a regular file (a "
                     "symbolic link is not followed); removed, the shm "
                     "store starts empty",
                     path);
        apr_file_remove(path, p);
        return APR_EGENERAL;
    }
    return apr_os_file_put(f, &fd, APR_FOPEN_READ | APR_FOPEN_BINARY, p);
}

static const unsigned char *sl_state_read(apr_pool_t *p, server_rec *s, int n,
                                          apr_size_t stripe)
{
    const char *path = ap_runtime_dir_relative(p, SL_STATE_FILE);
    apr_size_t want = SL_TABLE_STRIPE_KEY + (apr_size_t) n * stripe, got = 0;
    unsigned char digest[APR_SHA1_DIGESTSIZE];
    const char *why = NULL;
    sl_state_head_t head;
    apr_sha1_ctx_t ctx;
    apr_file_t *f;
    unsigned char *body = NULL;

    if (!path || sl_state_open(p, s, path, &f) != APR_SUCCESS) {
        return NULL;
    }
    if (apr_file_read_full(f, &head, sizeof(head), &got) != APR_SUCCESS ||
        got != sizeof(head) ||
        memcmp(head.magic, SL_STATE_MAGIC, sizeof(SL_STATE_MAGIC))) {
        why = "not a state file of this build";
    }
    else if (head.stripes != (apr_uint64_t) n ||
             head.stripe_size != (apr_uint64_t) stripe) {
        why = "written for another SlidingLimitShmSize";
    }
    else {
        body = apr_palloc(p, want);
        if (apr_file_read_full(f, body, want, &got) != APR_SUCCESS ||
            got != want) {
            why = "truncated";
        }
        else {
            apr_sha1_init(&ctx);
            apr_sha1_update_binary(&ctx, body, (unsigned int) want);
            apr_sha1_final(digest, &ctx);
            if (memcmp(digest, head.digest, sizeof(digest))) {
                why = "damaged";
            }
        }
    }
    apr_file_close(f);
    apr_file_remove(path, p);
    if (why) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s,
                     "mod_slidinglimit: %s: %s; the shm store starts empty",
                     path, why);
        return NULL;
    }
    ap_log_error(APLOG_MARK, APLOG_INFO, 0, s,
                 "mod_slidinglimit: shm store state read from %s", path);
    return body;
}

/* The temporary state file, made new and never through a link: the parent
 * writes it with the server's privileges (root) into the runtime
 * directory, where a link planted by whoever else may write there would
 * otherwise have root truncate the file it points to. A regular file left
 * by a stop that died while writing is removed first; anything else there
 * is left alone, and *why says what it is. */
static apr_status_t sl_state_create(apr_pool_t *p, const char *tmp,
                                    apr_file_t **f, const char **why)
{
    struct stat st;
    int fd;

    if (lstat(tmp, &st) == 0) {
        if (!S_ISREG(st.st_mode)) {
            *why = S_ISLNK(st.st_mode) ? "is a symbolic link, not followed"
                                       : "is not a regular file";
            return APR_EEXIST;
        }
        if (unlink(tmp) != 0) {
            *why = "cannot be removed";
            return APR_FROM_OS_ERROR(errno);
        }
    }
    /* O_EXCL alone refuses a link planted after the check; O_NOFOLLOW
     * says so once more. */
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              S_IRUSR | S_IWUSR);
    if (fd < 0) {
        *why = errno == EEXIST || errno == ELOOP
                   ? "appeared while it was being made, not followed"
                   : "cannot be created";
        return APR_FROM_OS_ERROR(errno);
    }
    return apr_os_file_put(f, &fd, APR_FOPEN_WRITE | APR_FOPEN_BINARY, p);
}

static apr_status_t sl_state_fill(sl_state_exit_t *x, apr_file_t *f,
                                  const sl_state_head_t *head)
{
    apr_status_t rv = apr_file_write_full(f, head, sizeof(*head), NULL);
    int i;

    if (rv == APR_SUCCESS) {
        rv = apr_file_write_full(f, x->key, SL_TABLE_STRIPE_KEY, NULL);
    }
    for (i = 0; rv == APR_SUCCESS && i < x->n; i++) {
        rv = apr_file_write_full(f, x->base[i], x->stripe, NULL);
    }
    if (apr_file_close(f) != APR_SUCCESS && rv == APR_SUCCESS) {
        rv = APR_EGENERAL;
    }
    return rv;
}

static void sl_state_write(sl_state_exit_t *x, apr_pool_t *p)
{
    apr_file_t *f;
    sl_state_head_t head;
    apr_sha1_ctx_t ctx;
    apr_uint32_t live = 0;
    const char *tmp, *why = NULL;
    apr_status_t rv;
    int i, kept;

    for (i = 0; i < x->n; i++) {
        sl_table_t *t;
        if (sl_table_attach(p, x->base[i], x->stripe, 0, &kept, &t) ==
                APR_SUCCESS &&
            kept) {
            live += sl_table_entries(t);
        }
    }
    if (!live) {
        apr_file_remove(x->path, p);
        return;
    }
    memset(&head, 0, sizeof(head));
    memcpy(head.magic, SL_STATE_MAGIC, sizeof(SL_STATE_MAGIC));
    head.stripes = (apr_uint64_t) x->n;
    head.stripe_size = (apr_uint64_t) x->stripe;
    apr_sha1_init(&ctx);
    apr_sha1_update_binary(&ctx, x->key, SL_TABLE_STRIPE_KEY);
    for (i = 0; i < x->n; i++) {
        apr_sha1_update_binary(&ctx, x->base[i], (unsigned int) x->stripe);
    }
    apr_sha1_final(head.digest, &ctx);
    /* Written aside and renamed: a stop that dies halfway leaves the old
     * file or none, never half of one. Owner-only: it holds the budgets. */
    tmp = apr_pstrcat(p, x->path, ".new", NULL);
    rv = sl_state_create(p, tmp, &f, &why);
    if (rv == APR_SUCCESS) {
        rv = sl_state_fill(x, f, &head);
        if (rv == APR_SUCCESS) {
            rv = apr_file_rename(tmp, x->path, p);
        }
        if (rv != APR_SUCCESS) {
            apr_file_remove(tmp, p);
        }
    }
    /* No server record outlives pconf: the main log (httpd's stderr). */
    if (why) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, NULL,
                     "mod_slidinglimit: %s %s; the shm store state (%u "
                     "budgets) is not written and they are lost with this "
                     "stop (remove it, and check who may write to the "
                     "runtime directory)",
                     tmp, why, live);
        return;
    }
    ap_log_error(APLOG_MARK, rv == APR_SUCCESS ? APLOG_INFO : APLOG_WARNING, rv,
                 NULL,
                 rv == APR_SUCCESS
                     ? "mod_slidinglimit: shm store state (%u budgets) "
                       "written to %s"
                     : "mod_slidinglimit: cannot write the shm store state "
                       "(%u budgets) to %s; they are lost with this stop",
                 live, x->path);
}

static apr_status_t sl_state_cleanup(void *data)
{
    sl_state_exit_t *x = data;
    apr_pool_t *p;
    int i;

    /* pconf goes at every restart, and only a stop is the end of the
     * segments; a child's copy of pconf is never the parent's stop. */
    if (ap_state_query(AP_SQ_MAIN_STATE) != AP_SQ_MS_EXITING ||
        x->parent != getpid() || apr_pool_create(&p, NULL) != APR_SUCCESS) {
        return APR_SUCCESS;
    }
    /* The children are gone by now; the locks keep out any that is not. */
    for (i = 0; i < x->n; i++) {
        apr_global_mutex_lock(x->mutex[i]);
    }
    sl_state_write(x, p);
    for (i = 0; i < x->n; i++) {
        apr_global_mutex_unlock(x->mutex[i]);
    }
    apr_pool_destroy(p);
    return APR_SUCCESS;
}

/* On pconf, whose cleanups run before httpd unloads the module (a cleanup
 * on the process pool would run after, in code no longer mapped). */
static void sl_state_on_exit(apr_pool_t *pconf, server_rec *s,
                             const sl_shm_t *shm, apr_size_t stripe)
{
    sl_state_exit_t *x = apr_pcalloc(pconf, sizeof(*x));
    int i;

    x->path = ap_runtime_dir_relative(pconf, SL_STATE_FILE);
    if (!x->path) {
        return;
    }
    x->parent = getpid();
    x->stripe = stripe;
    x->s = s;
    x->n = shm->n;
    x->key = shm->key;
    for (i = 0; i < shm->n; i++) {
        x->base[i] = sl_table_base(shm->stripe[i]->table);
        x->mutex[i] = shm->stripe[i]->mutex;
    }
    apr_pool_cleanup_register(pconf, x, sl_state_cleanup,
                              apr_pool_cleanup_null);
}

apr_status_t sl_shm_create(apr_pool_t *pconf, server_rec *s, apr_size_t size,
                           sl_shm_t **out)
{
    sl_shm_t *shm = apr_pcalloc(pconf, sizeof(*shm));
    apr_status_t rv;
    void *key;
    int i, fresh;

    apr_pool_t *tmp;
    const unsigned char *state = NULL;
    apr_size_t stripe;

    void *one = NULL;

    shm->n = (int) (size / SL_SHM_MIN_STRIPE);
    if (shm->n > SL_SHM_STRIPES) {
        shm->n = SL_SHM_STRIPES;
    }
    apr_pool_userdata_get(&one, SL_SHM_ONE_STRIPE, pconf);
    if (shm->n < 1 || one) {
        shm->n = 1;
    }
    stripe = size / (apr_size_t) shm->n;
    apr_pool_create(&tmp, pconf);
    rv = sl_shm_retain(s, "shm-key", SL_TABLE_STRIPE_KEY, &key, &fresh);
    if (rv == APR_SUCCESS && fresh) {
        /* Only a cold start (httpd's process new) finds the segments
         * fresh: then the state written at the last stop, if any. */
        state = sl_state_read(tmp, s, shm->n, stripe);
        if (state) {
            memcpy(key, state, SL_TABLE_STRIPE_KEY);
        }
        else {
            rv = sl_siphash_key(key);
        }
    }
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, s,
                     "mod_slidinglimit: no secret for the shm store's "
                     "stripes");
        return rv;
    }
    shm->key = key;
    for (i = 0; i < shm->n; i++) {
        rv = sl_stripe_create(pconf, s, stripe, i,
                              state ? state + SL_TABLE_STRIPE_KEY +
                                          (apr_size_t) i * stripe
                                    : NULL,
                              &shm->stripe[i]);
        if (rv != APR_SUCCESS) {
            apr_pool_destroy(tmp);
            return rv;
        }
    }
    apr_pool_destroy(tmp);
    sl_state_on_exit(pconf, s, shm, stripe);
    *out = shm;
    return APR_SUCCESS;
}

apr_status_t sl_shm_child_init(sl_shm_t *shm, apr_pool_t *pchild, server_rec *s)
{
    apr_status_t rv = APR_SUCCESS;
    int i;

    for (i = 0; i < shm->n; i++) {
        sl_stripe_t *st = shm->stripe[i];
        apr_status_t r = apr_global_mutex_child_init(
            &st->mutex, apr_global_mutex_lockfile(st->mutex), pchild);
        if (r != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, r, s,
                         "mod_slidinglimit: cannot reattach the shm store's "
                         "mutex in this child");
            rv = r;
        }
    }
    return rv;
}

/* What a decision did to the store, logged once per change rather than
 * once per request. */
static void sl_stripe_log(const sl_stripe_t *st, const sl_table_news_t *news)
{
    if (news->emptied) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, st->s,
                     "mod_slidinglimit: the shm store was inconsistent and "
                     "has been emptied");
    }
    if (news->evicted) {
        ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, st->s,
                     "mod_slidinglimit: shm store full, %d idle budget(s) "
                     "evicted",
                     news->evicted);
    }
    if (news->full != news->was_full) {
        ap_log_error(APLOG_MARK, news->full ? APLOG_WARNING : APLOG_INFO, 0,
                     st->s,
                     news->full ? "mod_slidinglimit: the shm store cannot hold "
                                  "the state of a request (a sliding log "
                                  "longer than its stripe, or a stripe full "
                                  "of refusing budgets and of leases in "
                                  "flight): such requests are "
                                  "refused until it has room (see "
                                  "SlidingLimitShmSize)"
                                : "mod_slidinglimit: the shm store has room "
                                  "again");
    }
}

/* The stripe of a request's budgets (one identity, one hash tag): the same
 * for its decision and its give-back. */
static sl_stripe_t *sl_stripe_of(sl_shm_t *shm, const sl_budget_t *budgets)
{
    return shm->stripe[sl_table_stripe(
        shm->key, budgets[0].key, budgets[0].key_len, (unsigned int) shm->n)];
}

/* A give-back or a renewal: op on the budgets' cells of an admission at
 * store time at, under their stripe's lock; *done is what op returns. */
typedef int sl_table_undo_fn(sl_table_t *t, sl_shm_op_t *ops, int n,
                             apr_time_t at, apr_time_t now);

static apr_status_t sl_shm_after(sl_shm_t *shm, apr_pool_t *p,
                                 const sl_budget_t *budgets, int n,
                                 apr_time_t at, apr_time_t now,
                                 sl_table_undo_fn *op, int *done)
{
    sl_stripe_t *st;
    sl_shm_op_t *ops;
    apr_status_t rv;

    *done = 0;
    if (n < 1 || !budgets || !budgets[0].key) {
        return APR_EINVAL;
    }
    st = sl_stripe_of(shm, budgets);
    if ((rv = sl_table_prepare(p, st->table, budgets, n, &ops)) !=
            APR_SUCCESS ||
        (rv = apr_global_mutex_lock(st->mutex)) != APR_SUCCESS) {
        return rv;
    }
    *done = op(st->table, ops, n, at, now);
    apr_global_mutex_unlock(st->mutex);
    return APR_SUCCESS;
}

static int sl_give_back_op(sl_table_t *t, sl_shm_op_t *ops, int n,
                           apr_time_t at, apr_time_t now)
{
    sl_table_give_back(t, ops, n, at, now);
    return 0;
}

void sl_shm_give_back(sl_shm_t *shm, apr_pool_t *p, const sl_budget_t *budgets,
                      int n, apr_time_t at, apr_time_t now)
{
    int done;

    sl_shm_after(shm, p, budgets, n, at, now, sl_give_back_op, &done);
}

apr_status_t sl_shm_renew(sl_shm_t *shm, apr_pool_t *p,
                          const sl_budget_t *budgets, int n, apr_time_t at,
                          apr_time_t now, int *renewed)
{
    return sl_shm_after(shm, p, budgets, n, at, now, sl_table_renew, renewed);
}

apr_status_t sl_shm_charge(sl_shm_t *shm, apr_pool_t *p,
                           const sl_budget_t *budgets, int n, apr_time_t now)
{
    sl_stripe_t *st;
    sl_shm_op_t *ops;
    apr_status_t rv;

    if (n < 1 || !budgets || !budgets[0].key) {
        return APR_EINVAL;
    }
    st = sl_stripe_of(shm, budgets);
    if ((rv = sl_table_prepare(p, st->table, budgets, n, &ops)) !=
            APR_SUCCESS ||
        (rv = apr_global_mutex_lock(st->mutex)) != APR_SUCCESS) {
        return rv;
    }
    rv = sl_table_charge(st->table, ops, n, now);
    apr_global_mutex_unlock(st->mutex);
    return rv;
}

apr_status_t sl_shm_decide(sl_shm_t *shm, apr_pool_t *p,
                           const sl_budget_t *budgets, int n, apr_time_t now,
                           sl_decision_t *d)
{
    sl_stripe_t *st;
    sl_shm_op_t *ops;
    sl_table_news_t news;
    apr_status_t rv;

    if (n < 1 || !budgets || !budgets[0].key) {
        return APR_EINVAL;
    }
    st = sl_stripe_of(shm, budgets);
    rv = sl_table_prepare(p, st->table, budgets, n, &ops);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    d->quota = apr_pcalloc(p, sizeof(*d->quota) * n);
    if ((rv = apr_global_mutex_lock(st->mutex)) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, st->s,
                     "mod_slidinglimit: cannot lock the shm store");
        return rv;
    }
    rv = sl_table_decide(st->table, ops, n, now, d, &news);
    apr_global_mutex_unlock(st->mutex);
    sl_stripe_log(st, &news);
    return rv;
}

/* The stripe of the budgets, locked, with their prepared operations. */
static apr_status_t sl_stripe_enter(sl_shm_t *shm, apr_pool_t *p,
                                    const sl_budget_t *budgets, int n,
                                    sl_stripe_t **st, sl_shm_op_t **ops)
{
    apr_status_t rv;

    if (n < 1 || !budgets || !budgets[0].key) {
        return APR_EINVAL;
    }
    *st = sl_stripe_of(shm, budgets);
    if ((rv = sl_table_prepare(p, (*st)->table, budgets, n, ops)) !=
        APR_SUCCESS) {
        return rv;
    }
    return apr_global_mutex_lock((*st)->mutex);
}

apr_status_t sl_shm_peek(sl_shm_t *shm, apr_pool_t *p,
                         const sl_budget_t *budgets, int n, apr_time_t now,
                         sl_decision_t *d, apr_int64_t **blocked)
{
    sl_stripe_t *st;
    sl_shm_op_t *ops;
    apr_status_t rv;

    d->quota = apr_pcalloc(p, sizeof(*d->quota) * (n > 0 ? n : 1));
    *blocked = apr_pcalloc(p, sizeof(**blocked) * (n > 0 ? n : 1));
    if ((rv = sl_stripe_enter(shm, p, budgets, n, &st, &ops)) != APR_SUCCESS) {
        return rv;
    }
    rv = sl_table_peek(st->table, ops, n, now, d, *blocked);
    apr_global_mutex_unlock(st->mutex);
    return rv;
}

apr_status_t sl_shm_reset(sl_shm_t *shm, apr_pool_t *p,
                          const sl_budget_t *budgets, int n, apr_time_t now)
{
    sl_stripe_t *st;
    sl_shm_op_t *ops;
    apr_status_t rv = sl_stripe_enter(shm, p, budgets, n, &st, &ops);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    sl_table_reset(st->table, ops, n, now);
    apr_global_mutex_unlock(st->mutex);
    return APR_SUCCESS;
}
