/* What the streaming module's files share: the request a token stands for, the token table,
 * the protocols' names, and the session core that the exec and port-forward protocols plug
 * into, whichever transport (SPDY or WebSocket, transport.h) carries it. */
#pragma once

#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "spdy.h"
#include "stream.h"

typedef enum rkl_stream_kind {
        RKL_STREAM_EXEC,
        RKL_STREAM_ATTACH,
        RKL_STREAM_PORT_FORWARD,
        _RKL_STREAM_KIND_MAX,
        _RKL_STREAM_KIND_INVALID = -EINVAL,
} rkl_stream_kind;

/* The URL path's first part for a kind ("exec"), and the kind of one (or _INVALID). */
const char *rkl_stream__kind_name(rkl_stream_kind k);
rkl_stream_kind rkl_stream__kind_from_name(const char *name, size_t len);

/* What a token was issued for. */
typedef struct rkl_stream_request {
        rkl_stream_kind kind;
        pid_t pid;
        char **argv;
        char *seccomp;
        char *attach_dir;
        bool tty, stdin, stdout, stderr, stdin_once;
        int netns_fd; /* port-forward: the pod's network namespace, opened when issued */
        int32_t *ports;
        size_t n_ports;
} rkl_stream_request;

rkl_stream_request *rkl_stream__request_free(rkl_stream_request *r);
RKL_DEFINE_CLEANUP(rkl_stream_request *, rkl_stream__request_free)

/* 128 random bits in lower-case hex. */
#define RKL_STREAM__TOKEN_LEN 32

typedef struct rkl_stream_tokens rkl_stream_tokens;

rkl_stream_tokens *rkl_stream__tokens_new(size_t max, uint64_t ttl_usec);
rkl_stream_tokens *rkl_stream__tokens_free(rkl_stream_tokens *t);
/* Files req (taken over on success) under a new token. Expired tokens are dropped first;
 * -EMFILE when max are still outstanding, or the getrandom() error. */
int rkl_stream__tokens_add(rkl_stream_tokens *t, rkl_stream_request *req, uint64_t now_usec,
                           char ret[static RKL_STREAM__TOKEN_LEN + 1]);
/* The request filed under token for kind, removed: a token serves once. NULL when unknown,
 * expired, or of another kind (which spends it too: a probe learns nothing twice). */
rkl_stream_request *rkl_stream__tokens_take(rkl_stream_tokens *t, rkl_stream_kind kind,
                                            const char *token, size_t len, uint64_t now_usec);
size_t rkl_stream__tokens_count(rkl_stream_tokens *t);

/* The channel protocols and which kind each serves. SPDY's are named in
 * X-Stream-Protocol-Version and chosen best first; WebSocket's in Sec-WebSocket-Protocol, and
 * chosen in the client's order, as kubelet's library (wsstream) does. */
typedef enum rkl_stream_proto {
        RKL_STREAM_PROTO_V4, /* v4.channel.k8s.io: JSON status, resize */
        RKL_STREAM_PROTO_V3, /* v3.channel.k8s.io: resize */
        RKL_STREAM_PROTO_V2, /* v2.channel.k8s.io */
        RKL_STREAM_PROTO_V1, /* channel.k8s.io */
        RKL_STREAM_PROTO_PORT_FORWARD,
        /* WebSocket: a channel number before each message's data; resize in all */
        RKL_STREAM_PROTO_WS_V5,           /* v5.channel.k8s.io: v4 and the close message (255) */
        RKL_STREAM_PROTO_WS_V4,           /* v4.channel.k8s.io: JSON status */
        RKL_STREAM_PROTO_WS_V4_BASE64,    /* v4.base64.channel.k8s.io: as text, base64 */
        RKL_STREAM_PROTO_WS_V1,           /* channel.k8s.io, or none named */
        RKL_STREAM_PROTO_WS_V1_BASE64,    /* base64.channel.k8s.io */
        RKL_STREAM_PROTO_WS_PORT_FORWARD, /* v4.channel.k8s.io, or none named */
        RKL_STREAM_PROTO_WS_PORT_FORWARD_BASE64, /* v4.base64.channel.k8s.io */
        _RKL_STREAM_PROTO_MAX,
        _RKL_STREAM_PROTO_INVALID = -EINVAL,
} rkl_stream_proto;

const char *rkl_stream__proto_name(rkl_stream_proto p);
/* The best SPDY protocol of kind among the offered names (n of them); with none offered,
 * the oldest (as kubelet's server does for old clients). _INVALID when none fits. */
rkl_stream_proto rkl_stream__proto_choose(rkl_stream_kind kind, const char *const *offered,
                                          size_t n);
/* The WebSocket protocol of kind for the first offered name that has one; with none
 * offered, the binary one that answers to no name. _INVALID when none fits. */
rkl_stream_proto rkl_stream__proto_choose_ws(rkl_stream_kind kind, const char *const *offered,
                                             size_t n);
bool rkl_stream__proto_websocket(rkl_stream_proto p);
bool rkl_stream__proto_base64(rkl_stream_proto p); /* WebSocket text messages, base64 */
bool rkl_stream__proto_json_status(rkl_stream_proto p);
bool rkl_stream__proto_resize(rkl_stream_proto p);
bool rkl_stream__proto_close_channel(rkl_stream_proto p); /* v5's message 255 */

/* v4's error stream: the JSON Status for an exit code (0: Success). */
char *rkl_stream__status_json(int exit_code);

/* One stream of a session, as the protocols see it: an SPDY stream, or a WebSocket channel
 * (id is then the channel's number). */
typedef struct rkl_stream_channel {
        uint32_t id;
        int type;            /* the protocol's own */
        bool in_fin;         /* the peer sent its last byte */
        bool out_fin;        /* we sent ours */
        int64_t send_window; /* SPDY's flow control */
        uint8_t *in;         /* received, not yet passed on */
        size_t in_len, in_cap;
        size_t unacked; /* passed on, not yet granted back by WINDOW_UPDATE */
        void *data;     /* the protocol's */
} rkl_stream_channel;

/* The name/value pairs a stream is opened with: SPDY's header block, or what the WebSocket
 * transport makes up for its channels (streamtype, port, requestid). */
typedef rkl_spdy_header rkl_stream_header;
/* The first pair named name, or NULL. */
const rkl_stream_header *rkl_stream__header(const rkl_stream_header *h, size_t n, const char *name);

typedef struct rkl_stream_session rkl_stream_session;

/* What a protocol does with a session's streams. Each hook runs in the session's thread. */
typedef struct rkl_stream_ops {
        /* A stream opens: set st->type (and data); <0 refuses it. */
        int (*open)(rkl_stream_session *s, rkl_stream_channel *st, const rkl_stream_header *h,
                    size_t n);
        /* Bytes arrived in st->in, or the peer's FIN (st->in_fin) or RST (reset true). */
        void (*input)(rkl_stream_session *s, rkl_stream_channel *st, bool reset);
        /* Adds the fds to watch at pfd (room for max), returns how many; may lower
         * *timeout_ms. */
        int (*poll)(rkl_stream_session *s, struct pollfd *pfd, int max, int *timeout_ms);
        /* After poll(): pfd and n as poll() left them. */
        void (*events)(rkl_stream_session *s, const struct pollfd *pfd, int n);
        /* True when the protocol is done: the session flushes and ends. */
        bool (*done)(rkl_stream_session *s);
        /* The session ends (the peer went away, or done()): release everything. */
        void (*end)(rkl_stream_session *s);
} rkl_stream_ops;

extern const rkl_stream_ops rkl_stream__exec_ops;
extern const rkl_stream_ops rkl_stream__port_forward_ops;

typedef struct rkl_stream_limits {
        uint64_t idle_timeout_usec;
        const char *exec_helper;
        const atomic_bool *stopping; /* the server is going away */
        int stop_fd;                 /* readable once stopping */
} rkl_stream_limits;

/* Runs a session on the upgraded connection fd (not closed: the caller's) to its end. in
 * (len bytes) is what the peer sent after its request. req is taken over. */
void rkl_stream__session_run(int fd, const uint8_t *in, size_t len, rkl_stream_proto proto,
                             rkl_stream_request *req, const rkl_stream_limits *limits);

/* For the protocols. */
rkl_stream_request *rkl_stream__session_request(rkl_stream_session *s);
rkl_stream_proto rkl_stream__session_proto(rkl_stream_session *s);
const rkl_stream_limits *rkl_stream__session_limits(rkl_stream_session *s);
void *rkl_stream__session_data(rkl_stream_session *s);
void rkl_stream__session_set_data(rkl_stream_session *s, void *data);
/* True when the transport opened every stream at the start (WebSocket's channels): none
 * will come later, so a protocol waiting for more is done once its streams are. */
bool rkl_stream__session_fixed(rkl_stream_session *s);
/* How many bytes st may send now: its window (when the peer counts windows) and the room in
 * the session's output buffer; 0 means wait (the session polls the socket meanwhile). */
size_t rkl_stream__send_room(rkl_stream_session *s, rkl_stream_channel *st);
/* Queues buf (at most send_room() bytes) and the stream's end when fin. */
void rkl_stream__send(rkl_stream_session *s, rkl_stream_channel *st, const void *buf, size_t len,
                      bool fin);
/* n bytes of st->in were passed on: they leave the buffer and the peer may send more. */
void rkl_stream__consumed(rkl_stream_session *s, rkl_stream_channel *st, size_t n);
/* Ends st at once (SPDY: RST_STREAM status). */
void rkl_stream__reset(rkl_stream_session *s, rkl_stream_channel *st, uint32_t status);
