/* SPDY/3.1 framing, the transport kubelet's streaming client speaks after the HTTP upgrade
 * (draft-mbelshe-httpbis-spdy-00 and the 3.1 additions). Only the codec lives here: bytes
 * to frames and frames to bytes, with the header blocks compressed by zlib primed with
 * SPDY/3's dictionary. Streams, flow control and the channel protocols are the session's.
 *
 * A connection has one decoder and one encoder: each holds the zlib stream that spans every
 * header block of its direction, so frames must go through them in wire order.
 *
 * The decoder reads bytes from a peer that is not trusted: every length is checked against
 * what is left and against the limits given at creation, a header block may not inflate
 * past its limit, and no input makes it read or allocate without bound. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define RKL_SPDY_VERSION 3

typedef enum rkl_spdy_type {
        RKL_SPDY_DATA = 0, /* not a control frame type: the decoder reports data frames so */
        RKL_SPDY_SYN_STREAM = 1,
        RKL_SPDY_SYN_REPLY = 2,
        RKL_SPDY_RST_STREAM = 3,
        RKL_SPDY_SETTINGS = 4,
        RKL_SPDY_PING = 6,
        RKL_SPDY_GOAWAY = 7,
        RKL_SPDY_HEADERS = 8,
        RKL_SPDY_WINDOW_UPDATE = 9,
} rkl_spdy_type;

#define RKL_SPDY_FLAG_FIN            0x01
#define RKL_SPDY_FLAG_UNIDIRECTIONAL 0x02 /* SYN_STREAM */
#define RKL_SPDY_FLAG_CLEAR_SETTINGS 0x01 /* SETTINGS */

/* RST_STREAM status codes. */
#define RKL_SPDY_PROTOCOL_ERROR        1
#define RKL_SPDY_INVALID_STREAM        2
#define RKL_SPDY_REFUSED_STREAM        3
#define RKL_SPDY_CANCEL                5
#define RKL_SPDY_INTERNAL_ERROR        6
#define RKL_SPDY_FLOW_CONTROL_ERROR    7
#define RKL_SPDY_STREAM_IN_USE         8
#define RKL_SPDY_STREAM_ALREADY_CLOSED 9
#define RKL_SPDY_FRAME_TOO_LARGE       11

/* SETTINGS ids used here. */
#define RKL_SPDY_SETTINGS_MAX_CONCURRENT_STREAMS 4
#define RKL_SPDY_SETTINGS_INITIAL_WINDOW_SIZE    7

#define RKL_SPDY_DEFAULT_WINDOW 65536u

/* A name/value pair of a header block. SPDY/3 names are lower case; a value may hold several
 * values separated by NUL bytes, so lengths, not terminators, delimit them. */
typedef struct rkl_spdy_header {
        const char *name;
        size_t name_len;
        const char *value;
        size_t value_len;
} rkl_spdy_header;

typedef struct rkl_spdy_setting {
        uint8_t flags;
        uint32_t id; /* 24 bits */
        uint32_t value;
} rkl_spdy_setting;

/* One frame. Which fields mean something depends on type; the others are 0. Pointers in a
 * decoded frame point into the decoder and stay valid until its next call. */
typedef struct rkl_spdy_frame {
        rkl_spdy_type type;
        uint8_t flags;
        /* DATA, SYN_STREAM, SYN_REPLY, RST_STREAM, HEADERS, WINDOW_UPDATE (0: the connection);
         * GOAWAY: the last stream the sender accepted. 31 bits. */
        uint32_t stream_id;
        uint32_t assoc_stream_id; /* SYN_STREAM */
        uint8_t priority;         /* SYN_STREAM, 0 (highest) to 7 */
        uint32_t status;          /* RST_STREAM, GOAWAY */
        uint32_t ping_id;         /* PING */
        uint32_t delta;           /* WINDOW_UPDATE, 1 to 2^31-1 */
        const uint8_t *data;      /* DATA */
        size_t len;
        const rkl_spdy_header *headers; /* SYN_STREAM, SYN_REPLY, HEADERS */
        size_t n_headers;
        const rkl_spdy_setting *settings; /* SETTINGS */
        size_t n_settings;
} rkl_spdy_frame;

/* The first pair of the header block named name (lengths compared exactly, case-sensitive,
 * as SPDY/3 names are lower case), or NULL. */
const rkl_spdy_header *rkl_spdy_frame_header(const rkl_spdy_frame *f, const char *name);

typedef struct rkl_spdy_limits {
        size_t max_frame;        /* largest frame payload accepted; 0: 16 MiB */
        size_t max_header_bytes; /* largest inflated header block; 0: 64 KiB */
        size_t max_headers;      /* most pairs in one block; 0: 128 */
} rkl_spdy_limits;

typedef struct rkl_spdy_decoder rkl_spdy_decoder;

/* limits may be NULL for the defaults. -ENOMEM. */
int rkl_spdy_decoder_new(const rkl_spdy_limits *limits, rkl_spdy_decoder **ret);
rkl_spdy_decoder *rkl_spdy_decoder_free(rkl_spdy_decoder *d);

/* Reads from buf[0..len). Sets *consumed to the bytes taken (the caller drops them and
 * calls again with the rest and whatever arrived since). Returns 1 with *frame filled when a
 * whole frame was read, 0 when more bytes are needed (all of buf may have been taken: the
 * decoder keeps a partial frame itself), or a negative errno with a message in err:
 *   -EPROTO   malformed: a bad version, a length that does not fit the type, a header block
 *             that does not inflate or whose counts run past its end, a stream id of 0
 *             where one is needed, a WINDOW_UPDATE delta of 0, an RST_STREAM status of 0,
 *             flags on RST_STREAM, PING, GOAWAY or WINDOW_UPDATE (SPDY/3 defines none), a
 *             header name that is empty, not lower case or repeated, a value with an empty
 *             NUL-separated part;
 *   -E2BIG    a frame or an inflated header block over the limits;
 *   -ENOMEM.
 * After an error the connection is unusable: the zlib stream is out of step, and later calls
 * fail with the same code. Control frames of unknown types are skipped, as SPDY/3 asks, of
 * any length (they are not buffered). A DATA frame is returned whole: its payload
 * is at most max_frame bytes. */
int rkl_spdy_decode(rkl_spdy_decoder *d, const uint8_t *buf, size_t len, size_t *consumed,
                    rkl_spdy_frame *frame, rkl_error *err);

typedef struct rkl_spdy_encoder rkl_spdy_encoder;

int rkl_spdy_encoder_new(rkl_spdy_encoder **ret);
rkl_spdy_encoder *rkl_spdy_encoder_free(rkl_spdy_encoder *e);

/* Encodes f and appends it to *buf (of *len bytes, *cap allocated; grown with realloc, so
 * *buf may start NULL). Header blocks are compressed with the encoder's zlib stream and a
 * sync flush, so each frame can be sent on its own. -EINVAL for a frame that cannot be
 * encoded (a stream id over 31 bits, a DATA payload over 2^24-1 bytes, a header block with
 * an empty name) or that the decoder above would refuse with -EPROTO, -ENOMEM. On error *len
 * is as it was (*buf may have been reallocated). An -ENOMEM while compressing leaves the
 * zlib stream out of step: later calls fail with -EIO. */
int rkl_spdy_encode(rkl_spdy_encoder *e, const rkl_spdy_frame *f, uint8_t **buf, size_t *len,
                    size_t *cap);
