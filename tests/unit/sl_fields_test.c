/* A serialized header block: its end, and its fields taken out by name
 * (the interim responses of cost=after:header:, sl_interim.c). */
#include "sl_fields.h"

#include "sl_expect.h"

#include <string.h>

static void strip(const char *what, const char *in, const char *want)
{
    static const char *const names[] = {"X-Cost", "X-Tokens-Used"};
    char buf[512];
    apr_size_t len = strlen(in), got;

    memcpy(buf, in, len);
    got = sl_fields_strip(buf, len, names, 2);
    EXPECT(got == strlen(want) && !memcmp(buf, want, got),
           "%s: got '%.*s', expected '%s'", what, (int) got, buf, want);
}

int main(void)
{
    const char *hints = "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n"
                        "X-Cost: 4242\r\n\r\n";

    /* The end: after the empty line, CRLF or a bare LF; none yet, 0. */
    EXPECT(sl_fields_end(hints, strlen(hints)) == strlen(hints), "whole");
    EXPECT(sl_fields_end(hints, strlen(hints) - 1) == 0, "no end yet");
    EXPECT(sl_fields_end(hints, 10) == 0, "a status line cut short");
    EXPECT(sl_fields_end("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200", 36) == 25,
           "a block without fields, then more");
    EXPECT(sl_fields_end("HTTP/1.1 103 x\nA: b\n\nrest", 25) == 21, "bare LFs");
    EXPECT(sl_fields_end("\r\n\r\n", 4) == 4,
           "an empty first line is the status line, not the end");
    EXPECT(sl_fields_end("", 0) == 0, "nothing");

    /* Stripped: the named fields, without case, and only them. */
    strip("named", hints, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n");
    strip("case",
          "HTTP/1.1 103 E\r\nx-cOST: 1\r\nA: 2\r\nX-TOKENS-USED: 3\r\n\r\n",
          "HTTP/1.1 103 E\r\nA: 2\r\n\r\n");
    strip("several", "HTTP/1.1 103 E\r\nX-Cost: 1\r\nX-Cost: 2\r\n\r\n",
          "HTTP/1.1 103 E\r\n\r\n");
    strip("a longer name", "HTTP/1.1 103 E\r\nX-Cost-Total: 1\r\n\r\n",
          "HTTP/1.1 103 E\r\nX-Cost-Total: 1\r\n\r\n");
    strip("a shorter name", "HTTP/1.1 103 E\r\nX-Cos: 1\r\n\r\n",
          "HTTP/1.1 103 E\r\nX-Cos: 1\r\n\r\n");
    strip("a value that names it", "HTTP/1.1 103 E\r\nA: X-Cost: 1\r\n\r\n",
          "HTTP/1.1 103 E\r\nA: X-Cost: 1\r\n\r\n");
    strip("folded",
          "HTTP/1.1 103 E\r\nX-Cost: 1\r\n 2\r\n\t3\r\nB: 4\r\n 5\r\n\r\n",
          "HTTP/1.1 103 E\r\nB: 4\r\n 5\r\n\r\n");
    strip("no colon", "HTTP/1.1 103 E\r\nX-Cost\r\n\r\n",
          "HTTP/1.1 103 E\r\nX-Cost\r\n\r\n");
    strip("the status line is kept", "X-Cost: 103\r\nA: 1\r\n\r\n",
          "X-Cost: 103\r\nA: 1\r\n\r\n");
    strip("after the block, as it was",
          "HTTP/1.1 103 E\r\nX-Cost: 1\r\n\r\nX-Cost: 2\r\n",
          "HTTP/1.1 103 E\r\n\r\nX-Cost: 2\r\n");
    strip("a last line without LF", "HTTP/1.1 103 E\r\nX-Cost: 1\r\nX-Co",
          "HTTP/1.1 103 E\r\nX-Co");
    strip("bare LFs", "HTTP/1.1 103 E\nX-Cost: 1\nA: 2\n\n",
          "HTTP/1.1 103 E\nA: 2\n\n");

    printf("sl_fields_test: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
