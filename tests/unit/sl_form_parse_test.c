/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of what a form: source reads in a body (src/sl_form_parse.c):
 * the form's type, a multipart body's field (the last, no file part, a
 * delimiter only where the boundary is whole), the value as it keys, and
 * the field names a configuration may give. No server needed. */
#include "sl_form_parse.h"

#include <apr_general.h>
#include <apr_strings.h>

#include <stdio.h>
#include <string.h>

#include "sl_expect.h"

/* The field's value in body under ct, or "(none)". */
static const char *mp(apr_pool_t *p, const char *ct, const char *body,
                      apr_size_t len, const char *field)
{
    apr_size_t n = 0;
    const char *v = sl_form_multipart(p, ct, body, len, field, &n);

    return v ? apr_pstrmemdup(p, v, n) : "(none)";
}

#define MP(ct, body, field) mp(p, ct, body, sizeof(body) - 1, field)

static void test_kind(void)
{
    EXPECT(sl_form_kind("application/x-www-form-urlencoded") ==
               SL_FORM_URLENCODED,
           "urlencoded");
    EXPECT(sl_form_kind("Application/X-WWW-Form-Urlencoded; charset=UTF-8") ==
               SL_FORM_URLENCODED,
           "urlencoded, any case, a parameter");
    EXPECT(sl_form_kind("multipart/form-data; boundary=x") == SL_FORM_MULTIPART,
           "multipart");
    EXPECT(sl_form_kind("application/x-www-form-urlencodedx") == 0,
           "a longer type is another");
    EXPECT(sl_form_kind("multipart/mixed; boundary=x") == 0, "multipart/mixed");
    EXPECT(sl_form_kind("application/json") == 0, "json");
    EXPECT(sl_form_kind(NULL) == 0, "none");
}

static void test_multipart(apr_pool_t *p)
{
    const char *ct = "multipart/form-data; boundary=XyZ";
    const char *v;

    v = MP(ct,
           "--XyZ\r\nContent-Disposition: form-data; name=\"log\"\r\n\r\n"
           "alice\r\n--XyZ--\r\n",
           "log");
    EXPECT(!strcmp(v, "alice"), "one field: %s", v);
    v = MP(ct,
           "preamble\r\n--XyZ\r\nContent-Disposition: form-data; "
           "name=\"pwd\"\r\n\r\nx\r\n--XyZ\r\ncontent-disposition: "
           "form-data; name=log\r\nContent-Type: text/plain\r\n\r\nbob\r\n"
           "--XyZ--",
           "log");
    EXPECT(!strcmp(v, "bob"), "a preamble, the second part, unquoted: %s", v);
    v = MP(ct,
           "--XyZ\r\nContent-Disposition: form-data; name=\"log\"\r\n\r\n"
           "first\r\n--XyZ\r\nContent-Disposition: form-data; "
           "name=\"log\"\r\n\r\nlast\r\n--XyZ--\r\n",
           "log");
    EXPECT(!strcmp(v, "last"), "twice: the last, as PHP: %s", v);
    v = MP(ct,
           "--XyZ\r\nContent-Disposition: form-data; name=\"log\"; "
           "filename=\"a.txt\"\r\n\r\nfile\r\n--XyZ--\r\n",
           "log");
    EXPECT(!strcmp(v, "(none)"), "a file part is no field: %s", v);
    v = MP(ct,
           "--XyZ\r\nContent-Disposition: form-data; name=\"up\"; "
           "filename=\"a; name=\\\"log\\\"\"\r\n\r\nfile\r\n--XyZ--\r\n",
           "log");
    EXPECT(!strcmp(v, "(none)"), "a name inside a quoted file name: %s", v);
    v = MP(ct,
           "--XyZ\r\nContent-Disposition: form-data; name=\"log\"\r\n\r\n"
           "a\r\n--Xy\r\nb--XyZ c\r\n--XyZ--\r\n",
           "log");
    EXPECT(!strcmp(v, "a\r\n--Xy\r\nb--XyZ c"),
           "near-delimiters inside a value: [%s]", v);
    v = MP(ct,
           "--XyZ\r\nContent-Disposition: form-data; name=\"Log\"\r\n\r\n"
           "x\r\n--XyZ--\r\n",
           "log");
    EXPECT(!strcmp(v, "(none)"), "names are case-sensitive: %s", v);
    v = MP("multipart/form-data; boundary=\"a b\"",
           "--a b\r\nContent-Disposition: form-data; name=log\r\n\r\n"
           "q\r\n--a b--\r\n",
           "log");
    EXPECT(!strcmp(v, "q"), "a quoted boundary: %s", v);
    v = MP(ct,
           "--XyZ\r\nContent-Disposition: form-data; name=\"log\"\r\n\r\n"
           "unterminated",
           "log");
    EXPECT(!strcmp(v, "(none)"), "a value without its delimiter: %s", v);
    v = MP(ct, "--XyZ\r\n\r\nno headers\r\n--XyZ--\r\n", "log");
    EXPECT(!strcmp(v, "(none)"), "a part without headers: %s", v);
    v = MP("multipart/form-data", "--XyZ--\r\n", "log");
    EXPECT(!strcmp(v, "(none)"), "no boundary: %s", v);
    v = MP(ct, "", "log");
    EXPECT(!strcmp(v, "(none)"), "empty body: %s", v);
}

static void test_normal(apr_pool_t *p)
{
    const char *v = sl_form_normal(p, " \t Alice@Example.ORG \r\n", 23);

    EXPECT(v && !strcmp(v, "alice@example.org"), "trimmed, folded: %s", v);
    v = sl_form_normal(p, "J\xc3\x96RG", 5);
    EXPECT(v && !strcmp(v, "j\xc3\x96rg"), "bytes outside ASCII kept: %s", v);
    EXPECT(!sl_form_normal(p, " \t\r\n\v\f", 6), "only spaces: nothing");
    EXPECT(!sl_form_normal(p, "", 0), "empty: nothing");
    v = sl_form_normal(p, "a b", 3);
    EXPECT(v && !strcmp(v, "a b"), "inner space kept: %s", v);
}

static void test_field_ok(void)
{
    EXPECT(sl_form_field_ok("log"), "log");
    EXPECT(sl_form_field_ok("user[login]"), "brackets");
    EXPECT(!sl_form_field_ok(""), "empty");
    EXPECT(!sl_form_field_ok("a b"), "space");
    EXPECT(!sl_form_field_ok("a=b"), "=");
    EXPECT(!sl_form_field_ok("a&b"), "&");
    EXPECT(!sl_form_field_ok("a\"b"), "quote");
    EXPECT(!sl_form_field_ok("a%20"), "%%");
    EXPECT(!sl_form_field_ok("a+b"), "+");
    EXPECT(!sl_form_field_ok("a\x7f"), "DEL");
}

int main(void)
{
    apr_pool_t *p;

    apr_initialize();
    apr_pool_create(&p, NULL);
    test_kind();
    test_multipart(p);
    test_normal(p);
    test_field_ok();
    apr_pool_destroy(p);
    apr_terminate();
    printf("sl_form_parse: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
