/* The WebSocket codec (src/stream/websocket.c): RFC 6455's own examples, masking, fragments,
 * control frames, the limits and what a broken peer may send, the handshake's accept value
 * and base64. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "stream/websocket.h"

static const uint8_t KEY[4] = {0x37, 0xfa, 0x21, 0x3d}; /* RFC 6455 5.7's */

typedef struct decoded {
        rkl_ws_frame f[8];
        uint8_t data[8][256];
        int n;
        int r; /* the last call's */
} decoded;

/* Feeds buf to d in chunks of step bytes (0: at once), keeping copies of each frame. */
static void feed(rkl_ws_decoder *d, const uint8_t *buf, size_t len, size_t step, decoded *out)
{
        size_t off = 0;
        out->n = 0;
        out->r = 0;
        while (off < len) {
                size_t n = step && len - off > step ? step : len - off;
                size_t used = 0;
                rkl_error err = RKL_ERROR_INIT;
                rkl_ws_frame f;
                out->r = rkl_ws_decode(d, buf + off, n, &used, &f, &err);
                if (out->r < 0) {
                        assert_non_null(strstr(err.msg, "websocket: "));
                        return;
                }
                assert_true(used <= n);
                if (out->r == 0)
                        assert_int_equal(used, n); /* all of it, when it asks for more */
                off += used;
                if (out->r == 1) {
                        assert_true(out->n < 8);
                        out->f[out->n] = f;
                        if (f.len) /* the first 256 bytes are kept */
                                memcpy(out->data[out->n], f.data, f.len < 256 ? f.len : 256);
                        out->f[out->n].data = out->data[out->n];
                        out->n++;
                }
        }
}

static rkl_ws_decoder *server_decoder(const rkl_ws_limits *l)
{
        rkl_ws_decoder *d;
        assert_int_equal(rkl_ws_decoder_new(l, true, &d), 0);
        return d;
}

static void test_rfc_examples(void **state)
{
        /* 5.7: "Hello", unmasked from a server, and masked from a client. */
        static const uint8_t plain[] = {0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f};
        static const uint8_t masked[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d,
                                         0x7f, 0x9f, 0x4d, 0x51, 0x58};
        static const uint8_t fragmented[] = {0x01, 0x03, 0x48, 0x65, 0x6c, 0x80, 0x02, 0x6c, 0x6f};
        decoded out;
        for (size_t step = 0; step <= 3; step++) {
                rkl_ws_decoder *d;
                assert_int_equal(rkl_ws_decoder_new(NULL, false, &d), 0);
                feed(d, plain, sizeof(plain), step, &out);
                assert_int_equal(out.n, 1);
                assert_int_equal(out.f[0].opcode, RKL_WS_TEXT);
                assert_true(out.f[0].fin && out.f[0].first);
                assert_memory_equal(out.f[0].data, "Hello", 5);
                feed(d, fragmented, sizeof(fragmented), step, &out);
                assert_int_equal(out.n, 2);
                assert_false(out.f[0].fin);
                assert_true(out.f[0].first);
                assert_int_equal(out.f[1].opcode, RKL_WS_CONTINUATION);
                assert_int_equal(out.f[1].message, RKL_WS_TEXT);
                assert_true(out.f[1].fin);
                assert_false(out.f[1].first);
                /* A masked frame from a server is refused. */
                feed(d, masked, sizeof(masked), step, &out);
                assert_int_equal(out.r, -EPROTO);
                rkl_ws_decoder_free(d);

                d = server_decoder(NULL);
                feed(d, masked, sizeof(masked), step, &out);
                assert_int_equal(out.n, 1);
                assert_memory_equal(out.f[0].data, "Hello", 5);
                feed(d, plain, sizeof(plain), step, &out);
                assert_int_equal(out.r, -EPROTO); /* a client's must be masked */
                /* and the error stays */
                feed(d, masked, sizeof(masked), step, &out);
                assert_int_equal(out.r, -EPROTO);
                rkl_ws_decoder_free(d);
        }
        /* Our encoder makes the same bytes. */
        uint8_t *buf = NULL;
        size_t len = 0, cap = 0;
        assert_int_equal(rkl_ws_encode(RKL_WS_TEXT, true, NULL, "Hello", 5, &buf, &len, &cap), 0);
        assert_int_equal(rkl_ws_encode(RKL_WS_TEXT, true, KEY, "Hello", 5, &buf, &len, &cap), 0);
        assert_int_equal(len, sizeof(plain) + sizeof(masked));
        assert_memory_equal(buf, plain, sizeof(plain));
        assert_memory_equal(buf + sizeof(plain), masked, sizeof(masked));
        free(buf);
}

static void test_lengths(void **state)
{
        /* 7-bit, 16-bit and 64-bit lengths, masked, whole and a byte at a time. */
        static const size_t sizes[] = {0, 125, 126, 65535, 65536, 200000};
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
                size_t n = sizes[i];
                uint8_t *p = malloc(n + 1), *buf = NULL;
                size_t len = 0, cap = 0;
                for (size_t k = 0; k < n; k++)
                        p[k] = (uint8_t)(k * 7);
                assert_int_equal(rkl_ws_encode(RKL_WS_BINARY, true, KEY, p, n, &buf, &len, &cap),
                                 0);
                assert_int_equal(len, n + 4 + (n < 126 ? 2 : n <= 65535 ? 4 : 10));
                for (size_t step = 0; step <= 1; step++) {
                        rkl_ws_decoder *d = server_decoder(NULL);
                        size_t off = 0;
                        int r = 0;
                        rkl_ws_frame f;
                        while (off < len) {
                                size_t used, chunk = step ? 1 : len - off;
                                rkl_error err = RKL_ERROR_INIT;
                                r = rkl_ws_decode(d, buf + off, chunk, &used, &f, &err);
                                assert_true(r >= 0);
                                off += used;
                        }
                        assert_int_equal(r, 1);
                        assert_int_equal(f.len, n);
                        if (n)
                                assert_memory_equal(f.data, p, n);
                        rkl_ws_decoder_free(d);
                }
                free(buf);
                free(p);
        }
}

static void test_control_frames(void **state)
{
        uint8_t *buf = NULL;
        size_t len = 0, cap = 0;
        decoded out;
        rkl_ws_decoder *d = server_decoder(NULL);
        /* A ping between two fragments of a message (5.4), then a close with its reason. */
        assert_int_equal(rkl_ws_encode(RKL_WS_BINARY, false, KEY, "ab", 2, &buf, &len, &cap), 0);
        assert_int_equal(rkl_ws_encode(RKL_WS_PING, true, KEY, "hi", 2, &buf, &len, &cap), 0);
        assert_int_equal(rkl_ws_encode(RKL_WS_CONTINUATION, true, KEY, "c", 1, &buf, &len, &cap),
                         0);
        assert_int_equal(rkl_ws_encode_close(1000, "bye", KEY, &buf, &len, &cap), 0);
        feed(d, buf, len, 0, &out);
        assert_int_equal(out.n, 4);
        assert_int_equal(out.f[1].opcode, RKL_WS_PING);
        assert_memory_equal(out.f[1].data, "hi", 2);
        assert_int_equal(out.f[2].message, RKL_WS_BINARY);
        assert_int_equal(out.f[3].opcode, RKL_WS_CLOSE);
        assert_int_equal(out.f[3].close_code, 1000);
        assert_int_equal(out.f[3].reason_len, 3);
        assert_memory_equal(out.f[3].reason, "bye", 3);
        /* An empty close: no status. */
        len = 0;
        assert_int_equal(rkl_ws_encode(RKL_WS_CLOSE, true, KEY, NULL, 0, &buf, &len, &cap), 0);
        feed(d, buf, len, 0, &out);
        assert_int_equal(out.f[0].close_code, RKL_WS_CLOSE_NO_STATUS);
        rkl_ws_decoder_free(d);
        /* The encoder refuses what the decoder would. */
        char big[126] = {0};
        assert_int_equal(rkl_ws_encode(RKL_WS_PING, true, NULL, big, 126, &buf, &len, &cap),
                         -EINVAL);
        assert_int_equal(rkl_ws_encode(RKL_WS_PING, false, NULL, big, 1, &buf, &len, &cap),
                         -EINVAL);
        assert_int_equal(rkl_ws_encode(3, true, NULL, big, 1, &buf, &len, &cap), -EINVAL);
        /* A reason too long for a control frame is cut, not at a character's middle. */
        char reason[200];
        memset(reason, 'x', sizeof(reason));
        memcpy(reason + 122, "\xc3\xa9", 2); /* é across the 123 bytes that fit */
        reason[199] = 0;
        len = 0;
        assert_int_equal(rkl_ws_encode_close(1011, reason, NULL, &buf, &len, &cap), 0);
        assert_int_equal(buf[1], 2 + 122);
        free(buf);
        assert_true(rkl_ws_close_code_valid(1000) && rkl_ws_close_code_valid(4999));
        assert_false(rkl_ws_close_code_valid(1005) || rkl_ws_close_code_valid(1015) ||
                     rkl_ws_close_code_valid(999) || rkl_ws_close_code_valid(2000));
}

/* One frame built by hand: byte 0, then a masked payload of n bytes. */
static size_t raw(uint8_t *out, uint8_t b0, const void *payload, size_t n)
{
        size_t h = rkl_ws_header(out, b0 & 0x0f, b0 & 0x80, n, KEY);
        out[0] = b0;
        memcpy(out + h, payload, n);
        rkl_ws_mask(out + h, n, KEY, 0);
        return h + n;
}

static void expect_error(const uint8_t *buf, size_t len, int r, uint16_t code)
{
        decoded out;
        rkl_ws_limits l = {.max_frame = 1000, .max_message = 1500};
        for (size_t step = 0; step <= 1; step++) {
                rkl_ws_decoder *d = server_decoder(&l);
                feed(d, buf, len, step, &out);
                assert_int_equal(out.r, r);
                assert_int_equal(rkl_ws_close_code(out.r), code);
                rkl_ws_decoder_free(d);
        }
}

static void test_bad_frames(void **state)
{
        uint8_t buf[4096];
        size_t n;
        char big[1001] = {0};
        expect_error(buf, raw(buf, 0xc2, "x", 1), -EPROTO, 1002);   /* RSV1 */
        expect_error(buf, raw(buf, 0x83, "x", 1), -EPROTO, 1002);   /* opcode 3 */
        expect_error(buf, raw(buf, 0x8b, "x", 1), -EPROTO, 1002);   /* opcode 0xb */
        expect_error(buf, raw(buf, 0x09, "x", 1), -EPROTO, 1002);   /* fragmented ping */
        expect_error(buf, raw(buf, 0x89, big, 126), -EPROTO, 1002); /* ping over 125 */
        expect_error(buf, raw(buf, 0x80, "x", 1), -EPROTO, 1002);   /* continuation first */
        n = raw(buf, 0x02, "x", 1);
        expect_error(buf, n + raw(buf + n, 0x82, "y", 1), -EPROTO, 1002);    /* two messages */
        expect_error(buf, raw(buf, 0x88, "x", 1), -EPROTO, 1002);            /* close of 1 byte */
        expect_error(buf, raw(buf, 0x88, "\x03\xed", 2), -EPROTO, 1002);     /* status 1005 */
        expect_error(buf, raw(buf, 0x88, "\x03\xe8\xff", 3), -EILSEQ, 1007); /* not UTF-8 */
        expect_error(buf, raw(buf, 0x82, big, 1001), -E2BIG, 1009);          /* frame over 1000 */
        n = raw(buf, 0x02, big, 1000);
        expect_error(buf, n + raw(buf + n, 0x80, big, 501), -E2BIG, 1009); /* message over */
        /* A 64-bit length with its top bit: refused from the header, nothing buffered. */
        static const uint8_t huge[] = {0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4};
        expect_error(huge, sizeof(huge), -EPROTO, 1002);
        /* A length of 2^40: over the limit before any of it is read. */
        static const uint8_t long_len[] = {0x82, 0xff, 0, 0, 1, 0, 0, 0, 0, 0, 1, 2, 3, 4};
        expect_error(long_len, sizeof(long_len), -E2BIG, 1009);
        assert_int_equal(rkl_ws_close_code(-ENOMEM), 1011);
}

static void test_accept(void **state)
{
        char a[RKL_WS_ACCEPT_LEN + 1];
        const char *key = "dGhlIHNhbXBsZSBub25jZQ==";
        rkl_ws_accept(key, strlen(key), a);
        assert_string_equal(a, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        assert_true(rkl_ws_key_valid(key, strlen(key)));
        assert_false(rkl_ws_key_valid("dGhlIHNhbXBsZSBub25j", 20));     /* 15 bytes */
        assert_false(rkl_ws_key_valid("dGhlIHNhbXBsZSBub25jZQ!!", 24)); /* not base64 */
        assert_false(rkl_ws_key_valid("dGhlIHNhbXBsZSBub25jZXh4", 24)); /* 18 bytes */
}

static void test_base64(void **state)
{
        static const struct {
                const char *raw, *b64;
        } cases[] = {{"", ""},
                     {"f", "Zg=="},
                     {"fo", "Zm8="},
                     {"foo", "Zm9v"},
                     {"foob", "Zm9vYg=="},
                     {"fooba", "Zm9vYmE="},
                     {"foobar", "Zm9vYmFy"}}; /* RFC 4648 10 */
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char enc[16] = {0};
                uint8_t dec[16];
                size_t n = strlen(cases[i].raw);
                assert_int_equal(rkl_ws_base64_encode(cases[i].raw, n, enc), RKL_WS_BASE64_LEN(n));
                assert_string_equal(enc, cases[i].b64);
                assert_int_equal(rkl_ws_base64_decode(enc, strlen(enc), dec), (ssize_t)n);
                assert_memory_equal(dec, cases[i].raw, n);
        }
        uint8_t dec[16];
        assert_int_equal(rkl_ws_base64_decode("Zm9", 3, dec), -EINVAL);      /* not whole */
        assert_int_equal(rkl_ws_base64_decode("Zg==Zm9v", 8, dec), -EINVAL); /* pad inside */
        assert_int_equal(rkl_ws_base64_decode("Zm9*", 4, dec), -EINVAL);     /* alphabet */
        assert_int_equal(rkl_ws_base64_decode("=m9v", 4, dec), -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_rfc_examples),   cmocka_unit_test(test_lengths),
            cmocka_unit_test(test_control_frames), cmocka_unit_test(test_bad_frames),
            cmocka_unit_test(test_accept),         cmocka_unit_test(test_base64),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
