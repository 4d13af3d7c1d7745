/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of identities and store keys (src/sl_ident.c): client
 * addresses as keys, the hashed identity, the key of a policy, hash slots.
 * No server needed. */
#include "sl_ident.h"

#include <apr_general.h>
#include <apr_strings.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "sl_expect.h"

static void test_keys(apr_pool_t *p)
{
    const char *k1, *k2, *key;
    /* The policy of "SlidingLimit 10 1m name=api" (sl_limit_test.c). */
    const sl_limit_t api = {.name = "api", .id = "f1T9dVjwyKc/0JjT"};
    const sl_limit_t *l = &api;

    EXPECT(!strcmp(sl_ip_key(p, "192.0.2.7", 64), "192.0.2.7"), "ipv4");
    EXPECT(!strcmp(sl_ip_key(p, "::ffff:192.0.2.7", 64), "192.0.2.7"),
           "mapped ipv4");
    EXPECT(
        !strcmp(sl_ip_key(p, "2001:db8:1:2:3:4:5:6", 64), "2001:db8:1:2::/64"),
        "ipv6 /64: %s", sl_ip_key(p, "2001:db8:1:2:3:4:5:6", 64));
    EXPECT(!strcmp(sl_ip_key(p, "2001:db8:1:2:3:4:5:6", 48), "2001:db8:1::/48"),
           "ipv6 /48");
    EXPECT(!strcmp(sl_ip_key(p, "2001:db8:1:2:3:4:5:6", 128),
                   "2001:db8:1:2:3:4:5:6/128"),
           "ipv6 /128");
    EXPECT(!strcmp(sl_ip_key(p, "2001:db8:1:2:ffff::1", 60), "2001:db8:1::/60"),
           "ipv6 /60: %s", sl_ip_key(p, "2001:db8:1:2:ffff::1", 60));
    EXPECT(sl_ip_key(p, "not-an-ip", 64) == NULL, "garbage address");
    {
        /* Every dotted form is what inet_pton says of it: an address is
         * its own key, anything else no IPv4 address. */
        static const char *const forms[] = {
            "0.0.0.0",    "255.255.255.255", "1.2.3.4",   "10.0.0.1",
            "01.2.3.4",   "1.2.3.04",        "1.2.3.00",  "256.1.1.1",
            "1.2.3.255",  "1.2.3.256",       "1.2.3",     "1.2.3.4.",
            "1.2.3.4.5",  ".1.2.3.4",        "1..2.3",    "1.2.3.4 ",
            " 1.2.3.4",   "1.2.3.-4",        "1.2.3.4x",  "",
            "1000.1.1.1", "1.2.3.4%eth0",    "0x1.2.3.4", "1.2.3.1234"};
        unsigned char a[16];
        size_t i;
        for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
            const char *k = sl_ip_key(p, forms[i], 64);
            int v4 = inet_pton(AF_INET, forms[i], a) == 1;
            EXPECT(v4 ? k == forms[i]
                      : (!k || (strcmp(k, forms[i]) && strchr(forms[i], '%'))),
                   "ipv4 form '%s': %s", forms[i], k ? k : "(none)");
        }
    }
    /* Forms that carry an IPv4 address are keyed by it: NAT64/SIIT gives
     * every IPv4 client one /64 otherwise, 6to4 one client 65,536. */
    EXPECT(!strcmp(sl_ip_key(p, "64:ff9b::192.0.2.7", 64), "192.0.2.7"),
           "nat64: %s", sl_ip_key(p, "64:ff9b::192.0.2.7", 64));
    EXPECT(!strcmp(sl_ip_key(p, "64:ff9b::c000:208", 48), "192.0.2.8"),
           "nat64 hex: %s", sl_ip_key(p, "64:ff9b::c000:208", 48));
    EXPECT(!strcmp(sl_ip_key(p, "::192.0.2.9", 64), "192.0.2.9"),
           "ipv4-compatible: %s", sl_ip_key(p, "::192.0.2.9", 64));
    EXPECT(!strcmp(sl_ip_key(p, "2002:c000:20a:1:2::3", 64), "192.0.2.10"),
           "6to4: %s", sl_ip_key(p, "2002:c000:20a:1:2::3", 64));
    EXPECT(!strcmp(sl_ip_key(p, "2002:c000:20a:ffff::1", 64), "192.0.2.10"),
           "6to4, another subnet of the same site");
    /* Teredo: the client's public IPv4 address, bits inverted, is the last
     * 32 bits; the /64 is the Teredo server's. */
    EXPECT(!strcmp(sl_ip_key(p, "2001:0:4136:e378:8000:63bf:3fff:fdf4", 64),
                   "192.0.2.11"),
           "teredo: %s",
           sl_ip_key(p, "2001:0:4136:e378:8000:63bf:3fff:fdf4", 64));
    /* Loopback, unspecified and 0.0.0.0/8 are not IPv4 clients. */
    EXPECT(!strcmp(sl_ip_key(p, "::1", 64), "::/64"), "loopback: %s",
           sl_ip_key(p, "::1", 64));
    EXPECT(!strcmp(sl_ip_key(p, "::", 64), "::/64"), "unspecified");
    EXPECT(!strcmp(sl_ip_key(p, "64:ff9b:1::192.0.2.7", 64), "64:ff9b:1::/64"),
           "only the well-known NAT64 prefix: %s",
           sl_ip_key(p, "64:ff9b:1::192.0.2.7", 64));

    k1 = sl_identity(p, NULL, 0, "ip", "192.0.2.7", 9);
    k2 = sl_identity(p, NULL, 0, "user", "192.0.2.7", 9);
    EXPECT(strlen(k1) == 16 && strcmp(k1, k2), "identity per source");
    k2 = sl_identity(p, NULL, 0, "header:x", "a}b{c\r\n\"", 8);
    EXPECT(!strpbrk(k2, "{}\r\n\" "), "no value byte reaches the key");
    {
        char big[20000];
        memset(big, 'a', sizeof(big));
        EXPECT(strlen(sl_identity(p, NULL, 0, "header:x", big, sizeof(big))) ==
                   16,
               "bounded identity");
        k2 = sl_identity(p, NULL, 0, "header:x", big, sizeof(big));
        big[sizeof(big) - 1] = 'b';
        EXPECT(
            strcmp(k2, sl_identity(p, NULL, 0, "header:x", big, sizeof(big))),
            "the whole value is hashed, not a prefix");
        /* A secret longer than SHA-1's block is hashed first (RFC 2104). */
        k2 = sl_identity(p, (const unsigned char *) big, 100, "ip", "x", 1);
        EXPECT(strlen(k2) == 16 &&
                   strcmp(k2, sl_identity(p, (const unsigned char *) big, 99,
                                          "ip", "x", 1)),
               "long secrets");
    }
    {
        static const unsigned char s1[] = "0123456789abcdef0123456789abcdef";
        static const unsigned char s2[] = "0123456789abcdef0123456789abcdeF";
        const char *u = sl_identity(p, NULL, 0, "ip", "192.0.2.7", 9);
        const char *a = sl_identity(p, s1, 32, "ip", "192.0.2.7", 9);
        const char *b = sl_identity(p, s2, 32, "ip", "192.0.2.7", 9);
        EXPECT(!strcmp(u, k1), "unkeyed stays what it was");
        EXPECT(strlen(a) == 16 && strcmp(a, u), "keyed differs from unkeyed");
        EXPECT(strcmp(a, b), "keyed depends on the secret");
        EXPECT(strcmp(a, sl_identity(p, s1, 32, "user", "192.0.2.7", 9)),
               "keyed identity per source");
        /* HMAC-SHA1(s1, "ip\0192.0.2.7"), first 12 bytes in base64, as
         * perl -MDigest::SHA=hmac_sha1 computes it (t/lib/SL/Keys.pm). */
        EXPECT(!strcmp(a, "hbAV19dQD7L8GYB9"), "keyed vector: %s", a);
        EXPECT(!strcmp(u, "UcsUroYSbiHOpmad"), "unkeyed vector: %s", u);
    }
    EXPECT(!strcmp(sl_ip_key(p, "fe80::1:2:3:4%eth0", 64), "fe80::/64"),
           "zone id dropped");
    key = sl_store_key(p, "sl", k1, l, SL_ALG_COUNTER, NULL, 0);
    EXPECT(!strncmp(key, "sl:{", 4) && key[strlen(key) - 1] == 'c',
           "key shape %s", key);
    EXPECT(
        !strcmp(key, apr_pstrcat(p, "sl:{", k1, "}f1T9dVjwyKc/0JjT.c", NULL)),
        "unkeyed: the id itself: %s", key);
    {
        static const unsigned char s1[] = "0123456789abcdef0123456789abcdef";
        static const unsigned char s2[] = "0123456789abcdef0123456789abcdeF";
        const char *k = sl_store_key(p, "sl", k1, l, SL_ALG_COUNTER, s1, 32);
        const char *k2 = sl_store_key(p, "sl", k1, l, SL_ALG_COUNTER, s2, 32);
        /* HMAC-SHA1(s1, "policy\0" id), 12 bytes in base64 (SL::Keys). */
        EXPECT(
            !strcmp(k, apr_pstrcat(p, "sl:{", k1, "}kaOfkk8CZbeic51U.c", NULL)),
            "keyed policy vector: %s", k);
        EXPECT(strcmp(k, k2) && strlen(k) == strlen(k2),
               "keyed policy depends on the secret, same shape");
    }
    EXPECT(sl_key_slot(key, strlen(key)) == sl_key_slot(k1, strlen(k1)),
           "the hash tag decides the slot");
    /* Redis Cluster's reference values (cluster spec). */
    EXPECT(sl_key_slot("123456789", 9) == 12739, "crc16 of 123456789");
    EXPECT(sl_key_slot("foo{bar}baz", 11) == sl_key_slot("bar", 3), "tag");
    EXPECT(sl_key_slot("foo{}bar", 8) == sl_key_slot("foo{}bar", 8),
           "empty tag hashes the whole key");
    {
        /* A prepared secret makes what the secret makes, at any length. */
        unsigned char sec[200];
        static const apr_size_t lens[] = {0, 1, 32, 63, 64, 65, 100, 200};
        size_t i;
        for (i = 0; i < sizeof(sec); i++) {
            sec[i] = (unsigned char) (i * 37 + 11);
        }
        for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
            sl_hmac_t k;
            const char *a, *b;
            sl_hmac_prepare(&k, sec, lens[i]);
            a = sl_identity_with(p, &k, "header:x-key", "abc", 3);
            b = sl_identity(p, sec, lens[i], "header:x-key", "abc", 3);
            EXPECT(!strcmp(a, b), "prepared, %d bytes: %s, %s", (int) lens[i],
                   a, b);
        }
    }
    {
        /* The table gives what the bit-by-bit CRC16/XMODEM gives. */
        char v[64];
        int i, j, wrong = 0;
        for (i = 0; i < 2000; i++) {
            unsigned int crc = 0, b, len = (unsigned int) (i % 60) + 1;
            for (j = 0; j < (int) len; j++) {
                v[j] = (char) ((i * 131 + j * 977) & 0xff);
                if (v[j] == '{') {
                    v[j] = 'x';
                }
            }
            for (j = 0; j < (int) len; j++) {
                crc ^= (unsigned int) (unsigned char) v[j] << 8;
                for (b = 0; b < 8; b++) {
                    crc = (crc & 0x8000) ? ((crc << 1) ^ 0x1021) : (crc << 1);
                }
            }
            wrong += sl_key_slot(v, len) != (crc & 0xffff) % 16384;
        }
        EXPECT(!wrong, "crc16 table: %d differ", wrong);
    }
    {
        apr_size_t len;
        const char *k = sl_store_key_join(p, "sl", k1, "f1T9dVjwyKc/0JjT",
                                          SL_ALG_COUNTER, &len);
        EXPECT(!strcmp(k, key) && len == strlen(key), "joined: %s", k);
        EXPECT(!strcmp(sl_store_policy(p, l, NULL, 0), l->id),
               "unkeyed policy: the id");
    }
}

int main(void)
{
    apr_pool_t *p;

    apr_initialize();
    apr_pool_create(&p, NULL);
    test_keys(p);
    printf("sl_ident: %d passed, %d failed\n", passed, failed);
    apr_terminate();
    return failed ? 1 : 0;
}
