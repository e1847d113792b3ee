/* Fuzz target for the SPDY/3.1 decoder (src/stream/spdy.c), on what a peer of the streaming
 * server can send. Corpus: tests/fuzz/spdy/, replayed by ctest.
 *
 * Input: byte 0 says how many chunk sizes follow (1 + its low 3 bits), each 2 bytes (little
 * endian, + 1), with bit 3 set, small limits (so that short inputs reach them), and with bit
 * 4 set, header blocks in the clear: the harness deflates the block of each SYN_STREAM,
 * SYN_REPLY and HEADERS frame (through one zlib stream, as a peer would) and fixes its length,
 * so that mutations reach the block parser. The rest is the byte stream. It is fed in chunks
 * of those sizes, in turn, through one decoder, each call given again what the previous one
 * did not take.
 *
 * Checks (abort on violation): a call takes no more than it is given and all of it when it
 * asks for more; an error is -EPROTO or -E2BIG with a message, and the decoder keeps failing
 * with it; every decoded frame's fields are in range, and the frame re-encodes (the encoder
 * takes whatever the decoder accepts) into bytes that a second decoder reads, whole, as the
 * same frame; and the stream fed at once to a third decoder gives the same frames and the
 * same error. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "base/alloc.h"
#include "bytes.h"
#include "chunks.h"
#include "stream/spdy.h"
#include "base/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every field of f, lengths first, so that two frames compare as bytes. */
static void canon(bytes *b, const rkl_spdy_frame *f)
{
        put_u64(b, f->type);
        put_u64(b, f->flags);
        put_u64(b, f->stream_id);
        put_u64(b, f->assoc_stream_id);
        put_u64(b, f->priority);
        put_u64(b, f->status);
        put_u64(b, f->ping_id);
        put_u64(b, f->delta);
        put_u64(b, f->len);
        put(b, f->data, f->len);
        put_u64(b, f->n_headers);
        for (size_t i = 0; i < f->n_headers; i++) {
                put_u64(b, f->headers[i].name_len);
                put(b, f->headers[i].name, f->headers[i].name_len);
                put_u64(b, f->headers[i].value_len);
                put(b, f->headers[i].value, f->headers[i].value_len);
        }
        put_u64(b, f->n_settings);
        for (size_t i = 0; i < f->n_settings; i++) {
                put_u64(b, f->settings[i].flags);
                put_u64(b, f->settings[i].id);
                put_u64(b, f->settings[i].value);
        }
}

static void check_fields(const rkl_spdy_frame *f, const rkl_spdy_limits *lim)
{
        CHECK(f->stream_id <= 0x7fffffff && f->assoc_stream_id <= 0x7fffffff);
        CHECK(f->priority <= 7);
        CHECK(f->type == RKL_SPDY_DATA || f->len == 0);
        CHECK(f->len <= (lim->max_frame ? lim->max_frame : 0xffffff));
        CHECK(f->n_headers <= (lim->max_headers ? lim->max_headers : 128));
        size_t block = 4;
        for (size_t i = 0; i < f->n_headers; i++) {
                CHECK(f->headers[i].name_len > 0);
                CHECK(rkl_spdy_frame_header(f, "") == NULL);
                block += 8 + f->headers[i].name_len + f->headers[i].value_len;
        }
        CHECK(f->n_headers == 0 ||
              block <= (lim->max_header_bytes ? lim->max_header_bytes : 64 * 1024));
        for (size_t i = 0; i < f->n_settings; i++)
                CHECK(f->settings[i].id <= 0xffffff);
        if (f->type == RKL_SPDY_WINDOW_UPDATE)
                CHECK(f->delta > 0 && f->delta <= 0x7fffffff);
}

/* Feeds n bytes through d in pieces of sizes[i % n_sizes] (or all at once without sizes);
 * each frame's canonical bytes go to out, and, with e and d2, through the encoder and the
 * second decoder. Returns the error the decoder ended with, or 0. */
static int run(rkl_spdy_decoder *d, const rkl_spdy_limits *lim, const uint8_t *s, size_t n,
               const size_t *sizes, size_t n_sizes, bytes *out, rkl_spdy_encoder *e,
               rkl_spdy_decoder *d2)
{
        size_t off = 0, avail = 0;
        for (size_t i = 0; avail < n || (n == 0 && i == 0); i++) {
                size_t step = n_sizes ? sizes[i % n_sizes] : n;
                avail = step < n - avail ? avail + step : n;
                for (;;) {
                        rkl_spdy_frame f;
                        rkl_error err = RKL_ERROR_INIT;
                        size_t used = SIZE_MAX;
                        int r = rkl_spdy_decode(d, s + off, avail - off, &used, &f, &err);
                        CHECK(used <= avail - off);
                        off += used;
                        if (r < 0) {
                                CHECK(r == -EPROTO || r == -E2BIG);
                                CHECK(err.code == r && err.msg[0]);
                                CHECK(rkl_spdy_decode(d, s, n, &used, &f, NULL) == r);
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
                        if (!e)
                                continue;

                        uint8_t *enc = NULL;
                        size_t enc_len = 0, enc_cap = 0;
                        CHECK(rkl_spdy_encode(e, &f, &enc, &enc_len, &enc_cap) == 0);
                        rkl_spdy_frame g;
                        size_t used2;
                        CHECK(rkl_spdy_decode(d2, enc, enc_len, &used2, &g, NULL) == 1);
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

static uint32_t get32(const uint8_t *p)
{
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The stream s[0, n) with the header blocks of version-3 SYN_STREAM, SYN_REPLY and HEADERS
 * frames deflated; other bytes as they are. A length past the end takes what is left. */
static void deflate_blocks(const uint8_t *s, size_t n, bytes *out)
{
        z_stream z = {0};
        CHECK(deflateInit(&z, Z_DEFAULT_COMPRESSION) == Z_OK);
        size_t off = 0;
        while (off + 8 <= n) {
                uint32_t w0 = get32(s + off), w1 = get32(s + off + 4);
                size_t len = w1 & 0xffffff, left = n - off - 8;
                size_t fixed = (w0 & 0xffff) == RKL_SPDY_SYN_STREAM ? 10 : 4;
                len = len < left ? len : left;
                bool block =
                    (w0 >> 16) == 0x8003 &&
                    ((w0 & 0xffff) == RKL_SPDY_SYN_STREAM || (w0 & 0xffff) == RKL_SPDY_SYN_REPLY ||
                     (w0 & 0xffff) == RKL_SPDY_HEADERS) &&
                    len >= fixed;
                if (!block) {
                        put(out, s + off, 8 + len);
                        off += 8 + len;
                        continue;
                }
                size_t head = out->len, plain = len - fixed;
                put(out, s + off, 8 + fixed);
                size_t room = deflateBound(&z, plain) + 64;
                put(out, NULL, room);
                out->len -= room;
                z.next_in = (Bytef *)s + off + 8 + fixed;
                z.avail_in = plain;
                z.next_out = out->p + out->len;
                z.avail_out = room;
                int zr = deflate(&z, Z_SYNC_FLUSH);
                /* An empty block after a flush has nothing to add: Z_BUF_ERROR. */
                CHECK(zr == Z_OK || (zr == Z_BUF_ERROR && plain == 0));
                CHECK(z.avail_in == 0 && z.avail_out > 0);
                out->len += room - z.avail_out;
                size_t payload = out->len - head - 8;
                CHECK(payload <= 0xffffff);
                out->p[head + 5] = payload >> 16;
                out->p[head + 6] = payload >> 8;
                out->p[head + 7] = payload;
                off += 8 + len;
        }
        put(out, s + off, n - off);
        deflateEnd(&z);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        size_t sizes[RKL_FUZZ_MAX_CHUNKS], n_sizes;
        size_t head = rkl_fuzz_chunk_sizes(data, size, sizes, &n_sizes);
        if (head == 0)
                return 0;
        rkl_spdy_limits lim = {0};
        if (data[0] & 8)
                lim =
                    (rkl_spdy_limits){.max_frame = 4096, .max_header_bytes = 512, .max_headers = 8};
        const uint8_t *s = data + head;
        size_t n = size - head;
        bytes clear = {0};
        if (data[0] & 16) {
                deflate_blocks(s, n, &clear);
                if (clear.len > 0) {
                        s = clear.p;
                        n = clear.len;
                }
        }

        /* The re-encoded frame is read with the same header limits (its block inflates to the
         * same bytes), but any frame size: this encoder may compress worse than the peer. */
        rkl_spdy_limits lim2 = lim;
        lim2.max_frame = 0;
        rkl_spdy_decoder *d = NULL, *d2 = NULL, *d3 = NULL;
        rkl_spdy_encoder *e = NULL;
        CHECK(rkl_spdy_decoder_new(&lim, &d) == 0);
        CHECK(rkl_spdy_decoder_new(&lim2, &d2) == 0);
        CHECK(rkl_spdy_decoder_new(&lim, &d3) == 0);
        CHECK(rkl_spdy_encoder_new(&e) == 0);

        bytes chunked = {0}, whole = {0};
        int r1 = run(d, &lim, s, n, sizes, n_sizes, &chunked, e, d2);
        int r2 = run(d3, &lim, s, n, NULL, 0, &whole, NULL, NULL);
        CHECK(r1 == r2);
        CHECK(chunked.len == whole.len);
        CHECK(chunked.len == 0 || memcmp(chunked.p, whole.p, chunked.len) == 0);

        free(clear.p);
        free(chunked.p);
        free(whole.p);
        rkl_spdy_encoder_free(e);
        rkl_spdy_decoder_free(d);
        rkl_spdy_decoder_free(d2);
        rkl_spdy_decoder_free(d3);
        return 0;
}
