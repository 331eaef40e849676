/* JSON string escaping (src/output/json.c): every input, valid UTF-8 or not, becomes a JSON
 * string that parses, keeps valid characters as they are, and shows each invalid byte as
 * U+FFFD. Expected outputs are written out by hand from RFC 8259 and RFC 3629. */
#include "harness.h"
#include "output/json.h"

#include <string.h>

static char out[256];

/* The stream form; the buffer form (json_escape, for writers that build lines) must agree. */
static const char *escaped(const char *bytes, size_t len)
{
    FILE *f = fmemopen(out, sizeof out, "w");
    json_write_string(f, bytes, len);
    fclose(f);
    char buffer[JSON_ESCAPED_MAX(64)];
    ASSERT(len <= 64);
    size_t n = json_escape(buffer, bytes, len);
    ASSERT_EQ(n, strlen(out));
    ASSERT(memcmp(buffer, out, n) == 0);
    return out;
}

#define ESCAPED(literal) escaped(literal, sizeof literal - 1)
#define FFFD "\xEF\xBF\xBD"

static void quotes_backslashes_and_controls_are_escaped(void)
{
    ASSERT_STR_EQ(ESCAPED("a\"b\\c"), "\"a\\\"b\\\\c\"");
    ASSERT_STR_EQ(ESCAPED("\n\t\r\x01\x1f\x7f"), "\"\\n\\t\\r\\u0001\\u001f\\u007f\"");
    ASSERT_STR_EQ(ESCAPED("nul\0inside"), "\"nul\\u0000inside\"");
    ASSERT_STR_EQ(ESCAPED(""), "\"\"");
}

static void valid_utf8_is_kept(void)
{
    ASSERT_STR_EQ(ESCAPED("µs \xE2\x82\xAC \xF0\x9F\x94\xA6"),
                  "\"µs \xE2\x82\xAC \xF0\x9F\x94\xA6\"");
    ASSERT_STR_EQ(ESCAPED("\xF4\x8F\xBF\xBF"),
                  "\"\xF4\x8F\xBF\xBF\""); /* U+10FFFF, the last code point */
}

static void invalid_utf8_becomes_replacement_characters(void)
{
    ASSERT_STR_EQ(ESCAPED("a\xFF"
                          "b"),
                  "\"a" FFFD "b\"");                                           /* never valid */
    ASSERT_STR_EQ(ESCAPED("\xC0\xAF"), "\"" FFFD FFFD "\"");                   /* overlong '/' */
    ASSERT_STR_EQ(ESCAPED("\xED\xA0\x80"), "\"" FFFD FFFD FFFD "\"");          /* surrogate D800 */
    ASSERT_STR_EQ(ESCAPED("\xF4\x90\x80\x80"), "\"" FFFD FFFD FFFD FFFD "\""); /* above U+10FFFF */
    ASSERT_STR_EQ(ESCAPED("x\xE2\x82"), "\"x" FFFD FFFD "\""); /* cut short at the end */
    ASSERT_STR_EQ(ESCAPED("\x80"), "\"" FFFD "\"");            /* lone continuation */
}

/* A string longer than the stream form's 1 KiB buffer, with a multi-byte character across
 * every possible cut, comes out whole. */
static void long_strings_are_escaped_whole(void)
{
    static char in[3000], big[4000];
    size_t n = 0;
    for (int i = 0; n + 3 < sizeof in; i++) {
        in[n++] = i % 2 ? 'x' : '"';
        memcpy(in + n, "\xE2\x82\xAC", 3); /* U+20AC */
        n += 3;
    }
    FILE *f = fmemopen(big, sizeof big, "w");
    json_write_string(f, in, n);
    fclose(f);
    size_t len = strlen(big), quotes = 0, euros = 0;
    for (size_t i = 0; i + 2 < len; i++) {
        quotes += big[i] == '\\' && big[i + 1] == '"';
        euros += memcmp(big + i, "\xE2\x82\xAC", 3) == 0;
    }
    ASSERT_EQ(quotes, n / 8);
    ASSERT_EQ(euros, n / 4);
    ASSERT_EQ(len, n + n / 8 + 2);
}

static void null_and_numbers(void)
{
    FILE *f = fmemopen(out, sizeof out, "w");
    json_write_cstring(f, NULL);
    fputc(' ', f);
    json_write_double(f, 2.5);
    fputc(' ', f);
    json_write_double(f, -3.0);
    fputc(' ', f);
    json_write_double(f, 1.0 / 0.0);
    fclose(f);
    ASSERT_STR_EQ(out, "null 2.5 -3 null");
}

static const struct test_case tests[] = {
    {"quotes_backslashes_and_controls_are_escaped", quotes_backslashes_and_controls_are_escaped},
    {"valid_utf8_is_kept", valid_utf8_is_kept},
    {"invalid_utf8_becomes_replacement_characters", invalid_utf8_becomes_replacement_characters},
    {"long_strings_are_escaped_whole", long_strings_are_escaped_whole},
    {"null_and_numbers", null_and_numbers},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    return test_main(tests, argc, argv);
}
