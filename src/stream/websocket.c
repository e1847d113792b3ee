/* RFC 6455 framing: the decoder (a state machine over the header, then the payload, kept
 * across calls), the encoder, the handshake's accept value and base64. */
#include "websocket.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/utf8.h"
#include "base/banned.h"

#define DEFAULT_MAX_FRAME   (1u << 20)
#define DEFAULT_MAX_MESSAGE (16u << 20)
#define GUID                "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

struct rkl_ws_decoder {
        rkl_ws_limits limits;
        bool masked;
        int error; /* sticky */
        char error_msg[128];

        uint8_t hdr[RKL_WS_HEADER_MAX];
        size_t hdr_len;
        bool have_header; /* hdr parsed: the payload is being read */
        rkl_ws_opcode opcode;
        bool fin;
        uint8_t key[4];
        uint64_t len; /* the payload's */

        uint8_t *payload;
        size_t payload_len, payload_cap;

        bool in_message; /* a fragmented message has begun and not ended */
        rkl_ws_opcode message;
        uint64_t message_len;
};

int rkl_ws_decoder_new(const rkl_ws_limits *limits, bool masked, rkl_ws_decoder **ret)
{
        rkl_ws_decoder *d = calloc(1, sizeof(*d));
        if (!d)
                return -ENOMEM;
        if (limits)
                d->limits = *limits;
        if (!d->limits.max_frame)
                d->limits.max_frame = DEFAULT_MAX_FRAME;
        if (!d->limits.max_message)
                d->limits.max_message = DEFAULT_MAX_MESSAGE;
        d->masked = masked;
        *ret = d;
        return 0;
}

rkl_ws_decoder *rkl_ws_decoder_free(rkl_ws_decoder *d)
{
        if (d) {
                free(d->payload);
                free(d);
        }
        return NULL;
}

static int fail(rkl_ws_decoder *d, int r, rkl_error *err, const char *fmt, ...) _printf_(4, 5);
static int fail(rkl_ws_decoder *d, int r, rkl_error *err, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->error_msg, sizeof(d->error_msg), fmt, ap);
        va_end(ap);
        d->error = r;
        return rkl_error_set(err, r, "websocket: %s", d->error_msg);
}

bool rkl_ws_close_code_valid(uint16_t code)
{
        /* 1004-1006 and 1015 are reserved, 1012-2999 are for future RFCs. */
        return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1011) ||
               (code >= 3000 && code <= 4999);
}

uint16_t rkl_ws_close_code(int r)
{
        switch (r) {
        case -EPROTO:
                return RKL_WS_CLOSE_PROTOCOL_ERROR;
        case -EILSEQ:
                return RKL_WS_CLOSE_INVALID_DATA;
        case -E2BIG:
                return RKL_WS_CLOSE_TOO_BIG;
        default:
                return RKL_WS_CLOSE_INTERNAL;
        }
}

/* The header is whole once its length bytes and key are there: how long it is, or 0 when
 * more bytes are needed. */
static size_t header_size(const uint8_t *h, size_t n)
{
        if (n < 2)
                return 0;
        size_t need = 2 +
                      ((h[1] & 0x7f) == 126   ? 2
                       : (h[1] & 0x7f) == 127 ? 8
                                              : 0) +
                      ((h[1] & 0x80) ? 4 : 0);
        return n >= need ? need : 0;
}

static int header_parse(rkl_ws_decoder *d, rkl_error *err)
{
        const uint8_t *h = d->hdr;
        bool masked = h[1] & 0x80;
        size_t off = 2;
        d->fin = h[0] & 0x80;
        d->opcode = h[0] & 0x0f;
        if (h[0] & 0x70)
                return fail(d, -EPROTO, err, "reserved bits 0x%02x set: no extension was agreed",
                            h[0] & 0x70);
        bool control = d->opcode & 0x8;
        if (d->opcode != RKL_WS_CONTINUATION && d->opcode != RKL_WS_TEXT &&
            d->opcode != RKL_WS_BINARY && d->opcode != RKL_WS_CLOSE && d->opcode != RKL_WS_PING &&
            d->opcode != RKL_WS_PONG)
                return fail(d, -EPROTO, err, "unknown opcode 0x%x", (unsigned)d->opcode);
        if (masked != d->masked)
                return fail(d, -EPROTO, err,
                            d->masked ? "a client's frame is not masked"
                                      : "a server's frame is masked");
        d->len = h[1] & 0x7f;
        if (d->len == 126) {
                d->len = (uint64_t)h[2] << 8 | h[3];
                off = 4;
        } else if (d->len == 127) {
                d->len = 0;
                for (int i = 0; i < 8; i++)
                        d->len = d->len << 8 | h[2 + i];
                off = 10;
                if (d->len >> 63)
                        return fail(d, -EPROTO, err, "a 64-bit length with its top bit set");
        }
        if (masked)
                memcpy(d->key, h + off, 4);
        if (control && (!d->fin || d->len > RKL_WS_CONTROL_MAX))
                return fail(d, -EPROTO, err, "control frame 0x%x %s", (unsigned)d->opcode,
                            !d->fin ? "fragmented" : "over 125 bytes");
        if (d->opcode == RKL_WS_CONTINUATION && !d->in_message)
                return fail(d, -EPROTO, err, "a continuation frame with no message begun");
        if ((d->opcode == RKL_WS_TEXT || d->opcode == RKL_WS_BINARY) && d->in_message)
                return fail(d, -EPROTO, err, "a new message before the last one ended");
        if (d->len > d->limits.max_frame)
                return fail(d, -E2BIG, err, "a frame of %llu bytes is over the limit of %zu",
                            (unsigned long long)d->len, d->limits.max_frame);
        if (!control) {
                uint64_t so_far = d->opcode == RKL_WS_CONTINUATION ? d->message_len : 0;
                if (so_far + d->len > d->limits.max_message)
                        return fail(d, -E2BIG, err,
                                    "a message of more than %llu bytes is over the limit of %llu",
                                    (unsigned long long)(so_far + d->len),
                                    (unsigned long long)d->limits.max_message);
        }
        if (d->len > d->payload_cap) {
                uint8_t *p = realloc(d->payload, d->len);
                if (!p)
                        return fail(d, -ENOMEM, err, "out of memory");
                d->payload = p;
                d->payload_cap = d->len;
        }
        d->payload_len = 0;
        d->have_header = true;
        return 0;
}

/* The whole frame is in: its fields, and the message's state. */
static int frame_done(rkl_ws_decoder *d, rkl_ws_frame *f, rkl_error *err)
{
        *f = (rkl_ws_frame){
            .opcode = d->opcode, .fin = d->fin, .data = d->payload, .len = d->payload_len};
        d->have_header = false;
        d->hdr_len = 0;
        if (d->opcode == RKL_WS_CLOSE) {
                f->close_code = RKL_WS_CLOSE_NO_STATUS;
                if (f->len == 1)
                        return fail(d, -EPROTO, err, "a close frame of 1 byte");
                if (f->len >= 2) {
                        f->close_code = (uint16_t)(d->payload[0] << 8 | d->payload[1]);
                        f->reason = (const char *)d->payload + 2;
                        f->reason_len = f->len - 2;
                        if (!rkl_ws_close_code_valid(f->close_code))
                                return fail(d, -EPROTO, err, "close status %u may not be sent",
                                            (unsigned)f->close_code);
                        if (!rkl_utf8_is_valid(f->reason, f->reason_len))
                                return fail(d, -EILSEQ, err, "a close reason that is not UTF-8");
                }
                return 1;
        }
        if (d->opcode & 0x8)
                return 1;
        f->first = d->opcode != RKL_WS_CONTINUATION;
        if (f->first) {
                d->message = d->opcode;
                d->message_len = 0;
        }
        f->message = d->message;
        d->message_len += f->len;
        d->in_message = !d->fin;
        return 1;
}

int rkl_ws_decode(rkl_ws_decoder *d, const uint8_t *buf, size_t len, size_t *consumed,
                  rkl_ws_frame *frame, rkl_error *err)
{
        size_t off = 0;
        *consumed = 0;
        if (d->error)
                return rkl_error_set(err, d->error, "websocket: %s", d->error_msg);
        if (!d->have_header) {
                /* A byte at a time until the header is whole: it is at most 14. */
                while (off < len && !header_size(d->hdr, d->hdr_len))
                        d->hdr[d->hdr_len++] = buf[off++];
                *consumed = off;
                if (!header_size(d->hdr, d->hdr_len))
                        return 0;
                int r = header_parse(d, err);
                if (r < 0)
                        return r;
        }
        size_t n = len - off;
        if (n > d->len - d->payload_len)
                n = (size_t)(d->len - d->payload_len);
        if (n > 0) {
                memcpy(d->payload + d->payload_len, buf + off, n);
                if (d->masked)
                        rkl_ws_mask(d->payload + d->payload_len, n, d->key, d->payload_len);
                d->payload_len += n;
                off += n;
        }
        *consumed = off;
        if (d->payload_len < d->len)
                return 0;
        return frame_done(d, frame, err);
}

void rkl_ws_mask(uint8_t *buf, size_t len, const uint8_t key[static 4], uint64_t offset)
{
        for (size_t i = 0; i < len; i++)
                buf[i] ^= key[(offset + i) & 3];
}

size_t rkl_ws_header(uint8_t hdr[static RKL_WS_HEADER_MAX], rkl_ws_opcode op, bool fin,
                     uint64_t len, const uint8_t *mask)
{
        size_t n = 2;
        hdr[0] = (uint8_t)((fin ? 0x80 : 0) | (op & 0x0f));
        hdr[1] = mask ? 0x80 : 0;
        if (len < 126) {
                hdr[1] |= (uint8_t)len;
        } else if (len <= UINT16_MAX) {
                hdr[1] |= 126;
                hdr[2] = (uint8_t)(len >> 8);
                hdr[3] = (uint8_t)len;
                n = 4;
        } else {
                hdr[1] |= 127;
                for (int i = 0; i < 8; i++)
                        hdr[2 + i] = (uint8_t)(len >> (56 - 8 * i));
                n = 10;
        }
        if (mask) {
                memcpy(hdr + n, mask, 4);
                n += 4;
        }
        return n;
}

static void append(uint8_t **buf, size_t *len, size_t *cap, const void *p, size_t n)
{
        if (*len + n > *cap) {
                *cap = (*len + n) * 2;
                *buf = rkl_xrealloc(*buf, *cap);
        }
        if (n > 0)
                memcpy(*buf + *len, p, n);
        *len += n;
}

int rkl_ws_encode(rkl_ws_opcode op, bool fin, const uint8_t *mask, const void *data, size_t n,
                  uint8_t **buf, size_t *len, size_t *cap)
{
        uint8_t hdr[RKL_WS_HEADER_MAX];
        bool control = op & 0x8;
        if (op != RKL_WS_CONTINUATION && op != RKL_WS_TEXT && op != RKL_WS_BINARY &&
            op != RKL_WS_CLOSE && op != RKL_WS_PING && op != RKL_WS_PONG)
                return -EINVAL;
        if (control && (!fin || n > RKL_WS_CONTROL_MAX))
                return -EINVAL;
        append(buf, len, cap, hdr, rkl_ws_header(hdr, op, fin, n, mask));
        size_t at = *len;
        append(buf, len, cap, data, n);
        if (mask)
                rkl_ws_mask(*buf + at, n, mask, 0);
        return 0;
}

int rkl_ws_encode_close(uint16_t code, const char *reason, const uint8_t *mask, uint8_t **buf,
                        size_t *len, size_t *cap)
{
        uint8_t p[RKL_WS_CONTROL_MAX];
        size_t n = reason ? strlen(reason) : 0;
        if (n > sizeof(p) - 2) {
                n = sizeof(p) - 2;
                while (n > 0 && ((uint8_t)reason[n] & 0xc0) == 0x80) /* not inside a character */
                        n--;
        }
        p[0] = (uint8_t)(code >> 8);
        p[1] = (uint8_t)code;
        if (n > 0)
                memcpy(p + 2, reason, n);
        return rkl_ws_encode(RKL_WS_CLOSE, true, mask, p, 2 + n, buf, len, cap);
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t rkl_ws_base64_encode(const void *src, size_t n, char *dst)
{
        const uint8_t *s = src;
        size_t o = 0;
        for (size_t i = 0; i < n; i += 3) {
                uint32_t v = (uint32_t)s[i] << 16;
                if (i + 1 < n)
                        v |= (uint32_t)s[i + 1] << 8;
                if (i + 2 < n)
                        v |= s[i + 2];
                dst[o++] = b64[v >> 18];
                dst[o++] = b64[(v >> 12) & 63];
                dst[o++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
                dst[o++] = i + 2 < n ? b64[v & 63] : '=';
        }
        return o;
}

static int b64_value(char c)
{
        const char *p = c ? strchr(b64, c) : NULL;
        return p ? (int)(p - b64) : -1;
}

ssize_t rkl_ws_base64_decode(const char *src, size_t n, uint8_t *dst)
{
        size_t o = 0;
        if (n % 4)
                return -EINVAL;
        for (size_t i = 0; i < n; i += 4) {
                bool last = i + 4 == n;
                int pad = src[i + 3] == '=' ? (src[i + 2] == '=' ? 2 : 1) : 0;
                if (pad && !last)
                        return -EINVAL;
                uint32_t v = 0;
                for (int k = 0; k < 4 - pad; k++) {
                        int x = b64_value(src[i + k]);
                        if (x < 0)
                                return -EINVAL;
                        v |= (uint32_t)x << (18 - 6 * k);
                }
                dst[o++] = (uint8_t)(v >> 16);
                if (pad < 2)
                        dst[o++] = (uint8_t)(v >> 8);
                if (pad < 1)
                        dst[o++] = (uint8_t)v;
        }
        return (ssize_t)o;
}

bool rkl_ws_key_valid(const char *key, size_t len)
{
        uint8_t raw[18];
        return len == 24 && rkl_ws_base64_decode(key, len, raw) == 16;
}

void rkl_ws_accept(const char *key, size_t key_len, char ret[static RKL_WS_ACCEPT_LEN + 1])
{
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned md_len = 0;
        _cleanup_free_ char *s = rkl_xmalloc(key_len + sizeof(GUID));
        memcpy(s, key, key_len);
        memcpy(s + key_len, GUID, sizeof(GUID));
        /* SHA-1 is what RFC 6455 names: no secret rides on it. */
        if (EVP_Digest(s, key_len + sizeof(GUID) - 1, md, &md_len, EVP_sha1(), NULL) != 1 ||
            md_len != 20)
                abort();
        ret[rkl_ws_base64_encode(md, 20, ret)] = 0;
}
