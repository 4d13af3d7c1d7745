/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the Redis protocol's pure parts (src/sl_resp.c): commands
 * in RESP, what a reply asks of the request, the script's integers and
 * the error replies' meaning. Replies are read by hiredis from RESP text.
 * No server needed (make unit). */
#include "sl_resp.h"

#include <apr_general.h>
#include <apr_strings.h>

#include "sl_expect.h"
#include "sl_reply_read.h"

static apr_pool_t *pool;

static void test_format(void)
{
    const char *argv[3] = {"EVALSHA", "a\r\nb", ""};
    size_t argvlen[3] = {7, 4, 0};
    static const char want[] =
        "*3\r\n$7\r\nEVALSHA\r\n$4\r\na\r\nb\r\n$0\r\n\r\n";
    apr_size_t len;
    const char *buf = sl_resp_format(pool, 3, argv, argvlen, &len);
    char *cmd = NULL;
    int n = redisFormatCommand(&cmd, "EVALSHA %b %b", "a\r\nb", (size_t) 4, "",
                               (size_t) 0);

    EXPECT(len == sizeof(want) - 1 && !memcmp(buf, want, len),
           "RESP: binary-safe bulk strings, the empty one too");
    EXPECT(n > 0 && (apr_size_t) n == len && !memcmp(buf, cmd, len),
           "RESP: as hiredis formats it");
    free(cmd);
    argv[0] = "PING";
    argvlen[0] = 4;
    buf = sl_resp_format(pool, 1, argv, argvlen, &len);
    EXPECT(len == 14 && !memcmp(buf, "*1\r\n$4\r\nPING\r\n", len),
           "RESP: one argument");
}

/* The writer's pieces make sl_resp_format's bytes, numbers in decimal.
 * The numbers' spellings are written out rather than asked of APR:
 * apr_off_t_toa negates its argument, so its APR_INT64_MIN is undefined
 * and some builds print garbage there. */
static void test_write(void)
{
    static const apr_int64_t nums[] = {
        0, 7, 10, 999999, -1, APR_INT64_MAX, APR_INT64_MIN};
    static const char *const spelt[] = {"0",
                                        "7",
                                        "10",
                                        "999999",
                                        "-1",
                                        "9223372036854775807",
                                        "-9223372036854775808"};
    const char *argv[2 + 7];
    size_t argvlen[2 + 7];
    char buf[SL_RESP_COUNT_MAX + SL_RESP_ARG_MAX(4) + SL_RESP_ARG_MAX(0) +
             7 * SL_RESP_INT_MAX];
    char *o = buf;
    apr_size_t len;
    const char *want;
    apr_size_t longest = 0;
    char *start;
    int i;

    argv[0] = "a\r\nb";
    argvlen[0] = 4;
    argv[1] = "";
    argvlen[1] = 0;
    o = sl_resp_count(o, 9);
    o = sl_resp_arg(o, argv[0], argvlen[0]);
    o = sl_resp_arg(o, argv[1], argvlen[1]);
    for (i = 0; i < 7; i++) {
        argv[2 + i] = spelt[i];
        argvlen[2 + i] = strlen(argv[2 + i]);
        start = o;
        o = sl_resp_int(o, nums[i]);
        if ((apr_size_t) (o - start) > longest) {
            longest = (apr_size_t) (o - start);
        }
    }
    want = sl_resp_format(pool, 9, argv, argvlen, &len);
    EXPECT((apr_size_t) (o - buf) == len && !memcmp(buf, want, len),
           "RESP written in pieces: as sl_resp_format writes it");
    EXPECT(longest <= SL_RESP_INT_MAX,
           "the longest numbers fit their bound: %d bytes, at most %d",
           (int) longest, SL_RESP_INT_MAX);
}

static void test_classify(void)
{
    static const struct {
        const char *msg;
        int cls;
    } cases[] = {
        {"NOSCRIPT No matching script.", SL_REPLY_NOSCRIPT},
        {"MOVED 3999 127.0.0.1:6381", SL_REPLY_MOVED},
        {"ASK 3999 127.0.0.1:6381", SL_REPLY_ASK},
        {"TRYAGAIN Multiple keys request during rehashing of slot",
         SL_REPLY_TRYAGAIN},
        {"READONLY You can't write against a read only replica.",
         SL_REPLY_REROUTE},
        /* Before Redis 7 a replica runs the script, which fails at its
         * first write: nothing written, so not run either. */
        {"ERR Error running script (call to f_1185e7ae48cf34f42bb62f9e2af6d3939"
         "0054e78): @user_script:1: @user_script: 1: -READONLY You can't "
         "write against a read only replica.",
         SL_REPLY_REROUTE},
        {"ERR Error running script (call to f_42f4): @user_script:1: "
         "@user_script: 1: -READONLY You can't write against a read only "
         "slave.",
         SL_REPLY_REROUTE},
        {"ERR Error running script (call to f_42f4): @user_script:9: "
         "user_script:9: Script attempted to access nonexistent global "
         "variable 'READONLY'",
         SL_REPLY_FATAL},
        {"CLUSTERDOWN The cluster is down", SL_REPLY_REROUTE},
        {"LOADING Redis is loading the dataset in memory", SL_REPLY_REROUTE},
        {"NOAUTH Authentication required.", SL_REPLY_FATAL},
        {"ERR wrong number of arguments", SL_REPLY_FATAL},
        {"MOVEDX 1 a:1", SL_REPLY_FATAL},
        {"", SL_REPLY_FATAL},
    };
    redisReply *r;
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        r = reply_of(apr_pstrcat(pool, "-", cases[i].msg, "\r\n", NULL));
        EXPECT(sl_reply_classify(APR_SUCCESS, 0, r) == cases[i].cls,
               "'%s' -> %d", cases[i].msg, cases[i].cls);
        freeReplyObject(r);
    }
    /* What makes a Sentinel store ask the Sentinels again. */
    EXPECT(sl_error_demoted("MASTERDOWN Link with MASTER is down") &&
               sl_error_demoted(cases[5].msg) &&
               !sl_error_demoted("ERR wrong number of arguments") &&
               !sl_error_demoted(NULL),
           "demoted: READONLY, MASTERDOWN, a script's READONLY");
    r = reply_of("*1\r\n:1\r\n");
    EXPECT(sl_reply_classify(APR_SUCCESS, 0, r) == SL_REPLY_OK, "an answer");
    freeReplyObject(r);
    EXPECT(sl_reply_classify(APR_EGENERAL, 1, NULL) == SL_REPLY_RETRY,
           "a stale pooled connection: again on a fresh one");
    EXPECT(sl_reply_classify(APR_TIMEUP, 0, NULL) == SL_REPLY_FAILED,
           "a timeout: the node failed");
    EXPECT(sl_reply_classify(APR_ECONNREFUSED, 0, NULL) == SL_REPLY_FAILED,
           "refused: the node failed");
}

static void test_errors(void)
{
    EXPECT(sl_error_usable("NOSCRIPT No matching script.") &&
               sl_error_usable("MOVED 3999 127.0.0.1:6381") &&
               sl_error_usable("ASK 3999 127.0.0.1:6381"),
           "usable: the connection serves the next request");
    EXPECT(!sl_error_usable("READONLY You can't write against a read only "
                            "replica.") &&
               !sl_error_usable("NOAUTH Authentication required.") &&
               !sl_error_usable("LOADING Redis is loading") &&
               !sl_error_usable("MOVED"),
           "not usable: the connection's own state may be wrong");
    EXPECT(strstr(sl_error_text(pool, "NOAUTH Authentication required."),
                  "requires authentication") != NULL,
           "NOAUTH says where the password goes");
    EXPECT(strstr(sl_error_text(pool, "Protocol error: unauthenticated "
                                      "multibulk length"),
                  "SlidingLimitStore") != NULL,
           "Redis 6's unauthenticated close says it too");
    EXPECT(!strcmp(sl_error_text(pool, "ERR wrong number of arguments"),
                   "ERR wrong number of arguments"),
           "any other error as it is");
}

static void test_integers(void)
{
    long long *v;
    redisReply *r = reply_of("*3\r\n:1\r\n:-2\r\n:9007199254740993\r\n");

    EXPECT(!sl_reply_integers(pool, r, &v) && v[0] == 1 && v[1] == -2 &&
               v[2] == 9007199254740993LL,
           "the script's integers");
    freeReplyObject(r);
    r = reply_of("*2\r\n:1\r\n$1\r\nx\r\n");
    EXPECT(sl_reply_integers(pool, r, &v) != NULL, "a string among them");
    freeReplyObject(r);
    r = reply_of(":1\r\n");
    EXPECT(sl_reply_integers(pool, r, &v) != NULL, "not an array");
    freeReplyObject(r);
}

/* Replies read by a reader with the store's object functions: an array
 * into the target's integers, fed a byte at a time as the network may
 * hand it over; every other reply as hiredis makes it. */
static void *read_into(redisReader *reader, sl_reader_t *rd, sl_ints_t *ints,
                       const char *resp)
{
    void *r = NULL;
    size_t i, n = strlen(resp);

    rd->target = ints;
    for (i = 0; i < n && !r; i++) {
        if (redisReaderFeed(reader, resp + i, 1) != REDIS_OK ||
            redisReaderGetReply(reader, &r) != REDIS_OK) {
            r = NULL;
            break;
        }
    }
    rd->target = NULL;
    return r;
}

static void test_reader(void)
{
    redisReader *reader = redisReaderCreate();
    sl_reader_t rd;
    long long v[6];
    sl_ints_t ints = {.v = v, .cap = 6};
    const long long *got;
    apr_size_t nv;
    sl_decision_t d;
    redisReply *r;

    sl_reader_init(&rd, reader);
    r = read_into(reader, &rd, &ints,
                  "*3\r\n:-2\r\n:9007199254740993\r\n:0\r\n");
    EXPECT(r == &sl_reply_ints && ints.n == 3 && ints.bad == -1 && v[0] == -2 &&
               v[1] == 9007199254740993LL && v[2] == 0,
           "an array read into the integers, no redisReply");
    EXPECT(sl_reply_classify(APR_SUCCESS, 0, r) == SL_REPLY_OK,
           "read as an answer");
    EXPECT(!sl_reply_values(pool, r, &ints, &got, &nv) && got == v && nv == 3,
           "its values");
    r = read_into(reader, &rd, &ints,
                  "*6\r\n:1700000000\r\n:250\r\n:1\r\n:1\r\n:9\r\n:"
                  "60000000\r\n");
    EXPECT(r == &sl_reply_ints &&
               sl_reply_decision(pool, r, &ints, 1, &d) == NULL && d.admitted &&
               d.quota[0].remaining == 9 &&
               d.now == 1700000000LL * APR_USEC_PER_SEC + 250,
           "a decision for one budget");
    sl_reply_free(r);
    r = read_into(reader, &rd, &ints,
                  "*3\r\n:1\r\n*2\r\n:5\r\n$1\r\nx\r\n$-1\r\n");
    EXPECT(r == &sl_reply_ints && ints.n == 3 && ints.bad == 1,
           "what is no integer is noted, the first of them");
    EXPECT(!strcmp(sl_reply_values(pool, r, &ints, &got, &nv),
                   "reply element 1 is not an integer"),
           "with sl_reply_integers' words");
    r = read_into(reader, &rd, &ints,
                  "-NOSCRIPT No matching script. Please use EVAL.\r\n");
    EXPECT(r && r != &sl_reply_ints && r->type == REDIS_REPLY_ERROR &&
               sl_reply_classify(APR_SUCCESS, 0, r) == SL_REPLY_NOSCRIPT,
           "an error as hiredis reads it");
    sl_reply_free(r);
    r = read_into(reader, &rd, &ints,
                  "*7\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n:6\r\n:7\r\n");
    EXPECT(r && r != &sl_reply_ints && r->type == REDIS_REPLY_ARRAY &&
               r->elements == 7 && r->element[6]->integer == 7,
           "an array longer than the room: hiredis' own");
    EXPECT(!sl_reply_values(pool, r, &ints, &got, &nv) && nv == 7 &&
               got[6] == 7,
           "and its values");
    sl_reply_free(r);
    r = read_into(reader, &rd, NULL, "*2\r\n:1\r\n+OK\r\n");
    EXPECT(r && r != &sl_reply_ints && r->elements == 2 &&
               r->element[1]->type == REDIS_REPLY_STATUS,
           "without a target: hiredis' own");
    sl_reply_free(r);
    r = read_into(reader, &rd, &ints, ":42\r\n");
    EXPECT(r && r != &sl_reply_ints && r->type == REDIS_REPLY_INTEGER &&
               sl_reply_decision(pool, r, &ints, 1, &d) != NULL,
           "not an array: hiredis' own, and no decision");
    sl_reply_free(r);
    /* Freed half read: the reader's partial reply is the marker. */
    EXPECT(read_into(reader, &rd, &ints, "*6\r\n:1\r\n") == NULL,
           "half an array: no reply yet");
    redisReaderFree(reader);
}

/* The decision's integers taken from the bytes received, or left to
 * hiredis when they are anything but what Redis writes for them. */
static void test_take(void)
{
    long long v[4];
    sl_ints_t ints = {.v = v, .cap = 4};
    static const char two[] = "*2\r\n:1700000000\r\n:-250\r\n+OK\r\n";
    static const char *const left[] = {
        "*2\r\n:1\r\n:2\r",
        "*2\r\n:1\r\n",
        "*2\r\n:1\r\n$1\r\nx\r\n",
        "*5\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n",
        "*1\r\n:01\r\n",
        "*1\r\n:-0\r\n",
        "*1\r\n:+1\r\n",
        "*1\r\n:1234567890123456789\r\n",
        "*-1\r\n",
        "-ERR x\r\n",
        "*1\r\n:1\n",
        "*1\r\n:\r\n",
    };
    size_t i;

    EXPECT(sl_resp_take_ints(&ints, two, sizeof(two) - 1) == 24 &&
               ints.n == 2 && ints.bad == -1 && v[0] == 1700000000 &&
               v[1] == -250,
           "a whole array taken, what follows left");
    EXPECT(sl_resp_take_ints(&ints, "*0\r\n", 4) == 4 && ints.n == 0,
           "an empty one");
    EXPECT(sl_resp_take_ints(&ints, "*1\r\n:123456789012345678\r\n", 25) ==
                   25 &&
               v[0] == 123456789012345678LL,
           "18 digits");
    for (i = 0; i < sizeof(left) / sizeof(left[0]); i++) {
        EXPECT(sl_resp_take_ints(&ints, left[i], strlen(left[i])) == 0,
               "left to the reader: %s", left[i]);
    }
}

int main(void)
{
    apr_initialize();
    apr_pool_create(&pool, NULL);
    test_format();
    test_write();
    test_classify();
    test_errors();
    test_integers();
    test_reader();
    test_take();
    printf("sl_resp_test: %d passed, %d failed\n", passed, failed);
    apr_pool_destroy(pool);
    apr_terminate();
    return failed ? 1 : 0;
}
