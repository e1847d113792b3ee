/* kubelet's container log format, and the conversion into it from what rkt writes.
 *
 * CRI: one record per line, "<RFC 3339 nano time> <stdout|stderr> <P|F> <content>\n"; a line
 * longer than RKL_LOGS_MAX_CONTENT is split into P (partial) records ending with an F (full)
 * one. rkt's iottymux (k8s-plain mode) writes "<RFC 3339 nano time> <stdout|stderr>
 * <line>\n" instead, one write per line, and the app's last line without its newline if it
 * had none (docs/rkt.md, 'Output and logs'). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* containerd's limit too: kubelet reassembles the pieces. */
#define RKL_LOGS_MAX_CONTENT 16384

/* A growing byte buffer (the converter's output). */
typedef struct rkl_logs_buf {
        char *data;
        size_t len, cap;
} rkl_logs_buf;

void rkl_logs_buf_done(rkl_logs_buf *b);

/* Where the converter stands between two calls: inside a record whose header it has read
 * (a line longer than what one read holds is converted as it comes, in P pieces). */
typedef struct rkl_logs_conv {
        bool in_record;
        bool pieced; /* P pieces of that record are out (not kept across a restart: at worst
                      * an output that ends without a newline gets one, as an empty F) */
        char time[40];
        size_t time_len;
        const char *stream; /* "stdout" or "stderr" (static) */
} rkl_logs_conv;

/* Reads at most this much ahead for a newline before converting a record piecewise. */
#define RKL_LOGS_LONG_LINE (64 * 1024)

/* Appends to out the CRI records for the rkt records in in[0, n) and returns how many input
 * bytes they took: whole records, the pieces of one longer than RKL_LOGS_LONG_LINE, and with
 * final (the writer is gone) the trailing record without a newline, as P records. What is not
 * taken is to be given again, with more after it. A line that is not an rkt record (no time and
 * stream words) is kept as stdout content, stamped with now_ns. Never fails: every byte comes
 * out, NUL, CR and invalid UTF-8 included, as the app printed them. */
size_t rkl_logs_convert(rkl_logs_conv *c, const char *in, size_t n, bool final, int64_t now_ns,
                        rkl_logs_buf *out);

/* CRI records for content of stream ("stdout"/"stderr") at time (RFC 3339 nano text, not
 * NUL-terminated): pieces of RKL_LOGS_MAX_CONTENT, all P but the last, which is F when full
 * (the end of the app's line), else P too. */
void rkl_logs_append(rkl_logs_buf *out, const char *time, size_t time_len, const char *stream,
                     const char *content, size_t len, bool full);
