/* The conversion of rkt's 3-field log records into kubelet's 4-field CRI ones (src/logs/
 * record.c): the exact format, the 16 KiB P/F split, partial records kept for the next call
 * or finished with final, lines longer than RKL_LOGS_LONG_LINE converted piecewise, bytes
 * passed through as they are, and lines that are not rkt records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/alloc.h"
#include "logs/record.h"

#define T1 "2016-10-06T00:17:09.669794202Z"
#define T2 "2016-10-06T00:17:10.000000001Z"
#define T3 "2016-10-06T00:17:11.5+02:00"

/* 2023-11-14T22:13:20Z and 123456789 ns. */
#define NOW_NS   INT64_C(1700000000123456789)
#define NOW_TEXT "2023-11-14T22:13:20.123456789Z"

/* out as a NUL-terminated string (content may hold NULs: compare with memcmp then). */
static char *take(rkl_logs_buf *out)
{
        char *s = rkl_xmalloc(out->len + 1);
        memcpy(s, out->data ? out->data : "", out->len);
        s[out->len] = 0;
        return s;
}

/* One call on a fresh converter; *ret_used gets what it took, *ret_len (if not NULL) the
 * output's length. */
static char *convert_len(const char *in, size_t n, bool final, size_t *ret_used, size_t *ret_len)
{
        rkl_logs_conv c = {0};
        rkl_logs_buf out = {0};
        size_t used = rkl_logs_convert(&c, in, n, final, NOW_NS, &out);
        assert_false(c.in_record && final);
        *ret_used = used;
        if (ret_len)
                *ret_len = out.len;
        char *s = take(&out);
        rkl_logs_buf_done(&out);
        return s;
}

static char *convert(const char *in, size_t n, bool final, size_t *ret_used)
{
        return convert_len(in, n, final, ret_used, NULL);
}

/* One CRI record of a converter's output. */
typedef struct rec {
        const char *time, *stream, *content;
        size_t time_len, content_len;
        bool full;
} rec;

/* Splits out into records, checking each one's grammar; returns how many (at most max). */
static size_t parse(const char *out, size_t len, rec *r, size_t max)
{
        size_t k = 0;
        const char *p = out, *end = out + len;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                assert_non_null(nl);
                const char *sp = memchr(p, ' ', (size_t)(nl - p));
                assert_non_null(sp);
                assert_true(k < max);
                r[k].time = p;
                r[k].time_len = (size_t)(sp - p);
                assert_true((size_t)(nl - sp) >= 10); /* " stdout F " */
                r[k].stream = sp + 1;
                assert_true(!memcmp(sp + 1, "stdout ", 7) || !memcmp(sp + 1, "stderr ", 7));
                assert_true(sp[8] == 'P' || sp[8] == 'F');
                assert_int_equal(sp[9], ' ');
                r[k].full = sp[8] == 'F';
                r[k].content = sp + 10;
                r[k].content_len = (size_t)(nl - (sp + 10));
                assert_true(r[k].content_len <= RKL_LOGS_MAX_CONTENT);
                k++;
                p = nl + 1;
        }
        return k;
}

/* A record "<time> <stream> <content>\n" of n content bytes, all c. */
static char *record(const char *time, const char *stream, char c, size_t n, size_t *ret_len)
{
        size_t h = strlen(time) + 1 + strlen(stream) + 1;
        char *s = rkl_xmalloc(h + n + 2);
        size_t k = (size_t)snprintf(s, h + 1, "%s %s ", time, stream);
        assert_int_equal(k, h);
        memset(s + h, c, n);
        s[h + n] = '\n';
        s[h + n + 1] = 0;
        *ret_len = h + n + 1;
        return s;
}

static void test_both_streams_interleaved(void **state)
{
        const char in[] = T1 " stdout hello\n" T2 " stderr oops: it failed\n" T1
                             " stdout again\n" T2 " stderr \n";
        size_t used;
        _cleanup_free_ char *out = convert(in, sizeof(in) - 1, false, &used);
        assert_int_equal(used, sizeof(in) - 1);
        assert_string_equal(out, T1 " stdout F hello\n" T2 " stderr F oops: it failed\n" T1
                                    " stdout F again\n" T2 " stderr F \n");
}

static void test_empty_line(void **state)
{
        size_t used;
        _cleanup_free_ char *out = convert(T1 " stdout \n", strlen(T1 " stdout \n"), false, &used);
        assert_int_equal(used, strlen(T1 " stdout \n"));
        assert_string_equal(out, T1 " stdout F \n");
}

/* The piece sizes for a line of n content bytes, and that they carry it all. */
static void check_split(size_t n, const size_t *sizes, size_t n_sizes)
{
        size_t len;
        _cleanup_free_ char *in = record(T1, "stderr", 'x', n, &len);
        size_t used;
        _cleanup_free_ char *out = convert(in, len, false, &used);
        assert_int_equal(used, len);
        rec r[8];
        size_t k = parse(out, strlen(out), r, ELEMENTSOF(r));
        assert_int_equal(k, n_sizes);
        for (size_t i = 0; i < k; i++) {
                assert_int_equal(r[i].content_len, sizes[i]);
                assert_int_equal(r[i].full, i == k - 1);
                assert_int_equal(r[i].time_len, strlen(T1));
                assert_memory_equal(r[i].time, T1, strlen(T1));
                assert_memory_equal(r[i].stream, "stderr", 6);
                for (size_t j = 0; j < r[i].content_len; j++)
                        assert_int_equal(r[i].content[j], 'x');
        }
}

static void test_split_16k(void **state)
{
        check_split(16384, (size_t[]){16384}, 1);
        check_split(16385, (size_t[]){16384, 1}, 2);
        check_split(40000, (size_t[]){16384, 16384, 7232}, 3);
        check_split(16383, (size_t[]){16383}, 1);
        check_split(32768, (size_t[]){16384, 16384}, 2);
}

static void test_partial_record_kept(void **state)
{
        rkl_logs_conv c = {0};
        rkl_logs_buf out = {0};
        const char in[] = T1 " stdout one\n" T2 " stderr tw";
        size_t first = strlen(T1 " stdout one\n");

        size_t used = rkl_logs_convert(&c, in, sizeof(in) - 1, false, NOW_NS, &out);
        assert_int_equal(used, first);
        _cleanup_free_ char *a = take(&out);
        assert_string_equal(a, T1 " stdout F one\n");

        /* Nothing more yet: nothing taken, nothing written. */
        out.len = 0;
        assert_int_equal(
            rkl_logs_convert(&c, in + used, sizeof(in) - 1 - used, false, NOW_NS, &out), 0);
        assert_int_equal(out.len, 0);

        /* Given again with the rest of the line after it. */
        const char more[] = T2 " stderr two\n";
        used = rkl_logs_convert(&c, more, sizeof(more) - 1, false, NOW_NS, &out);
        assert_int_equal(used, sizeof(more) - 1);
        _cleanup_free_ char *b = take(&out);
        assert_string_equal(b, T2 " stderr F two\n");
        rkl_logs_buf_done(&out);
}

static void test_final_partial_record(void **state)
{
        const char in[] = T1 " stdout one\n" T2 " stderr no newline at the end";
        size_t used;
        _cleanup_free_ char *out = convert(in, sizeof(in) - 1, true, &used);
        assert_int_equal(used, sizeof(in) - 1);
        /* The app's last output had no newline: P, as on containerd (kubelet adds none). */
        assert_string_equal(out, T1 " stdout F one\n" T2 " stderr P no newline at the end\n");

        /* A header and nothing after it: an empty line. */
        const char h[] = T2 " stderr ";
        _cleanup_free_ char *out2 = convert(h, sizeof(h) - 1, true, &used);
        assert_int_equal(used, sizeof(h) - 1);
        assert_string_equal(out2, T2 " stderr F \n");

        /* final with nothing at all: nothing. */
        _cleanup_free_ char *out3 = convert("", 0, true, &used);
        assert_int_equal(used, 0);
        assert_string_equal(out3, "");
}

/* Converts in[0, n) in calls of random sizes, re-giving what a call did not take as the
 * follower does, then final; returns the output. */
static char *convert_in_pieces(const char *in, size_t n, unsigned seed, size_t *ret_len)
{
        rkl_logs_conv c = {0};
        rkl_logs_buf out = {0};
        size_t off = 0, avail = 0;
        srand(seed);
        while (avail < n) {
                size_t step = (size_t)rand() % (3 * RKL_LOGS_MAX_CONTENT) + 1;
                avail = avail + step > n ? n : avail + step;
                size_t used = rkl_logs_convert(&c, in + off, avail - off, false, NOW_NS, &out);
                off += used;
                assert_true(off <= avail);
                /* It never sits on a line longer than what it reads ahead. */
                assert_true(avail - off < RKL_LOGS_LONG_LINE);
        }
        off += rkl_logs_convert(&c, in + off, n - off, true, NOW_NS, &out);
        assert_int_equal(off, n);
        *ret_len = out.len;
        char *s = take(&out);
        rkl_logs_buf_done(&out);
        return s;
}

/* The content of out: each P..F run, with a \n after each F; checks the time and stream. */
static char *contents(const char *out, size_t len, size_t *ret_len)
{
        size_t max = len / 10 + 1;
        _cleanup_free_ rec *r = rkl_xnew(rec, max);
        size_t k = parse(out, len, r, max);
        char *s = rkl_xmalloc(len + 1);
        size_t n = 0;
        for (size_t i = 0; i < k; i++) {
                if (i > 0 && !r[i - 1].full) { /* the same line goes on */
                        assert_int_equal(r[i].time_len, r[i - 1].time_len);
                        assert_memory_equal(r[i].time, r[i - 1].time, r[i].time_len);
                        assert_memory_equal(r[i].stream, r[i - 1].stream, 6);
                }
                if (!r[i].full)
                        assert_true(r[i].content_len > 0);
                memcpy(s + n, r[i].content, r[i].content_len);
                n += r[i].content_len;
                if (r[i].full)
                        s[n++] = '\n';
        }
        assert_true(k == 0 || r[k - 1].full);
        *ret_len = n;
        return s;
}

static void test_long_line_in_pieces(void **state)
{
        /* A line of 200000 bytes (> RKL_LOGS_LONG_LINE) of every byte but \n, between short
         * ones, and one of exactly 4 pieces whose \n comes late. */
        size_t big = 200000, exact = 4 * RKL_LOGS_MAX_CONTENT;
        size_t cap = 3 * 64 + big + exact + 256;
        _cleanup_free_ char *in = rkl_xmalloc(cap);
        size_t n = (size_t)snprintf(in, cap, "%s", T1 " stdout before\n" T2 " stderr ");
        for (size_t i = 0; i < big; i++) {
                char b = (char)(i * 7 + 3);
                in[n++] = b == '\n' ? 'n' : b;
        }
        in[n++] = '\n';
        n += (size_t)snprintf(in + n, cap - n, "%s", T1 " stdout ");
        memset(in + n, 'e', exact);
        n += exact;
        in[n++] = '\n';
        n += (size_t)snprintf(in + n, cap - n, "%s", T3 " stdout after\n");
        assert_true(n < cap);

        /* Expected: what each record carried. */
        _cleanup_free_ char *want = rkl_xmalloc(cap);
        size_t w = (size_t)snprintf(want, cap, "before\n");
        memcpy(want + w, in + strlen(T1 " stdout before\n" T2 " stderr "), big);
        w += big;
        want[w++] = '\n';
        memset(want + w, 'e', exact);
        w += exact;
        w += (size_t)snprintf(want + w, cap - w, "\nafter\n");

        /* In one call. */
        size_t used, one_len;
        _cleanup_free_ char *one = convert_len(in, n, false, &used, &one_len);
        assert_int_equal(used, n);
        size_t got_len;
        _cleanup_free_ char *got = contents(one, one_len, &got_len);
        assert_int_equal(got_len, w);
        assert_memory_equal(got, want, w);

        /* In calls of random sizes: the same content, in pieces of at most 16 KiB. */
        for (unsigned seed = 1; seed <= 20; seed++) {
                size_t len;
                _cleanup_free_ char *out = convert_in_pieces(in, n, seed, &len);
                size_t c_len;
                _cleanup_free_ char *c = contents(out, len, &c_len);
                assert_int_equal(c_len, w);
                assert_memory_equal(c, want, w);
        }
}

static void test_final_after_pieces(void **state)
{
        /* A record of exactly 4 pieces whose output ended without a newline: 4 P records,
         * the last one its end, and no empty F after them (found by fuzz_log_record). */
        size_t exact = 4 * RKL_LOGS_MAX_CONTENT, h = strlen(T1 " stdout ");
        _cleanup_free_ char *in = rkl_xmalloc(h + exact);
        memcpy(in, T1 " stdout ", h);
        memset(in + h, 'e', exact);
        rkl_logs_conv c = {0};
        rkl_logs_buf out = {0};
        size_t used = rkl_logs_convert(&c, in, h + exact, false, NOW_NS, &out);
        assert_int_equal(used, h + exact);
        assert_true(c.in_record);
        assert_int_equal(rkl_logs_convert(&c, in + used, 0, true, NOW_NS, &out), 0);
        assert_false(c.in_record);
        size_t lines = 0;
        for (size_t i = 0; i < out.len; i++)
                lines += out.data[i] == '\n';
        assert_int_equal(lines, 4);
        assert_null(memmem(out.data, out.len, " F ", 3));
        rkl_logs_buf_done(&out);
}

static void test_long_line_waits_then_goes(void **state)
{
        /* Without its newline, a record is kept until it is RKL_LOGS_LONG_LINE long. */
        size_t len;
        _cleanup_free_ char *in = record(T1, "stdout", 'y', RKL_LOGS_LONG_LINE, &len);
        size_t h = strlen(T1 " stdout ");
        rkl_logs_conv c = {0};
        rkl_logs_buf out = {0};
        assert_int_equal(rkl_logs_convert(&c, in, RKL_LOGS_LONG_LINE - 1, false, NOW_NS, &out), 0);
        assert_int_equal(out.len, 0);
        assert_false(c.in_record);

        /* At RKL_LOGS_LONG_LINE: the header and the whole pieces go, as P. */
        size_t used = rkl_logs_convert(&c, in, RKL_LOGS_LONG_LINE, false, NOW_NS, &out);
        assert_true(c.in_record);
        size_t pieces = (RKL_LOGS_LONG_LINE - h) / RKL_LOGS_MAX_CONTENT;
        assert_int_equal(used, h + pieces * RKL_LOGS_MAX_CONTENT);
        rec r[8];
        assert_int_equal(parse(out.data, out.len, r, ELEMENTSOF(r)), pieces);
        for (size_t i = 0; i < pieces; i++)
                assert_false(r[i].full);

        /* The rest with its newline: F. */
        out.len = 0;
        assert_int_equal(rkl_logs_convert(&c, in + used, len - used, false, NOW_NS, &out),
                         len - used);
        assert_false(c.in_record);
        assert_int_equal(parse(out.data, out.len, r, ELEMENTSOF(r)), 1);
        assert_true(r[0].full);
        /* The record carried RKL_LOGS_LONG_LINE content bytes. */
        assert_int_equal(r[0].content_len, RKL_LOGS_LONG_LINE - pieces * RKL_LOGS_MAX_CONTENT);
        rkl_logs_buf_done(&out);
}

static void test_bytes_pass_through(void **state)
{
        static const char content[] = "a\0b\r\rc\xff\xfe\xc3(\xed\xa0\x80 \x1b[31mred\r";
        size_t cl = sizeof(content) - 1;
        char in[128];
        size_t n = (size_t)snprintf(in, sizeof(in), "%s", T1 " stderr ");
        memcpy(in + n, content, cl);
        n += cl;
        in[n++] = '\n';

        rkl_logs_conv c = {0};
        rkl_logs_buf out = {0};
        assert_int_equal(rkl_logs_convert(&c, in, n, false, NOW_NS, &out), n);
        const char head[] = T1 " stderr F ";
        assert_int_equal(out.len, sizeof(head) - 1 + cl + 1);
        assert_memory_equal(out.data, head, sizeof(head) - 1);
        assert_memory_equal(out.data + sizeof(head) - 1, content, cl);
        assert_int_equal(out.data[out.len - 1], '\n');

        /* The same, in a final record without its newline. */
        out.len = 0;
        c = (rkl_logs_conv){0};
        assert_int_equal(rkl_logs_convert(&c, in, n - 1, true, NOW_NS, &out), n - 1);
        assert_int_equal(out.len, sizeof(head) - 1 + cl + 1);
        assert_memory_equal(out.data, T1 " stderr P ", sizeof(head) - 1);
        assert_memory_equal(out.data + sizeof(head) - 1, content, cl);
        rkl_logs_buf_done(&out);
}

static void test_not_an_rkt_record(void **state)
{
        const char in[] = "plain output\n" T1 " stderr real\n"
                          "2016-10-06T00:17:09Z stdin not a stream\n"
                          "2016-10-06 00:17:09 stdout not an rkt time\n" T1 "\n";
        size_t used;
        _cleanup_free_ char *out = convert(in, sizeof(in) - 1, false, &used);
        assert_int_equal(used, sizeof(in) - 1);
        assert_string_equal(out, NOW_TEXT
                            " stdout F plain output\n" T1 " stderr F real\n" NOW_TEXT
                            " stdout F 2016-10-06T00:17:09Z stdin not a stream\n" NOW_TEXT
                            " stdout F 2016-10-06 00:17:09 stdout not an rkt time\n" NOW_TEXT
                            " stdout F " T1 "\n");

        /* An empty line that is not a record, and one at the end, without its newline. */
        const char in2[] = "\nlast words";
        _cleanup_free_ char *out2 = convert(in2, sizeof(in2) - 1, true, &used);
        assert_int_equal(used, sizeof(in2) - 1);
        assert_string_equal(out2, NOW_TEXT " stdout F \n" NOW_TEXT " stdout P last words\n");
}

static void test_time_passed_through(void **state)
{
        /* rkt's times as they are: shortest (no fraction), an offset, nanoseconds. */
        const char in[] = "2016-10-06T00:17:09Z stdout a\n" T3 " stderr b\n"
                          "2016-10-06T00:17:09.000000001-07:00 stdout c\n";
        size_t used;
        _cleanup_free_ char *out = convert(in, sizeof(in) - 1, false, &used);
        assert_int_equal(used, sizeof(in) - 1);
        assert_string_equal(out, "2016-10-06T00:17:09Z stdout F a\n" T3 " stderr F b\n"
                                 "2016-10-06T00:17:09.000000001-07:00 stdout F c\n");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_both_streams_interleaved),
            cmocka_unit_test(test_empty_line),
            cmocka_unit_test(test_split_16k),
            cmocka_unit_test(test_partial_record_kept),
            cmocka_unit_test(test_final_partial_record),
            cmocka_unit_test(test_long_line_in_pieces),
            cmocka_unit_test(test_final_after_pieces),
            cmocka_unit_test(test_long_line_waits_then_goes),
            cmocka_unit_test(test_bytes_pass_through),
            cmocka_unit_test(test_not_an_rkt_record),
            cmocka_unit_test(test_time_passed_through),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
