/* The session core: one upgraded connection, its streams and buffers, in the session's own
 * thread, whichever transport (transport.h) frames it. The protocol (exec or port-forward)
 * is plugged in through rkl_stream_ops.
 *
 * Memory is bounded both ways. Out: protocols ask send_room() before reading their process or
 * socket, so at most OUT_MAX bytes wait for a slow peer. In: the socket is not read while
 * IN_MAX bytes wait for a process or socket to take them. A transport with flow control of
 * its own (SPDY's windows) may lower send_room() further. */
#include "transport.h"

#include <inttypes.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/time-util.h"
#include "base/banned.h"

#define OUT_MAX     (256 << 10)
#define IN_MAX      (256 << 10)
#define MAX_POLL    (2 + 2 * RKL_STREAM__MAX_STREAMS)
#define LINGER_USEC (2 * USEC_PER_SEC)

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

bool rkl_stream__session_fixed(rkl_stream_session *s)
{
        return s->fixed;
}

const rkl_stream_header *rkl_stream__header(const rkl_stream_header *h, size_t n, const char *name)
{
        size_t len = strlen(name);
        for (size_t i = 0; i < n; i++)
                if (h[i].name_len == len && memcmp(h[i].name, name, len) == 0)
                        return &h[i];
        return NULL;
}

rkl_stream_channel *rkl_stream__session_stream(rkl_stream_session *s, uint32_t id)
{
        for (size_t i = 0; i < s->n_streams; i++)
                if (s->streams[i]->id == id)
                        return s->streams[i];
        return NULL;
}

rkl_stream_channel *rkl_stream__open(rkl_stream_session *s, uint32_t id, bool in_fin,
                                     const rkl_stream_header *h, size_t n, bool *full)
{
        if (full)
                *full = s->n_streams >= RKL_STREAM__MAX_STREAMS;
        if (s->n_streams >= RKL_STREAM__MAX_STREAMS)
                return NULL;
        rkl_stream_channel *st = rkl_xnew0(rkl_stream_channel, 1);
        st->id = id;
        st->in_fin = in_fin;
        st->send_window = RKL_SPDY_DEFAULT_WINDOW;
        if (s->ops->open(s, st, h, n) < 0) {
                free(st);
                return NULL;
        }
        s->streams[s->n_streams++] = st;
        return st;
}

void rkl_stream__input(rkl_stream_session *s, rkl_stream_channel *st, const uint8_t *data, size_t n,
                       bool fin)
{
        if (n > 0) {
                if (st->in_len + n > st->in_cap) {
                        st->in_cap = st->in_len + n;
                        st->in = rkl_xrealloc(st->in, st->in_cap);
                }
                memcpy(st->in + st->in_len, data, n);
                st->in_len += n;
                s->buffered_in += n;
        }
        if (fin)
                st->in_fin = true;
        s->ops->input(s, st, false);
}

void rkl_stream__peer_reset(rkl_stream_session *s, rkl_stream_channel *st)
{
        st->in_fin = st->out_fin = true;
        s->ops->input(s, st, true);
}

size_t rkl_stream__send_room(rkl_stream_session *s, rkl_stream_channel *st)
{
        if (st->out_fin || s->peer_gone || s->out_len >= OUT_MAX)
                return 0;
        size_t room = OUT_MAX - s->out_len;
        size_t window = s->transport->window(s, st);
        return window < room ? window : room;
}

void rkl_stream__send(rkl_stream_session *s, rkl_stream_channel *st, const void *buf, size_t len,
                      bool fin)
{
        if (st->out_fin)
                return;
        s->transport->send(s, st, buf, len, fin);
        if (fin)
                st->out_fin = true;
}

void rkl_stream__consumed(rkl_stream_session *s, rkl_stream_channel *st, size_t n)
{
        assert(n <= st->in_len);
        if (n > 0) /* st->in may be NULL when nothing came */
                memmove(st->in, st->in + n, st->in_len - n);
        st->in_len -= n;
        s->buffered_in -= n;
        st->unacked += n;
        s->transport->consumed(s, st);
}

void rkl_stream__reset(rkl_stream_session *s, rkl_stream_channel *st, uint32_t status)
{
        if (!s->peer_gone)
                s->transport->reset(s, st, status);
        st->in_fin = st->out_fin = true;
}

static void stream_free(rkl_stream_session *s, size_t i)
{
        rkl_stream_channel *st = s->streams[i];
        s->buffered_in -= st->in_len;
        free(st->in);
        free(st);
        s->streams[i] = s->streams[--s->n_streams];
}

/* Decodes what has arrived; false when the session must end. */
static bool decode_input(rkl_stream_session *s)
{
        size_t off = 0;
        while (off < s->in_len && !s->failed && s->buffered_in < IN_MAX) {
                size_t used = 0;
                int r = s->transport->decode(s, s->in + off, s->in_len - off, &used);
                off += used;
                if (r < 0) {
                        s->failed = true;
                        break;
                }
                if (r == 0 && used == 0)
                        break;
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
                rkl_stream_channel *st = s->streams[i];
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
        bool shut = false;
        while (!s->peer_gone) {
                uint64_t now = rkl_now_usec(CLOCK_MONOTONIC);
                if (now >= until)
                        break;
                struct pollfd p = {.fd = s->fd, .events = POLLIN | (s->out_len ? POLLOUT : 0)};
                if (poll(&p, 1, rkl_poll_timeout_ms(now, until)) <= 0)
                        continue;
                if (p.revents & POLLOUT)
                        write_socket(s);
                if (!s->out_len && !shut) {
                        shut = true;
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

static void run(rkl_stream_session *s)
{
        const rkl_stream_limits *limits = s->limits;
        struct pollfd pfd[MAX_POLL];

        while (!s->failed && !s->peer_gone && !atomic_load(limits->stopping)) {
                if (!decode_input(s))
                        break;
                reap_streams(s);
                if (s->ops->done(s))
                        break;
                int timeout_ms = -1;
                uint64_t now = rkl_now_usec(CLOCK_MONOTONIC);
                uint64_t idle_end = s->last_activity + limits->idle_timeout_usec;
                if (idle_end <= now) {
                        rkl_log_debug("stream: a %s session idle for %" PRIu64 " s: ended",
                                      rkl_stream__kind_name(s->req->kind),
                                      limits->idle_timeout_usec / USEC_PER_SEC);
                        break;
                }
                timeout_ms = rkl_poll_timeout_ms(now, idle_end);
                if (timeout_ms > 60 * (int)MSEC_PER_SEC)
                        timeout_ms = 60 * (int)MSEC_PER_SEC;
                int n = 0;
                pfd[n++] = (struct pollfd){.fd = s->fd,
                                           .events = (s->buffered_in < IN_MAX ? POLLIN : 0) |
                                                     (s->out_len ? POLLOUT : 0)};
                pfd[n++] = (struct pollfd){.fd = limits->stop_fd, .events = POLLIN};
                int first = n;
                n += s->ops->poll(s, pfd + n, MAX_POLL - n, &timeout_ms);
                /* The protocol may have queued frames just now. */
                if (s->out_len)
                        pfd[0].events |= POLLOUT;
                if (poll(pfd, (nfds_t)n, timeout_ms) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (pfd[0].revents & POLLOUT)
                        write_socket(s);
                if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR))
                        read_socket(s);
                if (n > first) {
                        for (int i = first; i < n; i++)
                                if (pfd[i].revents)
                                        s->last_activity = rkl_now_usec(CLOCK_MONOTONIC);
                        s->ops->events(s, pfd + first, n - first);
                }
        }
        bool done = !s->peer_gone && !s->failed && s->ops->done(s);
        if (!s->peer_gone && !s->failed)
                s->transport->goodbye(s, done);
        if (done)
                linger(s);
        else if (!s->peer_gone && s->out_len)
                write_socket(s); /* a GOAWAY or a close frame, best effort */
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
            .transport = rkl_stream__proto_websocket(proto) ? &rkl_stream__ws_transport
                                                            : &rkl_stream__spdy_transport,
            .last_activity = rkl_now_usec(CLOCK_MONOTONIC),
        };
        if (len > 0) {
                s.in = rkl_xmalloc(len);
                memcpy(s.in, in, len);
                s.in_len = s.in_cap = len;
        }
        if (s.transport->init(&s) >= 0)
                run(&s);
        s.ops->end(&s);
        while (s.n_streams)
                stream_free(&s, s.n_streams - 1);
        s.transport->free(&s);
        free(s.in);
        free(s.out);
        rkl_stream__request_free(req);
}
