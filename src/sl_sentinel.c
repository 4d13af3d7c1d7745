/* SPDX-License-Identifier: Apache-2.0 */
#include "sl_sentinel.h"

#include <apr_strings.h>

#include <stdlib.h>
#include <string.h>

apr_status_t sl_sentinel_auth(sl_transport_t *t, const char *user,
                              const char *password)
{
    redisReply *r = NULL;
    apr_status_t rv;

    if (!password) {
        return APR_SUCCESS;
    }
    rv = user ? sl_transport_command(t, &r, "AUTH %s %s", user, password)
              : sl_transport_command(t, &r, "AUTH %s", password);
    if (rv == APR_SUCCESS && r->type == REDIS_REPLY_ERROR) {
        rv = APR_EACCES;
    }
    if (r) {
        freeReplyObject(r);
    }
    return rv;
}

/* What is left of the deadline, at most cap; 0 when it passed. */
static apr_interval_time_t sl_left(apr_time_t deadline, apr_interval_time_t cap)
{
    apr_interval_time_t left = deadline - apr_time_now();

    return left <= 0 ? 0 : left < cap ? left : cap;
}

/* Connects to a Sentinel or the master within the deadline and
 * authenticates: APR_SUCCESS or the failure, described in why. */
static apr_status_t sl_open(const sl_sentinel_t *s, const char *host, int port,
                            const char *user, const char *password,
                            apr_time_t deadline, sl_transport_t **t, char *why,
                            apr_size_t whylen)
{
    apr_interval_time_t c = sl_left(deadline, s->connect_timeout);
    apr_status_t rv;

    *t = NULL;
    if (!c) {
        apr_snprintf(why, whylen, "out of time");
        return APR_TIMEUP;
    }
    rv = sl_transport_connect(host, port, NULL, s->tls, c,
                              sl_left(deadline, s->command_timeout) + 1, t, why,
                              whylen);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = sl_sentinel_auth(*t, user, password);
    if (rv != APR_SUCCESS) {
        apr_snprintf(why, whylen, "AUTH: %s",
                     rv == APR_EACCES ? "refused" : sl_transport_error(*t));
        sl_transport_close(*t);
        *t = NULL;
    }
    return rv;
}

/* One Sentinel's answer: the address it has for the master. */
static apr_status_t sl_master_named(const sl_sentinel_t *s,
                                    const sl_hostport_t *hp,
                                    apr_time_t deadline, char *host,
                                    apr_size_t hostlen, int *port, char *why,
                                    apr_size_t whylen)
{
    sl_transport_t *t;
    redisReply *r = NULL;
    apr_status_t rv;

    rv = sl_open(s, hp->host, hp->port, s->user, s->password, deadline, &t, why,
                 whylen);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = sl_transport_command(t, &r, "SENTINEL get-master-addr-by-name %s",
                              s->url->master);
    if (rv != APR_SUCCESS) {
        apr_snprintf(why, whylen, "%s", sl_transport_error(t));
    }
    else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
             r->element[0]->type == REDIS_REPLY_STRING &&
             r->element[1]->type == REDIS_REPLY_STRING &&
             (*port = atoi(r->element[1]->str)) > 0 && *port < 65536) {
        apr_cpystrn(host, r->element[0]->str, hostlen);
    }
    else {
        rv = APR_EGENERAL;
        apr_snprintf(why, whylen, "%.80s",
                     r->type == REDIS_REPLY_NIL     ? "does not know the master"
                     : r->type == REDIS_REPLY_ERROR ? r->str
                                                    : "unexpected reply");
    }
    if (r) {
        freeReplyObject(r);
    }
    sl_transport_close(t);
    return rv;
}

/* Whether host:port says it is the master. */
static apr_status_t sl_master_role(const sl_sentinel_t *s, const char *host,
                                   int port, apr_time_t deadline, char *why,
                                   apr_size_t whylen)
{
    sl_transport_t *t;
    redisReply *r = NULL;
    apr_status_t rv;

    rv = sl_open(s, host, port, s->url->user, s->url->password, deadline, &t,
                 why, whylen);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = sl_transport_command(t, &r, "ROLE");
    if (rv != APR_SUCCESS) {
        apr_snprintf(why, whylen, "ROLE: %s", sl_transport_error(t));
    }
    else if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
             r->element[0]->type != REDIS_REPLY_STRING ||
             strcmp(r->element[0]->str, "master")) {
        rv = APR_EGENERAL;
        apr_snprintf(why, whylen, "not a master (ROLE: %.40s)",
                     r->type == REDIS_REPLY_ARRAY && r->elements &&
                             r->element[0]->type == REDIS_REPLY_STRING
                         ? r->element[0]->str
                     : r->type == REDIS_REPLY_ERROR ? r->str
                                                    : "unexpected reply");
    }
    if (r) {
        freeReplyObject(r);
    }
    sl_transport_close(t);
    return rv;
}

apr_status_t sl_sentinel_master(sl_sentinel_t *s, apr_time_t deadline,
                                char *host, apr_size_t hostlen, int *port,
                                char *err, apr_size_t errlen)
{
    const apr_array_header_t *nodes = s->url->nodes;
    apr_status_t last = APR_ECONNREFUSED;
    apr_size_t used = 0;
    int i, first = s->first;

    if (first < 0 || first >= nodes->nelts) {
        first = 0;
    }
    *err = '\0';
    for (i = 0; i < nodes->nelts; i++) {
        int k = (first + i) % nodes->nelts;
        const sl_hostport_t *hp = &APR_ARRAY_IDX(nodes, k, sl_hostport_t);
        char why[200];
        apr_status_t rv;

        rv = sl_master_named(s, hp, deadline, host, hostlen, port, why,
                             sizeof(why));
        if (rv == APR_SUCCESS) {
            rv = sl_master_role(s, host, *port, deadline, why, sizeof(why));
            if (rv == APR_SUCCESS) {
                s->first = k;
                return APR_SUCCESS;
            }
            /* The Sentinel's answer is out of date: say which node. */
            apr_snprintf(why + strlen(why), sizeof(why) - strlen(why),
                         " (master %s:%d)", host, *port);
        }
        if (used < errlen) {
            used +=
                apr_snprintf(err + used, errlen - used, "%ssentinel %s:%d: %s",
                             used ? "; " : "", hp->host, hp->port, why);
        }
        last = rv == APR_TIMEUP ? APR_TIMEUP : last;
        if (!sl_left(deadline, 1)) {
            return APR_TIMEUP;
        }
    }
    return last;
}
