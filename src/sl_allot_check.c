/* SPDX-License-Identifier: Apache-2.0 */
/* SlidingLimitAllotment auto where it cannot apply: at start-up (and under
 * httpd -t), one warning for each SlidingLimit line of the counter
 * algorithm whose window is under SL_ALLOT_COUNTER_SPANS deadlines, in the
 * section of a "SlidingLimitAllotment auto" line or in a section nested in
 * it. A counter grant's every use must fall inside the fixed window that
 * counts it, so the last D of each window is always decided at the store,
 * and such short windows get no grants at all (docs/REFERENCE.md,
 * SlidingLimitAllotment); an operator would otherwise learn that only from
 * the store's load. Read from the configuration's tree (ap_conftree), as
 * sl_delay_check.c reads it: a section that only merges by URL (a
 * <Location> outside the one with the auto line) is not seen. */
#include "sl_config.h"

#include "http_config.h"
#include "http_log.h"
#include "httpd.h"

#include "apr_hash.h"
#include "apr_strings.h"

#include "sl_allot.h"
#include "sl_script_layout.h"

#include <string.h>

APLOG_USE_MODULE(slidinglimit);

#define SL_ALLOT_NOTES "slidinglimit-allotment-lines"

void sl_allot_note(cmd_parms *cmd)
{
    apr_array_header_t *lines = NULL;

    /* pconf's userdata: each read of the configuration starts empty. */
    apr_pool_userdata_get((void **) &lines, SL_ALLOT_NOTES, cmd->pool);
    if (!lines) {
        lines = apr_array_make(cmd->pool, 4, sizeof(ap_directive_t *));
        apr_pool_userdata_set(lines, SL_ALLOT_NOTES, apr_pool_cleanup_null,
                              cmd->pool);
    }
    APR_ARRAY_PUSH(lines, const ap_directive_t *) = cmd->directive;
}

/* Whether d's siblings (d first) set SlidingLimitAlgorithm counter; -1:
 * they set no SlidingLimitAlgorithm. */
static int sl_section_counter(const ap_directive_t *d)
{
    for (; d; d = d->next) {
        if (!strcasecmp(d->directive, "SlidingLimitAlgorithm")) {
            return !strcasecmp(d->args, "counter");
        }
    }
    return -1;
}

/* Whether a SlidingLimit line without algorithm= gets counter: the nearest
 * section with a SlidingLimitAlgorithm line says. */
static int sl_default_counter(const ap_directive_t *line)
{
    const ap_directive_t *d;
    int c;

    for (d = line->parent; d; d = d->parent) {
        if ((c = sl_section_counter(d->first_child)) >= 0) {
            return c;
        }
    }
    return sl_section_counter(ap_conftree) == 1;
}

static int sl_is_counter(const ap_directive_t *line)
{
    const char *alg = ap_strcasestr(line->args, "algorithm=");

    if (alg) {
        return !strncasecmp(alg + 10, "counter", 7);
    }
    return sl_default_counter(line);
}

/* Whether a counter line's window (its second word) is too short for
 * grants; a window that does not parse is refused elsewhere. */
static int sl_window_short(apr_pool_t *p, const ap_directive_t *line)
{
    const char *args = line->args;
    sl_budget_t b = {0};

    ap_getword_conf(p, &args);
    if (sl_parse_duration(p, ap_getword_conf(p, &args), &b.window)) {
        return 0;
    }
    b.algorithm = SL_ALG_COUNTER;
    return !sl_allot_counter_fits(&b);
}

/* Every SlidingLimit line of the counter with a short window among d and
 * its siblings and their sections, warned about once (seen: the lines
 * already). */
static void sl_walk(apr_pool_t *p, server_rec *s, const ap_directive_t *d,
                    const ap_directive_t *auto_line, apr_hash_t *seen)
{
    for (; d; d = d->next) {
        if (d->first_child) {
            sl_walk(p, s, d->first_child, auto_line, seen);
        }
        if (strcasecmp(d->directive, "SlidingLimit") || !sl_is_counter(d) ||
            apr_hash_get(seen, &d, sizeof(d)) || !sl_window_short(p, d)) {
            continue;
        }
        apr_hash_set(seen, apr_pmemdup(p, &d, sizeof(d)), sizeof(d), "");
        ap_log_error(
            APLOG_MARK, APLOG_WARNING, 0, s,
            "mod_slidinglimit: SlidingLimit %s (%s:%d): a counter "
            "window under %s takes no allotments: "
            "SlidingLimitAllotment auto (%s:%d) leaves its requests "
            "to the store, one call each. Use a longer window, or "
            "algorithm=log (docs/REFERENCE.md, "
            "SlidingLimitAllotment)",
            d->args, d->filename, d->line_num,
            sl_format_duration(p, SL_ALLOT_COUNTER_SPANS * SL_ALLOT_DEADLINE),
            auto_line->filename, auto_line->line_num);
    }
}

int sl_allot_noted(apr_pool_t *pconf)
{
    apr_array_header_t *lines = NULL;

    apr_pool_userdata_get((void **) &lines, SL_ALLOT_NOTES, pconf);
    return lines && lines->nelts;
}

void sl_allot_check(apr_pool_t *pconf, apr_pool_t *ptemp, server_rec *s)
{
    apr_array_header_t *lines = NULL;
    apr_hash_t *seen;
    int i;

    apr_pool_userdata_get((void **) &lines, SL_ALLOT_NOTES, pconf);
    if (!lines || !lines->nelts) {
        return;
    }
    seen = apr_hash_make(ptemp);
    for (i = 0; i < lines->nelts; i++) {
        const ap_directive_t *line =
            APR_ARRAY_IDX(lines, i, const ap_directive_t *);
        sl_walk(ptemp, s,
                line->parent ? line->parent->first_child : ap_conftree, line,
                seen);
    }
}
