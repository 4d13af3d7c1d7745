/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of a SlidingLimit line (src/sl_limit.c): durations, the
 * line and its options, policy ids, what a cost= expression's value costs,
 * what an expr: quota's value is.
 * No server needed. */
#include "sl_limit.h"

#include <apr_general.h>
#include <apr_strings.h>

#include <stdio.h>
#include <string.h>

#include "sl_expect.h"

static void test_durations(apr_pool_t *p)
{
    static const struct {
        const char *in;
        apr_int64_t us;
    } good[] = {{"500ms", 500000},    {"30s", 30000000},
                {"1m", 60000000},     {"2min", 120000000},
                {"1h", 3600000000LL}, {"1d", 86400000000LL},
                {"45", 45000000},     {"1MS", 1000}};
    static const char *const bad[] = {"",
                                      "0",
                                      "-5s",
                                      "1w",
                                      "1.5s",
                                      "s",
                                      "10x",
                                      " 1s",
                                      "1s ",
                                      "366000d",
                                      "99999999999999999999"};
    size_t i;

    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        apr_int64_t us = 0;
        const char *err = sl_parse_duration(p, good[i].in, &us);
        EXPECT(!err && us == good[i].us, "duration %s: %s", good[i].in,
               err ? err : "wrong value");
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        apr_int64_t us = 0;
        const char *err = sl_parse_duration(p, bad[i], &us);
        EXPECT(err && strstr(err, bad[i]), "duration '%s' must be refused",
               bad[i]);
    }
    {
        /* The message names every unit that is accepted. */
        apr_int64_t us = 0;
        const char *err = sl_parse_duration(p, "15mins", &us);
        EXPECT(err && strstr(err, "m or min,"), "units listed: %s",
               err ? err : "");
    }
    EXPECT(!strcmp(sl_format_duration(p, 60000000), "1m"), "format 1m");
    EXPECT(!strcmp(sl_format_duration(p, 1500000), "1500ms"), "format 1500ms");
}

static sl_limit_t *limit(apr_pool_t *p, const char *line, const char *section,
                         const char **err)
{
    char **argv;
    sl_limit_t *l = NULL;
    int argc;

    apr_tokenize_to_argv(line, &argv, p);
    for (argc = 0; argv[argc]; argc++) {
    }
    *err = sl_parse_limit(p, argc, argv, section, &l);
    return l;
}

/* Each algorithm's name and letter go both ways; anything else is refused
 * with the list of names. */
static void test_algorithms(apr_pool_t *p)
{
    static const char *const names[] = {"log", "counter", "gcra"};
    static const char codes[] = "lcg";
    const char *err;
    int i, alg;

    for (i = 0; i < 3; i++) {
        alg = SL_ALG_UNSET;
        EXPECT(!sl_parse_algorithm(p, names[i], &alg) &&
                   !strcmp(sl_algorithm_name(alg), names[i]) &&
                   sl_algorithm_code(alg) == codes[i],
               "algorithm %s: name and letter", names[i]);
    }
    EXPECT(!sl_parse_algorithm(p, "GCRA", &alg) && alg == SL_ALG_GCRA,
           "an algorithm's name in any case");
    err = sl_parse_algorithm(p, "leaky", &alg);
    EXPECT(err && !strcmp(err, "'leaky' is not an algorithm (log, counter, "
                               "gcra)"),
           "an unknown algorithm: %s", err ? err : "(accepted)");
    EXPECT(sl_algorithm_code(SL_ALG_UNSET) == 'l' &&
               !strcmp(sl_algorithm_name(SL_ALG_UNSET), "log"),
           "unset is the log");
    EXPECT(sl_algorithm_code(SL_ALG_CONCURRENT) == 'n' &&
               !strcmp(sl_algorithm_name(SL_ALG_CONCURRENT), "concurrent") &&
               sl_algorithm_code(SL_ALG_DISTINCT) == 'd' &&
               !strcmp(sl_algorithm_name(SL_ALG_DISTINCT), "distinct") &&
               SL_ALG_COUNT == 5,
           "the concurrency and distinct= limits are the fourth and fifth "
           "algorithms, 'n' and 'd'");
    EXPECT(!strcmp(SL_ALG_HELP_NAMES, "log counter gcra "),
           "the help names the algorithm= values");
}

/* An unknown option is refused with the list of the table's options, in
 * its order. */
static void test_unknown_option(apr_pool_t *p)
{
    const char *err;

    limit(p, "10 1m leaky=1", "/", &err);
    EXPECT(err && !strcmp(err, "unknown option 'leaky=1' (expected name=, "
                               "algorithm=, burst=, cost=, cost-unit=, "
                               "block=, delay=, count=, quota-default=, "
                               "distinct= or key=)"),
           "an unknown option: %s", err ? err : "(accepted)");
}

static void test_limits(apr_pool_t *p)
{
    const char *err;
    sl_limit_t *a, *b, *c, *d;
    static const char *const bad[] = {
        "0 1m", "abc 1m", "10", "10 1w", "10 1m foo=bar",
        "10 1m name=", "10 1m name=a b", "10 1m algorithm=x", "10 1m burst=0",
        "10 1m algorithm=log burst=5", "10 1m name=a\"b",
        /* burst= without algorithm=gcra on its line, whatever the section's
         * SlidingLimitAlgorithm says */
        "10 1m burst=5",
        /* GCRA tolerance beyond 366d */
        "1 366d algorithm=gcra burst=100000000",
        "1 1d algorithm=gcra burst=367"};
    size_t i;

    a = limit(p, "100 1m name=api", "<Location /a>\n", &err);
    EXPECT(a && !err && a->requests == 100 && a->window == 60000000 &&
               a->named && !strcmp(a->name, "api") &&
               a->algorithm == SL_ALG_UNSET,
           "named limit: %s", err ? err : "");
    b = limit(p, "5 10s name=api", "<Location /b>\n", &err);
    EXPECT(b && !strcmp(a->id, b->id), "same name, same budget everywhere");
    c = limit(p, "100 1m", "<Location /a>\n", &err);
    d = limit(p, "100 1m", "<Location /b>\n", &err);
    EXPECT(c && d && strcmp(c->id, d->id), "unnamed: one budget per section");
    EXPECT(!strcmp(c->name, "100-per-1m"), "unnamed name %s", c->name);
    d = limit(p, "100 1m", "<Location /a>\n", &err);
    EXPECT(!strcmp(c->id, d->id), "unnamed ids are stable");
    {
        const char *section = "<VirtualHost *:80>\n<Location /api>\n";
        sl_limit_t *x = limit(p, "2 1m", section, &err);
        sl_limit_t *y = limit(p, "2 1m", section, &err);
        sl_limit_t *z = limit(p, "2 1m", section, &err);
        sl_limit_t *n = limit(p, "2 1m name=shared", section, &err);
        const char *named = n->id;
        sl_limit_set_host(p, x, "a.example:0");
        sl_limit_set_host(p, y, "b.example:0");
        sl_limit_set_host(p, z, "a.example:0");
        sl_limit_set_host(p, n, "a.example:0");
        EXPECT(strcmp(x->id, y->id), "unnamed: one budget per virtual host");
        EXPECT(!strcmp(x->id, z->id), "... the same for the same host");
        EXPECT(!strcmp(n->id, named), "named: one budget across hosts");
        EXPECT(strlen(x->id) == 16 && strlen(n->id) == 16,
               "ids hold 96 bits (16 characters)");
    }
    d = limit(p, "100 60s algorithm=gcra burst=10", "<Location /a>\n", &err);
    EXPECT(d && d->algorithm == SL_ALG_GCRA && d->burst == 10, "gcra burst");
    d = limit(p, "1 1d algorithm=gcra burst=366", "", &err);
    EXPECT(d && !err, "gcra tolerance of 366d: %s", err ? err : "");
    d = limit(p, "1 1d algorithm=gcra burst=367", "", &err);
    EXPECT(err && strstr(err, "burst=367") && strstr(err, "366d"),
           "gcra tolerance above 366d: %s", err ? err : "accepted");
    d = limit(p, "7 366d algorithm=gcra burst=7", "", &err);
    EXPECT(d && !err, "gcra burst = requests at the longest window");
    /* 96 bits of SHA-1("n\napi"), as t/lib/SL/Test.pm computes it. */
    d = limit(p, "10 1m name=api", "", &err);
    EXPECT(!strcmp(d->id, "f1T9dVjwyKc/0JjT"), "policy id vector: %s", d->id);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        a = limit(p, bad[i], "", &err);
        EXPECT(err != NULL, "'%s' must be refused", bad[i]);
    }
}

/* cost=, block=, count=: bounded, and refused with the token named. */
static void test_limit_options(apr_pool_t *p)
{
    static const struct {
        const char *line, *named;
    } bad[] = {{"10 1m cost=0", "'0'"},
               {"10 1m cost=11", "cost=11"},
               {"10 1m cost=x", "'x'"},
               {"10 1m algorithm=gcra burst=2 cost=3", "cost=3"},
               {"10 1m block=0", "'0'"},
               {"10 1m block=1w", "'1w'"},
               {"10 1m block=400d", "'400d'"},
               {"10 1m delay=0", "'0'"},
               {"10 1m delay=2x", "'2x'"},
               {"10 1m delay=61s", "'61s'"},
               {"10 1m delay=1h", "'1h'"},
               {"10 1m delay=1s block=5s", "delay= and block="},
               {"10 1m count=", "count="},
               {"10 1m count=401,", "count=401,"},
               {"10 1m count=401,,403", "count=401,,403"},
               {"10 1m count=99", "'99'"},
               {"10 1m count=600", "'600'"},
               {"10 1m count=abc", "'abc'"},
               {"10 1m count=401,401", "401 is listed twice"},
               {"10 1m count=400,401,402,403,404,405,406,407,408,409,410,411,"
                "412,413,414,415,416",
                "at most 16"}};
    const char *err;
    sl_limit_t *l;
    size_t i;

    l = limit(p, "10 1m cost=3 block=2s count=401,403", "", &err);
    EXPECT(l && !err && l->cost == 3 && l->block == 2 * APR_USEC_PER_SEC &&
               l->ncount == 2 && sl_limit_counts(l, 401) &&
               sl_limit_counts(l, 403) && !sl_limit_counts(l, 200),
           "cost, block, count: %s", err ? err : "");
    l = limit(p, "10 1m delay=500ms", "", &err);
    EXPECT(l && !err && l->delay == 500000, "delay=500ms: %s", err ? err : "");
    l = limit(p, "10 1m delay=60s", "", &err);
    EXPECT(l && !err && l->delay == 60 * APR_USEC_PER_SEC,
           "delay= up to 60s: %s", err ? err : "");
    l = limit(p, "10 1m", "", &err);
    EXPECT(l && l->cost == 1 && !l->block && !l->count && !l->delay &&
               sl_limit_counts(l, 200) && sl_limit_counts(l, 500),
           "defaults: cost 1, no block, every status counts");
    l = limit(p, "10 1m cost=10", "", &err);
    EXPECT(l && l->cost == 10, "cost up to the limit");
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        l = limit(p, bad[i].line, "", &err);
        EXPECT(err && strstr(err, bad[i].named), "'%s' refused naming %s: %s",
               bad[i].line, bad[i].named, err ? err : "accepted");
    }
}

/* cost=expr: and cost-unit=: the line, then what a value costs. */
static void test_cost_expr(apr_pool_t *p)
{
    static const struct {
        const char *v;
        apr_int64_t unit, max;
        int why;
        apr_int64_t cost;
    } cases[] = {
        {"3", 1, 10, SL_COST_OK, 3},
        {"10", 1, 10, SL_COST_OK, 10},
        {"0005", 1, 10, SL_COST_OK, 5},
        {"", 1, 10, SL_COST_OK, 1},
        {"0", 1, 10, SL_COST_OK, 1},
        {"0", 1024, 10, SL_COST_OK, 1},
        {"1", 1024, 10, SL_COST_OK, 1},
        {"1024", 1024, 10, SL_COST_OK, 1},
        {"1025", 1024, 10, SL_COST_OK, 2},
        {"3000", 1024, 10, SL_COST_OK, 3},
        {"10240", 1024, 10, SL_COST_OK, 10},
        {"10241", 1024, 10, SL_COST_OVER, 0},
        {"11", 1, 10, SL_COST_OVER, 0},
        {"9223372036854775807", 1, 10, SL_COST_OVER, 0},
        {"9223372036854775808", 1, 10, SL_COST_OVER, 0},
        {"99999999999999999999", 1024, 100000000, SL_COST_OVER, 0},
        {"-1", 1, 10, SL_COST_BAD, 0},
        {"+1", 1, 10, SL_COST_BAD, 0},
        {" 5", 1, 10, SL_COST_BAD, 0},
        {"5 ", 1, 10, SL_COST_BAD, 0},
        {"5abc", 1, 10, SL_COST_BAD, 0},
        {"1e9", 1, 10, SL_COST_BAD, 0},
        {"1.5", 1, 10, SL_COST_BAD, 0},
        {"0x10", 1, 10, SL_COST_BAD, 0},
        {"99999999999999999999x", 1, 10, SL_COST_BAD, 0},
    };
    const char *err;
    sl_limit_t *l;
    size_t i;

    l = limit(p, "10 1m cost=expr:%{HTTP:X-Batch}", "", &err);
    EXPECT(l && !err && !strcmp(l->cost_expr, "%{HTTP:X-Batch}") &&
               l->cost == 1 && l->cost_unit == 1,
           "cost=expr: keeps the expression's text: %s", err ? err : "");
    l = limit(p, "10 1m cost=EXPR:x cost-unit=1024", "", &err);
    EXPECT(l && !err && !strcmp(l->cost_expr, "x") && l->cost_unit == 1024,
           "cost-unit=: %s", err ? err : "");
    l = limit(p, "10 1m cost=expr:", "", &err);
    EXPECT(err && strstr(err, "cost=expr:"),
           "cost=expr: without an "
           "expression refused: %s",
           err ? err : "accepted");
    l = limit(p, "10 1m cost=3 cost=expr:x", "", &err);
    EXPECT(err && strstr(err, "cost=expr:x"),
           "cost= and cost=expr: refused: %s", err ? err : "accepted");
    l = limit(p, "10 1m cost=2 cost-unit=1024", "", &err);
    EXPECT(err && strstr(err, "cost-unit=1024"),
           "cost-unit= without cost=expr: refused: %s", err ? err : "accepted");
    l = limit(p, "10 1m cost=expr:x cost-unit=0", "", &err);
    EXPECT(err && strstr(err, "'0'"), "cost-unit=0 refused: %s",
           err ? err : "accepted");
    l = limit(p, "10 1m cost=expr:x cost-unit=2TB", "", &err);
    EXPECT(err && strstr(err, "'2TB'"), "cost-unit=2TB refused: %s",
           err ? err : "accepted");

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        apr_int64_t cost = 0;
        int why = sl_cost_of(cases[i].v, cases[i].unit, cases[i].max, &cost);
        EXPECT(why == cases[i].why &&
                   (why != SL_COST_OK || cost == cases[i].cost),
               "'%s' / %" APR_INT64_T_FMT " under %" APR_INT64_T_FMT
               ": %d, cost %" APR_INT64_T_FMT,
               cases[i].v, cases[i].unit, cases[i].max, why, cost);
    }
    EXPECT(sl_cost_of(NULL, 1, 10, &(apr_int64_t){0}) == SL_COST_OK,
           "no value costs 1");
}

static void test_quota_expr(apr_pool_t *p)
{
    static const struct {
        const char *v;
        int why;
        apr_int64_t quota;
    } cases[] = {
        {"1", SL_QUOTA_OK, 1},
        {"250", SL_QUOTA_OK, 250},
        {"007", SL_QUOTA_OK, 7},
        {"100000000", SL_QUOTA_OK, 100000000},
        {"0", SL_QUOTA_ZERO, 0},
        {"000", SL_QUOTA_ZERO, 0},
        {"", SL_QUOTA_BAD, 0},
        {"100000001", SL_QUOTA_BAD, 0},
        {"99999999999999999999999999", SL_QUOTA_BAD, 0},
        {"-1", SL_QUOTA_BAD, 0},
        {"+5", SL_QUOTA_BAD, 0},
        {" 5", SL_QUOTA_BAD, 0},
        {"5 ", SL_QUOTA_BAD, 0},
        {"1.5", SL_QUOTA_BAD, 0},
        {"1e3", SL_QUOTA_BAD, 0},
        {"0x10", SL_QUOTA_BAD, 0},
        {"5abc", SL_QUOTA_BAD, 0},
    };
    static const struct {
        const char *line, *named;
    } bad[] = {
        {"expr:%{HTTP:X-Q} 1m", "quota-default="},
        {"expr: 1m quota-default=5", "needs an expression"},
        {"10 1m quota-default=5", "expr:"},
        {"expr:x 1m quota-default=0", "'0'"},
        {"expr:x 1m quota-default=100000001", "'100000001'"},
        {"expr:x 1m quota-default=abc", "'abc'"},
        {"expr:x 1m quota-default=5 quota-default=6", "twice"},
        {"expr:x 1m quota-default=2 cost=3", "cost=3"},
        /* the tolerance under the lowest quota an expression gives, 1 */
        {"expr:x 1d quota-default=100 algorithm=gcra burst=367", "366d"},
    };
    const char *err;
    sl_limit_t *a, *b, *c, *d, *e;
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        apr_int64_t q = -1;
        int why = sl_quota_of(cases[i].v, &q);
        EXPECT(why == cases[i].why &&
                   (why != SL_QUOTA_OK || q == cases[i].quota),
               "quota '%s': %d, %" APR_INT64_T_FMT, cases[i].v, why, q);
    }
    EXPECT(sl_quota_of(NULL, &(apr_int64_t){0}) == SL_QUOTA_BAD,
           "no value is not a quota");

    a = limit(p, "expr:%{HTTP:X-Q} 1m quota-default=5", "<Location /a>\n",
              &err);
    EXPECT(a && !err && !strcmp(a->quota_expr, "%{HTTP:X-Q}") &&
               a->requests == 5 && !strcmp(a->name, "expr-per-1m"),
           "expr: keeps its text, quota-default= is requests: %s",
           err ? err : (a ? a->name : ""));
    /* The budget does not depend on quota-default=, and is not the one
     * of a literal quota equal to it. */
    b = limit(p, "EXPR:%{HTTP:X-Q} 1m quota-default=50", "<Location /a>\n",
              &err);
    c = limit(p, "5 1m", "<Location /a>\n", &err);
    d = limit(p, "expr:%{HTTP:X-R} 1m quota-default=5", "<Location /a>\n",
              &err);
    e = limit(p, "expr:%{HTTP:X-Q} 1m quota-default=5", "<Location /b>\n",
              &err);
    EXPECT(a && b && c && d && e && !strcmp(a->id, b->id),
           "one budget whatever quota-default=");
    EXPECT(a && c && strcmp(a->id, c->id), "... not a literal quota's");
    EXPECT(a && d && strcmp(a->id, d->id), "... one per expression");
    EXPECT(a && e && strcmp(a->id, e->id), "... and per section");
    a = limit(p, "expr:x 1m quota-default=5 name=plan algorithm=gcra", "",
              &err);
    b = limit(p, "10 1m name=plan", "", &err);
    EXPECT(a && b && !strcmp(a->id, b->id), "named: the name's budget: %s",
           err ? err : "");
    a = limit(p, "expr:x 1d quota-default=100 algorithm=gcra burst=366", "",
              &err);
    EXPECT(a && !err, "gcra burst x WINDOW within 366d: %s", err ? err : "");

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        a = limit(p, bad[i].line, "", &err);
        EXPECT(!a && err && strstr(err, bad[i].named),
               "'%s' refused naming %s: %s", bad[i].line, bad[i].named,
               err ? err : "accepted");
    }
}

/* cost=after:: the line, then what a measured value charges beyond the
 * admission's unit. */
static void test_cost_after(apr_pool_t *p)
{
    static const struct {
        const char *v;
        apr_int64_t unit, max;
        int why;
        apr_int64_t extra;
    } cases[] = {
        {"1000", 100, 100, SL_COST_OK, 9},
        {"1001", 100, 100, SL_COST_OK, 10},
        {"0", 100, 100, SL_COST_OK, 0},
        {"", 1, 100, SL_COST_OK, 0},
        {NULL, 1, 100, SL_COST_OK, 0},
        {"7", 1, 100, SL_COST_OK, 6},
        {"100", 1, 100, SL_COST_OK, 99},
        {"101", 1, 100, SL_COST_OVER, 99},
        {"99999999999999999999999", 1, 100, SL_COST_OVER, 99},
        {"abc", 1, 100, SL_COST_BAD, 99},
        {"1 2", 1, 100, SL_COST_BAD, 99},
        {"-3", 1, 100, SL_COST_BAD, 99},
    };
    const char *err;
    sl_limit_t *l;
    size_t i;

    l = limit(p, "10 1m cost=after:bytes cost-unit=1024", "", &err);
    EXPECT(l && !err && l->after == SL_AFTER_BYTES && l->cost == 1 &&
               l->cost_unit == 1024 && !l->after_header,
           "cost=after:bytes: %s", err ? err : "");
    l = limit(p, "10 1m cost=AFTER:header:X-Tokens", "", &err);
    EXPECT(l && !err && l->after == SL_AFTER_HEADER &&
               !strcmp(l->after_header, "X-Tokens") && l->cost_unit == 1,
           "cost=after:header:NAME: %s", err ? err : "");
    l = limit(p, "10 1m cost=after:bytes count=401", "", &err);
    EXPECT(err && strstr(err, "count="), "with count= refused: %s",
           err ? err : "accepted");
    l = limit(p, "10 1m cost=after:header:a,b", "", &err);
    EXPECT(err && strstr(err, "'a,b'"), "a bad header name refused: %s",
           err ? err : "accepted");
    l = limit(p, "10 1m cost=after:bytes cost=after:bytes", "", &err);
    EXPECT(err && strstr(err, "twice"), "twice refused: %s",
           err ? err : "accepted");
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        apr_int64_t extra = -1;
        int why =
            sl_cost_after(cases[i].v, cases[i].unit, cases[i].max, &extra);
        EXPECT(why == cases[i].why && extra == cases[i].extra,
               "'%s' / %" APR_INT64_T_FMT ": %d, %" APR_INT64_T_FMT
               " more (expected %d, %" APR_INT64_T_FMT ")",
               cases[i].v ? cases[i].v : "(none)", cases[i].unit, why, extra,
               cases[i].why, cases[i].extra);
    }
}

/* distinct=: a limit of its own algorithm, its source's text kept for
 * the configuration to parse; what it cannot go with is refused. */
static void test_distinct(apr_pool_t *p)
{
    static const char *const bad[] = {
        "5 10m distinct=",
        "5 10m distinct=user distinct=ip",
        "5 10m distinct=user algorithm=log",
        "5 10m algorithm=gcra distinct=user",
        "5 10m distinct=user cost=2",
        "5 10m distinct=user cost=expr:%{HTTP:X}",
        "5 10m distinct=user cost=after:bytes",
        "5 10m distinct=user count=401",
        "5 10m distinct=user delay=1s",
        "expr:%{HTTP:Q} 10m quota-default=5 distinct=user",
        "1001 10m distinct=user",
    };
    const char *err;
    sl_limit_t *a, *b, *c;
    size_t i;

    a = limit(p, "5 10m distinct=user", "<Location /x>\n", &err);
    EXPECT(!err && a && a->algorithm == SL_ALG_DISTINCT &&
               !strcmp(a->distinct, "user") && a->requests == 5 &&
               sl_algorithm_code(a->algorithm) == 'd',
           "distinct=user: %s", err ? err : "parsed");
    b = limit(p, "5 10m distinct=header:X-Account", "<Location /x>\n", &err);
    c = limit(p, "5 10m", "<Location /x>\n", &err);
    EXPECT(a && b && c && strcmp(a->id, b->id) && strcmp(a->id, c->id),
           "two sources, or none, in one section are three budgets");
    c = limit(p, "1000 1h distinct=ip block=1h", "", &err);
    EXPECT(!err && c && c->block, "1000 values and block=: %s",
           err ? err : "parsed");
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        a = limit(p, bad[i], "", &err);
        EXPECT(err != NULL, "'%s' is refused", bad[i]);
    }
}

/* key=: the source's text kept for the configuration to parse, once per
 * line; a line alike but for key= is a limit of its own, a line without it
 * keeps the id it had. */
static void test_key(apr_pool_t *p)
{
    static const char *const bad[] = {
        "5 10m key=",
        "5 10m key=ip key=user",
        "5 10m key=ip KEY=form:log",
        "5 10m kee=ip",
    };
    const char *err;
    sl_limit_t *a, *b, *c, *d, *e;
    size_t i;

    a = limit(p, "5 15m count=200 key=form:log", "<Location /x>\n", &err);
    EXPECT(!err && a && !strcmp(a->key, "form:log") && a->count &&
               a->algorithm == SL_ALG_UNSET,
           "key=form:log: %s", err ? err : "parsed");
    b = limit(p, "5 15m count=200 key=ip", "<Location /x>\n", &err);
    c = limit(p, "5 15m count=200", "<Location /x>\n", &err);
    d = limit(p, "5 15m count=200 key=none", "<Location /x>\n", &err);
    EXPECT(a && b && c && d && strcmp(a->id, b->id) && strcmp(a->id, c->id) &&
               strcmp(b->id, c->id) && strcmp(d->id, c->id) &&
               strcmp(d->id, a->id) && !c->key,
           "four keys of one line in one section are four limits");
    e = limit(p, "5 15m name=login key=form:log", "<Location /x>\n", &err);
    c = limit(p, "5 15m name=login", "<Location /y>\n", &err);
    EXPECT(e && c && !strcmp(e->id, c->id),
           "a name is one id whatever the key (the configuration checks "
           "that its uses agree)");
    e = limit(p, "5 10m distinct=form:log key=ip block=1h", "", &err);
    EXPECT(!err && e && e->algorithm == SL_ALG_DISTINCT &&
               !strcmp(e->key, "ip") && !strcmp(e->distinct, "form:log"),
           "key= with distinct=: %s", err ? err : "parsed");
    e = limit(p, "5 10m key=user:nocase,any-address algorithm=gcra burst=2", "",
              &err);
    EXPECT(!err && e && !strcmp(e->key, "user:nocase,any-address"),
           "key= keeps the source as written: %s", err ? err : "parsed");
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        a = limit(p, bad[i], "", &err);
        EXPECT(err != NULL && (i == 3 || strstr(err, "key")),
               "'%s' is refused: %s", bad[i], err ? err : "accepted");
    }
}

/* A copy outlives the pool its limit was read in (an .htaccess that only
 * mod_dir's look-up read): nothing in it points there. The pool's own
 * allocator frees every block when it goes, so under the sanitizers a read
 * of it is a report. */
static void test_copy(apr_pool_t *p)
{
    apr_allocator_t *a;
    apr_pool_t *q;
    sl_limit_t *l, *c;
    sl_script_args_t *args;
    apr_uint32_t *cell;
    const char *err;
    int alg;

    apr_allocator_create(&a);
    apr_allocator_max_free_set(a, 1);
    apr_pool_create_ex(&q, NULL, NULL, a);
    apr_allocator_owner_set(a, q);
    l = limit(q, "3 60s name=hta-auth count=401,403", "<Directory /srv>", &err);
    EXPECT(l && !err, "copy: the line parses (%s)", err ? err : "");
    if (!l) {
        apr_pool_destroy(q);
        return;
    }
    /* cost=after: is another line's option; the copy takes either. */
    l->after = SL_AFTER_HEADER;
    l->after_header = apr_pstrdup(q, "X-Cost");
    l->label = apr_pstrdup(q, "hta-auth@/srv");
    l->sf_name = apr_pstrdup(q, "\"hta-auth\"");
    l->sf_name_len = strlen(l->sf_name);
    l->policy_item = apr_pstrdup(q, "\"hta-auth\";q=3;w=60");
    l->policy_item_len = strlen(l->policy_item);
    l->requests_text = apr_pstrdup(q, "3");
    cell = apr_palloc(q, sizeof(*cell));
    *cell = 7;
    l->stats_cell = cell;
    args = apr_palloc(q, SL_ALG_COUNT * sizeof(*args));
    for (alg = 0; alg < SL_ALG_COUNT; alg++) {
        args[alg].requests = 3;
        args[alg].window = 60000000;
        args[alg].burst = 3;
        args[alg].text = apr_psprintf(q, "alg%d", alg);
        args[alg].len = strlen(args[alg].text);
    }
    l->script_args = args;
    l->cost_prog = l; /* any pointer: the copy drops it */
    c = sl_limit_copy(p, l);
    apr_pool_destroy(q);
    EXPECT(!strcmp(c->name, "hta-auth") &&
               !strcmp(c->section, "<Directory /srv>") &&
               !strcmp(c->label, "hta-auth@/srv") && strlen(c->id) == 16,
           "copy: name, section, label and id");
    EXPECT(c->ncount == 2 && c->count[0] == 401 && c->count[1] == 403 &&
               sl_limit_counts(c, 403) && !sl_limit_counts(c, 200),
           "copy: count=");
    EXPECT(c->after == SL_AFTER_HEADER && !strcmp(c->after_header, "X-Cost"),
           "copy: cost=after:header:");
    EXPECT(c->sf_name_len == 10 && !memcmp(c->sf_name, "\"hta-auth\"", 10) &&
               c->policy_item_len == 19 &&
               !memcmp(c->policy_item, "\"hta-auth\";q=3;w=60", 19) &&
               !strcmp(c->requests_text, "3"),
           "copy: what the headers say of it");
    EXPECT(c->stats_cell && *c->stats_cell == 7, "copy: its metrics cell");
    for (alg = 0; alg < SL_ALG_COUNT; alg++) {
        char want[8];
        apr_snprintf(want, sizeof(want), "alg%d", alg);
        EXPECT(c->script_args[alg].len == strlen(want) &&
                   !memcmp(c->script_args[alg].text, want, strlen(want)) &&
                   c->script_args[alg].requests == 3,
               "copy: script arguments of algorithm %d", alg);
    }
    EXPECT(!c->cost_prog && !c->quota_prog && !c->key_keys && !c->distinct_keys,
           "copy: no compiled expression or key source");
}

int main(void)
{
    apr_pool_t *p;

    apr_initialize();
    apr_pool_create(&p, NULL);
    test_durations(p);
    test_algorithms(p);
    test_limits(p);
    test_limit_options(p);
    test_unknown_option(p);
    test_cost_expr(p);
    test_quota_expr(p);
    test_cost_after(p);
    test_distinct(p);
    test_key(p);
    test_copy(p);
    printf("sl_limit: %d passed, %d failed\n", passed, failed);
    apr_terminate();
    return failed ? 1 : 0;
}
