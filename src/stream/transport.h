/* What a transport sees of a session: SPDY/3.1 (spdy-session.c) and WebSocket (ws-session.c)
 * carry the same streams for the exec and port-forward protocols. The core (session.c) owns
 * the socket, the buffers both ways, the streams and the loop; a transport turns the peer's
 * bytes into streams opened, data and ends (through the rkl_stream__open/_input/_peer_reset
 * calls below), and the protocols' data into its frames on s->out. */
#pragma once

#include "stream-internal.h"

#define RKL_STREAM__MAX_STREAMS 256
/* The largest piece of a stream's data a transport puts in one frame. */
#define RKL_STREAM__FRAME_MAX (32 << 10)

typedef struct rkl_stream_transport {
        /* Sets up s->transport_data; a transport that opens its streams itself does so
         * here. <0 ends the session before it starts. */
        int (*init)(rkl_stream_session *s);
        /* Reads one frame from in[0..len): *used is what it took. 1: a frame was handled, 0:
         * more bytes are needed (all of in may have been taken), <0: the peer broke the
         * protocol; the transport queued what tells it so, and the session ends. */
        int (*decode)(rkl_stream_session *s, const uint8_t *in, size_t len, size_t *used);
        /* Frames len bytes of st's data (len may be 0) and its end when fin; st->out_fin is
         * not set yet. */
        void (*send)(rkl_stream_session *s, rkl_stream_channel *st, const void *buf, size_t len,
                     bool fin);
        /* What st may send by the peer's flow control; SIZE_MAX when it has none. */
        size_t (*window)(rkl_stream_session *s, rkl_stream_channel *st);
        /* n bytes of st were passed on (st->unacked grew by n): grant them back. */
        void (*consumed)(rkl_stream_session *s, rkl_stream_channel *st);
        /* We end st at once: tell the peer, if the transport can. */
        void (*reset)(rkl_stream_session *s, rkl_stream_channel *st, uint32_t status);
        /* The session ends with the peer still there: done says whether the protocol finished
         * (else the server stops or the session was idle too long). */
        void (*goodbye)(rkl_stream_session *s, bool done);
        void (*free)(rkl_stream_session *s);
} rkl_stream_transport;

extern const rkl_stream_transport rkl_stream__spdy_transport;
extern const rkl_stream_transport rkl_stream__ws_transport;

struct rkl_stream_session {
        int fd;
        rkl_stream_proto proto;
        rkl_stream_request *req;
        const rkl_stream_limits *limits;
        const rkl_stream_ops *ops;
        const rkl_stream_transport *transport;
        void *data;           /* the protocol's */
        void *transport_data; /* the transport's */
        bool fixed;           /* rkl_stream__session_fixed() */

        uint8_t *in;
        size_t in_len, in_cap;
        uint8_t *out;
        size_t out_len, out_cap;
        size_t buffered_in; /* in the streams' buffers */

        rkl_stream_channel *streams[RKL_STREAM__MAX_STREAMS];
        size_t n_streams;
        /* peer_gone: the socket is closed or broken; failed: the session ends now, what is
         * queued goes out as it can (a protocol error, or the peer's close handshake). */
        bool peer_gone, failed;
        uint64_t last_activity;
};

/* A stream of the session by id, or NULL. */
rkl_stream_channel *rkl_stream__session_stream(rkl_stream_session *s, uint32_t id);
/* Opens stream id with the name/value pairs h: the protocol's open hook decides. Returns it,
 * or NULL when the protocol refused it or the session has RKL_STREAM__MAX_STREAMS already
 * (*full tells which, when not NULL). in_fin: the peer will send nothing on it. */
rkl_stream_channel *rkl_stream__open(rkl_stream_session *s, uint32_t id, bool in_fin,
                                     const rkl_stream_header *h, size_t n, bool *full);
/* The peer's data (n may be 0) and, with fin, its end, passed to the protocol. */
void rkl_stream__input(rkl_stream_session *s, rkl_stream_channel *st, const uint8_t *data, size_t n,
                       bool fin);
/* The peer reset st (or sent data past its end): both ways end, the protocol is told. */
void rkl_stream__peer_reset(rkl_stream_session *s, rkl_stream_channel *st);
