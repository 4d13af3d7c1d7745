/* SPDX-License-Identifier: Apache-2.0 */
/* Redis's side of a decision alone: lua/sl_check.lua (counter and log, one
 * limit, called as src/sl_redis.c's sl_decide_command calls it) beside the
 * two scripts a user would otherwise write, on one redis-server, in one
 * run: the textbook counter (GET the current and the previous window's
 * keys, weighted sum, INCR and EXPIRE) and the textbook log
 * (ZREMRANGEBYSCORE, ZCARD, ZADD, EXPIRE).
 *
 * Each script runs by EVALSHA from several connections, each keeping a
 * pipeline of DEPTH calls in flight, over keys spread across CLIENTS
 * identities. redis-server's CPU (INFO cpu, user + system) is read before
 * and after each measured stretch, so "decisions per Redis CPU second" is
 * what one Redis core gives each script, whatever the driver costs on the
 * same cores. The stretches run in ABBA order over ROUNDS rounds, each after
 * a FLUSHALL and a warm-up, so that drift falls on every script alike.
 *
 *   bench/results/scripts LUA_DIR PORT [SECONDS [CONNS [DEPTH [CLIENTS
 *                         [ROUNDS]]]]]
 *
 * One line per script on stdout, tab separated: name, description,
 * decisions, wall seconds, redis CPU seconds, refusals, errors. Every
 * limit is far above what a run sends: every decision admits, and a
 * refusal or an error is a fault of the run (exit status 1).
 */
#include <hiredis/hiredis.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#define MAX_CONNS 64
#define MAX_DEPTH 256
#define LIMIT     "1000000"

/* The counter a user writes: two keys, one per window, the client's
 * clock. */
static const char *const tb_counter_lua =
    "local limit = tonumber(ARGV[1])\n"
    "local cur = tonumber(redis.call('GET', KEYS[1]) or '0')\n"
    "local prev = tonumber(redis.call('GET', KEYS[2]) or '0')\n"
    "if prev * (1 - tonumber(ARGV[3])) + cur >= limit then\n"
    "    return 0\n"
    "end\n"
    "redis.call('INCR', KEYS[1])\n"
    "redis.call('EXPIRE', KEYS[1], 2 * tonumber(ARGV[2]))\n"
    "return 1\n";

/* The sliding log a user writes: a sorted set of timestamps. */
static const char *const tb_log_lua =
    "local now = tonumber(ARGV[1])\n"
    "local window = tonumber(ARGV[2])\n"
    "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)\n"
    "if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then\n"
    "    return 0\n"
    "end\n"
    "redis.call('ZADD', KEYS[1], now, ARGV[4])\n"
    "redis.call('EXPIRE', KEYS[1], math.ceil(window / 1000))\n"
    "return 1\n";

typedef enum { SL_CHECK_COUNTER, SL_CHECK_LOG, TB_COUNTER, TB_LOG } kind_t;

typedef struct {
    const char *name;
    const char *desc;
    kind_t kind;
    char sha[41];
} script_t;

static script_t scripts[] = {
    {"sl_check-counter", "lua/sl_check.lua, algorithm=counter, one limit",
     SL_CHECK_COUNTER, ""},
    {"textbook-counter",
     "GET current and previous window, weighted sum, INCR, EXPIRE", TB_COUNTER,
     ""},
    {"sl_check-log", "lua/sl_check.lua, algorithm=log, one limit", SL_CHECK_LOG,
     ""},
    {"textbook-log", "ZREMRANGEBYSCORE, ZCARD, ZADD, EXPIRE", TB_LOG, ""},
};
#define NSCRIPTS (sizeof(scripts) / sizeof(scripts[0]))

static int port;
static int conns = 4, depth = 8, clients = 10000, rounds = 2;
static double seconds = 3;
/* Per identity the module's key stem: prefix, {12-byte hash in base64},
 * a 6-byte policy id in base64 (bench/memory.sh's shape). */
static char (*stems)[40];

typedef struct {
    const script_t *s;
    double until;
    uint64_t rng;
    long done, refused, errors;
} worker_t;

static double now_s(void)
{
    struct timeval tv;

    gettimeofday(&tv, NULL);
    return tv.tv_sec + tv.tv_usec / 1e6;
}

/* xorshift64*: cheap, so the driver takes little of the shared cores. */
static uint64_t next(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 2685821657736338717ULL;
}

static void b64(uint64_t *rng, char *out, int n)
{
    static const char a[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    int i;

    for (i = 0; i < n; i++) {
        out[i] = a[next(rng) >> 58];
    }
    out[n] = '\0';
}

static redisContext *connect_to(void)
{
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);

    if (!c || c->err) {
        fprintf(stderr, "scripts: connect to %d: %s\n", port,
                c ? c->errstr : "out of memory");
        exit(2);
    }
    return c;
}

/* One call's arguments, as the module (sl_check) or a user's client
 * (textbook) would send them; buffers owned by the caller. */
static int build(const script_t *s, uint64_t *rng, char bufs[6][64],
                 const char **argv, size_t *argvlen)
{
    const char *stem = stems[next(rng) % (uint64_t) clients];
    struct timeval tv;
    long long ms;
    int argc = 0, i, member = -1;

    gettimeofday(&tv, NULL);
    ms = (long long) tv.tv_sec * 1000 + tv.tv_usec / 1000;
    argv[argc++] = "EVALSHA";
    argv[argc++] = s->sha;
    switch (s->kind) {
    case SL_CHECK_COUNTER:
    case SL_CHECK_LOG:
        snprintf(bufs[0], 64, "%s.%c", stem,
                 s->kind == SL_CHECK_COUNTER ? 'c' : 'l');
        /* The member: 12 random bytes, as the module sends. */
        for (i = 0; i < 12; i++) {
            bufs[1][i] = (char) (next(rng) >> 56);
        }
        argv[argc++] = "1";
        argv[argc++] = bufs[0];
        member = argc;
        argv[argc++] = bufs[1];
        argv[argc++] = s->kind == SL_CHECK_COUNTER ? "c" : "l";
        argv[argc++] = LIMIT;
        argv[argc++] = "60000000";
        argv[argc++] = LIMIT;
        argv[argc++] = "1";
        argv[argc++] = "0";
        break;
    case TB_COUNTER:
        snprintf(bufs[0], 64, "%s.c:%lld", stem, ms / 60000);
        snprintf(bufs[1], 64, "%s.c:%lld", stem, ms / 60000 - 1);
        snprintf(bufs[2], 64, "%.4f", (double) (ms % 60000) / 60000);
        argv[argc++] = "2";
        argv[argc++] = bufs[0];
        argv[argc++] = bufs[1];
        argv[argc++] = LIMIT;
        argv[argc++] = "60";
        argv[argc++] = bufs[2];
        break;
    case TB_LOG:
        snprintf(bufs[0], 64, "%s.l", stem);
        snprintf(bufs[1], 64, "%lld", ms);
        /* A member unique to the request, as a user's would be. */
        snprintf(bufs[2], 64, "%lld-%016llx", ms,
                 (unsigned long long) next(rng));
        argv[argc++] = "1";
        argv[argc++] = bufs[0];
        argv[argc++] = bufs[1];
        argv[argc++] = "60000";
        argv[argc++] = LIMIT;
        argv[argc++] = bufs[2];
        break;
    }
    for (i = 0; i < argc; i++) {
        argvlen[i] = i == member ? 12 : strlen(argv[i]);
    }
    return argc;
}

/* Admitted: sl_check's third integer, the textbook's only one. */
static int judge(const script_t *s, const redisReply *r)
{
    if (s->kind == SL_CHECK_COUNTER || s->kind == SL_CHECK_LOG) {
        if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
            r->element[2]->type != REDIS_REPLY_INTEGER) {
            return -1;
        }
        return (int) r->element[2]->integer;
    }
    return r->type == REDIS_REPLY_INTEGER ? (int) r->integer : -1;
}

static void *work(void *arg)
{
    worker_t *w = arg;
    redisContext *c = connect_to();
    char bufs[6][64];
    const char *argv[16];
    size_t argvlen[16];
    int i, argc;

    while (now_s() < w->until) {
        for (i = 0; i < depth; i++) {
            argc = build(w->s, &w->rng, bufs, argv, argvlen);
            redisAppendCommandArgv(c, argc, argv, argvlen);
        }
        for (i = 0; i < depth; i++) {
            redisReply *r = NULL;
            int ok;

            if (redisGetReply(c, (void **) &r) != REDIS_OK) {
                fprintf(stderr, "scripts: %s\n", c->errstr);
                exit(2);
            }
            ok = judge(w->s, r);
            if (ok < 0) {
                if (w->errors++ == 0) {
                    fprintf(stderr, "scripts: %s: %s\n", w->s->name,
                            r->type == REDIS_REPLY_ERROR ? r->str
                                                         : "unexpected reply");
                }
            }
            else if (!ok) {
                w->refused++;
            }
            w->done++;
            freeReplyObject(r);
        }
    }
    redisFree(c);
    return NULL;
}

static double redis_cpu(redisContext *ctl)
{
    redisReply *r = redisCommand(ctl, "INFO cpu");
    double user = 0, sys = 0;
    const char *p;

    if (!r || r->type != REDIS_REPLY_STRING) {
        fprintf(stderr, "scripts: INFO cpu failed\n");
        exit(2);
    }
    if ((p = strstr(r->str, "used_cpu_sys:"))) {
        sys = atof(p + strlen("used_cpu_sys:"));
    }
    if ((p = strstr(r->str, "used_cpu_user:"))) {
        user = atof(p + strlen("used_cpu_user:"));
    }
    freeReplyObject(r);
    return user + sys;
}

/* CONNS workers for secs seconds; their sums into *tot. */
static void stretch(const script_t *s, double secs, worker_t *tot)
{
    pthread_t t[MAX_CONNS];
    worker_t w[MAX_CONNS];
    int i;

    memset(w, 0, sizeof(w));
    for (i = 0; i < conns; i++) {
        w[i].s = s;
        w[i].until = now_s() + secs;
        w[i].rng =
            0x9E3779B97F4A7C15ULL * (uint64_t) (i + 1) ^ (uint64_t) now_s();
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    for (i = 0; i < conns; i++) {
        pthread_join(t[i], NULL);
        tot->done += w[i].done;
        tot->refused += w[i].refused;
        tot->errors += w[i].errors;
    }
}

static void load(redisContext *ctl, script_t *s, const char *text)
{
    redisReply *r = redisCommand(ctl, "SCRIPT LOAD %s", text);

    if (!r || r->type != REDIS_REPLY_STRING || r->len != 40) {
        fprintf(stderr, "scripts: SCRIPT LOAD for %s failed: %s\n", s->name,
                r && r->type == REDIS_REPLY_ERROR ? r->str : "no reply");
        exit(2);
    }
    memcpy(s->sha, r->str, 40);
    s->sha[40] = '\0';
    freeReplyObject(r);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    long n;
    char *buf;

    if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET)) {
        fprintf(stderr, "scripts: cannot read %s\n", path);
        exit(2);
    }
    buf = malloc(n + 1);
    if (!buf || fread(buf, 1, n, f) != (size_t) n) {
        fprintf(stderr, "scripts: cannot read %s\n", path);
        exit(2);
    }
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Each script's sums over the rounds. */
typedef struct {
    worker_t w;
    double wall, cpu;
} sum_t;

static int options(int argc, char **argv)
{
    double *d[] = {&seconds};
    int *n[] = {&conns, &depth, &clients, &rounds};
    int i;

    if (argc < 3) {
        fprintf(stderr,
                "usage: %s LUA_DIR PORT [SECONDS [CONNS [DEPTH "
                "[CLIENTS [ROUNDS]]]]]\n",
                argv[0]);
        return 0;
    }
    port = atoi(argv[2]);
    if (argc > 3) {
        *d[0] = atof(argv[3]);
    }
    for (i = 4; i < argc && i < 8; i++) {
        *n[i - 4] = atoi(argv[i]);
    }
    if (seconds <= 0 || conns < 1 || conns > MAX_CONNS || depth < 1 ||
        depth > MAX_DEPTH || clients < 1 || rounds < 1) {
        fprintf(stderr, "scripts: bad arguments\n");
        return 0;
    }
    return 1;
}

/* Deterministic identities, so that every run spreads keys alike. */
static void make_stems(void)
{
    uint64_t rng = 42;
    char pol[9], id[17];
    int k;

    stems = malloc(sizeof(*stems) * clients);
    if (!stems) {
        fprintf(stderr, "scripts: out of memory\n");
        exit(2);
    }
    b64(&rng, pol, 8);
    for (k = 0; k < clients; k++) {
        b64(&rng, id, 16);
        snprintf(stems[k], sizeof(stems[k]), "slbench:{%s}%s", id, pol);
    }
}

static void load_all(redisContext *ctl, const char *lua_dir)
{
    char path[4096];
    char *text;

    snprintf(path, sizeof(path), "%s/sl_check.lua", lua_dir);
    text = slurp(path);
    load(ctl, &scripts[0], text);
    load(ctl, &scripts[2], text);
    free(text);
    load(ctl, &scripts[1], tb_counter_lua);
    load(ctl, &scripts[3], tb_log_lua);
}

/* Every script once per round, forwards in even rounds and backwards in
 * odd ones (ABBA), each after a FLUSHALL and a warm-up that makes the
 * identities' keys exist, as in a server that has been running. */
static void measure(redisContext *ctl, sum_t *sum)
{
    int round;
    unsigned k;

    for (round = 0; round < rounds; round++) {
        for (k = 0; k < NSCRIPTS; k++) {
            unsigned j = round % 2 ? NSCRIPTS - 1 - k : k;
            double t0, c0;
            worker_t warm;

            freeReplyObject(redisCommand(ctl, "FLUSHALL"));
            memset(&warm, 0, sizeof(warm));
            stretch(&scripts[j], seconds / 3, &warm);
            sum[j].w.errors += warm.errors;
            sum[j].w.refused += warm.refused;
            c0 = redis_cpu(ctl);
            t0 = now_s();
            stretch(&scripts[j], seconds, &sum[j].w);
            sum[j].wall += now_s() - t0;
            sum[j].cpu += redis_cpu(ctl) - c0;
        }
    }
    freeReplyObject(redisCommand(ctl, "FLUSHALL"));
}

int main(int argc, char **argv)
{
    sum_t sum[NSCRIPTS];
    redisContext *ctl;
    unsigned i;
    int bad = 0;

    if (!options(argc, argv)) {
        return 2;
    }
    make_stems();
    ctl = connect_to();
    load_all(ctl, argv[1]);
    memset(sum, 0, sizeof(sum));
    measure(ctl, sum);
    redisFree(ctl);
    for (i = 0; i < NSCRIPTS; i++) {
        printf("%s\t%s\t%ld\t%.3f\t%.6f\t%ld\t%ld\n", scripts[i].name,
               scripts[i].desc, sum[i].w.done, sum[i].wall, sum[i].cpu,
               sum[i].w.refused, sum[i].w.errors);
        bad |= sum[i].w.refused || sum[i].w.errors;
    }
    return bad ? 1 : 0;
}
