/* WebSocket framing (RFC 6455), the transport client-go's and the e2e suite's WebSocket
 * clients speak after the HTTP upgrade. Only the codec lives here: bytes to frames and frames
 * to bytes, the handshake's accept value, and base64 for the base64 channel protocols. The
 * channels, the close handshake and the streams are the session's (ws-session.c).
 *
 * The decoder reads bytes from a peer that is not trusted: every frame is checked against
 * RFC 6455 section 5 and against the limits given at creation before its payload is
 * buffered, so no input makes it read or allocate without bound. No extension is ever
 * agreed, so the reserved bits must be 0. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

typedef enum rkl_ws_opcode {
        RKL_WS_CONTINUATION = 0x0,
        RKL_WS_TEXT = 0x1,
        RKL_WS_BINARY = 0x2,
        RKL_WS_CLOSE = 0x8,
        RKL_WS_PING = 0x9,
        RKL_WS_PONG = 0xa,
} rkl_ws_opcode;

/* Close status codes (RFC 6455 7.4.1). */
#define RKL_WS_CLOSE_NORMAL         1000
#define RKL_WS_CLOSE_GOING_AWAY     1001
#define RKL_WS_CLOSE_PROTOCOL_ERROR 1002
#define RKL_WS_CLOSE_NO_STATUS      1005 /* none was given: never sent */
#define RKL_WS_CLOSE_INVALID_DATA   1007
#define RKL_WS_CLOSE_TOO_BIG        1009
#define RKL_WS_CLOSE_INTERNAL       1011

/* A control frame's payload is at most this (5.5), a close reason 2 bytes less. */
#define RKL_WS_CONTROL_MAX 125

/* One frame, its payload unmasked. Pointers stay valid until the decoder's next call. */
typedef struct rkl_ws_frame {
        rkl_ws_opcode opcode;
        bool fin;
        /* Data frames (TEXT, BINARY, CONTINUATION): the message's type (the opcode of its
         * first frame), and whether this frame starts it. */
        rkl_ws_opcode message;
        bool first;
        const uint8_t *data;
        size_t len;
        /* CLOSE: the status (RKL_WS_CLOSE_NO_STATUS when the payload is empty) and the
         * reason, UTF-8, not NUL-terminated. */
        uint16_t close_code;
        const char *reason;
        size_t reason_len;
} rkl_ws_frame;

typedef struct rkl_ws_limits {
        size_t max_frame;     /* largest frame payload accepted; 0: 1 MiB */
        uint64_t max_message; /* largest message, all its fragments; 0: 16 MiB */
} rkl_ws_limits;

typedef struct rkl_ws_decoder rkl_ws_decoder;

/* masked: the peer is a client, whose frames must all be masked (5.1); false: a server's,
 * which must not be. limits may be NULL for the defaults. -ENOMEM. */
int rkl_ws_decoder_new(const rkl_ws_limits *limits, bool masked, rkl_ws_decoder **ret);
rkl_ws_decoder *rkl_ws_decoder_free(rkl_ws_decoder *d);

/* Reads from buf[0..len), as rkl_spdy_decode does: *consumed is what it took (the decoder
 * keeps a partial frame itself), 1 with *frame filled when a whole frame was read, 0 when it
 * needs more, or a negative errno with a message in err:
 *   -EPROTO   malformed: reserved bits set, an unknown opcode, a control frame fragmented or
 *             over 125 bytes, a frame masked when it must not be or the other way round, a
 *             64-bit length with its top bit set, a continuation with no message begun or a
 *             new message before the last one ended, a close payload of 1 byte or with a
 *             status that may not be sent (7.4);
 *   -EILSEQ   a close reason that is not UTF-8 (text messages are not checked: the channel
 *             protocols carry only base64 in them, which the session checks);
 *   -E2BIG    a frame or a message over the limits.
 * rkl_ws_close_code() says which close status each calls for. After an error later calls
 * fail with the same code. */
int rkl_ws_decode(rkl_ws_decoder *d, const uint8_t *buf, size_t len, size_t *consumed,
                  rkl_ws_frame *frame, rkl_error *err);

/* The close status for an error of rkl_ws_decode: 1002, 1007, 1009 (1011 for others). */
uint16_t rkl_ws_close_code(int r);

/* The most bytes a frame header takes. */
#define RKL_WS_HEADER_MAX 14

/* Writes the header of a frame of len payload bytes at hdr and returns its length. mask: the
 * 4-byte key for a client's frame (the caller masks the payload with rkl_ws_mask()), NULL for
 * a server's. */
size_t rkl_ws_header(uint8_t hdr[static RKL_WS_HEADER_MAX], rkl_ws_opcode op, bool fin,
                     uint64_t len, const uint8_t *mask);
/* XORs buf with key, as if buf started at byte offset of the payload. */
void rkl_ws_mask(uint8_t *buf, size_t len, const uint8_t key[static 4], uint64_t offset);

/* Appends a whole frame to *buf (of *len bytes, *cap allocated, grown with realloc; *buf may
 * start NULL), masked with mask unless it is NULL. -EINVAL for a control frame that is not
 * fin or is over 125 bytes, or an opcode RFC 6455 does not define. */
int rkl_ws_encode(rkl_ws_opcode op, bool fin, const uint8_t *mask, const void *data, size_t n,
                  uint8_t **buf, size_t *len, size_t *cap);
/* A CLOSE frame with status code and reason (cut to what fits, at a UTF-8 boundary). */
int rkl_ws_encode_close(uint16_t code, const char *reason, const uint8_t *mask, uint8_t **buf,
                        size_t *len, size_t *cap);

/* True when a status may be sent in a CLOSE frame (7.4.1, 7.4.2). */
bool rkl_ws_close_code_valid(uint16_t code);

/* Sec-WebSocket-Accept for a Sec-WebSocket-Key: base64 of the SHA-1 of the key and RFC
 * 6455's GUID. */
#define RKL_WS_ACCEPT_LEN 28
void rkl_ws_accept(const char *key, size_t key_len, char ret[static RKL_WS_ACCEPT_LEN + 1]);
/* A key is the base64 of 16 bytes (4.2.1). */
bool rkl_ws_key_valid(const char *key, size_t len);

/* Base64, standard alphabet, padded. encode writes 4 * ceil(n / 3) characters (no NUL) and
 * returns their count. decode takes whole groups of 4 (n a multiple of 4; padding only in
 * the last group) and returns the bytes written to dst (room for 3 * n / 4), or -EINVAL. */
#define RKL_WS_BASE64_LEN(n) (4 * (((n) + 2) / 3))
size_t rkl_ws_base64_encode(const void *src, size_t n, char *dst);
ssize_t rkl_ws_base64_decode(const char *src, size_t n, uint8_t *dst);
