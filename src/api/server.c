/* Call flow (grpc core, see docs/design.md, 'The gRPC server'):
 *   request (registered method or catch-all) completes on a worker's queue
 *     -> re-arm the same request kind, unpack, run the handler, pack
 *     -> one batch: initial metadata, message, status, recv close
 *     -> batch completes -> free everything.
 * A server-streaming call (rkl_api_stream()) instead has a recv close batch that watches
 * for the client going away, then one batch of initial metadata, then one batch per
 * message, each started once the one before completed, then one batch of status. Its
 * batches all complete on the worker's queue, where its state lives; another thread only
 * posts a wake-up (an empty batch) when its source has something new.
 * A call is owned by exactly one thread at a time; its tag is its rkl_api_call pointer. */
#include "server.h"

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <grpc/grpc_posix.h>
#include <malloc.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "api.pb-c.h"
#include "status.h"
#include "wire.h"
#include "reconciler/reconciler.h"
#include "store/events.h"
#include "store/store.h"
#include "base/alloc.h"
#include "base/config.h"
#include "base/log.h"
#include "base/time-util.h"
#include "base/workpool.h"
#include "metrics/metrics.h"
#include "base/banned.h"

#define REQUESTS_ARMED  2            /* pending requests per method per queue */
#define BIG_REPLY       (256 * 1024) /* bytes: a List of a few hundred objects */
#define BIG_REPLY_BURST 4            /* big replies at once that trim the heap after */

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

/* glibc keeps blocks freed in the heap once it has seen a big one freed (its mmap
 * threshold rises), and a burst of megabyte List replies leaves tens of megabytes behind.
 * When a burst of several ends, give the free memory back; a relist a second, one reply at
 * a time, never pays for that. */
static void reply_done(rkl_api_server *srv)
{
        if (atomic_fetch_sub(&srv->big_in_flight, 1) == 1 &&
            atomic_exchange(&srv->big_peak, 0) >= BIG_REPLY_BURST)
                (void)malloc_trim(0);
}

static void reply_started(rkl_api_server *srv)
{
        unsigned n = atomic_fetch_add(&srv->big_in_flight, 1) + 1;
        unsigned peak = atomic_load(&srv->big_peak);
        while (n > peak && !atomic_compare_exchange_weak(&srv->big_peak, &peak, n))
                ;
}

static void stream_over(rkl_api_call *c)
{
        if (c->stream && !c->stream_over) {
                c->stream_over = true;
                c->stream->done(c->stream_userdata);
                c->stream_userdata = NULL;
        }
}

static void call_free(rkl_api_call *c)
{
        if (!c)
                return;
        stream_over(c); /* a stream that never began */
        if (c->stream_msg)
                grpc_byte_buffer_destroy(c->stream_msg);
        free(c->raw);
        if (c->call)
                grpc_call_unref(c->call);
        if (c->payload)
                grpc_byte_buffer_destroy(c->payload);
        if (c->response)
                grpc_byte_buffer_destroy(c->response);
        if (c->has_status_details)
                grpc_slice_unref(c->status_details);
        grpc_metadata_array_destroy(&c->md);
        if (!c->m)
                grpc_call_details_destroy(&c->details);
        rkl_arena_free(c->arena);
        if (c->big)
                reply_done(c->w->srv);
        free(c);
}

static void call_unref(rkl_api_call *c)
{
        if (atomic_fetch_sub(&c->pending, 1) == 1)
                call_free(c);
}

static void request_arm(worker *w, const method *m)
{
        rkl_api_call *c = rkl_xnew0(rkl_api_call, 1);
        grpc_call_error e;

        c->w = w;
        c->m = m;
        c->tag_request = (call_tag){c, TAG_REQUEST};
        c->tag_send = (call_tag){c, TAG_SEND};
        c->tag_close = (call_tag){c, TAG_CLOSE};
        c->tag_wake = (call_tag){c, TAG_WAKE};
        c->tag_stream = (call_tag){c, TAG_STREAM};
        atomic_store(&c->pending, 1);
        grpc_metadata_array_init(&c->md);
        if (m) {
                e = grpc_server_request_registered_call(w->srv->server, m->registered, &c->call,
                                                        &c->deadline, &c->md, &c->payload, w->cq,
                                                        w->cq, &c->tag_request);
        } else {
                grpc_call_details_init(&c->details);
                e = grpc_server_request_call(w->srv->server, &c->call, &c->details, &c->md, w->cq,
                                             w->cq, &c->tag_request);
        }
        if (e != GRPC_CALL_OK) {
                assert(!"grpc_server_request_call failed");
                rkl_log_error("cannot arm a request for '%s': grpc call error %d",
                              m ? m->path : "*", (int)e);
                call_free(c);
        }
}

/* Reads the whole payload into arena memory. Returns -EBADMSG when it cannot be decoded
 * (decompression failure). */
static int payload_read(rkl_api_call *c, uint8_t **ret, size_t *ret_len)
{
        grpc_byte_buffer_reader reader;
        if (!c->payload) {
                *ret = NULL;
                *ret_len = 0;
                return -EBADMSG;
        }
        if (!grpc_byte_buffer_reader_init(&reader, c->payload))
                return -EBADMSG;
        grpc_slice s = grpc_byte_buffer_reader_readall(&reader);
        grpc_byte_buffer_reader_destroy(&reader);
        size_t n = GRPC_SLICE_LENGTH(s);
        uint8_t *buf = rkl_arena_alloc(c->arena, n + 1);
        memcpy(buf, GRPC_SLICE_START_PTR(s), n);
        grpc_slice_unref(s);
        *ret = buf;
        *ret_len = n;
        return 0;
}

static void *arena_alloc(void *data, size_t size)
{
        return rkl_arena_alloc(data, size);
}

static void arena_free(void *data, void *p)
{
        /* Freed with the call's arena. */
}

static void call_send(rkl_api_call *c, grpc_status_code code, const char *msg)
{
        grpc_op ops[4], *op = ops;

        memset(ops, 0, sizeof(ops));
        if (!c->streaming) {
                /* A stream sent its own when it began. */
                op->op = GRPC_OP_SEND_INITIAL_METADATA;
                op++;
        }
        if (code == GRPC_STATUS_OK && c->response) {
                op->op = GRPC_OP_SEND_MESSAGE;
                op->data.send_message.send_message = c->response;
                op++;
        }
        op->op = GRPC_OP_SEND_STATUS_FROM_SERVER;
        op->data.send_status_from_server.status = code;
        if (c->m)
                rkl_metrics_observe(c->m->metrics, rkl_now_usec(CLOCK_MONOTONIC) - c->t_start,
                                    code != GRPC_STATUS_OK);
        if (!isempty(msg)) {
                /* Kept alive until the batch completes. */
                c->status_details = grpc_slice_from_copied_string(msg);
                c->has_status_details = true;
                op->data.send_status_from_server.status_details = &c->status_details;
        }
        op++;
        if (!c->deferred) {
                /* A deferred call has had its own close watch since it was deferred. */
                op->op = GRPC_OP_RECV_CLOSE_ON_SERVER;
                op->data.recv_close_on_server.cancelled = &c->cancelled;
                op++;
        }

        atomic_fetch_add(&c->pending, 1);
        grpc_call_error e =
            grpc_call_start_batch(c->call, ops, (size_t)(op - ops), &c->tag_send, NULL);
        if (e != GRPC_CALL_OK) {
                assert(!"grpc_call_start_batch failed");
                rkl_log_error("cannot answer call: grpc call error %d", (int)e);
                call_unref(c);
        }
}

static void call_answer(rkl_api_call *c, int r, const rkl_error *err);
static void stream_begin(rkl_api_call *c);

/* Runs the call's handler on its decoded request and answers, unless it deferred. */
static void call_handle(rkl_api_call *c, rkl_store *store, bool late)
{
        rkl_error err = RKL_ERROR_INIT;
        rkl_api_ctx ctx = {.call = c,
                           .cfg = c->w->srv->cfg,
                           .cache = c->w->srv->cache,
                           .store = store,
                           .reconciler = c->w->srv->reconciler,
                           .images = c->w->srv->cfg->images,
                           .arena = c->arena,
                           .late = late};

        int r = c->m->handler(&ctx, c->req, c->resp, &err);
        if (r == RKL_API_DEFERRED) {
                /* The work may be answering on another thread already: hands off. */
                assert(c->deferred);
                return; /* finished by rkl_api_call_finish() */
        }
        if (r == RKL_API_STREAMING) {
                c->stream = ctx.stream_ops;
                c->stream_userdata = ctx.stream_userdata;
                /* It begins on the call's worker; a late run is on a pool's thread. */
                if (late)
                        rkl_api_stream_wake(c);
                else
                        stream_begin(c);
                return;
        }
        c->raw = ctx.raw;
        c->raw_len = ctx.raw_len;
        call_answer(c, r, &err);
}

static void call_process(rkl_api_call *c)
{
        const method *m = c->m;
        uint8_t *buf;
        size_t len;
        int r;

        c->arena = rkl_arena_new();

        if (!m) {
                /* Only unknown paths reach the catch-all: every CRI path is registered. */
                char *path = rkl_arena_strndup(
                    c->arena, (const char *)GRPC_SLICE_START_PTR(c->details.method),
                    GRPC_SLICE_LENGTH(c->details.method));
                rkl_log_debug("unknown method '%s'", path);
                call_send(c, GRPC_STATUS_UNIMPLEMENTED,
                          rkl_arena_printf(c->arena, "unknown method '%s'", path));
                return;
        }
        if (!m->handler) {
                call_send(
                    c, GRPC_STATUS_UNIMPLEMENTED,
                    rkl_arena_printf(c->arena, "%s is not implemented by rktlet", m->path + 1));
                return;
        }

        /* Refused before anything is copied or unpacked: the bytes grpc holds already are
         * all a request may cost until it has passed the wire check. */
        if (c->payload && grpc_byte_buffer_length(c->payload) > m->limits->max_bytes) {
                call_send(c, GRPC_STATUS_RESOURCE_EXHAUSTED,
                          rkl_arena_printf(c->arena,
                                           "%s: a request of %zu bytes: more than the %zu bytes "
                                           "this method takes",
                                           m->path + 1, grpc_byte_buffer_length(c->payload),
                                           m->limits->max_bytes));
                return;
        }
        r = payload_read(c, &buf, &len);
        if (r < 0) {
                call_send(
                    c, GRPC_STATUS_INVALID_ARGUMENT,
                    rkl_arena_printf(c->arena, "%s: cannot read the request payload", m->path + 1));
                return;
        }
        rkl_error err = RKL_ERROR_INIT;
        r = rkl_api_wire_check(m->desc->input, buf, len, m->limits, &err);
        if (r < 0) {
                rkl_log_debug("%s: refused: %s", m->path + 1, err.msg);
                call_send(c, rkl_api_status_from_errno(r),
                          rkl_arena_printf(c->arena, "%s: %s", m->path + 1, err.msg));
                return;
        }
        ProtobufCAllocator alloc = {
            .alloc = arena_alloc, .free = arena_free, .allocator_data = c->arena};
        ProtobufCMessage *req = protobuf_c_message_unpack(m->desc->input, &alloc, len, buf);
        if (!req) {
                call_send(c, GRPC_STATUS_INVALID_ARGUMENT,
                          rkl_arena_printf(c->arena, "%s: cannot decode %s", m->path + 1,
                                           m->desc->input->name));
                return;
        }

        ProtobufCMessage *resp = rkl_arena_alloc(c->arena, m->desc->output->sizeof_message);
        protobuf_c_message_init(m->desc->output, resp);
        c->req = req;
        c->resp = resp;
        call_handle(c, c->w->store, false);
}

/* Packs the response, or maps the error, and sends it: the end of every call. */
static void call_answer(rkl_api_call *c, int r, const rkl_error *err)
{
        const char *path = c->m->path + 1;
        if (r < 0) {
                grpc_status_code code = rkl_api_status_from_errno(r);
                if (code == GRPC_STATUS_INTERNAL)
                        rkl_log_error("%s failed: %s", path, err->msg);
                else
                        rkl_log_debug("%s: %s", path, err->msg);
                call_send(c, code, isempty(err->msg) ? strerror(-r) : err->msg);
                return;
        }
        grpc_slice s;
        if (c->raw) {
                s = grpc_slice_new(TAKE_PTR(c->raw), c->raw_len, free);
                if (c->raw_len >= BIG_REPLY) {
                        c->big = true;
                        reply_started(c->w->srv);
                }
        } else {
                size_t n = protobuf_c_message_get_packed_size(c->resp);
                s = grpc_slice_malloc(n);
                protobuf_c_message_pack(c->resp, GRPC_SLICE_START_PTR(s));
        }
        c->response = grpc_raw_byte_buffer_create(&s, 1);
        grpc_slice_unref(s);
        call_send(c, GRPC_STATUS_OK, NULL);
}

static const struct {
        const char *name;
        unsigned threads;
        size_t admitted; /* running or waiting; 0: no bound */
} pool_defs[_RKL_API_POOL_MAX] = {
    [RKL_API_POOL_SLOW] = {"api", RKL_API_SLOW_THREADS, 0},
    [RKL_API_POOL_EXEC] = {"exec", RKL_API_EXEC_THREADS, RKL_API_EXEC_ADMITTED},
    [RKL_API_POOL_WAIT] = {"wait", RKL_API_WAIT_THREADS, RKL_API_WAIT_ADMITTED},
};

int rkl_api_defer(rkl_api_ctx *ctx, rkl_work_fn fn, void *userdata)
{
        return rkl_api_defer_on(ctx, RKL_API_POOL_SLOW, fn, userdata);
}

/* Watches for the client going away: cancellation is only visible through this op, which
 * a call starts once (a late run may defer again). */
static void close_watch(rkl_api_call *c)
{
        grpc_op op = {.op = GRPC_OP_RECV_CLOSE_ON_SERVER};

        if (c->deferred)
                return;
        c->deferred = true;
        op.data.recv_close_on_server.cancelled = &c->cancelled;
        atomic_fetch_add(&c->pending, 1);
        grpc_call_error e = grpc_call_start_batch(c->call, &op, 1, &c->tag_close, NULL);
        if (e != GRPC_CALL_OK) {
                assert(!"grpc_call_start_batch failed");
                atomic_fetch_sub(&c->pending, 1);
        }
}

int rkl_api_defer_on(rkl_api_ctx *ctx, rkl_api_pool pool, rkl_work_fn fn, void *userdata)
{
        rkl_api_call *c = ctx->call;
        rkl_workpool *p = c->w->srv->pools[pool];

        /* Watch for the client going away while the work runs. */
        close_watch(c);
        /* The work's own reference, dropped once it answered: a client that goes away
         * completes the close op above, which must not free the call under the work. */
        atomic_fetch_add(&c->pending, 1);
        if (pool_defs[pool].admitted == 0)
                rkl_workpool_submit(p, fn, userdata);
        else if (rkl_workpool_submit_bounded(p, pool_defs[pool].admitted, fn, userdata) < 0) {
                /* Never the call's last reference: the caller holds the request's. The close
                 * watch stays: the answer goes out without one of its own (c->deferred). */
                atomic_fetch_sub(&c->pending, 1);
                return -EMFILE;
        }
        return RKL_API_DEFERRED;
}

typedef struct late_run {
        rkl_api_call *c;
        rkl_api_wait_fn wait;
        void *userdata;
} late_run;

static void late_run_main(void *userdata)
{
        late_run *j = userdata;
        rkl_api_call *c = j->c; /* j lives in the call's arena */
        j->wait(j->userdata);
        call_handle(c, NULL, true); /* answers, or defers again with a reference of its own */
        call_unref(c);
}

int rkl_api_defer_until(rkl_api_ctx *ctx, rkl_api_wait_fn wait, void *userdata)
{
        assert(!ctx->late);
        late_run *j = rkl_arena_newa(late_run, ctx->arena, 1);
        *j = (late_run){.c = ctx->call, .wait = wait, .userdata = userdata};
        return rkl_api_defer(ctx, late_run_main, j);
}

void rkl_api_call_finish(rkl_api_call *c, int r, const rkl_error *err)
{
        static const rkl_error none = RKL_ERROR_INIT;
        call_answer(c, r, err ? err : &none);
        call_unref(c); /* the work's reference (rkl_api_defer()) */
}

bool rkl_api_call_cancelled(rkl_api_call *c)
{
        return atomic_load(&c->cancel_seen);
}

/* ---- Server streaming ---- */

int rkl_api_stream(rkl_api_ctx *ctx, const rkl_api_stream_ops *ops, void *userdata)
{
        ctx->stream_ops = ops;
        ctx->stream_userdata = userdata;
        return RKL_API_STREAMING;
}

void rkl_api_stream_wake(rkl_api_call *c)
{
        if (!c || atomic_exchange(&c->wake_pending, true))
                return; /* one is on its way: it reads whatever is new by then */
        /* An empty batch completes at once on the call's queue: the wake-up. */
        atomic_fetch_add(&c->pending, 1);
        grpc_call_error e = grpc_call_start_batch(c->call, NULL, 0, &c->tag_wake, NULL);
        if (e != GRPC_CALL_OK) {
                assert(!"grpc_call_start_batch failed");
                rkl_log_error("cannot wake a stream: grpc call error %d", (int)e);
                atomic_store(&c->wake_pending, false);
                /* Never the last reference: the stream's own close watch holds one. */
                atomic_fetch_sub(&c->pending, 1);
        }
}

/* Our use of grpc went wrong (CONTRIBUTING.md, 'Foreign errors at the edge'): the stream
 * ends, and the client is told. */
static void stream_broken(rkl_api_call *c, grpc_call_error e)
{
        assert(!"grpc_call_start_batch failed");
        rkl_log_error("%s: cannot go on with a stream: grpc call error %d", c->m->path + 1, (int)e);
        stream_over(c);
        (void)grpc_call_cancel_with_status(c->call, GRPC_STATUS_INTERNAL,
                                           "rktlet could not go on with the stream", NULL);
}

static void stream_start_send(rkl_api_call *c, const grpc_op *op)
{
        c->stream_sending = true;
        atomic_fetch_add(&c->pending, 1);
        grpc_call_error e = grpc_call_start_batch(c->call, op, 1, &c->tag_stream, NULL);
        if (e != GRPC_CALL_OK) {
                atomic_fetch_sub(&c->pending, 1);
                c->stream_sending = false;
                stream_broken(c, e);
        }
}

/* On the call's worker: watch for the client going away, send the initial metadata, and
 * go on from there as each batch completes (stream_pump()). */
static void stream_begin(rkl_api_call *c)
{
        grpc_op op = {.op = GRPC_OP_SEND_INITIAL_METADATA};

        c->streaming = true;
        close_watch(c);
        stream_start_send(c, &op);
}

/* On the call's worker, whenever something happened: sends the next message if none is in
 * flight and the source has one, or ends the call. */
static void stream_pump(rkl_api_call *c)
{
        unsigned char *buf = NULL;
        size_t len = 0;
        rkl_error err = RKL_ERROR_INIT;

        if (c->stream_over || c->stream_sending)
                return;
        if (c->stream_failed || atomic_load(&c->cancel_seen)) {
                stream_over(c); /* the client is gone: no status to send */
                return;
        }
        int r = c->stream->next(c->stream_userdata, &buf, &len, &err);
        if (r == RKL_API_STREAM_IDLE)
                return; /* until a wake-up */
        if (r == RKL_API_STREAM_MESSAGE) {
                grpc_slice s = grpc_slice_new(buf, len, free);
                c->stream_msg = grpc_raw_byte_buffer_create(&s, 1);
                grpc_slice_unref(s);
                grpc_op op = {.op = GRPC_OP_SEND_MESSAGE,
                              .data.send_message.send_message = c->stream_msg};
                stream_start_send(c, &op);
                return;
        }
        stream_over(c);
        if (r < 0)
                call_answer(c, r, &err);
        else
                call_send(c, GRPC_STATUS_OK, NULL);
}

static void *worker_main(void *userdata)
{
        worker *w = userdata;

        for (;;) {
                grpc_event ev =
                    grpc_completion_queue_next(w->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
                if (ev.type == GRPC_QUEUE_SHUTDOWN)
                        break;
                if (ev.type != GRPC_OP_COMPLETE)
                        continue;
                call_tag *t = ev.tag;
                rkl_api_call *c = t->call;
                switch (t->kind) {
                case TAG_SEND:
                        call_unref(c);
                        break;
                case TAG_CLOSE:
                        if (ev.success && c->cancelled)
                                atomic_store(&c->cancel_seen, true);
                        if (c->streaming) {
                                if (!ev.success)
                                        atomic_store(&c->cancel_seen, true);
                                stream_pump(c); /* ends it, if the client went away */
                        }
                        call_unref(c);
                        break;
                case TAG_WAKE:
                        atomic_store(&c->wake_pending, false);
                        if (c->streaming)
                                stream_pump(c);
                        else if (c->stream)
                                stream_begin(c); /* handed over by a late run */
                        call_unref(c);
                        break;
                case TAG_STREAM:
                        c->stream_sending = false;
                        if (c->stream_msg) {
                                grpc_byte_buffer_destroy(c->stream_msg);
                                c->stream_msg = NULL;
                        }
                        if (!ev.success)
                                c->stream_failed = true;
                        stream_pump(c);
                        call_unref(c);
                        break;
                case TAG_REQUEST:
                        /* ok=0 means the server is shutting down. */
                        if (!ev.success) {
                                call_unref(c);
                                break;
                        }
                        c->t_start = rkl_now_usec(CLOCK_MONOTONIC);
                        if (!atomic_load(&w->srv->shutting_down))
                                request_arm(w, c->m);
                        call_process(c);
                        call_unref(c); /* the request's own reference */
                        break;
                }
        }
        return NULL;
}

static int socket_path_check(const char *path, rkl_error *reterr)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        struct stat st;

        if (strlen(path) >= sizeof(sa.sun_path))
                return rkl_error_set(reterr, -ENAMETOOLONG, "socket path '%s' is too long", path);
        if (path[0] != '/')
                return rkl_error_set(reterr, -EINVAL, "socket path '%s' is not absolute", path);
        if (lstat(path, &st) < 0) {
                if (errno == ENOENT)
                        return 0;
                return rkl_error_set(reterr, -errno, "socket path '%s': %s", path, strerror(errno));
        }
        if (!S_ISSOCK(st.st_mode))
                return rkl_error_set(reterr, -EEXIST, "'%s' exists and is not a socket", path);

        /* A socket someone still listens on belongs to a running daemon: never steal it.
         * But a daemon that was just killed keeps answering until the kernel has torn it
         * down (its memory goes before its files), which a restart right after a crash
         * meets: give it a few seconds to go. */
        memcpy(sa.sun_path, path, strlen(path) + 1);
        for (int tries = 0;; tries++) {
                _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0)
                        return rkl_error_set(reterr, -errno, "socket: %s", strerror(errno));
                if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                        return 0; /* stale: grpc unlinks it */
                if (tries == 50)
                        return rkl_error_set(reterr, -EADDRINUSE,
                                             "another process is listening on '%s'", path);
                usleep(100 * USEC_PER_MSEC);
        }
}

static void methods_add(rkl_api_server *s, const ProtobufCServiceDescriptor *svc)
{
        for (unsigned i = 0; i < svc->n_methods; i++) {
                const ProtobufCMethodDescriptor *d = &svc->methods[i];
                method *m = &s->methods[s->n_methods++];
                m->desc = d;
                m->path = rkl_xasprintf("/%s/%s", svc->name, d->name);
                m->handler = rkl_api_handler_lookup(svc->short_name, d->name);
                m->limits = rkl_api_wire_limits_of(d->name);
                m->registered = grpc_server_register_method(
                    s->server, m->path, NULL, GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
                m->metrics = rkl_metrics_series_get(RKL_METRICS_CRI, d->name);
        }
}

int rkl_api_server_new(const rkl_api_config *cfg, rkl_cache *cache, rkl_reconciler *reconciler,
                       rkl_api_server **ret, rkl_error *reterr)
{
        static const ProtobufCServiceDescriptor *const services[] = {
            &runtime__v1__runtime_service__descriptor,
            &runtime__v1__image_service__descriptor,
        };
        const rkl_config *o = cfg->config;
        _cleanup_(rkl_api_server_freep) rkl_api_server *s = NULL;
        int r;

        if (o->listen_fd <= 0) {
                r = socket_path_check(o->listen_path, reterr);
                if (r < 0)
                        return r;
        }

        /* grpc starts its own threads here: callers block signals before. */
        grpc_init();
        s = rkl_xnew0(rkl_api_server, 1);
        s->cfg = cfg;
        s->listen_fd = o->listen_fd;
        s->accept_stop_fd = -EBADF;
        s->cache = cache;
        s->reconciler = reconciler;

        grpc_arg args[] = {
            {.type = GRPC_ARG_INTEGER,
             .key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
             .value.integer = RKL_API_MAX_MESSAGE},
            {.type = GRPC_ARG_INTEGER,
             .key = (char *)GRPC_ARG_MAX_SEND_MESSAGE_LENGTH,
             .value.integer = RKL_API_MAX_MESSAGE},
        };
        grpc_channel_args cargs = {.num_args = ELEMENTSOF(args), .args = args};
        s->server = grpc_server_create(&cargs, NULL);

        size_t n = 0;
        for (size_t i = 0; i < ELEMENTSOF(services); i++)
                n += services[i]->n_methods;
        s->methods = rkl_xnew0(method, n);
        for (size_t i = 0; i < ELEMENTSOF(services); i++)
                methods_add(s, services[i]);

        s->n_workers = o->api_threads ? o->api_threads : RKL_CONFIG_DEFAULT_API_THREADS;
        s->workers = rkl_xnew0(worker, s->n_workers);
        for (size_t i = 0; i < s->n_workers; i++) {
                s->workers[i].srv = s;
                s->workers[i].cq = grpc_completion_queue_create_for_next(NULL);
                grpc_server_register_completion_queue(s->server, s->workers[i].cq, NULL);
        }
        s->shutdown_cq = grpc_completion_queue_create_for_pluck(NULL);

        if (s->listen_fd > 0) {
                /* systemd made the socket, its mode and group (rktlet.socket): take it as
                 * it is. The accept thread starts with the server. */
                s->accept_stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
                if (s->accept_stop_fd < 0)
                        return rkl_error_set(reterr, -errno, "eventfd: %s", strerror(errno));
                s->listening = true;
                *ret = TAKE_PTR(s);
                return 0;
        }

        _cleanup_free_ char *addr = rkl_xasprintf("unix:%s", o->listen_path);
        grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
        int port = grpc_server_add_http2_port(s->server, addr, creds);
        grpc_server_credentials_release(creds);
        if (port == 0)
                return rkl_error_set(reterr, -EADDRNOTAVAIL, "cannot listen on '%s'",
                                     o->listen_path);
        /* From here on, grpc requires a shutdown before destroy. */
        s->listening = true;

        /* The umask made it 0600 at bind time; widen to 0660 for the configured group. */
        if (o->socket_gid != (gid_t)-1 && chown(o->listen_path, (uid_t)-1, o->socket_gid) < 0)
                return rkl_error_set(reterr, -errno, "chown '%s': %s", o->listen_path,
                                     strerror(errno));
        if (chmod(o->listen_path, 0660) < 0)
                return rkl_error_set(reterr, -errno, "chmod '%s': %s", o->listen_path,
                                     strerror(errno));

        *ret = TAKE_PTR(s);
        return 0;
}

/* Socket activation. grpc core 1.51 cannot listen on a socket it did not bind: its
 * add_http2_port takes only an address, and binding the path again would replace the
 * socket systemd listens on (and lose the connection that activated us). What it can take
 * is a connected fd (grpc_server_add_channel_from_fd, grpc/grpc_posix.h): so this thread
 * accepts on the inherited socket and hands each connection to grpc, which owns it from
 * then on and serves it on the workers' queues like any other. The socket itself stays
 * systemd's: it is never closed, unlinked or chmod'ed here, and connections made while
 * rktlet is down queue in its backlog. */
static void *accept_main(void *userdata)
{
        rkl_api_server *s = userdata;
        struct pollfd p[2] = {{.fd = s->listen_fd, .events = POLLIN},
                              {.fd = s->accept_stop_fd, .events = POLLIN}};

        for (;;) {
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        rkl_log_error_errno(errno, "poll on the activated socket: %m");
                        return NULL;
                }
                if (p[1].revents)
                        return NULL;
                /* grpc's endpoints expect non-blocking sockets. */
                int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd < 0) {
                        if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
                                continue;
                        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
                            errno == ENOMEM) {
                                rkl_log_warning_errno(errno, "accept: %m, retrying in 100 ms");
                                usleep(100 * USEC_PER_MSEC);
                                continue;
                        }
                        rkl_log_error_errno(errno, "accept on the activated socket: %m");
                        return NULL;
                }
                grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
                grpc_server_add_channel_from_fd(s->server, fd, creds);
                grpc_server_credentials_release(creds);
        }
}

int rkl_api_server_start(rkl_api_server *s, rkl_error *reterr)
{
        rkl_db_options o = s->cfg->store_opts ? *s->cfg->store_opts : (rkl_db_options){0};
        if (s->reconciler) {
                /* A checkpoint's copying and fsync would land on one unlucky call. */
                o.checkpoint_wanted = rkl_reconciler_checkpoint_wanted;
                o.checkpoint_userdata = s->reconciler;
        }
        for (size_t i = 0; s->cfg->db_path && i < s->n_workers; i++) {
                rkl_db *db = NULL;
                int r = rkl_db_open(s->cfg->db_path, &o, &db, reterr);
                if (r < 0)
                        return r;
                s->workers[i].store = rkl_store_new(db, s->cache);
        }
        for (size_t i = 0; i < _RKL_API_POOL_MAX; i++)
                if (i != RKL_API_POOL_WAIT || s->cfg->config->wait)
                        s->pools[i] = rkl_workpool_new(pool_defs[i].threads, pool_defs[i].name);
        grpc_server_start(s->server);
        s->started = true;
        for (size_t i = 0; i < s->n_workers; i++) {
                worker *w = &s->workers[i];
                for (size_t j = 0; j < s->n_methods; j++)
                        for (int k = 0; k < REQUESTS_ARMED; k++)
                                request_arm(w, &s->methods[j]);
                for (int k = 0; k < REQUESTS_ARMED; k++)
                        request_arm(w, NULL);
                int r = pthread_create(&w->thread, NULL, worker_main, w);
                if (r != 0)
                        return rkl_error_set(reterr, -r, "cannot start api thread: %s",
                                             strerror(r));
                w->started = true;
        }
        if (s->listen_fd > 0) {
                int r = pthread_create(&s->accept_thread, NULL, accept_main, s);
                if (r != 0)
                        return rkl_error_set(reterr, -r, "cannot start the accept thread: %s",
                                             strerror(r));
                (void)pthread_setname_np(s->accept_thread, "api-accept");
                s->accepting = true;
        }
        return 0;
}

void rkl_api_server_shutdown(rkl_api_server *s, int grace_ms)
{
        if (!s || s->shut_down)
                return;
        s->shut_down = true;
        atomic_store(&s->shutting_down, true);

        /* Event streams never end on their own: end them now, with UNAVAILABLE, so that
         * the calls in flight drain below. */
        if (s->cache)
                rkl_events_shutdown(rkl_cache_events(s->cache));

        /* No connection may join a server that shuts down. */
        if (s->accepting) {
                uint64_t one = 1;
                (void)!write(s->accept_stop_fd, &one, sizeof(one));
                pthread_join(s->accept_thread, NULL);
                s->accepting = false;
        }

        if (s->listening) {
                int tag;
                grpc_server_shutdown_and_notify(s->server, s->shutdown_cq, &tag);
                grpc_event ev = grpc_completion_queue_pluck(
                    s->shutdown_cq, &tag, gpr_time_from_millis(grace_ms, GPR_TIMESPAN), NULL);
                if (ev.type == GRPC_QUEUE_TIMEOUT) {
                        if (grace_ms > 0)
                                rkl_log_warning(
                                    "calls still in flight after %d ms, cancelling them", grace_ms);
                        grpc_server_cancel_all_calls(s->server);
                        (void)grpc_completion_queue_pluck(s->shutdown_cq, &tag,
                                                          gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
                }
        }
        /* Commands run by ExecSync end with their calls (cancelled above, if not done), and
         * so do the replies waiting for the reconciler: wait for that, while the queues
         * still take their answers, so that none outlives the daemon. */
        s->pools[RKL_API_POOL_EXEC] = rkl_workpool_free(s->pools[RKL_API_POOL_EXEC]);
        s->pools[RKL_API_POOL_WAIT] = rkl_workpool_free(s->pools[RKL_API_POOL_WAIT]);
        /* Pending requests complete with ok=0 and are freed as the workers drain. */
        for (size_t i = 0; i < s->n_workers; i++)
                grpc_completion_queue_shutdown(s->workers[i].cq);
        for (size_t i = 0; i < s->n_workers; i++) {
                if (s->workers[i].started)
                        pthread_join(s->workers[i].thread, NULL);
                else
                        (void)worker_main(&s->workers[i]);
                s->workers[i].started = false;
        }
}

rkl_api_server *rkl_api_server_free(rkl_api_server *s)
{
        if (!s)
                return NULL;
        rkl_api_server_shutdown(s, 0);
        if (s->server)
                grpc_server_destroy(s->server);
        for (size_t i = 0; i < s->n_workers; i++) {
                grpc_completion_queue_destroy(s->workers[i].cq);
                rkl_store_free(s->workers[i].store);
        }
        if (s->shutdown_cq) {
                grpc_completion_queue_shutdown(s->shutdown_cq);
                grpc_completion_queue_destroy(s->shutdown_cq);
        }
        for (size_t i = 0; i < s->n_methods; i++)
                free(s->methods[i].path);
        free(s->methods);
        free(s->workers);
        safe_close(s->accept_stop_fd);
        free(s);
        grpc_shutdown();
        return NULL;
}
