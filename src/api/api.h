/* What CRI handlers see: plain functions over protobuf-c request/response structs, callable
 * without a socket (tests do). protobuf-c types never leave src/api/. */
#pragma once

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/error.h"
#include "base/workpool.h"

typedef struct rkl_cache rkl_cache;
typedef struct rkl_images rkl_images;
typedef struct rkl_logs rkl_logs;
typedef struct rkl_stats rkl_stats;
typedef struct rkl_stream_server rkl_stream_server;
typedef struct rkl_reconciler rkl_reconciler;
typedef struct rkl_store rkl_store;
typedef struct rkl_db_options rkl_db_options;

/* Facts fixed at start, shared read-only by every handler. */
typedef struct rkl_api_config {
        const char *listen_path;
        /* A listening socket inherited from systemd (rktlet.socket: fd 3 and up), served
         * instead of binding listen_path; 0: bind listen_path. */
        int listen_fd;
        const char *version;  /* rktlet's own */
        const char *rkt_path; /* as configured (NULL: not found) */
        const char *rkt_data_dir;
        const char *state_dir;
        const char *db_path; /* each completion-queue thread opens its own connection */
        const rkl_db_options *store_opts;
        const char *systemd_bus;
        unsigned n_threads; /* completion-queue threads */
        gid_t socket_gid;   /* (gid_t)-1: keep root's group */
        rkl_images *images; /* the image cache (thread-safe); NULL: ImageService unavailable */
        rkl_logs *logs;     /* the log follower (thread-safe); NULL: no ReopenContainerLog */
        rkl_stats *stats;   /* the stats cache (thread-safe); NULL: *Stats answer empty */
        /* The streaming server (thread-safe); NULL: Exec, Attach, PortForward unavailable */
        rkl_stream_server *stream;
        bool wait; /* --wait: mutating calls answer once carried out (wait.h) */
} rkl_api_config;

typedef struct rkl_api_call rkl_api_call;

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
        RKL_API_POOL_SLOW, /* pulls, image removal, ImageFsInfo, log reopening, first looks:
                            * RKL_API_SLOW_THREADS threads, no bound on what waits */
        RKL_API_POOL_EXEC, /* ExecSync: RKL_API_EXEC_THREADS at once, RKL_API_EXEC_ADMITTED
                            * running or waiting */
        RKL_API_POOL_WAIT, /* replies waiting for the reconciler (--wait only, wait.h): each
                            * holds a thread while it polls, RKL_API_WAIT_THREADS at once */
        _RKL_API_POOL_MAX,
} rkl_api_pool;
#define RKL_API_SLOW_THREADS  4
#define RKL_API_EXEC_THREADS  16
#define RKL_API_EXEC_ADMITTED 64
/* kubelet starts up to 110 pods at once, one call of each in flight: every RunPodSandbox of a
 * full node's batch must wait, or those past the pool's size would answer without their IP. */
#define RKL_API_WAIT_THREADS  256
#define RKL_API_WAIT_ADMITTED RKL_API_WAIT_THREADS /* a waiter never queues: it would be late */
/* rkl_api_defer_on(ctx, RKL_API_POOL_SLOW, ...). */
int rkl_api_defer(rkl_api_ctx *ctx, rkl_work_fn fn, void *userdata);
/* RKL_API_DEFERRED, or -EMFILE (nothing started: answer RESOURCE_EXHAUSTED) when the pool
 * has as much work running and waiting as it admits. */
int rkl_api_defer_on(rkl_api_ctx *ctx, rkl_api_pool pool, rkl_work_fn fn, void *userdata);
void rkl_api_call_finish(rkl_api_call *c, int r, const rkl_error *err);
/* For what is not known yet right after a start (the first probe of rkt and systemd, the
 * first image list): the handler returns rkl_api_defer_until(ctx, wait, userdata), and a
 * worker runs wait(userdata), which returns once the thing is known or the wait has gone
 * on long enough (RKL_API_FIRST_LOOK_USEC), then the handler again on the same request
 * with ctx->late set. Other calls are answered meanwhile. */
#define RKL_API_FIRST_LOOK_USEC (20 * UINT64_C(1000000)) /* > rkt version's own 10 s */
typedef void (*rkl_api_wait_fn)(void *userdata);
int rkl_api_defer_until(rkl_api_ctx *ctx, rkl_api_wait_fn wait, void *userdata);
/* True once the client cancelled or went away: the work may stop early. */
bool rkl_api_call_cancelled(rkl_api_call *c);

/* The handler for service ("RuntimeService" or "ImageService") and method, or NULL when
 * the method is not implemented. */
rkl_api_handler rkl_api_handler_lookup(const char *service, const char *method);
