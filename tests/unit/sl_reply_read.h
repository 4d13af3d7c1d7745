/* SPDX-License-Identifier: Apache-2.0 */
/* Replies for the unit tests, read from RESP text by hiredis' own reader:
 * the structures the store is handed, freed with freeReplyObject as the
 * store frees them. */
#ifndef SL_REPLY_READ_H
#define SL_REPLY_READ_H

#include <hiredis/hiredis.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static redisReply *reply_of(const char *resp)
{
    redisReader *reader = redisReaderCreate();
    void *reply = NULL;

    if (!reader || redisReaderFeed(reader, resp, strlen(resp)) != REDIS_OK ||
        redisReaderGetReply(reader, &reply) != REDIS_OK || !reply) {
        fprintf(stderr, "unreadable reply: %s\n", resp);
        abort();
    }
    redisReaderFree(reader);
    return reply;
}

#endif
