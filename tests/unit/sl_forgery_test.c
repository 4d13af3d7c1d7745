/* SPDX-License-Identifier: Apache-2.0 */
/* A reset's guard against cross-site request forgery: the request's own
 * origin told from others (case, default ports, IPv6 literals, what an
 * Origin never holds), and each header the guard reads. */
#include "sl_forgery.h"

#include "apr_general.h"

#include <string.h>

#include "sl_expect.h"

static apr_pool_t *p;

static void same(const char *origin, const char *scheme, const char *host,
                 apr_port_t port, int want)
{
    int got = sl_same_origin(p, origin, scheme, host, port);
    EXPECT(got == want, "'%s' against %s://%s:%d: %d, expected %d",
           origin ? origin : "(none)", scheme, host, (int) port, got, want);
}

/* Refused, with a reason that names WHAT; or allowed (WHAT NULL). */
static void guard(const char *mark, const char *site, const char *origin,
                  const char *what)
{
    const char *why =
        sl_reset_forged(p, mark, site, origin, "http", "ops.example", 8080);
    if (what) {
        EXPECT(why && strstr(why, what),
               "mark %s, site %s, origin %s: refused for %s, got %s",
               mark ? mark : "-", site ? site : "-", origin ? origin : "-",
               what, why ? why : "allowed");
    }
    else {
        EXPECT(!why, "mark %s, site %s, origin %s: allowed, got %s",
               mark ? mark : "-", site ? site : "-", origin ? origin : "-",
               why);
    }
}

int main(void)
{
    apr_initialize();
    apr_pool_create(&p, NULL);

    same("http://ops.example:8080", "http", "ops.example", 8080, 1);
    same("HTTP://OPS.Example:8080", "http", "ops.example", 8080, 1);
    same("http://ops.example", "http", "ops.example", 80, 1);
    same("http://ops.example:80", "http", "ops.example", 80, 1);
    same("https://ops.example", "https", "ops.example", 443, 1);
    same("http://ops.example", "http", "ops.example", 8080, 0);
    same("http://ops.example:8081", "http", "ops.example", 8080, 0);
    same("https://ops.example:8080", "http", "ops.example", 8080, 0);
    same("http://ops.example:8080", "https", "ops.example", 8080, 0);
    same("http://evil.example:8080", "http", "ops.example", 8080, 0);
    same("http://ops.example.evil.example:8080", "http", "ops.example", 8080,
         0);
    same("http://[::1]:8080", "http", "[::1]", 8080, 1);
    same("http://[::1]:8080", "http", "::1", 8080, 1);
    same("http://[::2]:8080", "http", "[::1]", 8080, 0);
    /* What an Origin field never holds. */
    same("null", "http", "ops.example", 8080, 0);
    same("", "http", "ops.example", 8080, 0);
    same("http://", "http", "ops.example", 8080, 0);
    same("ops.example:8080", "http", "ops.example", 8080, 0);
    same("http://ops.example:8080/", "http", "ops.example", 8080, 0);
    same("http://ops.example:8080/x", "http", "ops.example", 8080, 0);
    same("http://ops.example:8080?x", "http", "ops.example", 8080, 0);
    same("http://user@ops.example:8080", "http", "ops.example", 8080, 0);
    same("http://ops.example:8080#x", "http", "ops.example", 8080, 0);
    same(NULL, "http", "ops.example", 8080, 0);
    /* A request without a Host field has no origin to match. */
    EXPECT(!sl_same_origin(p, "http://ops.example", "http", NULL, 80),
           "no host: no match");

    /* The mark first: a form or a simple fetch() never has it. */
    guard(NULL, NULL, NULL, SL_RESET_HEADER);
    guard("", NULL, NULL, SL_RESET_HEADER);
    guard(NULL, "same-origin", "http://ops.example:8080", SL_RESET_HEADER);
    guard("1", NULL, NULL, NULL);
    guard("yes", NULL, NULL, NULL);
    /* Sec-Fetch-Site: only the request's own origin, or the user. */
    guard("1", "same-origin", NULL, NULL);
    guard("1", "none", NULL, NULL);
    guard("1", "Same-Origin", NULL, NULL);
    guard("1", "cross-site", NULL, "Sec-Fetch-Site");
    guard("1", "same-site", NULL, "Sec-Fetch-Site");
    guard("1", "", NULL, "Sec-Fetch-Site");
    guard("1", "bogus", NULL, "Sec-Fetch-Site");
    /* Origin: the request's own, or none at all (curl, the client tool). */
    guard("1", NULL, "http://ops.example:8080", NULL);
    guard("1", NULL, "https://evil.example", "Origin");
    guard("1", NULL, "null", "Origin");
    guard("1", NULL, "http://ops.example", "Origin");
    guard("1", "same-origin", "https://evil.example", "Origin");

    apr_pool_destroy(p);
    apr_terminate();
    printf("sl_forgery: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
