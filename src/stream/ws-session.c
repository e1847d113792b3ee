/* The WebSocket transport, as kubelet's library (wsstream) serves it: the channels are there
 * from the start, each message carries one channel's data after a first byte that names the
 * channel ('0' + the number, and the data in base64, in the base64 protocols' text
 * messages). Exec and attach: 0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize, opened as the
 * SPDY client would open its streams, and one empty message first (on stdout, else stderr,
 * else error) for clients that wait for a first message. Port-forward: the request's ports,
 * each a data channel (2i) and an error channel (2i + 1), each starting with the port, 2
 * bytes little-endian. Data on a channel nobody reads is dropped, as wsstream drops it.
 *
 * WebSocket has no half-close of its channels but v5's close message (255, channel) from the
 * client, and no flow control but TCP's. A channel we end takes no more input: the peer
 * cannot end it. The session ends with a close frame: 1000 once the protocol is done, 1001
 * when the server stops, the decoder's status on a broken frame; a client's close frame is
 * answered with its own status and ends the session. */
#include "transport.h"

#include "base/alloc.h"
#include "base/log.h"
#include "websocket.h"
#include "base/banned.h"

#define MAX_CHANNELS  256
#define CLOSE_MESSAGE 255 /* v5: remotecommand.StreamClose */

typedef struct ws_state {
        rkl_ws_decoder *dec;
        bool base64, close_channel, close_sent;
        /* The message being read: before its first byte (its channel), its channel (-1:
         * dropped), or v5's close message, whose bytes are kept. */
        bool at_prefix, is_close;
        int msg_chan;
        uint8_t close_msg[2];
        size_t close_len;
        char b64[4]; /* base64 characters short of a group of 4 */
        size_t b64_len;
} ws_state;

static ws_state *state(rkl_stream_session *s)
{
        return s->transport_data;
}

static void close_frame(rkl_stream_session *s, uint16_t code, const char *reason)
{
        ws_state *w = state(s);
        if (w->close_sent)
                return;
        w->close_sent = true;
        (void)rkl_ws_encode_close(code, reason, NULL, &s->out, &s->out_len, &s->out_cap);
}

static void reserve(rkl_stream_session *s, size_t n)
{
        if (s->out_len + n > s->out_cap) {
                s->out_cap = (s->out_len + n) * 2;
                s->out = rkl_xrealloc(s->out, s->out_cap);
        }
}

/* One message on channel ch: binary, the channel's byte then data, or text, '0' + ch then
 * data in base64. */
static void message(rkl_stream_session *s, uint8_t ch, const void *data, size_t n)
{
        ws_state *w = state(s);
        uint8_t hdr[RKL_WS_HEADER_MAX];
        size_t body = 1 + (w->base64 ? RKL_WS_BASE64_LEN(n) : n);
        size_t h = rkl_ws_header(hdr, w->base64 ? RKL_WS_TEXT : RKL_WS_BINARY, true, body, NULL);
        reserve(s, h + body);
        memcpy(s->out + s->out_len, hdr, h);
        s->out[s->out_len + h] = w->base64 ? (uint8_t)('0' + ch) : ch;
        uint8_t *p = s->out + s->out_len + h + 1;
        if (w->base64)
                rkl_ws_base64_encode(data, n, (char *)p);
        else if (n > 0)
                memcpy(p, data, n);
        s->out_len += h + body;
}

static void ws_send(rkl_stream_session *s, rkl_stream_channel *st, const void *buf, size_t len,
                    bool fin)
{
        const uint8_t *b = buf;
        if (state(s)->close_sent)
                return;
        while (len > 0) {
                size_t n = len > RKL_STREAM__FRAME_MAX ? RKL_STREAM__FRAME_MAX : len;
                message(s, (uint8_t)st->id, b, n);
                b += n;
                len -= n;
        }
        if (fin)
                st->in_fin = true;
}

static size_t ws_window(rkl_stream_session *s, rkl_stream_channel *st)
{
        (void)s, (void)st;
        return SIZE_MAX;
}

static void ws_consumed(rkl_stream_session *s, rkl_stream_channel *st)
{
        (void)s;
        st->unacked = 0; /* nothing to grant back */
}

static void ws_reset(rkl_stream_session *s, rkl_stream_channel *st, uint32_t status)
{
        (void)s, (void)st, (void)status; /* a channel has no reset of its own */
}

static void ws_goodbye(rkl_stream_session *s, bool done)
{
        close_frame(s, done ? RKL_WS_CLOSE_NORMAL : RKL_WS_CLOSE_GOING_AWAY, NULL);
}

/* Opens channel ch with the pairs a SPDY client would send; false when refused. A channel
 * is looked up by its number whenever a message comes: the core frees the streams that are
 * over. */
static bool channel_open(rkl_stream_session *s, unsigned ch, const char *type, const char *port,
                         const char *request_id)
{
        rkl_stream_header h[3] = {{"streamtype", 10, type, strlen(type)}};
        size_t n = 1;
        if (port) {
                h[n++] = (rkl_stream_header){"port", 4, port, strlen(port)};
                h[n++] = (rkl_stream_header){"requestid", 9, request_id, strlen(request_id)};
        }
        return rkl_stream__open(s, ch, false, h, n, NULL);
}

static int open_exec(rkl_stream_session *s)
{
        static const char *const types[] = {"stdin", "stdout", "stderr", "error", "resize"};
        bool opened[ELEMENTSOF(types)];
        /* The error stream first, as client-go opens them. */
        opened[3] = channel_open(s, 3, types[3], NULL, NULL);
        for (unsigned ch = 0; ch < ELEMENTSOF(types); ch++)
                if (ch != 3)
                        opened[ch] = channel_open(s, ch, types[ch], NULL, NULL);
        if (!opened[3])
                return -EINVAL;
        unsigned first = opened[1] ? 1 : opened[2] ? 2 : 3;
        message(s, (uint8_t)first, NULL, 0);
        return 0;
}

static int open_port_forward(rkl_stream_session *s)
{
        rkl_stream_request *r = s->req;
        if (r->n_ports == 0 || r->n_ports > MAX_CHANNELS / 2)
                return -EINVAL;
        for (size_t i = 0; i < r->n_ports; i++) {
                char port[8], id[24];
                uint8_t le[2] = {(uint8_t)r->ports[i], (uint8_t)(r->ports[i] >> 8)};
                snprintf(port, sizeof(port), "%u", (unsigned)r->ports[i]);
                snprintf(id, sizeof(id), "%zu", i);
                unsigned data = (unsigned)(2 * i), err = data + 1;
                if (!channel_open(s, err, "error", port, id) ||
                    !channel_open(s, data, "data", port, id))
                        return -EINVAL; /* the server checked the ports: a bug */
                message(s, (uint8_t)data, le, 2);
                message(s, (uint8_t)err, le, 2);
        }
        return 0;
}

static int ws_init(rkl_stream_session *s)
{
        ws_state *w = rkl_xnew0(ws_state, 1);
        s->transport_data = w;
        s->fixed = true;
        w->base64 = rkl_stream__proto_base64(s->proto);
        w->close_channel = rkl_stream__proto_close_channel(s->proto);
        if (rkl_ws_decoder_new(NULL, true, &w->dec) < 0)
                return -ENOMEM;
        int r = s->req->kind == RKL_STREAM_PORT_FORWARD ? open_port_forward(s) : open_exec(s);
        if (r < 0)
                rkl_log_error("stream: cannot open the channels of a %s session",
                              rkl_stream__kind_name(s->req->kind));
        return r;
}

static void ws_free(rkl_stream_session *s)
{
        ws_state *w = state(s);
        if (!w)
                return;
        rkl_ws_decoder_free(w->dec);
        free(w);
        s->transport_data = NULL;
}

static int protocol_error(rkl_stream_session *s, uint16_t code, const char *why)
{
        rkl_log_debug("stream: dropping a %s session: %s", rkl_stream__kind_name(s->req->kind),
                      why);
        close_frame(s, code, why);
        return -EPROTO;
}

/* Data for the message's channel: decoded from base64 in whole groups. */
static int deliver(rkl_stream_session *s, const uint8_t *p, size_t n)
{
        ws_state *w = state(s);
        rkl_stream_channel *st =
            w->msg_chan >= 0 ? rkl_stream__session_stream(s, (uint32_t)w->msg_chan) : NULL;
        if (!st || st->in_fin)
                return 0;
        if (!w->base64) {
                rkl_stream__input(s, st, p, n, false);
                return 0;
        }
        while (n > 0 && !st->in_fin) {
                char in[4 * 1024];
                uint8_t out[3 * 1024];
                size_t k = 0;
                for (; n > 0 && k < sizeof(in); n--) {
                        w->b64[w->b64_len++] = (char)*p++;
                        if (w->b64_len == 4) {
                                memcpy(in + k, w->b64, 4);
                                k += 4;
                                w->b64_len = 0;
                        }
                }
                ssize_t m = rkl_ws_base64_decode(in, k, out);
                if (m < 0)
                        return protocol_error(s, RKL_WS_CLOSE_INVALID_DATA,
                                              "a text message that is not base64");
                if (m > 0)
                        rkl_stream__input(s, st, out, (size_t)m, false);
        }
        return 0;
}

/* v5's close message is whole: the client's end of a channel. */
static int close_message(rkl_stream_session *s)
{
        ws_state *w = state(s);
        if (w->close_len != 2)
                return protocol_error(s, RKL_WS_CLOSE_PROTOCOL_ERROR,
                                      "a close message names one channel");
        rkl_stream_channel *st = rkl_stream__session_stream(s, w->close_msg[1]);
        if (st && !st->in_fin)
                rkl_stream__input(s, st, NULL, 0, true);
        return 0;
}

static int data_frame(rkl_stream_session *s, const rkl_ws_frame *f)
{
        ws_state *w = state(s);
        const uint8_t *p = f->data;
        size_t n = f->len;
        if (f->first) {
                w->at_prefix = true;
                w->is_close = false;
                w->msg_chan = -1;
                w->close_len = w->b64_len = 0;
        }
        if (w->at_prefix && n > 0) {
                uint8_t c = *p++;
                n--;
                w->at_prefix = false;
                w->is_close = w->close_channel && c == CLOSE_MESSAGE;
                int ch = w->base64 ? c - '0' : c;
                w->msg_chan = w->is_close || ch < 0 || ch >= MAX_CHANNELS ? -1 : ch;
                if (w->is_close)
                        w->close_msg[w->close_len++] = c;
        }
        if (w->is_close) {
                for (; n > 0; n--, p++)
                        if (w->close_len < sizeof(w->close_msg))
                                w->close_msg[w->close_len++] = *p;
                        else
                                w->close_len = sizeof(w->close_msg) + 1;
        } else if (n > 0 && deliver(s, p, n) < 0) {
                return -EPROTO;
        }
        if (!f->fin)
                return 0;
        if (w->is_close)
                return close_message(s);
        if (w->b64_len > 0)
                return protocol_error(s, RKL_WS_CLOSE_INVALID_DATA,
                                      "a text message that is not base64");
        return 0;
}

static int ws_decode(rkl_stream_session *s, const uint8_t *in, size_t len, size_t *used)
{
        ws_state *w = state(s);
        rkl_ws_frame f;
        rkl_error err = RKL_ERROR_INIT;
        int r = rkl_ws_decode(w->dec, in, len, used, &f, &err);
        if (r < 0)
                return protocol_error(s, rkl_ws_close_code(r), err.msg);
        if (r == 0)
                return 0;
        switch (f.opcode) {
        case RKL_WS_PING:
                if (!w->close_sent)
                        (void)rkl_ws_encode(RKL_WS_PONG, true, NULL, f.data, f.len, &s->out,
                                            &s->out_len, &s->out_cap);
                return 1;
        case RKL_WS_PONG:
                return 1;
        case RKL_WS_CLOSE:
                /* Answered with its status, and the session ends (RFC 6455 5.5.1). */
                rkl_log_debug("stream: a %s session closed by the client (%u)",
                              rkl_stream__kind_name(s->req->kind), (unsigned)f.close_code);
                close_frame(
                    s, f.close_code == RKL_WS_CLOSE_NO_STATUS ? RKL_WS_CLOSE_NORMAL : f.close_code,
                    NULL);
                return -ECONNRESET;
        default:
                return data_frame(s, &f) < 0 ? -EPROTO : 1;
        }
}

const rkl_stream_transport rkl_stream__ws_transport = {
    .init = ws_init,
    .decode = ws_decode,
    .send = ws_send,
    .window = ws_window,
    .consumed = ws_consumed,
    .reset = ws_reset,
    .goodbye = ws_goodbye,
    .free = ws_free,
};
