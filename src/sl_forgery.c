/* SPDX-License-Identifier: Apache-2.0 */
/* Cross-site request forgery of a reset (see sl_forgery.h). */
#include "sl_forgery.h"

#include "apr_strings.h"
#include "apr_uri.h"

#include <string.h>

int sl_same_origin(apr_pool_t *p, const char *origin, const char *scheme,
                   const char *host, apr_port_t port)
{
    apr_uri_t u;
    char *h;
    apr_size_t len;

    if (!origin || !scheme || !host ||
        apr_uri_parse(p, origin, &u) != APR_SUCCESS || !u.scheme ||
        !u.hostname || !*u.hostname || u.user || u.password || u.query ||
        u.fragment || (u.path && *u.path)) {
        return 0;
    }
    /* apr_uri_parse takes the brackets off an IPv6 literal; the request's
     * host may still have them (the Host field's form). */
    h = apr_pstrdup(p, host);
    len = strlen(h);
    if (len > 2 && h[0] == '[' && h[len - 1] == ']') {
        h[len - 1] = '\0';
        h++;
    }
    return !strcasecmp(u.scheme, scheme) && !strcasecmp(u.hostname, h) &&
           (u.port_str ? u.port : apr_uri_port_of_scheme(u.scheme)) == port;
}

/* A page of another site can make a browser send a form, or a fetch()
 * without a preflight, only with CORS-safelisted headers: the mark refuses
 * those. Origin and Sec-Fetch-Site, which browsers set and pages cannot,
 * refuse the rest (a preflight that another module might grant). Tools
 * such as curl send neither. */
const char *sl_reset_forged(apr_pool_t *p, const char *mark, const char *site,
                            const char *origin, const char *scheme,
                            const char *host, apr_port_t port)
{
    if (!mark || !*mark) {
        return "a reset needs the header " SL_RESET_HEADER ": 1 (which "
               "tools/slidinglimit-client sends): a form or a page of "
               "another site cannot send it";
    }
    if (site && strcasecmp(site, "same-origin") && strcasecmp(site, "none")) {
        return "a reset is refused when Sec-Fetch-Site is not same-origin "
               "or none: a page of another site asked for it";
    }
    if (origin && !sl_same_origin(p, origin, scheme, host, port)) {
        return "a reset is refused when the Origin is not this server's "
               "(the scheme, host and port of the request): a page of "
               "another site asked for it";
    }
    return NULL;
}
