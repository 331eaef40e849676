/* The shared output helpers of src/output/ besides JSON (test_json.c) and the table
 * (test_table.c): CSV quoting per RFC 4180, in its buffer and stream forms, and the UTF-8
 * facts the writers rely on (valid sequences per RFC 3629, control characters, width), and
 * kernel names' base names as Nsight Systems shows them. */
#include "harness.h"
#include "output/csv.h"
#include "output/kernel_name.h"
#include "output/utf8.h"

#include <string.h>

static char out[256];

/* The stream form; the buffer form must write the same bytes. */
static const char *csv(const char *s)
{
    out[0] = '\0'; /* fmemopen writes no NUL when nothing is written */
    FILE *f = fmemopen(out, sizeof out, "w");
    csv_write_field(f, s);
    fclose(f);
    char buffer[CSV_ESCAPED_MAX(64)];
    ASSERT(strlen(s) <= 64);
    size_t n = csv_escape(buffer, s);
    ASSERT_EQ(n, strlen(out));
    ASSERT(memcmp(buffer, out, n) == 0);
    return out;
}

static void csv_quotes_only_fields_that_need_it(void)
{
    ASSERT_STR_EQ(csv("plain µs"), "plain µs");
    ASSERT_STR_EQ(csv(""), "");
    ASSERT_STR_EQ(csv("a,b"), "\"a,b\"");
    ASSERT_STR_EQ(csv("say \"hi\""), "\"say \"\"hi\"\"\"");
    ASSERT_STR_EQ(csv("two\nlines"), "\"two\nlines\"");
    ASSERT_STR_EQ(csv("carriage\rreturn"), "\"carriage\rreturn\"");
    out[0] = '\0';
    FILE *f = fmemopen(out, sizeof out, "w");
    csv_write_field(f, NULL);
    fclose(f);
    ASSERT_STR_EQ(out, "");
}

/* A field longer than the stream form's 1 KiB buffer keeps every quote doubled. */
static void csv_long_field_is_quoted_whole(void)
{
    static char in[2001], big[4100];
    memset(in, '"', 2000);
    FILE *f = fmemopen(big, sizeof big, "w");
    csv_write_field(f, in);
    fclose(f);
    ASSERT_EQ(strlen(big), (size_t)4002);
    ASSERT(strspn(big, "\"") == 4002);
}

#define SEQ(literal) utf8_sequence((const unsigned char *)literal, sizeof literal - 1)

static void utf8_sequences_are_validated(void)
{
    ASSERT_EQ(SEQ("a"), (size_t)1);
    ASSERT_EQ(SEQ("\xC2\xB5"), (size_t)2);         /* µ */
    ASSERT_EQ(SEQ("\xE2\x82\xAC"), (size_t)3);     /* € */
    ASSERT_EQ(SEQ("\xF4\x8F\xBF\xBF"), (size_t)4); /* U+10FFFF */
    ASSERT_EQ(SEQ("\xC0\xAF"), (size_t)0);         /* overlong */
    ASSERT_EQ(SEQ("\xE0\x80\xAF"), (size_t)0);     /* overlong, 3 bytes */
    ASSERT_EQ(SEQ("\xED\xA0\x80"), (size_t)0);     /* surrogate */
    ASSERT_EQ(SEQ("\xF4\x90\x80\x80"), (size_t)0); /* above U+10FFFF */
    ASSERT_EQ(SEQ("\xE2\x82"), (size_t)0);         /* cut short */
    ASSERT_EQ(SEQ("\x80"), (size_t)0);             /* lone continuation */
    ASSERT_EQ(SEQ("\xFF"), (size_t)0);             /* never valid */
    ASSERT_EQ(SEQ("\xC2\x41"), (size_t)0);         /* no continuation */
}

#define CONTROL(literal) utf8_control((const unsigned char *)literal)

static void utf8_controls_and_width(void)
{
    ASSERT_EQ(CONTROL("\x1b[2J"), (size_t)1);
    ASSERT_EQ(CONTROL("\x7f"), (size_t)1);
    ASSERT_EQ(CONTROL("\xC2\x9B"), (size_t)2); /* C1 CSI */
    ASSERT_EQ(CONTROL("\xC2\x80"), (size_t)2);
    ASSERT_EQ(CONTROL("\xC2\xA0"), (size_t)0); /* no-break space: printable */
    ASSERT_EQ(CONTROL("\xC2\xB5"), (size_t)0);
    ASSERT_EQ(CONTROL(" "), (size_t)0);
    ASSERT_EQ(CONTROL("a"), (size_t)0);
    ASSERT_EQ(utf8_width("1.250 µs"), (size_t)8);
    ASSERT_EQ(utf8_width("\xE2\x82\xAC\xF0\x9F\x94\xA6"), (size_t)2);
    ASSERT_EQ(utf8_width(""), (size_t)0);
}

static const char *base(const char *name)
{
    return kernel_name_base(name, out, sizeof out);
}

static void kernel_names_shorten_to_their_base_name_as_nsys_does(void)
{
    /* Numba (the example): ABI tags and the parameter list go, and the namespace */
    ASSERT_STR_EQ(base("kernels::divide_by[abi:v3][abi:cw51cXTLSUwv1sDUaKthqaNgoKmjgOR3W3Cw6igA"
                       "9duC0hkwnNGiHEkYkrqQBFBTDEwCyQeA](Array<float, 1, C, mutable, aligned>, "
                       "Array<float, 1, C, mutable, aligned>, float)"),
                  "divide_by");
    ASSERT_STR_EQ(base("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor"
                       "<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>"
                       ", at::detail::Array<char*, 1>)"),
                  "vectorized_elementwise_kernel");
    ASSERT_STR_EQ(base("void (anonymous namespace)::softmax_warp_forward<float, float, 8>(float*, "
                       "float const*, int)"),
                  "softmax_warp_forward");
    ASSERT_STR_EQ(base("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<"
                       "{lambda(int)#1}>(at::TensorIteratorBase&)::{lambda(int)#1}>(int, "
                       "{lambda(int)#1})"),
                  "elementwise_kernel");
    ASSERT_STR_EQ(base("axpy(float*, float*, float)"), "axpy");
    /* nothing to strip */
    ASSERT_STR_EQ(base("volta_sgemm_128x64_nn"), "volta_sgemm_128x64_nn");
    ASSERT_STR_EQ(base("[CUDA memcpy Host-to-Device]"), "[CUDA memcpy Host-to-Device]");
    ASSERT_STR_EQ(base(""), "");
    ASSERT_STR_EQ(base("step 3 of train"), "step 3 of train"); /* no signature: not a type */
    ASSERT_STR_EQ(base("AllReduce (1.0 MB)"), "AllReduce (1.0 MB)");
    char small[6];
    ASSERT_STR_EQ(kernel_name_base("kernels::divide_by(float)", small, sizeof small), "divid");
}

static const struct test_case tests[] = {
    {"kernel_names_shorten_to_their_base_name_as_nsys_does",
     kernel_names_shorten_to_their_base_name_as_nsys_does},
    {"csv_quotes_only_fields_that_need_it", csv_quotes_only_fields_that_need_it},
    {"csv_long_field_is_quoted_whole", csv_long_field_is_quoted_whole},
    {"utf8_sequences_are_validated", utf8_sequences_are_validated},
    {"utf8_controls_and_width", utf8_controls_and_width},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    return test_main(tests, argc, argv);
}
