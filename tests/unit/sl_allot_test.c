/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of one child's allotments (src/sl_allot.c): which budgets may
 * use them, when a child asks, that it never admits from a grant past its
 * deadline nor more than the grant holds, and that the rest goes back once,
 * named by its grant. No server needed. */
#include "sl_allot.h"
#include "sl_allot_private.h"
#include "sl_script_layout.h"

#include <apr_general.h>

#include <apr_thread_proc.h>

#include <string.h>
#include <unistd.h>

#include "sl_expect.h"

static sl_budget_t budget(const char *key, int alg, apr_int64_t requests)
{
    sl_budget_t b;

    memset(&b, 0, sizeof(b));
    b.key = key;
    b.key_len = strlen(key);
    b.store_tag = 7;
    b.algorithm = alg;
    b.requests = requests;
    b.window = 60 * APR_USEC_PER_SEC;
    b.cost = 1;
    return b;
}

static void test_fits(void)
{
    sl_budget_t b = budget("k", SL_ALG_LOG, 1000);

    EXPECT(sl_allot_fits(&b), "a log of 1000 fits");
    b.algorithm = SL_ALG_GCRA;
    EXPECT(sl_allot_fits(&b), "a gcra of 1000 fits");
    b.window = APR_USEC_PER_SEC;
    EXPECT(!sl_allot_fits(&b),
           "a gcra whose tolerance is under 2 D never fits");
    b.window = 60 * APR_USEC_PER_SEC;
    b.algorithm = SL_ALG_COUNTER;
    EXPECT(sl_allot_fits(&b), "a counter of 1000 per minute fits");
    b.window = SL_ALLOT_COUNTER_SPANS * SL_ALLOT_DEADLINE;
    EXPECT(sl_allot_fits(&b), "a counter window of exactly its spans of D "
                              "fits");
    b.window--;
    EXPECT(!sl_allot_fits(&b), "a shorter counter window never fits");
    b.window = 60 * APR_USEC_PER_SEC;
    b.algorithm = SL_ALG_CONCURRENT;
    EXPECT(!sl_allot_fits(&b), "in-flight leases never fit");
    b = budget("k", SL_ALG_LOG, 5);
    EXPECT(!sl_allot_fits(&b), "a limit of 5 never fits");
    b = budget("k", SL_ALG_LOG, SL_ALLOT_MIN_REQUESTS - 1);
    EXPECT(!sl_allot_fits(&b), "a limit under the minimum never fits");
    b = budget("k", SL_ALG_LOG, 1000);
    b.block = APR_USEC_PER_SEC;
    EXPECT(!sl_allot_fits(&b), "block= never fits");
    b.block = 0;
    b.cost = 1000 / 16 + 1;
    EXPECT(!sl_allot_fits(&b), "a cost above a sixteenth never fits");
}

/* A grant of k at time t; returns the units left after the asking
 * request. */
static apr_int64_t grant(sl_allot_t *a, sl_budget_t *b, apr_time_t t,
                         apr_int64_t k, const char *id, sl_allot_slot_t *s)
{
    apr_int64_t score = 12345;

    sl_allot_settle(a, b, 1, s, id, t, &k, &score);
    return s->left;
}

/* sl_allot_stale until it finds a grant or has looked at every cell. */
static int stale(sl_allot_t *a, apr_time_t now, sl_budget_t *b,
                 sl_allot_slot_t *s)
{
    int i;

    for (i = 0; i < SL_ALLOT_CELLS; i++) {
        if (sl_allot_stale(a, now, b, s)) {
            return 1;
        }
    }
    return 0;
}

/* The child's own table, or a new one shared by children. */
static sl_allot_t *table(apr_pool_t *p, int shared)
{
    sl_allot_shared_t *sh = NULL;

    if (shared && sl_allot_shared_create(p, &sh) != APR_SUCCESS) {
        EXPECT(0, "shared table made");
        return NULL;
    }
    return sl_allot_create(p, 1, sh);
}

static void test_flow(apr_pool_t *p, int shared)
{
    sl_allot_t *a = table(p, shared);
    sl_budget_t b = budget("key", SL_ALG_LOG, 8000);
    sl_allot_slot_t s, s2;
    apr_time_t t = 100 * APR_USEC_PER_SEC;
    int i, how = SL_ALLOT_NONE, taken = 0;

    EXPECT(a != NULL, "made");
    /* The first requests of a key see no rate: the store decides. */
    EXPECT(sl_allot_take(a, &b, 1, t, &s) == SL_ALLOT_NONE, "first: none");
    EXPECT(sl_allot_take(a, &b, 1, t + 1, &s) == SL_ALLOT_ASK,
           "second in the period: ask");
    EXPECT(s.want == 2 && !s.give, "asks for what it saw, gives nothing");
    /* While one thread asks, the others decide at the store. */
    EXPECT(sl_allot_take(a, &b, 1, t + 2, &s2) == SL_ALLOT_NONE,
           "pending: none");
    EXPECT(grant(a, &b, t, 10, "AAAAAAAAAAAA", &s) == 9, "9 left of 10");
    for (i = 0; i < 20; i++) {
        how = sl_allot_take(a, &b, 1, t + 10 + i, &s);
        if (how != SL_ALLOT_TAKEN) {
            break;
        }
        taken++;
        EXPECT(s.left == 9 - taken, "left counts down");
    }
    EXPECT(taken == 9, "never more than the grant (%d)", taken);
    /* Used up: the next asks and gives nothing back (nothing unused). */
    EXPECT(how == SL_ALLOT_ASK, "ask again");
    EXPECT(!s.give, "nothing unused to give back");
    EXPECT(grant(a, &b, t + 100, 50, "BBBBBBBBBBBB", &s) == 49, "49 left");
    EXPECT(sl_allot_take(a, &b, 1, t + 101, &s) == SL_ALLOT_TAKEN, "taken");
    /* At the deadline, measured from the ask, never after. */
    EXPECT(sl_allot_take(a, &b, 1, t + 100 + SL_ALLOT_DEADLINE, &s) ==
               SL_ALLOT_ASK,
           "past the deadline: ask");
    EXPECT(s.give && s.give_unused == 48 && s.give_k == 50 &&
               s.give_score == 12345 &&
               !memcmp(s.give_id, "BBBBBBBBBBBB", SL_ALLOT_ID_LEN),
           "the rest goes back, named by its grant (%d %d)", (int) s.give,
           (int) s.give_unused);
    /* Idle since: not stale before its deadline is a D past. */
    {
        sl_budget_t sb;
        sl_allot_slot_t ss;
        EXPECT(!stale(a, t + 100 + SL_ALLOT_DEADLINE, &sb, &ss),
               "pending: not stale");
    }
    /* No room: nothing held, and no asking for D. */
    sl_allot_settle(a, &b, 1, &s, "CCCCCCCCCCCC", t + 100 + SL_ALLOT_DEADLINE,
                    NULL, NULL);
    EXPECT(sl_allot_take(a, &b, 1, t + 101 + SL_ALLOT_DEADLINE, &s) ==
               SL_ALLOT_NONE,
           "dry: none");
    /* The rest went back once: the next ask gives nothing. */
    EXPECT(sl_allot_take(a, &b, 1, t + 100 + 2 * SL_ALLOT_DEADLINE, &s) ==
                   SL_ALLOT_ASK &&
               !s.give,
           "given back once only");
    sl_allot_settle(a, &b, 1, &s, "DDDDDDDDDDDD", t, NULL, NULL);
    /* A grant whose key goes idle goes back once, a D after its
     * deadline. */
    t += 10 * SL_ALLOT_DEADLINE;
    EXPECT(sl_allot_take(a, &b, 1, t, &s) == SL_ALLOT_NONE, "new period");
    EXPECT(sl_allot_take(a, &b, 1, t + 1, &s) == SL_ALLOT_ASK, "asks");
    EXPECT(grant(a, &b, t, 2, "GGGGGGGGGGGG", &s) == 1, "1 left");
    {
        sl_budget_t sb;
        sl_allot_slot_t ss;
        EXPECT(!stale(a, t + SL_ALLOT_DEADLINE, &sb, &ss),
               "not stale at its deadline");
        EXPECT(stale(a, t + 2 * SL_ALLOT_DEADLINE, &sb, &ss) && ss.give &&
                   ss.give_unused == 1 && ss.give_k == 2 &&
                   !memcmp(ss.give_id, "GGGGGGGGGGGG", SL_ALLOT_ID_LEN) &&
                   sb.key_len == 3 && !memcmp(sb.key, "key", 3),
               "stale a D past its deadline: its give-back");
        EXPECT(sl_allot_take(a, &b, 1, t + 2 * SL_ALLOT_DEADLINE, &s) ==
                   SL_ALLOT_NONE,
               "while it goes back: none");
        sl_allot_release(a, &ss);
        EXPECT(!stale(a, t + 3 * SL_ALLOT_DEADLINE, &sb, &ss),
               "given back once");
    }
}

static void test_caps(apr_pool_t *p, int shared)
{
    sl_allot_t *a = table(p, shared);
    sl_budget_t b = budget("cap", SL_ALG_GCRA, 800);
    sl_allot_slot_t s;
    apr_time_t t = 5 * APR_USEC_PER_SEC;
    int i;

    for (i = 0; i < 1000; i++) {
        sl_allot_take(a, &b, 1, t + i, &s);
        if (s.cell && s.want) {
            sl_allot_settle(a, &b, 1, &s, "EEEEEEEEEEEE", t, NULL, NULL);
        }
    }
    /* The next period: the rate seen in the last one, capped. */
    t += SL_ALLOT_DEADLINE;
    EXPECT(sl_allot_take(a, &b, 1, t, &s) == SL_ALLOT_ASK, "asks");
    EXPECT(s.want == 800 / SL_ALLOT_FRACTION,
           "a grant asks an eighth at most "
           "(%d)",
           (int) s.want);
    sl_allot_settle(a, &b, 1, &s, "FFFFFFFFFFFF", t, NULL, NULL);
    {
        /* Two limits on one key are one budget: decided at the store. */
        sl_budget_t two[2];
        sl_allot_slot_t ss[2];
        two[0] = b;
        two[1] = b;
        EXPECT(sl_allot_take(a, two, 2, t + 5000, ss) == SL_ALLOT_NONE,
               "one key twice: none");
    }
}

/* More keys than cells: old idle cells are reused, a key holding a
 * usable grant is not. */
static void test_full(apr_pool_t *p, int shared)
{
    sl_allot_t *a = table(p, shared);
    sl_budget_t b, held = budget("held", SL_ALG_LOG, 8000);
    sl_allot_slot_t s;
    apr_time_t t = 7 * APR_USEC_PER_SEC;
    char key[32];
    int i, asked = 0;

    sl_allot_take(a, &held, 1, t, &s);
    EXPECT(sl_allot_take(a, &held, 1, t, &s) == SL_ALLOT_ASK, "held: asks");
    EXPECT(grant(a, &held, t, 100, "HHHHHHHHHHHH", &s) == 99, "held: 99");
    for (i = 0; i < 3 * SL_ALLOT_CELLS; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        b = budget(key, SL_ALG_LOG, 8000);
        sl_allot_take(a, &b, 1, t + 10 + 2 * i, &s);
        if (sl_allot_take(a, &b, 1, t + 11 + 2 * i, &s) == SL_ALLOT_ASK) {
            asked++;
            sl_allot_settle(a, &b, 1, &s, "IIIIIIIIIIII", t, NULL, NULL);
        }
    }
    EXPECT(asked == 3 * SL_ALLOT_CELLS, "every new key found a cell (%d)",
           asked);
    EXPECT(sl_allot_take(a, &held, 1, t + 100000, &s) == SL_ALLOT_TAKEN &&
               s.left == 98,
           "the key with a usable grant kept its cell");
}

/* An ask that never settles (its asker died) holds its key for
 * SL_ALLOT_ABANDON, then the key asks again; the late answer is never
 * used, and the new one is. */
static void test_abandon(apr_pool_t *p, int shared)
{
    sl_allot_t *a = table(p, shared);
    sl_budget_t b = budget("gone", SL_ALG_LOG, 8000);
    sl_allot_slot_t dead, s;
    apr_time_t t = 50 * APR_USEC_PER_SEC;

    sl_allot_take(a, &b, 1, t, &dead);
    EXPECT(sl_allot_take(a, &b, 1, t + 1, &dead) == SL_ALLOT_ASK, "asks");
    EXPECT(sl_allot_take(a, &b, 1, t + SL_ALLOT_ABANDON, &s) == SL_ALLOT_NONE,
           "pending until abandoned");
    EXPECT(sl_allot_take(a, &b, 1, t + 1 + SL_ALLOT_ABANDON, &s) ==
               SL_ALLOT_ASK,
           "abandoned: asks again");
    EXPECT(grant(a, &b, t + 1, 10, "LLLLLLLLLLLL", &dead) == 0,
           "the late answer is not used");
    EXPECT(sl_allot_take(a, &b, 1, t + 2 + SL_ALLOT_ABANDON, &dead) ==
               SL_ALLOT_NONE,
           "the new ask is still under way");
    EXPECT(grant(a, &b, t + SL_ALLOT_ABANDON, 10, "NNNNNNNNNNNN", &s) == 9,
           "the new answer is used");
    EXPECT(sl_allot_take(a, &b, 1, t + 3 + SL_ALLOT_ABANDON, &s) ==
                   SL_ALLOT_TAKEN &&
               s.left == 8,
           "taken from the new grant");
}

/* Children of one table take from one grant at once: together never more
 * than it holds, and all of it. */
#define CHILDREN 8
static void test_children(apr_pool_t *p)
{
    sl_allot_t *a = table(p, 1);
    sl_budget_t b = budget("hot", SL_ALG_LOG, 80000);
    sl_allot_slot_t s;
    apr_time_t t = 70 * APR_USEC_PER_SEC;
    apr_proc_t kids[CHILDREN];
    int pipes[2], i, total = 0, each;

    sl_allot_take(a, &b, 1, t, &s);
    EXPECT(sl_allot_take(a, &b, 1, t + 1, &s) == SL_ALLOT_ASK, "asks");
    EXPECT(grant(a, &b, t, 5000, "KKKKKKKKKKKK", &s) == 4999, "4999 left");
    if (pipe(pipes)) {
        EXPECT(0, "pipe");
        return;
    }
    for (i = 0; i < CHILDREN; i++) {
        if (apr_proc_fork(&kids[i], p) == APR_INCHILD) {
            int n = 0;
            while (sl_allot_take(a, &b, 1, t + 2, &s) == SL_ALLOT_TAKEN) {
                n++;
            }
            if (write(pipes[1], &n, sizeof(n)) != sizeof(n)) {
                _exit(1);
            }
            _exit(0);
        }
    }
    close(pipes[1]);
    for (i = 0; i < CHILDREN; i++) {
        int code;
        apr_exit_why_e why;
        apr_proc_wait(&kids[i], &code, &why, APR_WAIT);
        if (read(pipes[0], &each, sizeof(each)) == sizeof(each)) {
            total += each;
        }
    }
    close(pipes[0]);
    EXPECT(total == 4999,
           "%d children took the grant's 4999 units, no more "
           "(%d)",
           CHILDREN, total);
    EXPECT(sl_allot_take(a, &b, 1, t + 3, &s) != SL_ALLOT_TAKEN,
           "nothing left");
}

/* The cells of the shared table that hold b's key. */
static int cells_of(const sl_allot_shared_t *sh, const sl_budget_t *b)
{
    int i, n = 0;

    for (i = 0; i < SL_ALLOT_CELLS; i++) {
        n += sl_allot_same(&sh->table->cells[i], b);
    }
    return n;
}

/* A cell of a's table holding a grant of 100 units of b, one of them
 * taken by the settle (as a store's answer does). */
static sl_allot_cell_t *granted_cell(sl_allot_t *a, sl_budget_t *b,
                                     apr_time_t t, const char *id)
{
    sl_allot_slot_t s;

    sl_allot_take(a, b, 1, t, &s);
    EXPECT(sl_allot_take(a, b, 1, t + 1, &s) == SL_ALLOT_ASK, "asks");
    EXPECT(grant(a, b, t, 100, id, &s) == 99, "99 left");
    return s.cell;
}

/* A child that dies holding a cell's lock: while it lives, its lock is
 * its own (the key is decided at the store); once it is gone, the next
 * locker takes the lock over and the cell's grant, which the dead child
 * may have been writing, is dropped. */
static void test_dead_holder(apr_pool_t *p)
{
    sl_allot_shared_t *sh = NULL;
    sl_allot_t *a;
    sl_budget_t b = budget("held", SL_ALG_LOG, 8000);
    sl_allot_slot_t s;
    sl_allot_cell_t *c;
    apr_time_t t = 90 * APR_USEC_PER_SEC;
    apr_proc_t kid;
    apr_exit_why_e why;
    int go[2], held[2], code;
    char byte = 0;

    if (sl_allot_shared_create(p, &sh) != APR_SUCCESS || pipe(go) ||
        pipe(held)) {
        EXPECT(0, "made");
        return;
    }
    a = sl_allot_create(p, 1, sh);
    c = granted_cell(a, &b, t, "HHHHHHHHHHHH");
    if (apr_proc_fork(&kid, p) == APR_INCHILD) {
        /* As a child of httpd starts: its own id for its locks. */
        sl_allot_create(p, 1, sh);
        if (!sl_allot_cell_lock(c) || write(held[1], &byte, 1) != 1 ||
            read(go[0], &byte, 1) != 1) {
            _exit(1);
        }
        _exit(0); /* without giving the lock back */
    }
    EXPECT(read(held[0], &byte, 1) == 1, "the child holds the lock");
    EXPECT(SL_ALLOT_HOLDER(c->lock) == (apr_uint32_t) kid.pid,
           "its id in the lock");
    EXPECT(!sl_allot_cell_lock(c), "a live holder keeps its lock");
    EXPECT(sl_allot_take(a, &b, 1, t + 2, &s) == SL_ALLOT_NONE,
           "its key is decided at the store meanwhile");
    EXPECT(cells_of(sh, &b) == 1, "and not placed in a second cell (%d)",
           cells_of(sh, &b));
    EXPECT(write(go[1], &byte, 1) == 1, "the child may go");
    apr_proc_wait(&kid, &code, &why, APR_WAIT);
    EXPECT(code == 0 && SL_ALLOT_HOLDER(c->lock) == (apr_uint32_t) kid.pid,
           "it died holding the lock");
    EXPECT(sl_allot_take(a, &b, 1, t + 3, &s) == SL_ALLOT_ASK,
           "taken over: the grant it held is not used, the key asks again");
    EXPECT(SL_ALLOT_HOLDER(c->lock) == 0 && c->k == 0 && c->left == 0 &&
               c->used && c->ask == s.ask,
           "the cell's lock is free again, its key kept, its grant dropped");
    EXPECT(grant(a, &b, t + 3, 100, "IIIIIIIIIIII", &s) == 99,
           "the new grant settles");
    EXPECT(sl_allot_take(a, &b, 1, t + 4, &s) == SL_ALLOT_TAKEN, "and is used");
    EXPECT(cells_of(sh, &b) == 1, "one cell holds the key throughout");
    close(go[0]);
    close(go[1]);
    close(held[0]);
    close(held[1]);
}

/* The dead holder's id seen, then the lock changes hands before the swap:
 * taken over by another, given back, and taken by a new process that got
 * the dead one's id. The word seen then is not the lock's any more, and
 * the late swap must fail: two would hold the cell at once. */
static void test_stale_take_over(apr_pool_t *p)
{
    sl_allot_shared_t *sh = NULL;
    sl_allot_t *a;
    sl_budget_t b = budget("stale", SL_ALG_LOG, 8000);
    sl_allot_cell_t *c;
    apr_time_t t = 95 * APR_USEC_PER_SEC;
    apr_proc_t kid;
    apr_exit_why_e why;
    apr_uint64_t seen, again;
    int code;

    if (sl_allot_shared_create(p, &sh) != APR_SUCCESS) {
        EXPECT(0, "made");
        return;
    }
    a = sl_allot_create(p, 1, sh);
    c = granted_cell(a, &b, t, "JJJJJJJJJJJJ");
    if (apr_proc_fork(&kid, p) == APR_INCHILD) {
        sl_allot_create(p, 1, sh);
        _exit(sl_allot_cell_lock(c) ? 0 : 1); /* dies holding it */
    }
    apr_proc_wait(&kid, &code, &why, APR_WAIT);
    seen = c->lock;
    EXPECT(code == 0 && SL_ALLOT_HOLDER(seen) == (apr_uint32_t) kid.pid,
           "it died holding the lock");
    /* Two takings later, by the dead holder's id again. */
    again = ((seen >> 32) + 2) << 32 | SL_ALLOT_HOLDER(seen);
    c->lock = again;
    EXPECT(!sl_allot_cell_take_over(c, seen),
           "the word seen before the lock changed hands is not taken over");
    EXPECT(c->lock == again && c->left == 99,
           "the lock and the grant stay the new holder's");
    c->lock = seen;
    EXPECT(sl_allot_cell_take_over(c, seen),
           "the word that is the lock's is taken over from its dead holder");
    EXPECT(SL_ALLOT_HOLDER(c->lock) == (apr_uint32_t) getpid() &&
               (c->lock >> 32) == (seen >> 32) + 1 && c->left == 0,
           "held by this process, counted once more, its grant dropped");
    sl_allot_cell_unlock(c);
    EXPECT(SL_ALLOT_HOLDER(c->lock) == 0 && (c->lock >> 32) == (seen >> 32) + 1,
           "given back: free, its count kept");
    EXPECT(sl_allot_cell_lock(c) && (c->lock >> 32) == (seen >> 32) + 2,
           "the next taking counts on");
    sl_allot_cell_unlock(c);
}

int main(void)
{
    apr_pool_t *p;

    apr_initialize();
    apr_pool_create(&p, NULL);
    test_fits();
    test_flow(p, 0);
    test_caps(p, 0);
    test_full(p, 0);
    test_abandon(p, 0);
    test_flow(p, 1);
    test_caps(p, 1);
    test_full(p, 1);
    test_abandon(p, 1);
    test_children(p);
    test_dead_holder(p);
    test_stale_take_over(p);
    printf("%d passed, %d failed\n", passed, failed);
    apr_terminate();
    return failed ? 1 : 0;
}
