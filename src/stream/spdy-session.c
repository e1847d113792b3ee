/* The SPDY/3.1 transport: frames through the codec (spdy.h), streams opened by the client's
 * SYN_STREAMs, and flow control. Windows are granted back as data is passed on, and honoured
 * for sending once the peer shows it counts them (client-go's spdystream neither sends
 * WINDOW_UPDATE nor reads it: TCP's own back-pressure is what stops it then). */
#include "transport.h"

#include "base/alloc.h"
#include "base/log.h"
#include "base/banned.h"

typedef struct spdy_state {
        rkl_spdy_decoder *dec;
        rkl_spdy_encoder *enc;
        uint32_t last_peer_id;
        bool peer_counts_windows;
        int64_t initial_window;
        int64_t conn_window; /* the peer's, for what we send */
        bool goaway;
} spdy_state;

static spdy_state *state(rkl_stream_session *s)
{
        return s->transport_data;
}

static void queue(rkl_stream_session *s, const rkl_spdy_frame *f)
{
        int r = rkl_spdy_encode(state(s)->enc, f, &s->out, &s->out_len, &s->out_cap);
        if (r < 0) {
                /* Only a bug makes a frame of ours unencodable: end rather than desync. */
                rkl_log_error("stream: cannot encode a frame of type %d: %s", (int)f->type,
                              strerror(-r));
                s->failed = true;
        }
}

static void rst(rkl_stream_session *s, uint32_t id, uint32_t status)
{
        rkl_spdy_frame f = {.type = RKL_SPDY_RST_STREAM, .stream_id = id, .status = status};
        queue(s, &f);
}

static int spdy_init(rkl_stream_session *s)
{
        spdy_state *p = rkl_xnew0(spdy_state, 1);
        p->initial_window = p->conn_window = RKL_SPDY_DEFAULT_WINDOW;
        s->transport_data = p;
        if (rkl_spdy_decoder_new(NULL, &p->dec) < 0 || rkl_spdy_encoder_new(&p->enc) < 0)
                return -ENOMEM;
        return 0;
}

static void spdy_free(rkl_stream_session *s)
{
        spdy_state *p = state(s);
        if (!p)
                return;
        rkl_spdy_decoder_free(p->dec);
        rkl_spdy_encoder_free(p->enc);
        free(p);
        s->transport_data = NULL;
}

static void spdy_send(rkl_stream_session *s, rkl_stream_channel *st, const void *buf, size_t len,
                      bool fin)
{
        spdy_state *p = state(s);
        const uint8_t *b = buf;
        do {
                size_t n = len > RKL_STREAM__FRAME_MAX ? RKL_STREAM__FRAME_MAX : len;
                rkl_spdy_frame f = {
                    .type = RKL_SPDY_DATA,
                    .stream_id = st->id,
                    .flags = fin && n == len ? RKL_SPDY_FLAG_FIN : 0,
                    .data = b,
                    .len = n,
                };
                queue(s, &f);
                st->send_window -= (int64_t)n;
                p->conn_window -= (int64_t)n;
                if (n > 0) /* b is NULL for an empty FIN */
                        b += n;
                len -= n;
        } while (len > 0);
}

static size_t spdy_window(rkl_stream_session *s, rkl_stream_channel *st)
{
        spdy_state *p = state(s);
        if (!p->peer_counts_windows)
                return SIZE_MAX;
        int64_t w = st->send_window < p->conn_window ? st->send_window : p->conn_window;
        return w > 0 ? (size_t)w : 0;
}

static void window_update(rkl_stream_session *s, uint32_t id, size_t delta)
{
        rkl_spdy_frame f = {
            .type = RKL_SPDY_WINDOW_UPDATE, .stream_id = id, .delta = (uint32_t)delta};
        queue(s, &f);
}

static void spdy_consumed(rkl_stream_session *s, rkl_stream_channel *st)
{
        /* Granted back in chunks, not a frame per read. */
        if (!st->in_fin && (st->unacked >= RKL_SPDY_DEFAULT_WINDOW / 4 || st->in_len == 0)) {
                window_update(s, st->id, st->unacked);
                window_update(s, 0, st->unacked);
                st->unacked = 0;
        }
}

static void spdy_reset(rkl_stream_session *s, rkl_stream_channel *st, uint32_t status)
{
        rst(s, st->id, status);
}

static void spdy_goodbye(rkl_stream_session *s, bool done)
{
        (void)s, (void)done; /* the client closes: SPDY has no goodbye of the server's */
}

static void on_syn(rkl_stream_session *s, const rkl_spdy_frame *f)
{
        spdy_state *p = state(s);
        /* Client streams are odd and rise (SPDY/3 2.3.2). */
        if (!(f->stream_id & 1) || f->stream_id <= p->last_peer_id) {
                rst(s, f->stream_id, RKL_SPDY_PROTOCOL_ERROR);
                return;
        }
        p->last_peer_id = f->stream_id;
        if (p->goaway) {
                rst(s, f->stream_id, RKL_SPDY_REFUSED_STREAM);
                return;
        }
        rkl_stream_channel *st = rkl_stream__open(s, f->stream_id, f->flags & RKL_SPDY_FLAG_FIN,
                                                  f->headers, f->n_headers, NULL);
        if (!st) {
                rst(s, f->stream_id, RKL_SPDY_REFUSED_STREAM);
                return;
        }
        st->send_window = p->initial_window;
        rkl_spdy_frame reply = {.type = RKL_SPDY_SYN_REPLY, .stream_id = st->id};
        queue(s, &reply);
        if (st->in_fin)
                s->ops->input(s, st, false);
}

static void on_data(rkl_stream_session *s, const rkl_spdy_frame *f)
{
        rkl_stream_channel *st = rkl_stream__session_stream(s, f->stream_id);
        if (!st) {
                rst(s, f->stream_id, RKL_SPDY_INVALID_STREAM);
                return;
        }
        if (st->in_fin) {
                rkl_stream__reset(s, st, RKL_SPDY_STREAM_ALREADY_CLOSED);
                rkl_stream__peer_reset(s, st);
                return;
        }
        rkl_stream__input(s, st, f->data, f->len, f->flags & RKL_SPDY_FLAG_FIN);
}

static void on_window(rkl_stream_session *s, const rkl_spdy_frame *f)
{
        spdy_state *p = state(s);
        p->peer_counts_windows = true;
        if (f->stream_id == 0) {
                p->conn_window += f->delta;
                return;
        }
        rkl_stream_channel *st = rkl_stream__session_stream(s, f->stream_id);
        if (st)
                st->send_window += f->delta;
}

static void on_settings(rkl_stream_session *s, const rkl_spdy_frame *f)
{
        spdy_state *p = state(s);
        for (size_t i = 0; i < f->n_settings; i++) {
                if (f->settings[i].id != RKL_SPDY_SETTINGS_INITIAL_WINDOW_SIZE ||
                    f->settings[i].value > INT32_MAX)
                        continue;
                int64_t delta = (int64_t)f->settings[i].value - p->initial_window;
                p->initial_window = f->settings[i].value;
                p->peer_counts_windows = true;
                for (size_t j = 0; j < s->n_streams; j++)
                        s->streams[j]->send_window += delta;
        }
}

static void on_frame(rkl_stream_session *s, const rkl_spdy_frame *f)
{
        switch (f->type) {
        case RKL_SPDY_SYN_STREAM:
                on_syn(s, f);
                break;
        case RKL_SPDY_DATA:
                on_data(s, f);
                break;
        case RKL_SPDY_RST_STREAM: {
                rkl_stream_channel *st = rkl_stream__session_stream(s, f->stream_id);
                if (st)
                        rkl_stream__peer_reset(s, st);
                break;
        }
        case RKL_SPDY_PING: {
                /* Only the peer's own (odd) pings are answered; ours would be even. */
                rkl_spdy_frame pong = {.type = RKL_SPDY_PING, .ping_id = f->ping_id};
                if (f->ping_id & 1)
                        queue(s, &pong);
                break;
        }
        case RKL_SPDY_GOAWAY:
                state(s)->goaway = true;
                break;
        case RKL_SPDY_WINDOW_UPDATE:
                on_window(s, f);
                break;
        case RKL_SPDY_SETTINGS:
                on_settings(s, f);
                break;
        default: /* SYN_REPLY (we open no streams), HEADERS: nothing to do */
                break;
        }
}

static int spdy_decode(rkl_stream_session *s, const uint8_t *in, size_t len, size_t *used)
{
        spdy_state *p = state(s);
        rkl_spdy_frame f;
        rkl_error err = RKL_ERROR_INIT;
        int r = rkl_spdy_decode(p->dec, in, len, used, &f, &err);
        if (r < 0) {
                rkl_log_debug("stream: dropping a %s session: %s",
                              rkl_stream__kind_name(s->req->kind), err.msg);
                rkl_spdy_frame ga = {.type = RKL_SPDY_GOAWAY,
                                     .stream_id = p->last_peer_id,
                                     .status = RKL_SPDY_PROTOCOL_ERROR};
                queue(s, &ga);
                return r;
        }
        if (r == 1)
                on_frame(s, &f);
        return r;
}

const rkl_stream_transport rkl_stream__spdy_transport = {
    .init = spdy_init,
    .decode = spdy_decode,
    .send = spdy_send,
    .window = spdy_window,
    .consumed = spdy_consumed,
    .reset = spdy_reset,
    .goodbye = spdy_goodbye,
    .free = spdy_free,
};
