/* Port-forward over portforward.k8s.io: each forwarded connection is a pair of streams with
 * the same requestid, error (opened first) and data (over WebSocket the transport opens a
 * pair per port of the request, at the start); the data stream is joined to a TCP
 * connection to localhost:PORT made inside the pod's network namespace. Both directions
 * are copied with half-close kept: the peer's FIN shuts our write side, the socket's EOF is
 * our FIN. A failed connect is told on the error stream. */
#include "stream-internal.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/banned.h"

#define MAX_PAIRS 128

enum { PF_ERROR = 1, PF_DATA };

typedef struct pf_pair {
        char id[32];
        uint16_t port;
        rkl_stream_channel *err, *data;
        int fd;
        bool shut_wr; /* the peer's FIN passed on */
        bool closed;  /* finished: waiting to be dropped */
        char *fail;   /* the connect's error, to be sent */
} pf_pair;

typedef struct pf_state {
        pf_pair *pairs[MAX_PAIRS];
        size_t n;
} pf_state;

static pf_state *state(rkl_stream_session *s)
{
        pf_state *p = rkl_stream__session_data(s);
        if (!p) {
                p = rkl_xnew0(pf_state, 1);
                rkl_stream__session_set_data(s, p);
        }
        return p;
}

static bool header_is(const rkl_stream_header *h, const char *v)
{
        return h && h->value_len == strlen(v) && memcmp(h->value, v, h->value_len) == 0;
}

static int port_parse(const rkl_stream_header *h, const rkl_stream_request *r, uint16_t *ret)
{
        char buf[8];
        unsigned v;
        if (!h || h->value_len == 0 || h->value_len >= sizeof(buf))
                return -EINVAL;
        memcpy(buf, h->value, h->value_len);
        buf[h->value_len] = 0;
        if (rkl_safe_atou(buf, &v) < 0 || v == 0 || v > RKL_MAX_PORT)
                return -EINVAL;
        bool allowed = r->n_ports == 0;
        for (size_t i = 0; i < r->n_ports; i++)
                allowed = allowed || r->ports[i] == (int32_t)v;
        if (!allowed)
                return -EPERM;
        *ret = (uint16_t)v;
        return 0;
}

typedef struct dial_args {
        int netns_fd;
        uint16_t port;
        int fd; /* or -errno */
} dial_args;

/* In a thread of its own, as setns() moves only the calling thread. */
static void *dial_main(void *userdata)
{
        dial_args *a = userdata;
        if (setns(a->netns_fd, CLONE_NEWNET) < 0) {
                a->fd = -errno;
                return NULL;
        }
        struct sockaddr_in in4 = {.sin_family = AF_INET,
                                  .sin_port = htons(a->port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        struct sockaddr_in6 in6 = {.sin6_family = AF_INET6,
                                   .sin6_port = htons(a->port),
                                   .sin6_addr = IN6ADDR_LOOPBACK_INIT};
        const struct sockaddr *addrs[] = {(const struct sockaddr *)&in4,
                                          (const struct sockaddr *)&in6};
        const socklen_t lens[] = {sizeof(in4), sizeof(in6)};
        a->fd = -ECONNREFUSED;
        for (size_t i = 0; i < ELEMENTSOF(addrs); i++) {
                int fd = socket(addrs[i]->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0) {
                        a->fd = -errno;
                        continue;
                }
                if (connect(fd, addrs[i], lens[i]) == 0) {
                        a->fd = fd;
                        break;
                }
                a->fd = -errno;
                (void)close(fd);
        }
        return NULL;
}

static int dial(int netns_fd, uint16_t port)
{
        dial_args a = {.netns_fd = netns_fd, .port = port};
        pthread_t t;
        int k = pthread_create(&t, NULL, dial_main, &a);
        if (k != 0)
                return -k;
        (void)pthread_join(t, NULL);
        if (a.fd >= 0 && fcntl(a.fd, F_SETFL, O_NONBLOCK) < 0) {
                k = -errno;
                (void)close(a.fd);
                return k;
        }
        return a.fd;
}

static void pair_close(rkl_stream_session *s, pf_pair *p, const char *error)
{
        if (p->closed)
                return;
        p->closed = true;
        p->fd = safe_close(p->fd);
        if (p->data) {
                rkl_stream__send(s, p->data, NULL, 0, true);
                p->data->in_fin = true;
        }
        if (p->err) {
                rkl_stream__send(s, p->err, error, error ? strlen(error) : 0, true);
                p->err->in_fin = true;
        }
}

/* Lets go of its streams (the session frees them) and of its socket. */
static void pair_free(pf_pair *p)
{
        safe_close(p->fd);
        if (p->err)
                p->err->data = NULL;
        if (p->data)
                p->data->data = NULL;
        free(p->fail);
        free(p);
}

static pf_pair *pair_find(pf_state *ps, const rkl_stream_header *id)
{
        for (size_t i = 0; i < ps->n; i++)
                if (strlen(ps->pairs[i]->id) == id->value_len &&
                    memcmp(ps->pairs[i]->id, id->value, id->value_len) == 0)
                        return ps->pairs[i];
        return NULL;
}

static int pf_open(rkl_stream_session *s, rkl_stream_channel *st, const rkl_stream_header *h,
                   size_t n)
{
        pf_state *ps = state(s);
        rkl_stream_request *r = rkl_stream__session_request(s);
        const rkl_stream_header *type = rkl_stream__header(h, n, "streamtype");
        const rkl_stream_header *id = rkl_stream__header(h, n, "requestid");
        uint16_t port;
        if (!id || id->value_len == 0 || id->value_len >= sizeof(ps->pairs[0]->id))
                return -EINVAL;
        if (port_parse(rkl_stream__header(h, n, "port"), r, &port) < 0)
                return -EINVAL;
        pf_pair *p = pair_find(ps, id);
        if (header_is(type, "error")) {
                if (p || ps->n >= MAX_PAIRS)
                        return -EINVAL;
                p = rkl_xnew0(pf_pair, 1);
                memcpy(p->id, id->value, id->value_len);
                p->port = port;
                p->fd = -1;
                p->err = st;
                st->type = PF_ERROR;
                st->data = p;
                ps->pairs[ps->n++] = p;
                return 0;
        }
        if (!header_is(type, "data") || !p || p->data || p->port != port || p->closed)
                return -EINVAL;
        p->data = st;
        st->type = PF_DATA;
        st->data = p;
        int fd = dial(r->netns_fd, port);
        if (fd < 0) {
                /* Told once the data stream's reply is out (pf_poll). */
                p->fail = rkl_xasprintf(
                    "cannot connect to localhost:%u in the pod's network namespace: %s",
                    (unsigned)port, strerror(-fd));
                rkl_log_debug("stream: port-forward: %s", p->fail);
                return 0;
        }
        p->fd = fd;
        return 0;
}

static void pump_in(rkl_stream_session *s, pf_pair *p)
{
        rkl_stream_channel *st = p->data;
        while (st->in_len > 0 && p->fd >= 0 && !p->shut_wr) {
                ssize_t k = send(p->fd, st->in, st->in_len, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EAGAIN)
                        return;
                if (k < 0) {
                        rkl_stream__consumed(s, st, st->in_len);
                        pair_close(s, p, NULL);
                        return;
                }
                rkl_stream__consumed(s, st, (size_t)k);
        }
        if (st->in_len > 0 && (p->fd < 0 || p->shut_wr))
                rkl_stream__consumed(s, st, st->in_len);
        if (st->in_fin && st->in_len == 0 && p->fd >= 0 && !p->shut_wr) {
                p->shut_wr = true;
                (void)shutdown(p->fd, SHUT_WR);
        }
}

static void pf_input(rkl_stream_session *s, rkl_stream_channel *st, bool reset)
{
        pf_pair *p = st->data;
        if (!p || st->type == PF_ERROR) {
                rkl_stream__consumed(s, st, st->in_len); /* nothing is read from error */
                return;
        }
        if (reset) {
                pair_close(s, p, NULL);
                return;
        }
        pump_in(s, p);
}

static void reap(rkl_stream_session *s, pf_state *ps);

static int pf_poll(rkl_stream_session *s, struct pollfd *pfd, int max, int *timeout_ms)
{
        pf_state *ps = state(s);
        int n = 0;
        (void)timeout_ms;
        for (size_t i = 0; i < ps->n; i++)
                if (ps->pairs[i]->fail)
                        pair_close(s, ps->pairs[i], ps->pairs[i]->fail);
        reap(s, ps);
        for (size_t i = 0; i < ps->n && n < max; i++) {
                pf_pair *p = ps->pairs[i];
                if (p->fd < 0 || !p->data)
                        continue;
                short ev = 0;
                if (!p->data->out_fin && rkl_stream__send_room(s, p->data) > 0)
                        ev |= POLLIN;
                if (p->data->in_len > 0 && !p->shut_wr)
                        ev |= POLLOUT;
                if (ev)
                        pfd[n++] = (struct pollfd){.fd = p->fd, .events = ev};
        }
        return n;
}

static void pump_out(rkl_stream_session *s, pf_pair *p)
{
        char buf[32 << 10];
        size_t room = rkl_stream__send_room(s, p->data);
        if (room == 0)
                return;
        ssize_t k = recv(p->fd, buf, room < sizeof(buf) ? room : sizeof(buf), MSG_DONTWAIT);
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (k < 0) {
                _cleanup_free_ char *msg =
                    rkl_xasprintf("localhost:%u: %s", (unsigned)p->port, strerror(errno));
                pair_close(s, p, msg);
                return;
        }
        rkl_stream__send(s, p->data, buf, (size_t)k, k == 0);
}

/* A pair is over once both directions ended: its streams go. */
static void reap(rkl_stream_session *s, pf_state *ps)
{
        for (size_t i = 0; i < ps->n;) {
                pf_pair *p = ps->pairs[i];
                bool over = p->closed || (p->data && p->data->out_fin && p->data->in_fin &&
                                          p->data->in_len == 0);
                if (!over) {
                        i++;
                        continue;
                }
                pair_close(s, p, NULL);
                pair_free(p);
                ps->pairs[i] = ps->pairs[--ps->n];
        }
}

static void pf_events(rkl_stream_session *s, const struct pollfd *pfd, int n)
{
        pf_state *ps = state(s);
        for (int i = 0; i < n; i++) {
                if (!pfd[i].revents)
                        continue;
                for (size_t j = 0; j < ps->n; j++) {
                        pf_pair *p = ps->pairs[j];
                        if (p->fd != pfd[i].fd)
                                continue;
                        if (pfd[i].revents & POLLOUT)
                                pump_in(s, p);
                        if (p->fd >= 0 && (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                                pump_out(s, p);
                        break;
                }
        }
        reap(s, ps);
}

static bool pf_done(rkl_stream_session *s)
{
        /* Over SPDY the peer opens a pair per connection it accepts: until it closes. Over
         * WebSocket the pairs are the ports of the request, one connection each. */
        pf_state *ps = rkl_stream__session_data(s);
        return rkl_stream__session_fixed(s) && (!ps || ps->n == 0);
}

static void pf_end(rkl_stream_session *s)
{
        pf_state *ps = rkl_stream__session_data(s);
        if (!ps)
                return;
        for (size_t i = 0; i < ps->n; i++)
                pair_free(ps->pairs[i]);
        free(ps);
        rkl_stream__session_set_data(s, NULL);
}

const rkl_stream_ops rkl_stream__port_forward_ops = {
    .open = pf_open,
    .input = pf_input,
    .poll = pf_poll,
    .events = pf_events,
    .done = pf_done,
    .end = pf_end,
};
