/* Fuzz target for the conversion of rkt's log records into CRI ones (src/logs/record.c), on
 * what any app in a pod can print. Corpus: tests/fuzz/log-record/, replayed by ctest.
 *
 * Input: byte 0 says how many chunk sizes follow (1 + its low 3 bits), each 2 bytes (little
 * endian, + 1); the rest is the source (at most SOURCE_MAX), where 0xff k stands for k * 256
 * bytes of 'x' (k > 0: lines longer than RKL_LOGS_LONG_LINE from small inputs) and 0xff 0x00
 * for a 0xff byte. The source is fed in chunks of those sizes, in turn (the rest at once after
 * MAX_CALLS), through one rkl_logs_conv, each call given again what the previous one did not
 * take (as the follower does), then once with final.
 *
 * Checks (abort on violation): every call takes no more than it was given and leaves less
 * than RKL_LOGS_LONG_LINE untaken, the final call takes everything; every output line is
 * "<time> <stdout|stderr> <P|F> <content>\n" with content of at most RKL_LOGS_MAX_CONTENT
 * bytes and P pieces not empty; and, line by line, the P..F pieces carry the time, the stream
 * and the content bytes of the source's line: its rkt record's, or for a line that is not
 * one, the whole line as stdout at the given time. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "chunks.h"
#include "logs/record.h"
#include "base/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SOURCE_MAX (512 * 1024)
#define MAX_CALLS  2048
#define NOW_NS     INT64_C(1700000000123456789)
#define NOW_TEXT   "2023-11-14T22:13:20.123456789Z"

#define CHECK(x)                                                                                   \
        do {                                                                                       \
                if (!(x)) {                                                                        \
                        fprintf(stderr, "fuzz_log_record: %s:%d: %s\n", __FILE__, __LINE__, #x);   \
                        abort();                                                                   \
                }                                                                                  \
        } while (0)

/* The source's lines as the oracle sees them: time, stream and content of each. */
typedef struct line {
        const char *time, *stream, *content;
        size_t time_len, content_len;
} line;

static bool is_digit(char c)
{
        return c >= '0' && c <= '9';
}

/* Go's RFC 3339 nano text as rkt writes it, loosely: 20 to 35 bytes, "dddd-dd-ddTdd:dd:". */
static bool is_time(const char *p, size_t n)
{
        if (n < 20 || n > 35 || memchr(p, ' ', n) || memchr(p, '\n', n))
                return false;
        for (size_t i = 0; i < 4; i++)
                if (!is_digit(p[i]))
                        return false;
        return p[4] == '-' && p[7] == '-' && p[10] == 'T' && p[13] == ':' && p[16] == ':';
}

/* What one line of the source (without its \n) carries. */
static line oracle(const char *p, size_t n)
{
        const char *sp = memchr(p, ' ', n);
        if (sp && is_time(p, (size_t)(sp - p)) && (size_t)(p + n - sp) >= 8 &&
            (!memcmp(sp, " stdout ", 8) || !memcmp(sp, " stderr ", 8)))
                return (line){.time = p,
                              .time_len = (size_t)(sp - p),
                              .stream = sp[4] == 'o' ? "stdout" : "stderr",
                              .content = sp + 8,
                              .content_len = (size_t)(p + n - (sp + 8))};
        return (line){.time = NOW_TEXT,
                      .time_len = strlen(NOW_TEXT),
                      .stream = "stdout",
                      .content = p,
                      .content_len = n};
}

/* Checks out against the source src[0, n). */
static void check_output(const char *src, size_t n, const char *out, size_t out_len)
{
        if (!out) { /* nothing came out: there was nothing */
                CHECK(n == 0 && out_len == 0);
                return;
        }
        const char *s = src, *s_end = src + n;
        const char *o = out, *o_end = out + out_len;
        while (s < s_end) {
                const char *nl = memchr(s, '\n', (size_t)(s_end - s));
                size_t len = nl ? (size_t)(nl - s) : (size_t)(s_end - s);
                line want = oracle(s, len);
                s += len + (nl ? 1 : 0);

                /* Its pieces: P..., then F; all P for a last line without a newline (the
                 * app's output ended so), but an empty one. */
                bool open_end = !nl && want.content_len > 0;
                size_t got = 0;
                for (bool done = false; !done;) {
                        CHECK(o < o_end);
                        const char *eol = memchr(o, '\n', (size_t)(o_end - o));
                        CHECK(eol);
                        const char *sp = memchr(o, ' ', (size_t)(eol - o));
                        CHECK(sp);
                        CHECK(is_time(o, (size_t)(sp - o)));
                        CHECK(eol - sp >= 10);
                        CHECK(!memcmp(sp, " stdout ", 8) || !memcmp(sp, " stderr ", 8));
                        CHECK((sp[8] == 'P' || sp[8] == 'F') && sp[9] == ' ');
                        bool full = sp[8] == 'F';
                        CHECK(!(open_end && full));
                        const char *content = sp + 10;
                        size_t piece = (size_t)(eol - content);
                        CHECK(piece <= RKL_LOGS_MAX_CONTENT);
                        CHECK(full || piece > 0);

                        CHECK((size_t)(sp - o) == want.time_len);
                        CHECK(!memcmp(o, want.time, want.time_len));
                        CHECK(!memcmp(sp + 1, want.stream, 6));
                        CHECK(got + piece <= want.content_len);
                        CHECK(!memcmp(content, want.content + got, piece));
                        got += piece;
                        o = eol + 1;
                        done = full || (open_end && got == want.content_len);
                }
                CHECK(got == want.content_len);
        }
        CHECK(o == o_end); /* nothing made up */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        size_t sizes[RKL_FUZZ_MAX_CHUNKS], n_sizes;
        size_t head = rkl_fuzz_chunk_sizes(data, size, sizes, &n_sizes);
        if (head == 0)
                return 0;
        const uint8_t *body = data + head;
        size_t body_len = size - head;

        /* The source, with its runs expanded (exactly sized: ASan sees reads past it). */
        size_t cap = 0;
        for (size_t i = 0; i < body_len; i++)
                cap += body[i] == 0xff && i + 1 < body_len && body[i + 1] ? body[++i] * 256 : 1;
        cap = cap < SOURCE_MAX ? cap : SOURCE_MAX;
        char *src = rkl_xmalloc(cap ? cap : 1);
        size_t n = 0;
        for (size_t i = 0; i < body_len && n < cap; i++) {
                if (body[i] != 0xff || i + 1 == body_len) {
                        src[n++] = (char)body[i];
                        continue;
                }
                size_t k = body[++i];
                if (k == 0) {
                        src[n++] = (char)0xff;
                        continue;
                }
                size_t run = k * 256 < cap - n ? k * 256 : cap - n;
                memset(src + n, 'x', run);
                n += run;
        }

        rkl_logs_conv c = {0};
        rkl_logs_buf out = {0};
        size_t off = 0, avail = 0;
        for (size_t i = 0; avail < n; i++) {
                /* A bound on the calls: each may look at up to RKL_LOGS_LONG_LINE again. */
                size_t step = i < MAX_CALLS ? sizes[i % n_sizes] : n - avail;
                avail = step < n - avail ? avail + step : n;
                size_t used = rkl_logs_convert(&c, src + off, avail - off, false, NOW_NS, &out);
                CHECK(used <= avail - off);
                off += used;
                CHECK(avail - off < RKL_LOGS_LONG_LINE);
        }
        size_t used = rkl_logs_convert(&c, src + off, n - off, true, NOW_NS, &out);
        CHECK(used == n - off);
        CHECK(!c.in_record);

        check_output(src, n, out.data, out.len);
        rkl_logs_buf_done(&out);
        free(src);
        return 0;
}
