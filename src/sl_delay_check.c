/* SPDX-License-Identifier: Apache-2.0 */
/* delay= where nothing can wait: at start-up (and under httpd -t), one
 * warning for each SlidingLimit line with delay= whose section allows no
 * held request, because SlidingLimitDelayMax is 0 there, set so or the
 * default of a non-threaded MPM (prefork, where a held request would hold
 * a whole child: sl_delay_max_default). Such a line refuses at once, as
 * without delay=, which an operator would otherwise learn only from the
 * refusals.
 *
 * The value a line gets is that of the nearest enclosing section with a
 * SlidingLimitDelayMax line (its own, an <If>'s <Location>, the virtual
 * host, the server configuration), read from the configuration's tree
 * (ap_conftree): the directive records are merged only per request. */
#include "sl_delay.h"

#include "ap_mpm.h"
#include "http_config.h"
#include "http_log.h"
#include "httpd.h"

#include "apr_strings.h"

#include <stdlib.h>

APLOG_USE_MODULE(slidinglimit);

#define SL_DELAY_NOTES "slidinglimit-delay-lines"

void sl_delay_note(cmd_parms *cmd)
{
    apr_array_header_t *lines = NULL;

    /* pconf's userdata: each read of the configuration starts empty. */
    apr_pool_userdata_get((void **) &lines, SL_DELAY_NOTES, cmd->pool);
    if (!lines) {
        lines = apr_array_make(cmd->pool, 4, sizeof(ap_directive_t *));
        apr_pool_userdata_set(lines, SL_DELAY_NOTES, apr_pool_cleanup_null,
                              cmd->pool);
    }
    APR_ARRAY_PUSH(lines, const ap_directive_t *) = cmd->directive;
}

/* The SlidingLimitDelayMax line among d and its siblings; NULL: none. */
static const ap_directive_t *sl_max_among(const ap_directive_t *d)
{
    for (; d; d = d->next) {
        if (!strcasecmp(d->directive, "SlidingLimitDelayMax")) {
            return d;
        }
    }
    return NULL;
}

/* The SlidingLimitDelayMax line that governs line; NULL: none (the MPM's
 * default). */
static const ap_directive_t *sl_max_of(const ap_directive_t *line)
{
    const ap_directive_t *d, *max;

    for (d = line->parent; d; d = d->parent) {
        if ((max = sl_max_among(d->first_child))) {
            return max;
        }
    }
    return sl_max_among(ap_conftree);
}

/* The sections around line, on one line: "<VirtualHost *:80> <Location
 * /login>", or "the server configuration". */
static const char *sl_place(apr_pool_t *p, const ap_directive_t *line)
{
    const ap_directive_t *d;
    const char *s = NULL;

    for (d = line->parent; d; d = d->parent) {
        s = apr_pstrcat(p, d->directive, " ", d->args, s ? " " : "", s, NULL);
    }
    return s ? s : "the server configuration";
}

void sl_delay_check(apr_pool_t *pconf, apr_pool_t *ptemp, server_rec *s)
{
    apr_array_header_t *lines = NULL;
    int threaded = AP_MPMQ_NOT_SUPPORTED, threads = 1, fallback, i;

    apr_pool_userdata_get((void **) &lines, SL_DELAY_NOTES, pconf);
    if (!lines || !lines->nelts) {
        return;
    }
    ap_mpm_query(AP_MPMQ_IS_THREADED, &threaded);
    ap_mpm_query(AP_MPMQ_MAX_THREADS, &threads);
    fallback = sl_delay_max_default(threaded != AP_MPMQ_NOT_SUPPORTED,
                                    threads < 1 ? 1 : threads);
    for (i = 0; i < lines->nelts; i++) {
        const ap_directive_t *line =
            APR_ARRAY_IDX(lines, i, const ap_directive_t *);
        const ap_directive_t *max = sl_max_of(line);

        if (max ? atoi(max->args) != 0 : fallback != 0) {
            continue;
        }
        ap_log_error(
            APLOG_MARK, APLOG_WARNING, 0, s,
            "mod_slidinglimit: SlidingLimit %s (%s:%d, in %s): delay= "
            "holds no request here, as SlidingLimitDelayMax is 0 (%s): its "
            "refusals are answered at once. Set SlidingLimitDelayMax to the "
            "requests a child may hold in this section, or remove delay= "
            "(docs/REFERENCE.md, SlidingLimitDelayMax)",
            line->args, line->filename, line->line_num, sl_place(ptemp, line),
            max ? apr_psprintf(ptemp, "%s:%d", max->filename, max->line_num)
                : "the default of an MPM without threads, such as prefork, "
                  "where a held request holds a whole child");
    }
}
