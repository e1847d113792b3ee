/* What the gRPC server's files share, and no one else sees: a method, a completion-queue
 * worker, the server and a call. server.c has the server's life, its workers and a call's
 * path from request to answer; server-defer.c the calls a worker pool finishes;
 * server-stream.c the server-streaming calls; server-listen.c the socket, bound or handed
 * over by systemd. A call is owned by exactly one thread at a time; its tag is its
 * rkl_api_call pointer. */
#pragma once

#include <grpc/grpc.h>
#include <pthread.h>
#include <stdatomic.h>

#include "api.h"
#include "server.h"
#include "wire.h"
#include "metrics/metrics.h"

typedef struct method {
        char *path; /* "/runtime.v1.RuntimeService/Version" */
        const ProtobufCMethodDescriptor *desc;
        rkl_api_handler handler;
        const rkl_api_wire_limits *limits; /* what one request may cost */
        void *registered;                  /* grpc's handle */
        rkl_metrics_series *metrics;       /* its latency and failures */
} method;

typedef struct worker {
        rkl_api_server *srv;
        grpc_completion_queue *cq;
        rkl_store *store; /* this thread's own connection */
        pthread_t thread;
        bool started;
} worker;

struct rkl_api_server {
        const rkl_api_config *cfg;
        rkl_cache *cache;
        rkl_reconciler *reconciler;
        grpc_server *server;
        grpc_completion_queue *shutdown_cq;
        method *methods;
        size_t n_methods;
        worker *workers;
        size_t n_workers;
        atomic_bool shutting_down;
        rkl_workpool *pools[_RKL_API_POOL_MAX]; /* deferred calls (api.h) */
        /* Replies of BIG_REPLY bytes or more being sent, and the most at once since none
         * was: see reply_done(). */
        atomic_uint big_in_flight, big_peak;
        bool listening, started, shut_down;
        /* Socket activation: the inherited listening socket, its accept thread, and the
         * eventfd that stops it. */
        int listen_fd, accept_stop_fd;
        pthread_t accept_thread;
        bool accepting;
};

/* What a completion-queue event is about: every batch has its own tag. */
typedef enum tag_kind {
        TAG_REQUEST, /* a requested call arrived (or the request was cancelled) */
        TAG_SEND,    /* the answer was sent (for plain calls: and the call closed) */
        TAG_CLOSE,   /* a deferred call's client closed or cancelled */
        TAG_WAKE,    /* a stream's source has news (rkl_api_stream_wake()) */
        TAG_STREAM,  /* a stream's initial metadata or message was sent */
} tag_kind;

typedef struct call_tag {
        rkl_api_call *call;
        tag_kind kind;
} call_tag;

struct rkl_api_call {
        call_tag tag_request, tag_send, tag_close, tag_wake, tag_stream;
        atomic_int pending; /* batches outstanding: the call is freed when none is left */
        worker *w;
        const method *m; /* NULL for the catch-all request */
        grpc_call *call;
        gpr_timespec deadline;
        grpc_byte_buffer *payload;
        grpc_metadata_array md;
        grpc_call_details details; /* catch-all only */
        grpc_byte_buffer *response;
        grpc_slice status_details;
        bool has_status_details;
        bool deferred;
        int cancelled;               /* written by grpc for the RECV_CLOSE_ON_SERVER op */
        atomic_bool cancel_seen;     /* set once that op completed with cancelled=1 */
        const ProtobufCMessage *req; /* in the arena */
        ProtobufCMessage *resp;      /* deferred calls: what the handler fills */
        unsigned char *raw;          /* an answer the handler encoded itself (malloc'd, ours) */
        size_t raw_len;
        bool big;         /* counted in big_in_flight until freed */
        uint64_t t_start; /* CLOCK_MONOTONIC usec: the request arrived */
        rkl_arena *arena;
        /* A server-streaming call: what its handler gave rkl_api_stream(). The rest is the
         * worker's but wake_pending: streaming is set once it began there. */
        const rkl_api_stream_ops *stream;
        void *stream_userdata;
        bool streaming;
        bool stream_sending;          /* a send batch in flight: one at most */
        bool stream_failed;           /* a send failed: the call is gone */
        bool stream_over;             /* done() was called */
        grpc_byte_buffer *stream_msg; /* the message in flight */
        atomic_bool wake_pending;     /* a wake-up posted and not yet handled */
};

/* server.c: a call's path. */
void rkl_api__call_unref(rkl_api_call *c);
/* Runs the call's handler on its decoded request (store: the thread's connection, NULL on a
 * pool) and answers, unless it deferred or streams. */
void rkl_api__call_handle(rkl_api_call *c, rkl_store *store, bool late);
/* Packs the response, or maps the error, and sends it: the end of every call. */
void rkl_api__call_answer(rkl_api_call *c, int r, const rkl_error *err);
void rkl_api__call_send(rkl_api_call *c, grpc_status_code code, const char *msg);

/* server-defer.c: the pools of api.h's rkl_api_defer_on(). */
/* Watches for the client going away, once per call: cancellation is only visible so. */
void rkl_api__close_watch(rkl_api_call *c);
void rkl_api__pools_start(rkl_api_server *s);
/* Waits for the calls the exec and wait pools run (cancelled by then, if not done). */
void rkl_api__pools_drain(rkl_api_server *s);

/* server-stream.c: on the call's worker. */
void rkl_api__stream_begin(rkl_api_call *c);
void rkl_api__stream_pump(rkl_api_call *c);
/* The source's done(), once, whatever ended the stream (or a stream that never began). */
void rkl_api__stream_over(rkl_api_call *c);

/* server-listen.c: where calls come in. */
/* Before anything starts: a path to bind that is free (a stale socket is fine). Nothing to
 * check for an activated socket. */
int rkl_api__socket_check(const rkl_config *o, rkl_error *reterr);
/* Binds listen_path (0660, the socket group's) or takes the socket systemd passed; from
 * then on grpc wants a shutdown before it is destroyed (s->listening). */
int rkl_api__listen(rkl_api_server *s, rkl_error *reterr);
/* The accept thread of an activated socket; nothing to do for a bound one. */
int rkl_api__accept_start(rkl_api_server *s, rkl_error *reterr);
void rkl_api__accept_stop(rkl_api_server *s);
