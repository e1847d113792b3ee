/* The SPDY/3.1 codec (src/stream/spdy.c): every frame type through the encoder and back, in
 * one piece and split at every byte; header blocks sharing one zlib stream; golden frames that
 * moby/spdystream's framer (what kubelet and crictl use) wrote, and the encoder's output that
 * that framer read back (tests/stream/golden/); the limits, a zlib bomb, malformed input,
 * unknown control types, and the frames the encoder refuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <fcntl.h>
#include <zlib.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/strv.h"
#include "stream/spdy.h"

#define H(n, v)                                                                                    \
        {                                                                                          \
                .name = n, .name_len = sizeof(n) - 1, .value = v, .value_len = sizeof(v) - 1       \
        }

/* A frame as text, for comparisons: type, the fields the type has, then the pairs (sorted by
 * name when sorted, as a Go http.Header has no order) or the settings, bytes other than
 * printable ASCII as \xNN. */
static void put_bytes(FILE *f, const void *p, size_t n)
{
        const unsigned char *s = p;
        for (size_t i = 0; i < n; i++)
                if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\')
                        fputc(s[i], f);
                else
                        fprintf(f, "\\x%02x", s[i]);
}

static int cmp_header(const void *a, const void *b)
{
        const rkl_spdy_header *x = a, *y = b;
        size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
        int c = memcmp(x->name, y->name, n);
        return c ? c : (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

static char *describe(const rkl_spdy_frame *fr, bool sorted)
{
        char *s = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&s, &n);
        assert_non_null(f);
        switch (fr->type) {
        case RKL_SPDY_DATA:
                fprintf(f, "DATA id=%u flags=%u ", fr->stream_id, fr->flags);
                put_bytes(f, fr->data, fr->len);
                break;
        case RKL_SPDY_SYN_STREAM:
                fprintf(f, "SYN_STREAM id=%u assoc=%u pri=%u flags=%u", fr->stream_id,
                        fr->assoc_stream_id, fr->priority, fr->flags);
                break;
        case RKL_SPDY_SYN_REPLY:
                fprintf(f, "SYN_REPLY id=%u flags=%u", fr->stream_id, fr->flags);
                break;
        case RKL_SPDY_HEADERS:
                fprintf(f, "HEADERS id=%u flags=%u", fr->stream_id, fr->flags);
                break;
        case RKL_SPDY_RST_STREAM:
                fprintf(f, "RST_STREAM id=%u status=%u", fr->stream_id, fr->status);
                break;
        case RKL_SPDY_SETTINGS:
                fprintf(f, "SETTINGS flags=%u {", fr->flags);
                for (size_t i = 0; i < fr->n_settings; i++)
                        fprintf(f, "%s%u:%u=%u", i ? "," : "", fr->settings[i].flags,
                                fr->settings[i].id, fr->settings[i].value);
                fputc('}', f);
                break;
        case RKL_SPDY_PING:
                fprintf(f, "PING id=%u", fr->ping_id);
                break;
        case RKL_SPDY_GOAWAY:
                fprintf(f, "GOAWAY last=%u status=%u", fr->stream_id, fr->status);
                break;
        case RKL_SPDY_WINDOW_UPDATE:
                fprintf(f, "WINDOW_UPDATE id=%u delta=%u", fr->stream_id, fr->delta);
                break;
        }
        if (fr->type == RKL_SPDY_SYN_STREAM || fr->type == RKL_SPDY_SYN_REPLY ||
            fr->type == RKL_SPDY_HEADERS) {
                rkl_spdy_header *h = rkl_xnew0(rkl_spdy_header, fr->n_headers + 1);
                if (fr->n_headers)
                        memcpy(h, fr->headers, fr->n_headers * sizeof(*h));
                if (sorted)
                        qsort(h, fr->n_headers, sizeof(*h), cmp_header);
                fputs(" {", f);
                for (size_t i = 0; i < fr->n_headers; i++) {
                        if (i)
                                fputc(',', f);
                        put_bytes(f, h[i].name, h[i].name_len);
                        fputc('=', f);
                        put_bytes(f, h[i].value, h[i].value_len);
                }
                fputc('}', f);
                free(h);
        }
        assert_int_equal(fclose(f), 0);
        return s;
}

/* Feeds buf through a new decoder in pieces of at most chunk bytes (0: all at once), as a
 * connection would: what a call leaves untaken goes again with the next piece. Returns the
 * frames' descriptions; the decoder must end between frames. */
static char **decode_all(const void *buf, size_t n, size_t chunk, bool sorted)
{
        rkl_spdy_decoder *d = NULL;
        char **out = NULL;
        const uint8_t *p = buf;
        size_t fed = 0, off = 0;

        assert_int_equal(rkl_spdy_decoder_new(NULL, &d), 0);
        while (fed < n) {
                fed = chunk == 0 || n - fed < chunk ? n : fed + chunk;
                for (;;) {
                        rkl_spdy_frame fr;
                        rkl_error err = RKL_ERROR_INIT;
                        size_t used = SIZE_MAX;
                        int r = rkl_spdy_decode(d, p + off, fed - off, &used, &fr, &err);
                        if (r < 0)
                                fail_msg("decode at %zu: %s", off, err.msg);
                        assert_true(used <= fed - off);
                        off += used;
                        if (r == 0) {
                                /* A partial frame is the decoder's to keep. */
                                assert_int_equal(off, fed);
                                break;
                        }
                        rkl_strv_consume(&out, describe(&fr, sorted));
                }
        }
        rkl_spdy_decoder_free(d);
        if (!out)
                out = rkl_xnew0(char *, 1);
        return out;
}

static void assert_strv_equal(char *const *got, const char *const *want)
{
        for (size_t i = 0; got[i] || want[i]; i++) {
                if (!got[i] || !want[i] || strcmp(got[i], want[i]) != 0)
                        fail_msg("frame %zu: got \"%s\", want \"%s\"", i,
                                 got[i] ? got[i] : "(none)", want[i] ? want[i] : "(none)");
        }
}

static char **describe_all(const rkl_spdy_frame *frames, size_t n, bool sorted)
{
        char **out = rkl_xnew0(char *, 1);
        for (size_t i = 0; i < n; i++)
                rkl_strv_consume(&out, describe(&frames[i], sorted));
        return out;
}

static uint8_t *encode_all(const rkl_spdy_frame *frames, size_t n, size_t *ret_len)
{
        rkl_spdy_encoder *e = NULL;
        uint8_t *buf = NULL;
        size_t len = 0, cap = 0;
        assert_int_equal(rkl_spdy_encoder_new(&e), 0);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(rkl_spdy_encode(e, &frames[i], &buf, &len, &cap), 0);
        rkl_spdy_encoder_free(e);
        *ret_len = len;
        return buf;
}

static char *golden_path(const char *name)
{
        const char *src = getenv("RKL_SOURCE_DIR");
        return rkl_xasprintf("%s/tests/stream/golden/%s", src ? src : "../..", name);
}

static uint8_t *read_golden(const char *name, size_t *ret_n)
{
        char *path = golden_path(name), *data = NULL;
        assert_int_equal(rkl_read_file_at(AT_FDCWD, path, 1 << 20, &data, ret_n), 0);
        free(path);
        return (uint8_t *)data;
}

/* The server's side of a port-forward connection, and every frame type: what serverFrames()
 * in golden/main.go lists, so that the Go framer can check the encoding. */
static const rkl_spdy_header pf_headers[] = {H("streamtype", "data"), H("port", "8080"),
                                             H("requestid", "0")};
static const rkl_spdy_header multi_value[] = {H("x-values", "a\0bc")};
static const rkl_spdy_header error_stream[] = {H("streamtype", "error")};
static const rkl_spdy_setting window_setting[] = {
    {.id = RKL_SPDY_SETTINGS_INITIAL_WINDOW_SIZE, .value = 1048576}};
static const rkl_spdy_frame server_frames[] = {
    {.type = RKL_SPDY_SETTINGS, .settings = window_setting, .n_settings = 1},
    {.type = RKL_SPDY_SYN_REPLY, .stream_id = 1},
    {.type = RKL_SPDY_SYN_REPLY, .stream_id = 3, .headers = pf_headers, .n_headers = 3},
    {.type = RKL_SPDY_SYN_REPLY,
     .stream_id = 5,
     .flags = RKL_SPDY_FLAG_FIN,
     .headers = pf_headers,
     .n_headers = 3},
    {.type = RKL_SPDY_DATA,
     .stream_id = 3,
     .data = (const uint8_t *)"HTTP/1.0 200 OK\r\n\r\n",
     .len = 19},
    {.type = RKL_SPDY_DATA, .stream_id = 3, .flags = RKL_SPDY_FLAG_FIN},
    {.type = RKL_SPDY_HEADERS, .stream_id = 3, .headers = multi_value, .n_headers = 1},
    {.type = RKL_SPDY_WINDOW_UPDATE, .stream_id = 3, .delta = 0x7fffffff},
    {.type = RKL_SPDY_PING, .ping_id = 2},
    {.type = RKL_SPDY_RST_STREAM, .stream_id = 5, .status = RKL_SPDY_FRAME_TOO_LARGE},
    {.type = RKL_SPDY_SYN_STREAM,
     .stream_id = 2,
     .assoc_stream_id = 1,
     .priority = 7,
     .flags = RKL_SPDY_FLAG_UNIDIRECTIONAL,
     .headers = error_stream,
     .n_headers = 1},
    {.type = RKL_SPDY_GOAWAY, .stream_id = 9, .status = 1},
};

/* A few more edges: every SETTINGS field width, 31-bit ids, big data, an empty value. */
static const rkl_spdy_header odd_headers[] = {H("a", ""), H(":host", "x\0y\0z"), H("b-c", "1")};
static const rkl_spdy_setting all_bits[] = {{.flags = 0xff, .id = 0xffffff, .value = 0xffffffff},
                                            {.flags = 2, .id = 1, .value = 0}};

static void round_trip_every_type(void **state)
{
        static uint8_t big[70000];
        for (size_t i = 0; i < sizeof(big); i++)
                big[i] = (uint8_t)(i * 7);
        const rkl_spdy_frame extra[] = {
            {.type = RKL_SPDY_SETTINGS,
             .flags = RKL_SPDY_FLAG_CLEAR_SETTINGS,
             .settings = all_bits,
             .n_settings = 2},
            {.type = RKL_SPDY_SETTINGS},
            {.type = RKL_SPDY_SYN_STREAM,
             .stream_id = 0x7fffffff,
             .assoc_stream_id = 0x7fffffff,
             .flags = 0xff,
             .headers = odd_headers,
             .n_headers = 3},
            {.type = RKL_SPDY_HEADERS, .stream_id = 1, .flags = RKL_SPDY_FLAG_FIN},
            {.type = RKL_SPDY_DATA, .stream_id = 0x7fffffff, .data = big, .len = sizeof(big)},
            {.type = RKL_SPDY_WINDOW_UPDATE, .stream_id = 0, .delta = 1},
            {.type = RKL_SPDY_PING, .ping_id = 0xffffffff},
            {.type = RKL_SPDY_GOAWAY, .stream_id = 0x7fffffff, .status = 0xffffffff},
            {.type = RKL_SPDY_RST_STREAM, .stream_id = 1, .status = 0xffffffff},
        };
        rkl_spdy_frame all[ELEMENTSOF(server_frames) + ELEMENTSOF(extra)];
        memcpy(all, server_frames, sizeof(server_frames));
        memcpy(all + ELEMENTSOF(server_frames), extra, sizeof(extra));

        size_t len;
        uint8_t *buf = encode_all(all, ELEMENTSOF(all), &len);
        _cleanup_strv_free_ char **want = describe_all(all, ELEMENTSOF(all), false);
        _cleanup_strv_free_ char **got = decode_all(buf, len, 0, false);
        assert_strv_equal(got, (const char *const *)want);
        free(buf);
}

/* Every frame whole, then split at each byte, then fed a byte at a time: the same frames. */
static void check_splits(const uint8_t *buf, size_t len, bool sorted)
{
        _cleanup_strv_free_ char **whole = decode_all(buf, len, 0, sorted);
        _cleanup_strv_free_ char **bytes = decode_all(buf, len, 1, sorted);
        assert_strv_equal(bytes, (const char *const *)whole);
        for (size_t k = 1; k < len; k++) {
                /* Two pieces: k bytes, then the rest. */
                rkl_spdy_decoder *d = NULL;
                _cleanup_strv_free_ char **got = rkl_xnew0(char *, 1);
                assert_int_equal(rkl_spdy_decoder_new(NULL, &d), 0);
                size_t off = 0;
                for (int piece = 0; piece < 2; piece++) {
                        size_t end = piece == 0 ? k : len;
                        for (;;) {
                                rkl_spdy_frame fr;
                                size_t used;
                                int r = rkl_spdy_decode(d, buf + off, end - off, &used, &fr, NULL);
                                assert_true(r >= 0);
                                off += used;
                                if (r == 0)
                                        break;
                                rkl_strv_consume(&got, describe(&fr, sorted));
                        }
                }
                assert_int_equal(off, len);
                assert_strv_equal(got, (const char *const *)whole);
                rkl_spdy_decoder_free(d);
        }
}

static void every_split_point(void **state)
{
        size_t len;
        uint8_t *buf = encode_all(server_frames, ELEMENTSOF(server_frames), &len);
        check_splits(buf, len, false);
        free(buf);
        const char *golden[] = {"kubelet-exec.bin", "kubelet-portforward.bin", "rktlet-server.bin"};
        for (size_t i = 0; i < ELEMENTSOF(golden); i++) {
                buf = read_golden(golden[i], &len);
                check_splits(buf, len, true);
                free(buf);
        }
}

/* No bytes (buf may be NULL then), before a frame or inside one: more are needed. */
static void nothing_to_read(void **state)
{
        rkl_spdy_decoder *d = NULL;
        rkl_spdy_frame fr;
        size_t used = 1;
        static const uint8_t ping[12] = {0x80, 3, 0, 6, 0, 0, 0, 4, 0, 0, 0, 7};
        assert_int_equal(rkl_spdy_decoder_new(NULL, &d), 0);
        assert_int_equal(rkl_spdy_decode(d, NULL, 0, &used, &fr, NULL), 0);
        assert_int_equal(used, 0);
        assert_int_equal(rkl_spdy_decode(d, ping, 5, &used, &fr, NULL), 0);
        assert_int_equal(used, 5);
        assert_int_equal(rkl_spdy_decode(d, NULL, 0, &used, &fr, NULL), 0);
        assert_int_equal(rkl_spdy_decode(d, ping + 5, 7, &used, &fr, NULL), 1);
        assert_int_equal(used, 7);
        assert_int_equal(fr.ping_id, 7);
        rkl_spdy_decoder_free(d);
}

/* One zlib stream spans a connection's header blocks: a block repeated costs a few bytes,
 * and each decodes only after the ones before it. */
static void header_blocks_share_one_stream(void **state)
{
        rkl_spdy_frame fr = {.type = RKL_SPDY_SYN_STREAM, .headers = pf_headers, .n_headers = 3};
        rkl_spdy_encoder *e = NULL;
        uint8_t *buf = NULL;
        size_t len = 0, cap = 0, size[4];
        assert_int_equal(rkl_spdy_encoder_new(&e), 0);
        for (size_t i = 0; i < ELEMENTSOF(size); i++) {
                size_t before = len;
                fr.stream_id = 2 * i + 1;
                assert_int_equal(rkl_spdy_encode(e, &fr, &buf, &len, &cap), 0);
                size[i] = len - before;
        }
        rkl_spdy_encoder_free(e);
        /* The first block carries the zlib header; the next ones are back-references. */
        assert_true(size[1] < size[0]);

        _cleanup_strv_free_ char **got = decode_all(buf, len, 0, false);
        assert_int_equal(rkl_strv_length(got), ELEMENTSOF(size));
        assert_string_equal(got[3], "SYN_STREAM id=7 assoc=0 pri=0 flags=0 "
                                    "{streamtype=data,port=8080,requestid=0}");

        /* The third frame alone does not inflate: its block refers to the earlier ones. */
        rkl_spdy_decoder *d = NULL;
        rkl_spdy_frame out;
        rkl_error err = RKL_ERROR_INIT;
        size_t used;
        assert_int_equal(rkl_spdy_decoder_new(NULL, &d), 0);
        assert_int_equal(rkl_spdy_decode(d, buf + size[0] + size[1], size[2], &used, &out, &err),
                         -EPROTO);
        rkl_spdy_decoder_free(d);
        free(buf);
}

static void golden_kubelet_exec(void **state)
{
        size_t len;
        uint8_t *buf = read_golden("kubelet-exec.bin", &len);
        _cleanup_strv_free_ char **got = decode_all(buf, len, 0, true);
        const char *want[] = {
            "SYN_STREAM id=1 assoc=0 pri=0 flags=0 {streamtype=error}",
            "SYN_STREAM id=3 assoc=0 pri=0 flags=0 {streamtype=stdin}",
            "SYN_STREAM id=5 assoc=0 pri=0 flags=0 {streamtype=stdout}",
            "SYN_STREAM id=7 assoc=0 pri=0 flags=0 {streamtype=stderr}",
            "SYN_STREAM id=9 assoc=0 pri=0 flags=0 {streamtype=resize}",
            "DATA id=3 flags=0 echo hello\\x0a",
            "DATA id=9 flags=0 {\"Width\":80,\"Height\":24}",
            "DATA id=3 flags=1 ",
            "WINDOW_UPDATE id=5 delta=32768",
            "WINDOW_UPDATE id=0 delta=1",
            "HEADERS id=7 flags=0 {x-note=a\\x00b}",
            "PING id=1",
            "RST_STREAM id=9 status=5",
            "GOAWAY last=0 status=0",
            NULL,
        };
        assert_strv_equal(got, want);
        free(buf);
}

static void golden_kubelet_portforward(void **state)
{
        size_t len;
        uint8_t *buf = read_golden("kubelet-portforward.bin", &len);
        _cleanup_strv_free_ char **got = decode_all(buf, len, 0, true);
        const char *want[] = {
            "SETTINGS flags=0 {0:7=65536,1:4=100}",
            "SYN_STREAM id=1 assoc=0 pri=0 flags=0 {port=8080,requestid=0,streamtype=error}",
            "SYN_STREAM id=3 assoc=0 pri=0 flags=0 {port=8080,requestid=0,streamtype=data}",
            "DATA id=3 flags=0 GET / HTTP/1.0\\x0d\\x0a\\x0d\\x0a",
            "SYN_STREAM id=5 assoc=0 pri=0 flags=0 {port=8080,requestid=1,streamtype=error}",
            "SYN_STREAM id=7 assoc=0 pri=0 flags=1 {port=8080,requestid=1,streamtype=data}",
            "DATA id=3 flags=1 bye",
            "PING id=3",
            "RST_STREAM id=1 status=1",
            "GOAWAY last=7 status=2",
            NULL,
        };
        assert_strv_equal(got, want);

        /* The headers the streaming server looks up, by their wire (lower-case) names. */
        rkl_spdy_decoder *d = NULL;
        rkl_spdy_frame fr;
        size_t used, off = 0;
        assert_int_equal(rkl_spdy_decoder_new(NULL, &d), 0);
        for (int i = 0; i < 2; i++) {
                assert_int_equal(rkl_spdy_decode(d, buf + off, len - off, &used, &fr, NULL), 1);
                off += used;
        }
        assert_int_equal(fr.type, RKL_SPDY_SYN_STREAM);
        const rkl_spdy_header *h = rkl_spdy_frame_header(&fr, "requestid");
        assert_non_null(h);
        assert_int_equal(h->value_len, 1);
        assert_memory_equal(h->value, "0", 1);
        assert_non_null(rkl_spdy_frame_header(&fr, "port"));
        assert_null(rkl_spdy_frame_header(&fr, "streamType"));
        assert_null(rkl_spdy_frame_header(&fr, "por"));
        rkl_spdy_decoder_free(d);
        free(buf);
}

/* The encoder's output for golden/main.go's check (run by hand: golden/run check FILE): it is
 * written to the build dir on every run. The committed golden/rktlet-server.bin is one such
 * output that spdystream read as expected; it must still decode to the same frames. */
static void encoder_for_go(void **state)
{
        size_t len, glen;
        uint8_t *buf = encode_all(server_frames, ELEMENTSOF(server_frames), &len);
        const char *build = getenv("RKL_BUILD_DIR");
        char *path = rkl_xasprintf("%s/spdy-server.bin", build ? build : ".");
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        assert_int_equal(fwrite(buf, 1, len, f), len);
        assert_int_equal(fclose(f), 0);
        free(path);

        _cleanup_strv_free_ char **want =
            describe_all(server_frames, ELEMENTSOF(server_frames), false);
        _cleanup_strv_free_ char **got = decode_all(buf, len, 0, false);
        assert_strv_equal(got, (const char *const *)want);
        uint8_t *golden = read_golden("rktlet-server.bin", &glen);
        _cleanup_strv_free_ char **old = decode_all(golden, glen, 0, false);
        assert_strv_equal(old, (const char *const *)want);
        free(golden);
        free(buf);
}

/* Test-side deflate, to make header blocks the encoder would refuse to. Without a dictionary
 * (a zlib header without FDICT is valid: inflate does not ask for one), or with dict. */
typedef struct deflater {
        z_stream z;
} deflater;

static void deflater_init(deflater *z, const char *dict)
{
        memset(z, 0, sizeof(*z));
        assert_int_equal(deflateInit(&z->z, Z_DEFAULT_COMPRESSION), Z_OK);
        if (dict)
                assert_int_equal(deflateSetDictionary(&z->z, (const Bytef *)dict, strlen(dict)),
                                 Z_OK);
}

/* Appends a control frame of type with fixed payload bytes and plain deflated after them. */
static size_t put_block_frame(uint8_t *out, size_t cap, deflater *z, uint16_t type,
                              const uint8_t *fixed, size_t n_fixed, const void *plain,
                              size_t n_plain, int flush)
{
        assert_true(cap > 8 + n_fixed);
        memcpy(out + 8, fixed, n_fixed);
        z->z.next_in = (Bytef *)plain;
        z->z.avail_in = n_plain;
        z->z.next_out = out + 8 + n_fixed;
        z->z.avail_out = cap - 8 - n_fixed;
        assert_int_equal(deflate(&z->z, flush), flush == Z_FINISH ? Z_STREAM_END : Z_OK);
        assert_true(z->z.avail_out > 0);
        size_t len = cap - z->z.avail_out - 8;
        uint8_t head[8] = {0x80, 3, type >> 8, type & 0xff, 0, len >> 16, len >> 8, len};
        memcpy(out, head, 8);
        return 8 + len;
}

static const uint8_t syn1[10] = {0, 0, 0, 1, 0, 0, 0, 0, 0, 0};

/* Decodes buf whole with a decoder of limits; the first error (or 1 per frame, 0 at end). */
static int decode_status(const rkl_spdy_limits *limits, const void *buf, size_t len,
                         size_t *ret_frames)
{
        rkl_spdy_decoder *d = NULL;
        size_t off = 0, frames = 0;
        int r;
        assert_int_equal(rkl_spdy_decoder_new(limits, &d), 0);
        for (;;) {
                rkl_spdy_frame fr;
                rkl_error err = RKL_ERROR_INIT;
                size_t used;
                r = rkl_spdy_decode(d, (const uint8_t *)buf + off, len - off, &used, &fr, &err);
                off += used;
                if (r < 0) {
                        assert_int_equal(err.code, r);
                        assert_true(err.msg[0] != '\0');
                        /* Failed for good: the zlib stream is out of step. */
                        uint8_t ping[12] = {0x80, 3, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1};
                        assert_int_equal(rkl_spdy_decode(d, ping, sizeof(ping), &used, &fr, NULL),
                                         r);
                        break;
                }
                if (r == 0)
                        break;
                frames++;
        }
        rkl_spdy_decoder_free(d);
        if (ret_frames)
                *ret_frames = frames;
        return r;
}

static void limits(void **state)
{
        rkl_spdy_limits lim = {.max_frame = 100};
        size_t frames;

        /* A DATA frame of 100 bytes passes; of 101 is refused from its header alone. */
        uint8_t data[8 + 101] = {0, 0, 0, 1, 0, 0, 0, 100};
        assert_int_equal(decode_status(&lim, data, 8 + 100, &frames), 0);
        assert_int_equal(frames, 1);
        data[7] = 101;
        assert_int_equal(decode_status(&lim, data, 8, NULL), -E2BIG);
        uint8_t syn[8] = {0x80, 3, 0, 1, 0, 0, 0, 101};
        assert_int_equal(decode_status(&lim, syn, 8, NULL), -E2BIG);
        /* 2^24-1, the most the wire can say, passes the default limits. */
        uint8_t *huge = rkl_xnew0(uint8_t, 8 + 0xffffff);
        memcpy(huge, (uint8_t[]){0, 0, 0, 1, 0, 0xff, 0xff, 0xff}, 8);
        assert_int_equal(decode_status(NULL, huge, 8 + 0xffffff, &frames), 0);
        assert_int_equal(frames, 1);
        free(huge);

        /* max_header_bytes: a block of exactly the limit passes, one byte over does not. */
        char value[3000];
        memset(value, 'v', sizeof(value));
        rkl_spdy_header h = {
            .name = "x", .name_len = 1, .value = value, .value_len = sizeof(value)};
        rkl_spdy_frame fr = {
            .type = RKL_SPDY_SYN_REPLY, .stream_id = 1, .headers = &h, .n_headers = 1};
        size_t len;
        uint8_t *buf = encode_all(&fr, 1, &len);
        size_t plain = 4 + 4 + 1 + 4 + sizeof(value);
        lim = (rkl_spdy_limits){.max_header_bytes = plain};
        assert_int_equal(decode_status(&lim, buf, len, &frames), 0);
        assert_int_equal(frames, 1);
        lim.max_header_bytes = plain - 1;
        assert_int_equal(decode_status(&lim, buf, len, NULL), -E2BIG);
        free(buf);

        /* max_headers: 128 pairs by default pass, 129 do not. */
        rkl_spdy_header many[129];
        char names[129][8];
        for (size_t i = 0; i < ELEMENTSOF(many); i++) {
                snprintf(names[i], sizeof(names[i]), "h%zu", i);
                many[i] = (rkl_spdy_header){
                    .name = names[i], .name_len = strlen(names[i]), .value = "", .value_len = 0};
        }
        fr.headers = many;
        fr.n_headers = 128;
        buf = encode_all(&fr, 1, &len);
        assert_int_equal(decode_status(NULL, buf, len, &frames), 0);
        free(buf);
        fr.n_headers = 129;
        buf = encode_all(&fr, 1, &len);
        assert_int_equal(decode_status(NULL, buf, len, NULL), -E2BIG);
        free(buf);
}

/* A zlib bomb: a 16 MiB block (one pair, its value all 'x') deflated into some 16 KiB. The
 * decoder stops at 64 KiB of output. The second frame is the same bomb followed by bytes that
 * are not deflate: had the decoder inflated all of it, it would have met them and said
 * -EPROTO, as it does when the limit lets it. */
static void zlib_bomb(void **state)
{
        size_t n = 16 << 20, cap = 1 << 20;
        uint8_t *plain = rkl_xmalloc(n), *out = rkl_xmalloc(cap);
        memset(plain, 'x', n);
        memcpy(plain, "\0\0\0\1\0\0\0\1a", 9);
        uint32_t vlen = n - 13;
        memcpy(plain + 9, (uint8_t[]){vlen >> 24, vlen >> 16, vlen >> 8, vlen}, 4);
        for (int garbage = 0; garbage < 2; garbage++) {
                deflater z;
                deflater_init(&z, NULL);
                size_t len = put_block_frame(out, cap, &z, RKL_SPDY_SYN_STREAM, syn1, sizeof(syn1),
                                             plain, n, Z_SYNC_FLUSH);
                assert_true(len < 64 * 1024);
                if (garbage) {
                        /* A stored block's length and its complement that disagree. */
                        memcpy(out + len, "\x00\x12\x34\x56\x78", 5);
                        len += 5;
                        out[5] = (len - 8) >> 16;
                        out[6] = (len - 8) >> 8;
                        out[7] = len - 8;
                }
                assert_int_equal(decode_status(NULL, out, len, NULL), -E2BIG);
                /* With room for all of it, the garbage is reached. */
                rkl_spdy_limits roomy = {.max_header_bytes = n};
                size_t frames;
                assert_int_equal(decode_status(&roomy, out, len, &frames), garbage ? -EPROTO : 0);
                assert_int_equal(frames, !garbage);
                deflateEnd(&z.z);
        }
        free(plain);
        free(out);
}

/* Header blocks, each the whole plain block of a SYN_STREAM on stream 1, that must fail. */
static void malformed_header_blocks(void **state)
{
#define BLOCK(s)                                                                                   \
        {                                                                                          \
                s, sizeof(s) - 1                                                                   \
        }
        static const struct {
                const char *plain;
                size_t len;
        } bad[] = {
            BLOCK(""),                                             /* no count */
            BLOCK("\0\0\0"),                                       /* short count */
            BLOCK("\0\0\0\1"),                                     /* count runs past */
            BLOCK("\0\0\0\1\0\0\0\5ab\0\0\0\0"),                   /* name runs past */
            BLOCK("\0\0\0\1\0\0\0\1a\0\0\0\5ab"),                  /* value runs past */
            BLOCK("\0\0\0\1\0\0\0\0\0\0\0\1v"),                    /* empty name */
            BLOCK("\0\0\0\1\0\0\0\4Host\0\0\0\1v"),                /* upper case */
            BLOCK("\0\0\0\1\0\0\0\3a\0b\0\0\0\1v"),                /* NUL in name */
            BLOCK("\0\0\0\2\0\0\0\1a\0\0\0\1v\0\0\0\1a\0\0\0\1w"), /* duplicate */
            BLOCK("\0\0\0\1\0\0\0\1a\0\0\0\2\0v"),                 /* leading NUL */
            BLOCK("\0\0\0\1\0\0\0\1a\0\0\0\2v\0"),                 /* trailing NUL */
            BLOCK("\0\0\0\1\0\0\0\1a\0\0\0\4v\0\0w"),              /* empty value part */
            BLOCK("\0\0\0\1\0\0\0\1a\0\0\0\1vX"),                  /* bytes after */
            BLOCK("\0\0\0\0\0"),                                   /* bytes after */
        };
        uint8_t out[512];
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                deflater z;
                deflater_init(&z, NULL);
                size_t len = put_block_frame(out, sizeof(out), &z, RKL_SPDY_SYN_STREAM, syn1,
                                             sizeof(syn1), bad[i].plain, bad[i].len, Z_SYNC_FLUSH);
                if (decode_status(NULL, out, len, NULL) != -EPROTO)
                        fail_msg("block %zu was not refused", i);
                deflateEnd(&z.z);
        }

        /* The same machinery makes good blocks: the one below passes, empty value and all. */
        static const char good[] = "\0\0\0\2\0\0\0\1a\0\0\0\0\0\0\0\1b\0\0\0\3x\0y";
        deflater z;
        deflater_init(&z, NULL);
        size_t len = put_block_frame(out, sizeof(out), &z, RKL_SPDY_SYN_STREAM, syn1, sizeof(syn1),
                                     good, sizeof(good) - 1, Z_SYNC_FLUSH);
        _cleanup_strv_free_ char **got = decode_all(out, len, 0, false);
        assert_string_equal(got[0], "SYN_STREAM id=1 assoc=0 pri=0 flags=0 {a=,b=x\\x00y}");
        deflateEnd(&z.z);

        /* A block that ends the zlib stream, one primed with another dictionary, and bytes
         * that are not zlib. */
        deflater_init(&z, NULL);
        len = put_block_frame(out, sizeof(out), &z, RKL_SPDY_SYN_STREAM, syn1, sizeof(syn1), good,
                              sizeof(good) - 1, Z_FINISH);
        assert_int_equal(decode_status(NULL, out, len, NULL), -EPROTO);
        deflateEnd(&z.z);
        deflater_init(&z, "not SPDY's dictionary");
        len = put_block_frame(out, sizeof(out), &z, RKL_SPDY_SYN_STREAM, syn1, sizeof(syn1), good,
                              sizeof(good) - 1, Z_SYNC_FLUSH);
        assert_int_equal(decode_status(NULL, out, len, NULL), -EPROTO);
        deflateEnd(&z.z);
        static const uint8_t not_zlib[] = {0x80, 3, 0, 2, 0,   0,   0,   8,
                                           0,    0, 0, 1, 'a', 'b', 'c', 'd'};
        assert_int_equal(decode_status(NULL, not_zlib, sizeof(not_zlib), NULL), -EPROTO);
        /* A SYN_STREAM with no block at all. */
        static const uint8_t no_block[] = {0x80, 3, 0, 1, 0, 0, 0, 10, 0,
                                           0,    0, 1, 0, 0, 0, 0, 0,  0};
        assert_int_equal(decode_status(NULL, no_block, sizeof(no_block), NULL), -EPROTO);
}

/* Frames that are wrong in their fixed parts. */
static void malformed_frames(void **state)
{
        static const struct {
                const char *what;
                uint8_t b[24];
                size_t len;
        } bad[] = {
            {"version 2", {0x80, 2, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1}, 12},
            {"an unknown type of version 4", {0x80, 4, 0, 0x20, 0, 0, 0, 0}, 8},
            {"DATA on stream 0", {0, 0, 0, 0, 0, 0, 0, 1, 'x'}, 9},
            {"PING of 5", {0x80, 3, 0, 6, 0, 0, 0, 5, 0, 0, 0, 1, 0}, 13},
            {"PING with flags", {0x80, 3, 0, 6, 1, 0, 0, 4, 0, 0, 0, 1}, 12},
            {"RST_STREAM of 7", {0x80, 3, 0, 3, 0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0}, 15},
            {"RST_STREAM on 0", {0x80, 3, 0, 3, 0, 0, 0, 8, 0x80, 0, 0, 0, 0, 0, 0, 1}, 16},
            {"RST_STREAM status 0", {0x80, 3, 0, 3, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0}, 16},
            {"RST_STREAM with flags", {0x80, 3, 0, 3, 1, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 1}, 16},
            {"SETTINGS of 11", {0x80, 3, 0, 4, 0, 0, 0, 11, 0, 0, 0, 1, 0, 0, 0, 7, 0, 0, 1}, 19},
            {"SETTINGS of 3", {0x80, 3, 0, 4, 0, 0, 0, 3, 0, 0, 0}, 11},
            {"SETTINGS count 2 for 1",
             {0x80, 3, 0, 4, 0, 0, 0, 12, 0, 0, 0, 2, 0, 0, 0, 7, 0, 0, 1, 0},
             20},
            {"GOAWAY of 4 (SPDY/2's)", {0x80, 3, 0, 7, 0, 0, 0, 4, 0, 0, 0, 1}, 12},
            {"GOAWAY with flags", {0x80, 3, 0, 7, 1, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0}, 16},
            {"WINDOW_UPDATE of 4", {0x80, 3, 0, 9, 0, 0, 0, 4, 0, 0, 0, 1}, 12},
            {"WINDOW_UPDATE delta 0", {0x80, 3, 0, 9, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0}, 16},
            {"WINDOW_UPDATE delta of the reserved bit only",
             {0x80, 3, 0, 9, 0, 0, 0, 8, 0, 0, 0, 1, 0x80, 0, 0, 0},
             16},
            {"WINDOW_UPDATE with flags", {0x80, 3, 0, 9, 1, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 1}, 16},
            {"SYN_STREAM of 9", {0x80, 3, 0, 1, 0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 0, 0}, 17},
            {"SYN_REPLY of 3", {0x80, 3, 0, 2, 0, 0, 0, 3, 0, 0, 1}, 11},
            {"HEADERS of 3", {0x80, 3, 0, 8, 0, 0, 0, 3, 0, 0, 1}, 11},
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (decode_status(NULL, bad[i].b, bad[i].len, NULL) != -EPROTO)
                        fail_msg("%s was not refused", bad[i].what);

        /* Stream 0 where a header block follows: refused before the block is read. */
        static const rkl_spdy_header one[] = {H("a", "b")};
        rkl_spdy_frame fr = {
            .type = RKL_SPDY_SYN_REPLY, .stream_id = 1, .headers = one, .n_headers = 1};
        for (int t = 0; t < 3; t++) {
                static const rkl_spdy_type types[] = {RKL_SPDY_SYN_STREAM, RKL_SPDY_SYN_REPLY,
                                                      RKL_SPDY_HEADERS};
                fr.type = types[t];
                size_t len;
                uint8_t *buf = encode_all(&fr, 1, &len);
                buf[8] = buf[9] = buf[10] = 0;
                buf[11] = 0;
                assert_int_equal(decode_status(NULL, buf, len, NULL), -EPROTO);
                free(buf);
        }
}

/* Unknown control frames (CREDENTIAL, SPDY/2's NOOP, made-up types), of any length, are
 * skipped between frames, whole or split anywhere. */
static void unknown_control_skipped(void **state)
{
        size_t len;
        uint8_t *good = encode_all(server_frames, 3, &len);
        size_t total = 0, skip_big = 20u << 20;
        uint8_t *buf = rkl_xnew0(uint8_t, len + 64 + 8 + skip_big);
        static const uint8_t credential[] = {0x80, 3, 0, 10, 0, 0, 0, 4, 1, 2, 3, 4};
        static const uint8_t noop[] = {0x80, 3, 0, 5, 0, 0, 0, 0};
        static const uint8_t other[] = {0x80, 3, 0xff, 0xff, 0xff, 0, 0, 2, 9, 9};

        memcpy(buf, credential, sizeof(credential));
        total += sizeof(credential);
        memcpy(buf + total, good, len);
        total += len;
        memcpy(buf + total, noop, sizeof(noop));
        total += sizeof(noop);
        memcpy(buf + total, other, sizeof(other));
        total += sizeof(other);
        check_splits(buf, total, false);
        _cleanup_strv_free_ char **want = describe_all(server_frames, 3, false);
        _cleanup_strv_free_ char **got = decode_all(buf, total, 0, false);
        assert_strv_equal(got, (const char *const *)want);

        /* Not buffered, so not limited: 2^24-1 bytes skipped with max_frame 16; then a
         * PING passes and a DATA frame of 17 bytes does not. */
        rkl_spdy_limits lim = {.max_frame = 16};
        static const uint8_t big[8] = {0x80, 3, 0, 11, 0, 0xff, 0xff, 0xff};
        static const uint8_t ping_data[] = {0x80, 3, 0, 6, 0, 0, 0, 4, 0, 0,
                                            0,    1, 0, 0, 0, 1, 0, 0, 0, 17};
        memcpy(buf, big, 8);
        memcpy(buf + 8 + 0xffffff, ping_data, sizeof(ping_data));
        size_t frames;
        assert_int_equal(decode_status(&lim, buf, 8 + 0xffffff + sizeof(ping_data), &frames),
                         -E2BIG);
        assert_int_equal(frames, 1);
        free(buf);
        free(good);
}

/* The encoder refuses what it cannot encode and what a peer would refuse, leaving the
 * buffer as it was; then it still works. */
static void encoder_refusals(void **state)
{
        static const rkl_spdy_header empty_name[] = {{.name = "", .value = "v", .value_len = 1}};
        static const rkl_spdy_header upper[] = {H("Host", "x")};
        static const rkl_spdy_header dup[] = {H("a", "1"), H("b", "2"), H("a", "3")};
        static const rkl_spdy_header nul_end[] = {H("a", "x\0")};
        static const rkl_spdy_setting wide_id[] = {{.id = 0x1000000}};
        static const uint8_t byte = 0;
        const rkl_spdy_frame bad[] = {
            {.type = RKL_SPDY_DATA, .stream_id = 0x80000000, .data = &byte, .len = 1},
            {.type = RKL_SPDY_DATA, .stream_id = 0},
            {.type = RKL_SPDY_DATA, .stream_id = 1, .data = &byte, .len = 1 << 24},
            {.type = RKL_SPDY_SYN_STREAM, .stream_id = 1, .priority = 8},
            {.type = RKL_SPDY_SYN_STREAM, .stream_id = 1, .assoc_stream_id = 0x80000000},
            {.type = RKL_SPDY_SYN_STREAM, .stream_id = 0},
            {.type = RKL_SPDY_SYN_REPLY, .stream_id = 1, .headers = empty_name, .n_headers = 1},
            {.type = RKL_SPDY_SYN_REPLY, .stream_id = 1, .headers = upper, .n_headers = 1},
            {.type = RKL_SPDY_HEADERS, .stream_id = 1, .headers = dup, .n_headers = 3},
            {.type = RKL_SPDY_HEADERS, .stream_id = 1, .headers = nul_end, .n_headers = 1},
            {.type = RKL_SPDY_RST_STREAM, .stream_id = 1, .status = 0},
            {.type = RKL_SPDY_RST_STREAM, .stream_id = 0, .status = 1},
            {.type = RKL_SPDY_PING, .flags = 1},
            {.type = RKL_SPDY_GOAWAY, .stream_id = 0x80000000},
            {.type = RKL_SPDY_WINDOW_UPDATE, .stream_id = 1, .delta = 0},
            {.type = RKL_SPDY_WINDOW_UPDATE, .stream_id = 1, .delta = 0x80000000},
            {.type = RKL_SPDY_SETTINGS, .settings = wide_id, .n_settings = 1},
            {.type = (rkl_spdy_type)5},
        };
        rkl_spdy_encoder *e = NULL;
        uint8_t *buf = NULL;
        size_t len = 0, cap = 0;
        assert_int_equal(rkl_spdy_encoder_new(&e), 0);
        assert_int_equal(rkl_spdy_encode(e, &server_frames[2], &buf, &len, &cap), 0);
        size_t first = len;
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                if (rkl_spdy_encode(e, &bad[i], &buf, &len, &cap) != -EINVAL)
                        fail_msg("frame %zu was not refused", i);
                assert_int_equal(len, first);
        }
        assert_int_equal(rkl_spdy_encode(e, &server_frames[3], &buf, &len, &cap), 0);
        rkl_spdy_encoder_free(e);
        _cleanup_strv_free_ char **got = decode_all(buf, len, 0, false);
        assert_int_equal(rkl_strv_length(got), 2);
        free(buf);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(round_trip_every_type),
            cmocka_unit_test(every_split_point),
            cmocka_unit_test(nothing_to_read),
            cmocka_unit_test(header_blocks_share_one_stream),
            cmocka_unit_test(golden_kubelet_exec),
            cmocka_unit_test(golden_kubelet_portforward),
            cmocka_unit_test(encoder_for_go),
            cmocka_unit_test(limits),
            cmocka_unit_test(zlib_bomb),
            cmocka_unit_test(malformed_header_blocks),
            cmocka_unit_test(malformed_frames),
            cmocka_unit_test(unknown_control_skipped),
            cmocka_unit_test(encoder_refusals),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
