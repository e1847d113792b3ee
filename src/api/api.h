/* What CRI handlers see: plain functions over protobuf-c request/response structs, callable
 * without a socket (tests do). protobuf-c types never leave src/api/. */
#pragma once

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/error.h"
#include "base/time-util.h"
#include "base/workpool.h"

typedef struct rkl_cache rkl_cache;
typedef struct rkl_images rkl_images;
typedef struct rkl_logs rkl_logs;
typedef struct rkl_stats rkl_stats;
typedef struct rkl_stream_server rkl_stream_server;
typedef struct rkl_reconciler rkl_reconciler;
typedef struct rkl_store rkl_store;
typedef struct rkl_db_options rkl_db_options;
typedef struct rkl_config rkl_config;

/* The largest message a client takes (kubelet's limit): the largest request grpc reads, and
 * the largest answer. */
#define RKL_API_MAX_MESSAGE (16 * 1024 * 1024)

/* Facts fixed at start, shared read-only by every handler. */
typedef struct rkl_api_config {
        const rkl_config *config; /* the options (base/config.h) */
        const char *version;      /* rktlet's own */
        const char *db_path;      /* each completion-queue thread opens its own connection */
        const rkl_db_options *store_opts;
        rkl_images *images; /* the image cache (thread-safe); NULL: ImageService unavailable */
        rkl_logs *logs;     /* the log follower (thread-safe); NULL: no ReopenContainerLog */
        rkl_stats *stats;   /* the stats cache (thread-safe); NULL: *Stats answer empty */
        /* The streaming server (thread-safe); NULL: Exec, Attach, PortForward unavailable */
        rkl_stream_server *stream;
        size_t max_reply; /* the largest answer a List makes; 0: RKL_API_MAX_MESSAGE */
} rkl_api_config;

typedef struct rkl_api_call rkl_api_call;
typedef struct rkl_api_stream_ops rkl_api_stream_ops;

/* Per-call context. The arena lives as long as the call: responses point into it. */
typedef struct rkl_api_ctx {
        rkl_api_call *call;
        const rkl_api_config *cfg;
        rkl_cache *cache;           /* what reads read */
        rkl_store *store;           /* what writes go through: this thread's connection */
        rkl_reconciler *reconciler; /* kicked after every committed change; NULL in tests */
        rkl_images *images;         /* cfg->images */
        rkl_arena *arena;
        /* A handler may answer with bytes it encoded itself (list replies assembled from
         * cached item encodings): the server then sends them instead of packing resp, and
         * frees them (malloc'd: a megabyte at a thousand containers is sent without a
         * copy). */
        unsigned char *raw;
        size_t raw_len;
        /* Run again by rkl_api_defer_until() on a worker: answer with what there is, and
         * without ctx->store (NULL: the connection belongs to another thread). */
        bool late;
        /* A streaming handler's answer (rkl_api_stream()): what the server sends from. */
        const rkl_api_stream_ops *stream_ops;
        void *stream_userdata;
} rkl_api_ctx;

/* A handler fills resp (already initialised for its type) and returns 0, or a -errno with
 * reterr set; the server maps it to a gRPC status with rkl_api_status_from_errno(). */
typedef int (*rkl_api_handler)(rkl_api_ctx *ctx, const ProtobufCMessage *req,
                               ProtobufCMessage *resp, rkl_error *reterr);

/* A handler whose work is slow (a pull, an exec) returns rkl_api_defer(ctx, fn, userdata):
 * fn runs on one of the server's worker pools, fills the response (still valid, with the
 * arena) and ends the call with rkl_api_call_finish(). No completion-queue thread ever
 * waits. */
#define RKL_API_DEFERRED 1
/* The pools. Each kind of slow work has its own, so that one kind never queues behind
 * another: an exec probe due in a second must not wait for a pull of minutes. The server
 * owns them (made at start, drained at shutdown); a handler names one. */
typedef enum rkl_api_pool {
        RKL_API_POOL_SLOW,  /* pulls, image removal, ImageFsInfo, log reopening, first looks:
                             * RKL_API_SLOW_THREADS threads, no bound on what waits */
        RKL_API_POOL_EXEC,  /* ExecSync: RKL_API_EXEC_THREADS at once, RKL_API_EXEC_ADMITTED
                             * running or waiting */
        RKL_API_POOL_WAIT,  /* replies waiting for the reconciler (--wait only, wait.h): each
                             * holds a thread while it polls, RKL_API_WAIT_THREADS at once */
        RKL_API_POOL_STATS, /* stats calls waiting for a fresh snapshot (at most a few
                             * seconds): RKL_API_STATS_THREADS threads, no bound */
        _RKL_API_POOL_MAX,
} rkl_api_pool;
#define RKL_API_SLOW_THREADS  4
#define RKL_API_EXEC_THREADS  16
#define RKL_API_EXEC_ADMITTED 64
/* kubelet starts up to 110 pods at once, one call of each in flight: every RunPodSandbox of a
 * full node's batch must wait, or those past the pool's size would answer without their IP. */
#define RKL_API_WAIT_THREADS  256
#define RKL_API_WAIT_ADMITTED RKL_API_WAIT_THREADS /* a waiter never queues: it would be late */
/* Concurrent stats calls wait for the same renewal of the snapshot, so a few threads serve
 * them all. */
#define RKL_API_STATS_THREADS 4
/* rkl_api_defer_on(ctx, RKL_API_POOL_SLOW, ...). */
int rkl_api_defer(rkl_api_ctx *ctx, rkl_work_fn fn, void *userdata);
/* RKL_API_DEFERRED, or -EMFILE (nothing started: answer RESOURCE_EXHAUSTED) when the pool
 * has as much work running and waiting as it admits. */
int rkl_api_defer_on(rkl_api_ctx *ctx, rkl_api_pool pool, rkl_work_fn fn, void *userdata);
void rkl_api_call_finish(rkl_api_call *c, int r, const rkl_error *err);
/* For what is not known yet (the first probe of rkt and systemd and the first image list
 * after a start, on RKL_API_POOL_SLOW; a fresh stats snapshot, on RKL_API_POOL_STATS): the
 * handler returns rkl_api_defer_until(ctx, pool, wait, userdata), and a worker of that pool
 * runs wait(userdata), which returns once the thing is known or the wait has gone on long
 * enough (RKL_API_FIRST_LOOK_USEC for a first look), then the handler again on the same
 * request with ctx->late set. Other calls are answered meanwhile. */
#define RKL_API_FIRST_LOOK_USEC (20 * USEC_PER_SEC) /* > rkt version's own 10 s */
typedef void (*rkl_api_wait_fn)(void *userdata);
int rkl_api_defer_until(rkl_api_ctx *ctx, rkl_api_pool pool, rkl_api_wait_fn wait, void *userdata);
/* True once the client cancelled or went away: the work may stop early. */
bool rkl_api_call_cancelled(rkl_api_call *c);

/* Server streaming (GetContainerEvents, the Stream* lists). The handler of a streaming
 * method returns rkl_api_stream(ctx, ops, userdata); the server then sends the initial
 * metadata, asks ops->next() for a message each time the one before has been sent (one
 * send in flight per call, each message its own batch), and ends the call with the
 * status ops->next() gives. All on the call's completion-queue thread, never waiting: a
 * source with nothing to send yet says so, and calls rkl_api_stream_wake() when it has. */
#define RKL_API_STREAMING      2
#define RKL_API_STREAM_IDLE    0 /* nothing to send now: wait for a wake */
#define RKL_API_STREAM_MESSAGE 1 /* *ret holds the next message */
#define RKL_API_STREAM_END     2 /* all was sent: status OK */
struct rkl_api_stream_ops {
        /* RKL_API_STREAM_MESSAGE with the encoded message in *ret (malloc'd, taken over)
         * and its length in *ret_len, RKL_API_STREAM_IDLE, RKL_API_STREAM_END, or -errno with
         * reterr set: the call ends with that error. */
        int (*next)(void *userdata, unsigned char **ret, size_t *ret_len, rkl_error *reterr);
        /* Called once, when the stream ends for any reason (all sent, an error, the client
         * gone or cancelled, the server shutting down), on the call's thread: frees
         * userdata. No rkl_api_stream_wake() may be called once it has returned. */
        void (*done)(void *userdata);
};
/* Records ops and userdata in ctx for the server (unit tests drive them directly) and
 * returns RKL_API_STREAMING. ops must outlive the call. */
int rkl_api_stream(rkl_api_ctx *ctx, const rkl_api_stream_ops *ops, void *userdata);
/* The stream's source has something new: its next() is asked again soon, on the call's
 * thread. Any thread, any number of times, until done() returned; a NULL call (a handler
 * run without a server) is ignored. */
void rkl_api_stream_wake(rkl_api_call *c);

/* The handler for service ("RuntimeService" or "ImageService") and method, or NULL when
 * the method is not implemented. */
rkl_api_handler rkl_api_handler_lookup(const char *service, const char *method);
