/* Fuzz target for the WebSocket frame decoder (src/stream/websocket.c), on what a client of
 * the streaming server can send. Corpus: tests/fuzz/websocket/, replayed by ctest.
 *
 * Input: byte 0 says how many chunk sizes follow (1 + its low 3 bits), each 2 bytes (little
 * endian, + 1), with bit 3 set, small limits (so that short inputs reach them), and with bit
 * 4 set, a decoder of a server's frames (unmasked), so that mutations need not find the mask
 * bit. The rest is the byte stream, fed in chunks of those sizes, in turn, through one
 * decoder, each call given again what the previous one did not take.
 *
 * Checks (abort on violation): a call takes no more than it is given and all of it when it
 * asks for more; an error is -EPROTO, -EILSEQ or -E2BIG with a message, and the decoder keeps
 * failing with it; every frame's fields are in range (a control frame whole and short, a data
 * frame within the limits, a close status one that may be sent), and the frame re-encodes
 * into bytes that a second decoder reads, whole, as the same frame; and the stream fed at
 * once to a third decoder gives the same frames and the same error. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "bytes.h"
#include "chunks.h"
#include "stream/websocket.h"
#include "base/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every field of f, lengths first, so that two frames compare as bytes. */
static void canon(bytes *b, const rkl_ws_frame *f)
{
        put_u64(b, f->opcode);
        put_u64(b, f->fin);
        put_u64(b, f->message);
        put_u64(b, f->first);
        put_u64(b, f->len);
        put(b, f->data, f->len);
        put_u64(b, f->close_code);
        put_u64(b, f->reason_len);
        put(b, f->reason, f->reason_len);
}

static void check_fields(const rkl_ws_frame *f, const rkl_ws_limits *lim)
{
        if (f->opcode & 8) {
                CHECK(f->fin && f->len <= RKL_WS_CONTROL_MAX);
                CHECK(f->opcode == RKL_WS_CLOSE || f->opcode == RKL_WS_PING ||
                      f->opcode == RKL_WS_PONG);
        } else {
                CHECK(f->opcode <= RKL_WS_BINARY);
                CHECK(f->message == RKL_WS_TEXT || f->message == RKL_WS_BINARY);
                CHECK(f->first == (f->opcode != RKL_WS_CONTINUATION));
                CHECK(f->len <= (lim->max_frame ? lim->max_frame : 1u << 20));
        }
        if (f->opcode == RKL_WS_CLOSE) {
                CHECK(f->close_code == RKL_WS_CLOSE_NO_STATUS ||
                      rkl_ws_close_code_valid(f->close_code));
                CHECK(f->reason_len + (f->close_code == RKL_WS_CLOSE_NO_STATUS ? 0 : 2) == f->len);
        }
}

/* Feeds n bytes through d in pieces of sizes[i % n_sizes] (or all at once without sizes);
 * each frame's canonical bytes go to out, and, with d2, through the encoder (masked with key
 * when d reads a client's frames) and the second decoder. Returns the error d ended with, or
 * 0. */
static int run(rkl_ws_decoder *d, const rkl_ws_limits *lim, const uint8_t *s, size_t n,
               const size_t *sizes, size_t n_sizes, bytes *out, const uint8_t *key,
               rkl_ws_decoder *d2)
{
        size_t off = 0, avail = 0;
        for (size_t i = 0; avail < n || (n == 0 && i == 0); i++) {
                size_t step = n_sizes ? sizes[i % n_sizes] : n;
                avail = step < n - avail ? avail + step : n;
                for (;;) {
                        rkl_ws_frame f;
                        rkl_error err = RKL_ERROR_INIT;
                        size_t used = SIZE_MAX;
                        int r = rkl_ws_decode(d, s + off, avail - off, &used, &f, &err);
                        CHECK(used <= avail - off);
                        off += used;
                        if (r < 0) {
                                CHECK(r == -EPROTO || r == -E2BIG || r == -EILSEQ);
                                CHECK(err.code == r && err.msg[0]);
                                CHECK(rkl_ws_decode(d, s, n, &used, &f, NULL) == r);
                                return r;
                        }
                        if (r == 0) {
                                CHECK(off == avail);
                                break;
                        }
                        CHECK(r == 1);
                        check_fields(&f, lim);
                        size_t mark = out->len;
                        canon(out, &f);
                        if (!d2)
                                continue;

                        uint8_t *enc = NULL;
                        size_t enc_len = 0, enc_cap = 0;
                        CHECK(rkl_ws_encode(f.opcode, f.fin, key, f.data, f.len, &enc, &enc_len,
                                            &enc_cap) == 0);
                        rkl_ws_frame g;
                        size_t used2;
                        CHECK(rkl_ws_decode(d2, enc, enc_len, &used2, &g, NULL) == 1);
                        CHECK(used2 == enc_len);
                        bytes again = {0};
                        canon(&again, &g);
                        CHECK(again.len == out->len - mark);
                        CHECK(memcmp(again.p, out->p + mark, again.len) == 0);
                        free(again.p);
                        free(enc);
                }
        }
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const uint8_t key[4] = {0xa1, 0x05, 0x7f, 0x10};
        size_t sizes[RKL_FUZZ_MAX_CHUNKS], n_sizes;
        size_t head = rkl_fuzz_chunk_sizes(data, size, sizes, &n_sizes);
        if (head == 0)
                return 0;
        rkl_ws_limits lim = {0};
        if (data[0] & 8)
                lim = (rkl_ws_limits){.max_frame = 64, .max_message = 256};
        bool masked = !(data[0] & 16);
        const uint8_t *s = data + head;
        size_t n = size - head;

        rkl_ws_decoder *d = NULL, *d2 = NULL, *d3 = NULL;
        CHECK(rkl_ws_decoder_new(&lim, masked, &d) == 0);
        CHECK(rkl_ws_decoder_new(&lim, masked, &d2) == 0);
        CHECK(rkl_ws_decoder_new(&lim, masked, &d3) == 0);

        bytes chunked = {0}, whole = {0};
        int r1 = run(d, &lim, s, n, sizes, n_sizes, &chunked, masked ? key : NULL, d2);
        int r2 = run(d3, &lim, s, n, NULL, 0, &whole, NULL, NULL);
        CHECK(r1 == r2);
        CHECK(chunked.len == whole.len);
        CHECK(chunked.len == 0 || memcmp(chunked.p, whole.p, chunked.len) == 0);

        free(chunked.p);
        free(whole.p);
        rkl_ws_decoder_free(d);
        rkl_ws_decoder_free(d2);
        rkl_ws_decoder_free(d3);
        return 0;
}
