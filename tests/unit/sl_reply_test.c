/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the store's reply (src/sl_reply.c): the check script's
 * decision and its peek, and every reply out of shape refused. No server
 * needed. */
#include "sl_reply.h"

#include <apr_general.h>
#include <apr_strings.h>

#include <stdio.h>
#include <string.h>

#include "sl_expect.h"

static void test_decisions(apr_pool_t *p)
{
    sl_decision_t d;
    const long long ok[] = {1796018400, 5, 1, 1, 41, 12000000, 1, 3, 500000};
    const long long denied[] = {1796018400, 0, 0, 1, 41, 0, 0, 0, 17200000};
    const long long liar[] = {1796018400, 0, 1, 0, 0, 5};
    const long long lies2[] = {1796018400, 0, 0, 1, 5, 0};
    const long long neg[] = {1796018400, 0, 1, 1, -1, 0};

    EXPECT(!sl_decision_parse(p, ok, 9, 2, &d) && d.admitted && d.n == 2,
           "admitted reply");
    EXPECT(!sl_decision_parse(p, denied, 9, 2, &d) && !d.admitted, "denied");
    EXPECT(sl_decision_parse(p, ok, 8, 2, &d) != NULL, "short reply");
    EXPECT(sl_decision_parse(p, liar, 6, 1, &d) != NULL,
           "admit despite refusal");
    EXPECT(sl_decision_parse(p, lies2, 6, 1, &d) != NULL,
           "refuse though all admit");
    EXPECT(sl_decision_parse(p, neg, 6, 1, &d) != NULL, "negative remaining");
}

static void test_peek(apr_pool_t *p)
{
    sl_decision_t d;
    apr_int64_t *blocked = NULL;
    const long long ok[] = {1796018400, 5, 0, 0,          0, 3600000000,
                            1,          3, 0, 3599000000, 0};
    const long long bad[] = {1796018400, 5, 0, 0, 0, 5, 1, 3, 0, 0, 7};
    const long long neg[] = {1796018400, 5, 0, 0, 0, 5, 1, 3, 0, -1, 0};

    EXPECT(!sl_peek_parse(p, ok, 11, 2, &d, &blocked) && !d.admitted &&
               blocked[0] == 3599000000 && blocked[1] == 0 &&
               d.quota[1].remaining == 3,
           "peek reply: state and blocks");
    EXPECT(sl_peek_parse(p, ok, 9, 2, &d, &blocked) != NULL,
           "peek reply without the blocks");
    EXPECT(sl_peek_parse(p, bad, 11, 2, &d, &blocked) != NULL,
           "peek reply: a block on a limit with room");
    EXPECT(sl_peek_parse(p, neg, 11, 2, &d, &blocked) != NULL,
           "peek reply: a negative block");
}

int main(void)
{
    apr_pool_t *p;

    apr_initialize();
    apr_pool_create(&p, NULL);
    test_decisions(p);
    test_peek(p);
    printf("sl_reply: %d passed, %d failed\n", passed, failed);
    apr_terminate();
    return failed ? 1 : 0;
}
