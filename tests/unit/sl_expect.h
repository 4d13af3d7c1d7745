/* SPDX-License-Identifier: Apache-2.0 */
/* The unit tests' one assertion: counts passes and failures, prints each
 * failure with its place, and each test ends with "N passed, M failed". */
#ifndef SL_EXPECT_H
#define SL_EXPECT_H

#include <stdio.h>

static int passed, failed;

#define EXPECT(cond, ...)                                                      \
    do {                                                                       \
        if (cond) {                                                            \
            passed++;                                                          \
        }                                                                      \
        else {                                                                 \
            failed++;                                                          \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                        \
            printf(__VA_ARGS__);                                               \
            printf("\n");                                                      \
        }                                                                      \
    } while (0)

#endif
