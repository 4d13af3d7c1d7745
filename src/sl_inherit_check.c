/* SPDX-License-Identifier: Apache-2.0 */
/* A section's SlidingLimit lines replace the list it inherits (as nginx's
 * limit_req in a nested block does), so an <If> with its own limits inside
 * a <Location> with limits drops the <Location>'s for the requests the <If>
 * holds. Where the configuration nests them, that is visible in its tree:
 * at start-up and under httpd -t, one warning for each such inner section,
 * naming both places and the lines it drops. Sections that overlap without
 * nesting (<Files wp-login.php> and <Location /wp-login.php>) meet only per
 * request, and are the reference's to explain (docs/REFERENCE.md,
 * "Sections"). "SlidingLimit off" is a choice, never warned about, and an
 * inner section that repeats each outer line's name= drops nothing. */
#include "sl_config.h"

#include "http_log.h"

#include "apr_strings.h"

APLOG_USE_MODULE(slidinglimit);

static int sl_is_limit_line(const ap_directive_t *d)
{
    return !strcasecmp(d->directive, "SlidingLimit") ||
           !strcasecmp(d->directive, "SlidingLimitConcurrent");
}

/* The first limit line among d and its siblings; NULL: none, or the list
 * is switched off there. */
static const ap_directive_t *sl_limits_among(const ap_directive_t *d)
{
    const ap_directive_t *first = NULL;

    for (; d; d = d->next) {
        if (!strcasecmp(d->directive, "SlidingLimit") && d->args &&
            !strcasecmp(d->args, "off")) {
            return NULL;
        }
        if (!first && sl_is_limit_line(d)) {
            first = d;
        }
    }
    return first;
}

/* line's name= ("" for an unnamed line: its policy is its section's). */
static const char *sl_name_of(apr_pool_t *p, const ap_directive_t *line)
{
    const char *args = line->args;

    while (*args) {
        const char *w = ap_getword_conf(p, &args);
        if (!strncasecmp(w, "name=", 5)) {
            return w + 5;
        }
    }
    return "";
}

static int sl_named_among(apr_pool_t *p, const ap_directive_t *d,
                          const char *name)
{
    for (; d; d = d->next) {
        if (sl_is_limit_line(d) && !strcmp(sl_name_of(p, d), name)) {
            return 1;
        }
    }
    return 0;
}

/* The limit lines of outer (a list of siblings) that inner's list does not
 * repeat by name: "SlidingLimit 10 1m name=a; ...", NULL when none. */
static const char *sl_dropped(apr_pool_t *p, const ap_directive_t *outer,
                              const ap_directive_t *inner)
{
    const char *s = NULL;
    const ap_directive_t *d;

    for (d = outer; d; d = d->next) {
        const char *name;
        if (!sl_is_limit_line(d)) {
            continue;
        }
        name = sl_name_of(p, d);
        if (!*name || !sl_named_among(p, inner, name)) {
            s = apr_pstrcat(p, s ? s : "", s ? "; " : "", d->directive, " ",
                            d->args, NULL);
        }
    }
    return s;
}

static void sl_inherit_walk(apr_pool_t *p, server_rec *s,
                            const ap_directive_t *d,
                            const ap_directive_t *outer_list)
{
    const ap_directive_t *mine = sl_limits_among(d);
    const ap_directive_t *outer =
        outer_list ? sl_limits_among(outer_list) : NULL;
    const char *dropped;

    if (mine && outer && mine->parent && outer->parent != mine->parent &&
        (dropped = sl_dropped(p, outer_list, d))) {
        ap_log_error(
            APLOG_MARK, APLOG_WARNING, 0, s,
            "mod_slidinglimit: the limits of %s %s (%s:%d) replace, for the "
            "requests it holds, those it inherits from %s (%s:%d), which "
            "it drops there: %s. Only one section's list applies to a "
            "request: repeat the outer lines with a name= in both sections "
            "(a name is one budget wherever it is used) "
            "(docs/REFERENCE.md, \"Sections\")",
            mine->parent->directive, mine->parent->args, mine->filename,
            mine->line_num,
            outer->parent ? apr_pstrcat(p, outer->parent->directive, " ",
                                        outer->parent->args, NULL)
                          : "the server configuration",
            outer->filename, outer->line_num, dropped);
    }
    if (mine) {
        outer_list = d;
    }
    for (; d; d = d->next) {
        if (d->first_child && d->directive[0] == '<') {
            sl_inherit_walk(p, s, d->first_child, outer_list);
        }
    }
}

void sl_inherit_check(apr_pool_t *ptemp, server_rec *s)
{
    sl_inherit_walk(ptemp, s, ap_conftree, NULL);
}
