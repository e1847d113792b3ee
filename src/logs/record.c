#include "record.h"

#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/time-util.h"
#include "base/banned.h"

void rkl_logs_buf_done(rkl_logs_buf *b)
{
        free(b->data);
        *b = (rkl_logs_buf){0};
}

static void put(rkl_logs_buf *b, const void *p, size_t n)
{
        if (b->len + n > b->cap) {
                size_t cap = b->cap ? b->cap : 4096;
                while (cap < b->len + n)
                        cap *= 2;
                b->data = rkl_xrealloc(b->data, cap);
                b->cap = cap;
        }
        memcpy(b->data + b->len, p, n);
        b->len += n;
}

void rkl_logs_append(rkl_logs_buf *out, const char *time, size_t time_len, const char *stream,
                     const char *content, size_t len, bool full)
{
        size_t stream_len = strlen(stream);
        do {
                size_t piece = len > RKL_LOGS_MAX_CONTENT ? RKL_LOGS_MAX_CONTENT : len;
                bool last = piece == len && full;
                put(out, time, time_len);
                put(out, " ", 1);
                put(out, stream, stream_len);
                put(out, last ? " F " : " P ", 3);
                put(out, content, piece);
                put(out, "\n", 1);
                content += piece;
                len -= piece;
        } while (len > 0);
}

/* What iottymux writes with Go's time.RFC3339Nano: "2006-01-02T15:04:05.999999999Z07:00",
 * 20 to 35 bytes. A loose check: enough that a line of app output is not taken for one. */
static bool looks_like_time(const char *p, size_t n)
{
        if (n < 20 || n > 35)
                return false;
        for (size_t i = 0; i < 4; i++)
                if (p[i] < '0' || p[i] > '9')
                        return false;
        return p[4] == '-' && p[7] == '-' && p[10] == 'T' && p[13] == ':' && p[16] == ':';
}

static size_t now_text(int64_t now_ns, char buf[static 40])
{
        time_t s = (time_t)(now_ns / (int64_t)NSEC_PER_SEC);
        struct tm tm;
        gmtime_r(&s, &tm);
        size_t n = strftime(buf, 40, "%Y-%m-%dT%H:%M:%S", &tm);
        int k = snprintf(buf + n, 40 - n, ".%09dZ", (int)(now_ns % (int64_t)NSEC_PER_SEC));
        return n + (k > 0 ? (size_t)k : 0);
}

/* Reads an rkt record's header ("<time> <stream> ") from p[0, n) into c; returns its
 * length, or 0 when p does not start with one. */
static size_t header(rkl_logs_conv *c, const char *p, size_t n)
{
        const char *sp = memchr(p, ' ', n < 40 ? n : 40);
        if (!sp || !looks_like_time(p, (size_t)(sp - p)))
                return 0;
        size_t t = (size_t)(sp - p), rest = n - t - 1;
        if (rest >= 7 && !memcmp(sp + 1, "stdout ", 7))
                c->stream = "stdout";
        else if (rest >= 7 && !memcmp(sp + 1, "stderr ", 7))
                c->stream = "stderr";
        else
                return 0;
        memcpy(c->time, p, t);
        c->time_len = t;
        return t + 8;
}

/* A line that is not an rkt record: the app's bytes all the same. */
static void foreign(rkl_logs_conv *c, int64_t now_ns)
{
        c->time_len = now_text(now_ns, c->time);
        c->stream = "stdout";
}

size_t rkl_logs_convert(rkl_logs_conv *c, const char *in, size_t n, bool final, int64_t now_ns,
                        rkl_logs_buf *out)
{
        size_t used = 0;
        while (used < n) {
                const char *p = in + used;
                size_t left = n - used;
                const char *nl = memchr(p, '\n', left);
                if (!c->in_record) {
                        if (!nl && !final && left < RKL_LOGS_LONG_LINE)
                                break; /* the rest of the line is yet to come */
                        size_t h = header(c, p, nl ? (size_t)(nl - p) + 1 : left);
                        if (h == 0)
                                foreign(c, now_ns);
                        c->in_record = true;
                        used += h;
                        continue;
                }
                if (nl) {
                        rkl_logs_append(out, c->time, c->time_len, c->stream, p, (size_t)(nl - p),
                                        true);
                        c->in_record = c->pieced = false;
                        used += (size_t)(nl - p) + 1;
                } else if (final) {
                        /* The app's output ended without a newline: partial, as containerd
                         * writes it, so that kubelet (a termination message taken from the
                         * log, `kubectl logs`) adds none. */
                        rkl_logs_append(out, c->time, c->time_len, c->stream, p, left, false);
                        c->in_record = c->pieced = false;
                        used = n;
                } else {
                        /* Whole pieces now, the rest with what follows. */
                        size_t whole = left - left % RKL_LOGS_MAX_CONTENT;
                        if (whole == 0)
                                break;
                        rkl_logs_append(out, c->time, c->time_len, c->stream, p, whole, false);
                        c->pieced = true;
                        used += whole;
                }
        }
        if (final && c->in_record) {
                /* A header and nothing after it is an empty line; after P pieces, the output
                 * ended with them, without a newline. */
                if (!c->pieced)
                        rkl_logs_append(out, c->time, c->time_len, c->stream, "", 0, true);
                c->in_record = c->pieced = false;
        }
        return used;
}
