/* The SPDY session core: one upgraded connection, its frames and streams, flow control and
 * buffering, in the session's own thread. The protocol (exec or port-forward) is plugged in
 * through rkl_stream_ops.
 *
 * Memory is bounded both ways. Out: protocols ask send_room() before reading their process or
 * socket, so at most OUT_MAX bytes wait for a slow peer. In: the socket is not read while
 * IN_MAX bytes wait for a process or socket to take them. Windows are granted back as data
 * is passed on, and honoured for sending once the peer shows it counts them (client-go's
 * spdystream neither sends WINDOW_UPDATE nor reads it: TCP's own back-pressure is what stops
 * it then). */
#include "stream-internal.h"

#include <inttypes.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/time-util.h"
#include "base/banned.h"

#define OUT_MAX     (256 << 10)
#define IN_MAX      (256 << 10)
#define FRAME_MAX   (32 << 10) /* the largest DATA frame sent */
#define MAX_STREAMS 256
#define MAX_POLL    (2 + 2 * MAX_STREAMS)
#define LINGER_USEC (2 * USEC_PER_SEC)

struct rkl_stream_session {
        int fd;
        rkl_stream_proto proto;
        rkl_stream_request *req;
        const rkl_stream_limits *limits;
        const rkl_stream_ops *ops;
        void *data;

        rkl_spdy_decoder *dec;
        rkl_spdy_encoder *enc;
        uint8_t *in;
        size_t in_len, in_cap;
        uint8_t *out;
        size_t out_len, out_cap;
        size_t buffered_in; /* in the streams' buffers */

        rkl_stream_spdy *streams[MAX_STREAMS];
        size_t n_streams;
        uint32_t last_peer_id;
        bool peer_counts_windows;
        int64_t initial_window;
        int64_t conn_window; /* the peer's, for what we send */
        bool peer_gone, goaway, failed;
        uint64_t last_activity;
};

rkl_stream_request *rkl_stream__session_request(rkl_stream_session *s)
{
        return s->req;
}

rkl_stream_proto rkl_stream__session_proto(rkl_stream_session *s)
{
        return s->proto;
}

const rkl_stream_limits *rkl_stream__session_limits(rkl_stream_session *s)
{
        return s->limits;
}

void *rkl_stream__session_data(rkl_stream_session *s)
{
        return s->data;
}

void rkl_stream__session_set_data(rkl_stream_session *s, void *data)
{
        s->data = data;
}

rkl_stream_spdy *rkl_stream__session_stream(rkl_stream_session *s, uint32_t id)
{
        for (size_t i = 0; i < s->n_streams; i++)
                if (s->streams[i]->id == id)
                        return s->streams[i];
        return NULL;
}

static void queue(rkl_stream_session *s, const rkl_spdy_frame *f)
{
        int r = rkl_spdy_encode(s->enc, f, &s->out, &s->out_len, &s->out_cap);
        if (r < 0) {
                /* Only a bug makes a frame of ours unencodable: end rather than desync. */
                rkl_log_error("stream: cannot encode a frame of type %d: %s", (int)f->type,
                              strerror(-r));
                s->failed = true;
        }
}

size_t rkl_stream__send_room(rkl_stream_session *s, rkl_stream_spdy *st)
{
        if (st->out_fin || s->peer_gone || s->out_len >= OUT_MAX)
                return 0;
        int64_t room = OUT_MAX - (int64_t)s->out_len;
        if (s->peer_counts_windows) {
                if (st->send_window < room)
                        room = st->send_window;
                if (s->conn_window < room)
                        room = s->conn_window;
        }
        return room > 0 ? (size_t)room : 0;
}

void rkl_stream__send(rkl_stream_session *s, rkl_stream_spdy *st, const void *buf, size_t len,
                      bool fin)
{
        const uint8_t *p = buf;
        if (st->out_fin)
                return;
        do {
                size_t n = len > FRAME_MAX ? FRAME_MAX : len;
                rkl_spdy_frame f = {
                    .type = RKL_SPDY_DATA,
                    .stream_id = st->id,
                    .flags = fin && n == len ? RKL_SPDY_FLAG_FIN : 0,
                    .data = p,
                    .len = n,
                };
                queue(s, &f);
                st->send_window -= (int64_t)n;
                s->conn_window -= (int64_t)n;
                if (n > 0) /* p is NULL for an empty FIN */
                        p += n;
                len -= n;
        } while (len > 0);
        if (fin)
                st->out_fin = true;
}

static void window_update(rkl_stream_session *s, uint32_t id, size_t delta)
{
        rkl_spdy_frame f = {
            .type = RKL_SPDY_WINDOW_UPDATE, .stream_id = id, .delta = (uint32_t)delta};
        queue(s, &f);
}

void rkl_stream__consumed(rkl_stream_session *s, rkl_stream_spdy *st, size_t n)
{
        assert(n <= st->in_len);
        if (n > 0) /* st->in may be NULL when nothing came */
                memmove(st->in, st->in + n, st->in_len - n);
        st->in_len -= n;
        s->buffered_in -= n;
        st->unacked += n;
        /* Granted back in chunks, not a frame per read. */
        if (!st->in_fin && (st->unacked >= RKL_SPDY_DEFAULT_WINDOW / 4 || st->in_len == 0)) {
                window_update(s, st->id, st->unacked);
                window_update(s, 0, st->unacked);
                st->unacked = 0;
        }
}

static void stream_free(rkl_stream_session *s, size_t i)
{
        rkl_stream_spdy *st = s->streams[i];
        s->buffered_in -= st->in_len;
        free(st->in);
        free(st);
        s->streams[i] = s->streams[--s->n_streams];
}

void rkl_stream__reset(rkl_stream_session *s, rkl_stream_spdy *st, uint32_t status)
{
        rkl_spdy_frame f = {.type = RKL_SPDY_RST_STREAM, .stream_id = st->id, .status = status};
        if (!s->peer_gone)
                queue(s, &f);
        st->in_fin = st->out_fin = true;
}

static void rst(rkl_stream_session *s, uint32_t id, uint32_t status)
{
        rkl_spdy_frame f = {.type = RKL_SPDY_RST_STREAM, .stream_id = id, .status = status};
        queue(s, &f);
}

static void on_syn(rkl_stream_session *s, const rkl_spdy_frame *f)
{
        /* Client streams are odd and rise (SPDY/3 2.3.2). */
        if (!(f->stream_id & 1) || f->stream_id <= s->last_peer_id) {
                rst(s, f->stream_id, RKL_SPDY_PROTOCOL_ERROR);
                return;
        }
        s->last_peer_id = f->stream_id;
        if (s->goaway || s->n_streams >= MAX_STREAMS) {
                rst(s, f->stream_id, RKL_SPDY_REFUSED_STREAM);
                return;
        }
        rkl_stream_spdy *st = rkl_xnew0(rkl_stream_spdy, 1);
        st->id = f->stream_id;
        st->send_window = s->initial_window;
        st->in_fin = f->flags & RKL_SPDY_FLAG_FIN;
        if (s->ops->syn(s, st, f) < 0) {
                rst(s, f->stream_id, RKL_SPDY_REFUSED_STREAM);
                free(st);
                return;
        }
        s->streams[s->n_streams++] = st;
        rkl_spdy_frame reply = {.type = RKL_SPDY_SYN_REPLY, .stream_id = st->id};
        queue(s, &reply);
        if (st->in_fin)
                s->ops->input(s, st, false);
}

static void on_data(rkl_stream_session *s, const rkl_spdy_frame *f)
{
        rkl_stream_spdy *st = rkl_stream__session_stream(s, f->stream_id);
        if (!st) {
                rst(s, f->stream_id, RKL_SPDY_INVALID_STREAM);
                return;
        }
        if (st->in_fin) {
                rkl_stream__reset(s, st, RKL_SPDY_STREAM_ALREADY_CLOSED);
                s->ops->input(s, st, true);
                return;
        }
        if (f->len > 0) {
                if (st->in_len + f->len > st->in_cap) {
                        st->in_cap = st->in_len + f->len;
                        st->in = rkl_xrealloc(st->in, st->in_cap);
                }
                memcpy(st->in + st->in_len, f->data, f->len);
                st->in_len += f->len;
                s->buffered_in += f->len;
        }
        if (f->flags & RKL_SPDY_FLAG_FIN)
                st->in_fin = true;
        s->ops->input(s, st, false);
}

static void on_window(rkl_stream_session *s, const rkl_spdy_frame *f)
{
        s->peer_counts_windows = true;
        if (f->stream_id == 0) {
                s->conn_window += f->delta;
                return;
        }
        rkl_stream_spdy *st = rkl_stream__session_stream(s, f->stream_id);
        if (st)
                st->send_window += f->delta;
}

static void on_settings(rkl_stream_session *s, const rkl_spdy_frame *f)
{
        for (size_t i = 0; i < f->n_settings; i++) {
                if (f->settings[i].id != RKL_SPDY_SETTINGS_INITIAL_WINDOW_SIZE ||
                    f->settings[i].value > INT32_MAX)
                        continue;
                int64_t delta = (int64_t)f->settings[i].value - s->initial_window;
                s->initial_window = f->settings[i].value;
                s->peer_counts_windows = true;
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
                rkl_stream_spdy *st = rkl_stream__session_stream(s, f->stream_id);
                if (st) {
                        st->in_fin = st->out_fin = true;
                        s->ops->input(s, st, true);
                }
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
                s->goaway = true;
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

/* Decodes what has arrived; false on a protocol error (the session ends). */
static bool decode_input(rkl_stream_session *s)
{
        size_t off = 0;
        while (off < s->in_len && !s->failed && s->buffered_in < IN_MAX) {
                rkl_spdy_frame f;
                rkl_error err = RKL_ERROR_INIT;
                size_t used = 0;
                int r = rkl_spdy_decode(s->dec, s->in + off, s->in_len - off, &used, &f, &err);
                off += used;
                if (r < 0) {
                        rkl_log_debug("stream: dropping a %s session: %s",
                                      rkl_stream__kind_name(s->req->kind), err.msg);
                        rkl_spdy_frame ga = {.type = RKL_SPDY_GOAWAY,
                                             .stream_id = s->last_peer_id,
                                             .status = RKL_SPDY_PROTOCOL_ERROR};
                        queue(s, &ga);
                        s->failed = true;
                        break;
                }
                if (r == 0 && used == 0)
                        break;
                if (r == 1)
                        on_frame(s, &f);
        }
        if (off > 0) { /* s->in may still be NULL: nothing read yet */
                memmove(s->in, s->in + off, s->in_len - off);
                s->in_len -= off;
        }
        return !s->failed;
}

static void read_socket(rkl_stream_session *s)
{
        if (s->in_cap - s->in_len < 16384) {
                s->in_cap = s->in_len + 65536;
                s->in = rkl_xrealloc(s->in, s->in_cap);
        }
        ssize_t k = read(s->fd, s->in + s->in_len, s->in_cap - s->in_len);
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (k <= 0) {
                s->peer_gone = true;
                return;
        }
        s->in_len += (size_t)k;
        s->last_activity = rkl_now_usec(CLOCK_MONOTONIC);
}

static void write_socket(rkl_stream_session *s)
{
        ssize_t k = send(s->fd, s->out, s->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (k < 0) {
                s->peer_gone = true;
                s->out_len = 0;
                return;
        }
        if (k > 0)
                memmove(s->out, s->out + k, s->out_len - (size_t)k);
        s->out_len -= (size_t)k;
        s->last_activity = rkl_now_usec(CLOCK_MONOTONIC);
}

/* Streams both sides finished go; the protocol has let go of them by then. */
static void reap_streams(rkl_stream_session *s)
{
        for (size_t i = 0; i < s->n_streams;) {
                rkl_stream_spdy *st = s->streams[i];
                if (st->in_fin && st->out_fin && !st->data)
                        stream_free(s, i);
                else
                        i++;
        }
}

/* Our side is done: what is queued goes out, then the peer gets a while to close. */
static void linger(rkl_stream_session *s)
{
        uint64_t until = rkl_now_usec(CLOCK_MONOTONIC) + LINGER_USEC;
        while (!s->peer_gone) {
                uint64_t now = rkl_now_usec(CLOCK_MONOTONIC);
                if (now >= until)
                        break;
                struct pollfd p = {.fd = s->fd, .events = POLLIN | (s->out_len ? POLLOUT : 0)};
                if (poll(&p, 1, rkl_poll_timeout_ms(now, until)) <= 0)
                        continue;
                if (p.revents & POLLOUT)
                        write_socket(s);
                if (!s->out_len && !s->goaway) {
                        s->goaway = true;
                        (void)shutdown(s->fd, SHUT_WR);
                }
                if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
                        char junk[4096];
                        ssize_t k = read(s->fd, junk, sizeof(junk));
                        if (k <= 0 && !(k < 0 && (errno == EAGAIN || errno == EINTR)))
                                break;
                }
        }
}

void rkl_stream__session_run(int fd, const uint8_t *in, size_t len, rkl_stream_proto proto,
                             rkl_stream_request *req, const rkl_stream_limits *limits)
{
        rkl_stream_session s = {
            .fd = fd,
            .proto = proto,
            .req = req,
            .limits = limits,
            .ops = req->kind == RKL_STREAM_PORT_FORWARD ? &rkl_stream__port_forward_ops
                                                        : &rkl_stream__exec_ops,
            .initial_window = RKL_SPDY_DEFAULT_WINDOW,
            .conn_window = RKL_SPDY_DEFAULT_WINDOW,
            .last_activity = rkl_now_usec(CLOCK_MONOTONIC),
        };
        struct pollfd pfd[MAX_POLL];

        if (rkl_spdy_decoder_new(NULL, &s.dec) < 0 || rkl_spdy_encoder_new(&s.enc) < 0)
                goto free_codec;
        if (len > 0) {
                s.in = rkl_xmalloc(len);
                memcpy(s.in, in, len);
                s.in_len = s.in_cap = len;
        }
        while (!s.failed && !s.peer_gone && !atomic_load(limits->stopping)) {
                if (!decode_input(&s))
                        break;
                reap_streams(&s);
                if (s.ops->done(&s))
                        break;
                int timeout_ms = -1;
                uint64_t now = rkl_now_usec(CLOCK_MONOTONIC);
                uint64_t idle_end = s.last_activity + limits->idle_timeout_usec;
                if (idle_end <= now) {
                        rkl_log_debug("stream: a %s session idle for %" PRIu64 " s: ended",
                                      rkl_stream__kind_name(req->kind),
                                      limits->idle_timeout_usec / USEC_PER_SEC);
                        break;
                }
                timeout_ms = rkl_poll_timeout_ms(now, idle_end);
                if (timeout_ms > 60 * (int)MSEC_PER_SEC)
                        timeout_ms = 60 * (int)MSEC_PER_SEC;
                int n = 0;
                pfd[n++] = (struct pollfd){.fd = fd,
                                           .events = (s.buffered_in < IN_MAX ? POLLIN : 0) |
                                                     (s.out_len ? POLLOUT : 0)};
                pfd[n++] = (struct pollfd){.fd = limits->stop_fd, .events = POLLIN};
                int first = n;
                n += s.ops->poll(&s, pfd + n, MAX_POLL - n, &timeout_ms);
                /* The protocol may have queued frames just now. */
                if (s.out_len)
                        pfd[0].events |= POLLOUT;
                if (poll(pfd, (nfds_t)n, timeout_ms) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (pfd[0].revents & POLLOUT)
                        write_socket(&s);
                if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR))
                        read_socket(&s);
                if (n > first) {
                        for (int i = first; i < n; i++)
                                if (pfd[i].revents)
                                        s.last_activity = rkl_now_usec(CLOCK_MONOTONIC);
                        s.ops->events(&s, pfd + first, n - first);
                }
        }
        if (!s.peer_gone && !s.failed && s.ops->done(&s))
                linger(&s);
        else if (!s.peer_gone && s.out_len)
                write_socket(&s); /* a GOAWAY, best effort */
        s.ops->end(&s);
        while (s.n_streams)
                stream_free(&s, s.n_streams - 1);
free_codec:
        rkl_spdy_decoder_free(s.dec);
        rkl_spdy_encoder_free(s.enc);
        free(s.in);
        free(s.out);
        rkl_stream__request_free(req);
}
