/* The streaming module below HTTP: tokens, protocol choice and exit status, and sessions
 * driven over a socketpair by a client made of the codecs (SPDY, and WebSocket binary and
 * base64), port-forwarding to a listener in this network namespace. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/alloc.h"
#include "stream/stream-internal.h"
#include "stream/websocket.h"

static rkl_stream_request *request(rkl_stream_kind kind)
{
        rkl_stream_request *r = rkl_xnew0(rkl_stream_request, 1);
        r->kind = kind;
        r->netns_fd = -1;
        return r;
}

static void test_tokens(void **state)
{
        rkl_stream_tokens *t = rkl_stream__tokens_new(2, 1000);
        char a[RKL_STREAM__TOKEN_LEN + 1], b[RKL_STREAM__TOKEN_LEN + 1],
            c[RKL_STREAM__TOKEN_LEN + 1];
        rkl_stream_request *r = request(RKL_STREAM_EXEC);

        assert_int_equal(rkl_stream__tokens_add(t, r, 0, a), 0);
        assert_int_equal(strlen(a), 32);
        assert_int_equal(strspn(a, "0123456789abcdef"), 32);
        assert_int_equal(rkl_stream__tokens_add(t, request(RKL_STREAM_EXEC), 0, b), 0);
        assert_string_not_equal(a, b);
        /* Full: the third waits for one to go. */
        rkl_stream_request *x = request(RKL_STREAM_EXEC);
        assert_int_equal(rkl_stream__tokens_add(t, x, 10, c), -EMFILE);
        /* Served once, for its kind only. */
        assert_null(rkl_stream__tokens_take(t, RKL_STREAM_EXEC, a, 31, 10));
        assert_ptr_equal(rkl_stream__tokens_take(t, RKL_STREAM_EXEC, a, 32, 10), r);
        assert_null(rkl_stream__tokens_take(t, RKL_STREAM_EXEC, a, 32, 10));
        rkl_stream__request_free(r);
        assert_null(rkl_stream__tokens_take(t, RKL_STREAM_PORT_FORWARD, b, 32, 10));
        assert_null(rkl_stream__tokens_take(t, RKL_STREAM_EXEC, b, 32, 10));
        /* Expired at its TTL. */
        assert_int_equal(rkl_stream__tokens_add(t, x, 100, c), 0);
        assert_null(rkl_stream__tokens_take(t, RKL_STREAM_EXEC, c, 32, 1100));
        assert_int_equal(rkl_stream__tokens_count(t), 0);
        assert_int_equal(rkl_stream__tokens_add(t, request(RKL_STREAM_EXEC), 2000, c), 0);
        rkl_stream__tokens_free(t); /* frees what is still filed */
}

static void test_protocols(void **state)
{
        const char *offered[] = {"v2.channel.k8s.io", "v4.channel.k8s.io", "x"};
        const char *old[] = {"channel.k8s.io"};
        const char *pf[] = {"portforward.k8s.io"};
        assert_int_equal(rkl_stream__proto_choose(RKL_STREAM_EXEC, offered, 3),
                         RKL_STREAM_PROTO_V4);
        assert_int_equal(rkl_stream__proto_choose(RKL_STREAM_EXEC, offered, 1),
                         RKL_STREAM_PROTO_V2);
        assert_int_equal(rkl_stream__proto_choose(RKL_STREAM_EXEC, old, 1), RKL_STREAM_PROTO_V1);
        assert_int_equal(rkl_stream__proto_choose(RKL_STREAM_EXEC, NULL, 0), RKL_STREAM_PROTO_V1);
        assert_true(rkl_stream__proto_choose(RKL_STREAM_EXEC, pf, 1) < 0);
        assert_true(rkl_stream__proto_choose(RKL_STREAM_PORT_FORWARD, offered, 3) < 0);
        assert_int_equal(rkl_stream__proto_choose(RKL_STREAM_PORT_FORWARD, pf, 1),
                         RKL_STREAM_PROTO_PORT_FORWARD);
        /* WebSocket: the client's order, as wsstream chooses. */
        const char *ws[] = {"x", "base64.channel.k8s.io", "v5.channel.k8s.io"};
        const char *ws_pf[] = {"v4.base64.channel.k8s.io", "v4.channel.k8s.io"};
        assert_int_equal(rkl_stream__proto_choose_ws(RKL_STREAM_EXEC, ws, 3),
                         RKL_STREAM_PROTO_WS_V1_BASE64);
        assert_int_equal(rkl_stream__proto_choose_ws(RKL_STREAM_ATTACH, ws + 2, 1),
                         RKL_STREAM_PROTO_WS_V5);
        assert_int_equal(rkl_stream__proto_choose_ws(RKL_STREAM_EXEC, NULL, 0),
                         RKL_STREAM_PROTO_WS_V1);
        assert_int_equal(rkl_stream__proto_choose_ws(RKL_STREAM_EXEC, ws_pf + 1, 1),
                         RKL_STREAM_PROTO_WS_V4);
        assert_int_equal(rkl_stream__proto_choose_ws(RKL_STREAM_PORT_FORWARD, ws_pf, 2),
                         RKL_STREAM_PROTO_WS_PORT_FORWARD_BASE64);
        assert_int_equal(rkl_stream__proto_choose_ws(RKL_STREAM_PORT_FORWARD, NULL, 0),
                         RKL_STREAM_PROTO_WS_PORT_FORWARD);
        assert_true(rkl_stream__proto_choose_ws(RKL_STREAM_PORT_FORWARD, ws, 3) < 0);
        assert_true(rkl_stream__proto_choose_ws(RKL_STREAM_EXEC, pf, 1) < 0);
        /* SPDY's names are not WebSocket's, nor the other way round. */
        assert_true(rkl_stream__proto_choose(RKL_STREAM_EXEC, ws + 2, 1) < 0);
        assert_true(rkl_stream__proto_json_status(RKL_STREAM_PROTO_WS_V5) &&
                    rkl_stream__proto_json_status(RKL_STREAM_PROTO_WS_V4_BASE64) &&
                    !rkl_stream__proto_json_status(RKL_STREAM_PROTO_WS_V1));
        assert_true(rkl_stream__proto_resize(RKL_STREAM_PROTO_WS_V1) &&
                    !rkl_stream__proto_resize(RKL_STREAM_PROTO_V2));
        assert_true(rkl_stream__proto_close_channel(RKL_STREAM_PROTO_WS_V5) &&
                    !rkl_stream__proto_close_channel(RKL_STREAM_PROTO_WS_V4));
        assert_int_equal(rkl_stream__kind_from_name("portforward", 11), RKL_STREAM_PORT_FORWARD);
        assert_true(rkl_stream__kind_from_name("exe", 3) < 0);
        char *s = rkl_stream__status_json(0);
        assert_string_equal(s, "{\"metadata\":{},\"status\":\"Success\"}");
        free(s);
        s = rkl_stream__status_json(42);
        assert_non_null(strstr(s, "\"reason\":\"NonZeroExitCode\""));
        assert_non_null(strstr(s, "\"causes\":[{\"reason\":\"ExitCode\",\"message\":\"42\"}]"));
        free(s);
}

/* The client's end: the codec both ways over one socket. */
typedef struct client {
        int fd;
        rkl_spdy_encoder *enc;
        rkl_spdy_decoder *dec;
        uint8_t in[1 << 20];
        size_t in_len;
} client;

static void client_send(client *c, const rkl_spdy_frame *f)
{
        uint8_t *buf = NULL;
        size_t len = 0, cap = 0;
        assert_int_equal(rkl_spdy_encode(c->enc, f, &buf, &len, &cap), 0);
        assert_int_equal(write(c->fd, buf, len), (ssize_t)len);
        free(buf);
}

/* The next frame from the server; false at EOF. */
static bool client_read(client *c, rkl_spdy_frame *f)
{
        for (;;) {
                rkl_error err = RKL_ERROR_INIT;
                size_t used = 0;
                int r = rkl_spdy_decode(c->dec, c->in, c->in_len, &used, f, &err);
                assert_true(r >= 0);
                memmove(c->in, c->in + used, c->in_len - used);
                c->in_len -= used;
                if (r == 1)
                        return true;
                ssize_t k = read(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len);
                assert_true(k >= 0);
                if (k == 0)
                        return false;
                c->in_len += (size_t)k;
        }
}

static void client_open(client *c, uint32_t id, const char *type, const char *port, bool fin)
{
        rkl_spdy_header h[] = {
            {"streamtype", 10, type, strlen(type)},
            {"port", 4, port, strlen(port)},
            {"requestid", 9, "7", 1},
        };
        rkl_spdy_frame f = {.type = RKL_SPDY_SYN_STREAM,
                            .stream_id = id,
                            .flags = fin ? RKL_SPDY_FLAG_FIN : 0,
                            .headers = h,
                            .n_headers = 3};
        client_send(c, &f);
}

typedef struct session_args {
        int fd;
        rkl_stream_proto proto;
        rkl_stream_request *req;
        rkl_stream_limits limits;
} session_args;

static void *session_main(void *userdata)
{
        session_args *a = userdata;
        rkl_stream__session_run(a->fd, NULL, 0, a->proto, a->req, &a->limits);
        return NULL;
}

/* An echo server that answers after the peer's half-close: proof that our FIN got there
 * as a shutdown and that its answer still comes back. */
static void *echo_main(void *userdata)
{
        int lfd = *(int *)userdata;
        int fd = accept(lfd, NULL, NULL);
        char buf[4096], all[65536];
        size_t n = 0;
        ssize_t k;
        assert_true(fd >= 0);
        while ((k = read(fd, buf, sizeof(buf))) > 0 && n + (size_t)k <= sizeof(all)) {
                memcpy(all + n, buf, (size_t)k);
                n += (size_t)k;
        }
        assert_int_equal(write(fd, "got:", 4), 4);
        assert_int_equal(write(fd, all, n), (ssize_t)n);
        close(fd);
        return NULL;
}

static void test_port_forward_session(void **state)
{
        int sp[2], lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(sa);
        char port[8];
        atomic_bool stopping = false;
        pthread_t st, et;

        /* The session dials in the pod's network namespace: setns(), which wants
         * CAP_SYS_ADMIN even into the namespace it is in already. */
        if (geteuid() != 0) {
                close(lfd);
                skip();
        }
        assert_true(lfd >= 0);
        assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(listen(lfd, 4), 0);
        assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
        snprintf(port, sizeof(port), "%u", (unsigned)ntohs(sa.sin_port));
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);

        session_args a = {.fd = sp[1],
                          .proto = RKL_STREAM_PROTO_PORT_FORWARD,
                          .req = request(RKL_STREAM_PORT_FORWARD)};
        a.req->netns_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        a.limits = (rkl_stream_limits){
            .idle_timeout_usec = 60000000, .stopping = &stopping, .stop_fd = -1};
        assert_int_equal(pthread_create(&et, NULL, echo_main, &lfd), 0);
        assert_int_equal(pthread_create(&st, NULL, session_main, &a), 0);

        client *c = rkl_xnew0(client, 1);
        c->fd = sp[0];
        assert_int_equal(rkl_spdy_encoder_new(&c->enc), 0);
        assert_int_equal(rkl_spdy_decoder_new(NULL, &c->dec), 0);
        rkl_spdy_frame f;
        client_open(c, 1, "error", port, true);
        assert_true(client_read(c, &f));
        assert_int_equal(f.type, RKL_SPDY_SYN_REPLY);
        assert_int_equal(f.stream_id, 1);
        /* Not a port number: refused; then the real data stream. */
        client_open(c, 3, "data", "0", false);
        assert_true(client_read(c, &f));
        assert_int_equal(f.type, RKL_SPDY_RST_STREAM);
        assert_int_equal(f.stream_id, 3);
        client_open(c, 5, "data", port, false);
        assert_true(client_read(c, &f));
        assert_int_equal(f.type, RKL_SPDY_SYN_REPLY);
        assert_int_equal(f.stream_id, 5);
        rkl_spdy_frame ping = {.type = RKL_SPDY_PING, .ping_id = 9};
        client_send(c, &ping);
        assert_true(client_read(c, &f));
        assert_int_equal(f.type, RKL_SPDY_PING);
        assert_int_equal(f.ping_id, 9);
        rkl_spdy_frame d = {
            .type = RKL_SPDY_DATA, .stream_id = 5, .data = (const uint8_t *)"hello", .len = 5};
        client_send(c, &d);
        d = (rkl_spdy_frame){.type = RKL_SPDY_DATA,
                             .stream_id = 5,
                             .flags = RKL_SPDY_FLAG_FIN,
                             .data = (const uint8_t *)" there",
                             .len = 6};
        client_send(c, &d);
        /* Windows granted back as the data left for the socket; the answer; its FIN; then
         * the error stream's empty FIN: the pair is done. */
        char got[64] = "";
        bool data_fin = false, err_fin = false, windows = false;
        while ((!data_fin || !err_fin) && client_read(c, &f)) {
                if (f.type == RKL_SPDY_WINDOW_UPDATE)
                        windows = true;
                if (f.type != RKL_SPDY_DATA)
                        continue;
                if (f.stream_id == 5) {
                        strncat(got, (const char *)f.data, f.len);
                        data_fin = f.flags & RKL_SPDY_FLAG_FIN;
                } else {
                        assert_int_equal(f.stream_id, 1);
                        assert_int_equal(f.len, 0);
                        err_fin = f.flags & RKL_SPDY_FLAG_FIN;
                }
        }
        assert_string_equal(got, "got:hello there");
        assert_true(windows);
        /* A stream id that goes back: a protocol error for that stream only. */
        client_open(c, 1, "error", port, true);
        assert_true(client_read(c, &f));
        assert_int_equal(f.type, RKL_SPDY_RST_STREAM);
        /* Garbage: the session says GOAWAY and ends. */
        assert_int_equal(write(c->fd, "\x80\x09\x00\x01\x00\x00\x00\x00garbage!", 16), 16);
        bool goaway = false;
        while (!goaway && client_read(c, &f))
                goaway = f.type == RKL_SPDY_GOAWAY;
        assert_true(goaway);
        pthread_join(st, NULL); /* the socket is the caller's to close */
        close(sp[1]);
        pthread_join(et, NULL);
        rkl_spdy_encoder_free(c->enc);
        rkl_spdy_decoder_free(c->dec);
        free(c);
        close(sp[0]);
        close(lfd);
}

/* A server that answers the first line it reads, then closes. */
static void *line_main(void *userdata)
{
        int lfd = *(int *)userdata;
        int fd = accept(lfd, NULL, NULL);
        char buf[256];
        size_t n = 0;
        ssize_t k;
        assert_true(fd >= 0);
        while (!memchr(buf, '\n', n) && (k = read(fd, buf + n, sizeof(buf) - n)) > 0)
                n += (size_t)k;
        assert_int_equal(write(fd, "got:", 4), 4);
        assert_int_equal(write(fd, buf, n), (ssize_t)n);
        close(fd);
        return NULL;
}

typedef struct ws_client {
        int fd;
        rkl_ws_decoder *dec;
        uint8_t in[1 << 16];
        size_t in_len;
        bool base64;
} ws_client;

static void ws_send(ws_client *c, rkl_ws_opcode op, bool fin, const void *p, size_t n)
{
        static const uint8_t key[4] = {1, 2, 3, 4};
        uint8_t *buf = NULL;
        size_t len = 0, cap = 0;
        assert_int_equal(rkl_ws_encode(op, fin, key, p, n, &buf, &len, &cap), 0);
        assert_int_equal(write(c->fd, buf, len), (ssize_t)len);
        free(buf);
}

/* A message on channel ch, as the protocol frames it. */
static void ws_message(ws_client *c, uint8_t ch, const char *data)
{
        char buf[512];
        size_t n = strlen(data);
        buf[0] = c->base64 ? (char)('0' + ch) : (char)ch;
        if (c->base64)
                n = rkl_ws_base64_encode(data, n, buf + 1);
        else
                memcpy(buf + 1, data, n);
        ws_send(c, c->base64 ? RKL_WS_TEXT : RKL_WS_BINARY, true, buf, 1 + n);
}

/* The next frame from the server, its payload (channel messages decoded: the channel in
 * *ch) at out; false at EOF. */
static bool ws_read(ws_client *c, rkl_ws_frame *f, int *ch, uint8_t *out, size_t *out_len)
{
        for (;;) {
                size_t used = 0;
                int r = rkl_ws_decode(c->dec, c->in, c->in_len, &used, f, NULL);
                assert_true(r >= 0);
                if (r == 1) {
                        *ch = -1;
                        *out_len = f->len;
                        if (f->opcode == RKL_WS_BINARY || f->opcode == RKL_WS_TEXT) {
                                assert_int_equal(f->opcode,
                                                 c->base64 ? RKL_WS_TEXT : RKL_WS_BINARY);
                                assert_true(f->len >= 1 && f->fin);
                                *ch = c->base64 ? f->data[0] - '0' : f->data[0];
                                *out_len = f->len - 1;
                                if (c->base64)
                                        *out_len = (size_t)rkl_ws_base64_decode(
                                            (const char *)f->data + 1, f->len - 1, out);
                                else
                                        memcpy(out, f->data + 1, f->len - 1);
                        } else {
                                memcpy(out, f->data, f->len);
                        }
                }
                memmove(c->in, c->in + used, c->in_len - used);
                c->in_len -= used;
                if (r == 1)
                        return true;
                ssize_t k = read(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len);
                assert_true(k >= 0);
                if (k == 0)
                        return false;
                c->in_len += (size_t)k;
        }
}

/* Port-forward over WebSocket: two ports, one answering, one refused; the port on each
 * channel first, a ping answered, the answer, the refusal on the second's error channel,
 * and a close frame once both connections are over. */
static void ws_port_forward(rkl_stream_proto proto)
{
        int sp[2], lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(sa);
        atomic_bool stopping = false;
        pthread_t st, lt;

        assert_true(lfd >= 0);
        assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(listen(lfd, 4), 0);
        assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
        uint16_t port = ntohs(sa.sin_port);
        /* The next port is very likely closed. */
        uint16_t closed = (uint16_t)(port + 1);

        session_args a = {.fd = sp[1], .proto = proto, .req = request(RKL_STREAM_PORT_FORWARD)};
        a.req->netns_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        a.req->ports = rkl_xnew(int32_t, 2);
        a.req->ports[0] = port;
        a.req->ports[1] = closed;
        a.req->n_ports = 2;
        a.limits = (rkl_stream_limits){
            .idle_timeout_usec = 60000000, .stopping = &stopping, .stop_fd = -1};
        assert_int_equal(pthread_create(&lt, NULL, line_main, &lfd), 0);
        assert_int_equal(pthread_create(&st, NULL, session_main, &a), 0);

        ws_client *c = rkl_xnew0(ws_client, 1);
        c->fd = sp[0];
        c->base64 = rkl_stream__proto_base64(proto);
        assert_int_equal(rkl_ws_decoder_new(NULL, false, &c->dec), 0);
        rkl_ws_frame f;
        uint8_t got[1024];
        size_t n;
        int ch;
        /* Each channel's first message: its port, little-endian. */
        for (int i = 0; i < 4; i++) {
                assert_true(ws_read(c, &f, &ch, got, &n));
                assert_int_equal(ch, i);
                assert_int_equal(n, 2);
                assert_int_equal(got[0] | got[1] << 8, i < 2 ? port : closed);
        }
        ws_send(c, RKL_WS_PING, true, "p1", 2);
        /* Fragmented, with a ping between the fragments. */
        char first[16];
        first[0] = c->base64 ? '0' : 0;
        size_t k = 1 + (c->base64 ? rkl_ws_base64_encode("hel", 3, first + 1) : 0);
        if (!c->base64)
                memcpy(first + 1, "hel", 3), k += 3;
        ws_send(c, c->base64 ? RKL_WS_TEXT : RKL_WS_BINARY, false, first, k);
        ws_send(c, RKL_WS_PING, true, "p2", 2);
        ws_send(c, RKL_WS_CONTINUATION, true, c->base64 ? "bG8K" : "lo\n", c->base64 ? 4 : 3);
        /* A message on the closed port's data channel goes nowhere. */
        ws_message(c, 2, "nobody\n");
        char answer[64] = "", refused[256] = "";
        int pongs = 0;
        bool closed_frame = false;
        while (!closed_frame && ws_read(c, &f, &ch, got, &n)) {
                if (f.opcode == RKL_WS_PONG) {
                        assert_memory_equal(got, pongs ? "p2" : "p1", 2);
                        pongs++;
                } else if (f.opcode == RKL_WS_CLOSE) {
                        assert_int_equal(f.close_code, RKL_WS_CLOSE_NORMAL);
                        closed_frame = true;
                } else if (ch == 0) {
                        strncat(answer, (const char *)got, n);
                } else if (ch == 3) {
                        strncat(refused, (const char *)got, n);
                } else {
                        assert_int_equal(n, 0);
                }
        }
        assert_true(closed_frame);
        assert_int_equal(pongs, 2);
        assert_string_equal(answer, "got:hello\n");
        assert_non_null(strstr(refused, "cannot connect to localhost:"));
        /* The session lingers for our close; it ends on EOF. */
        ws_send(c, RKL_WS_CLOSE, true, "\x03\xe8", 2);
        shutdown(sp[0], SHUT_WR);
        pthread_join(st, NULL);
        close(sp[1]);
        pthread_join(lt, NULL);
        rkl_ws_decoder_free(c->dec);
        free(c);
        close(sp[0]);
        close(lfd);
}

/* Garbage after the handshake: the session says why in a close frame and ends. */
static void ws_bad_frame(void)
{
        int sp[2];
        atomic_bool stopping = false;
        pthread_t st;
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
        session_args a = {.fd = sp[1],
                          .proto = RKL_STREAM_PROTO_WS_PORT_FORWARD,
                          .req = request(RKL_STREAM_PORT_FORWARD)};
        a.req->netns_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        a.req->ports = rkl_xnew(int32_t, 1);
        a.req->ports[0] = 1; /* refused: nothing listens there */
        a.req->n_ports = 1;
        a.limits = (rkl_stream_limits){
            .idle_timeout_usec = 60000000, .stopping = &stopping, .stop_fd = -1};
        assert_int_equal(pthread_create(&st, NULL, session_main, &a), 0);
        /* Unmasked: a protocol error. */
        assert_int_equal(write(sp[0], "\x82\x01x", 3), 3);
        ws_client *c = rkl_xnew0(ws_client, 1);
        c->fd = sp[0];
        assert_int_equal(rkl_ws_decoder_new(NULL, false, &c->dec), 0);
        rkl_ws_frame f;
        uint8_t got[1024];
        size_t n;
        int ch;
        uint16_t code = 0;
        while (!code && ws_read(c, &f, &ch, got, &n))
                if (f.opcode == RKL_WS_CLOSE)
                        code = f.close_code;
        /* The refused port may have ended the session first, normally. */
        assert_true(code == RKL_WS_CLOSE_PROTOCOL_ERROR || code == RKL_WS_CLOSE_NORMAL);
        pthread_join(st, NULL);
        close(sp[1]);
        rkl_ws_decoder_free(c->dec);
        free(c);
        close(sp[0]);
}

static void test_ws_port_forward_session(void **state)
{
        /* Dials in the pod's network namespace: setns() wants CAP_SYS_ADMIN. */
        if (geteuid() != 0)
                skip();
        ws_port_forward(RKL_STREAM_PROTO_WS_PORT_FORWARD);
        ws_port_forward(RKL_STREAM_PROTO_WS_PORT_FORWARD_BASE64);
        ws_bad_frame();
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_tokens),
            cmocka_unit_test(test_protocols),
            cmocka_unit_test(test_port_forward_session),
            cmocka_unit_test(test_ws_port_forward_session),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
