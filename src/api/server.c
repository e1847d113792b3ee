/* Call flow (grpc core, see docs/design.md, 'The gRPC server'):
 *   request (registered method or catch-all) completes on a worker's queue
 *     -> re-arm the same request kind, unpack, run the handler, pack
 *     -> one batch: initial metadata, message, status, recv close
 *     -> batch completes -> free everything.
 * A deferred call is answered by a pool (server-defer.c), a streaming one by the batches of
 * server-stream.c; the socket is server-listen.c's. This file has the server's life, its
 * completion-queue workers and every call's path (server-internal.h). */
#include "server.h"

#include <grpc/byte_buffer_reader.h>
#include <grpc/support/time.h>
#include <malloc.h>

#include "api.pb-c.h"
#include "server-internal.h"
#include "status.h"
#include "reconciler/reconciler.h"
#include "store/events.h"
#include "store/store.h"
#include "base/alloc.h"
#include "base/config.h"
#include "base/log.h"
#include "base/time-util.h"
#include "base/banned.h"

#define REQUESTS_ARMED  2            /* pending requests per method per queue */
#define BIG_REPLY       (256 * 1024) /* bytes: a List of a few hundred objects */
#define BIG_REPLY_BURST 4            /* big replies at once that trim the heap after */

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

static void call_free(rkl_api_call *c)
{
        if (!c)
                return;
        rkl_api__stream_over(c); /* a stream that never began */
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

void rkl_api__call_unref(rkl_api_call *c)
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

void rkl_api__call_send(rkl_api_call *c, grpc_status_code code, const char *msg)
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
                rkl_api__call_unref(c);
        }
}

void rkl_api__call_handle(rkl_api_call *c, rkl_store *store, bool late)
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
                        rkl_api__stream_begin(c);
                return;
        }
        c->raw = ctx.raw;
        c->raw_len = ctx.raw_len;
        rkl_api__call_answer(c, r, &err);
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
                rkl_api__call_send(c, GRPC_STATUS_UNIMPLEMENTED,
                                   rkl_arena_printf(c->arena, "unknown method '%s'", path));
                return;
        }
        if (!m->handler) {
                rkl_api__call_send(
                    c, GRPC_STATUS_UNIMPLEMENTED,
                    rkl_arena_printf(c->arena, "%s is not implemented by rktlet", m->path + 1));
                return;
        }

        /* Refused before anything is copied or unpacked: the bytes grpc holds already are
         * all a request may cost until it has passed the wire check. */
        if (c->payload && grpc_byte_buffer_length(c->payload) > m->limits->max_bytes) {
                rkl_api__call_send(
                    c, GRPC_STATUS_RESOURCE_EXHAUSTED,
                    rkl_arena_printf(c->arena,
                                     "%s: a request of %zu bytes: more than the %zu bytes "
                                     "this method takes",
                                     m->path + 1, grpc_byte_buffer_length(c->payload),
                                     m->limits->max_bytes));
                return;
        }
        r = payload_read(c, &buf, &len);
        if (r < 0) {
                rkl_api__call_send(
                    c, GRPC_STATUS_INVALID_ARGUMENT,
                    rkl_arena_printf(c->arena, "%s: cannot read the request payload", m->path + 1));
                return;
        }
        rkl_error err = RKL_ERROR_INIT;
        r = rkl_api_wire_check(m->desc->input, buf, len, m->limits, &err);
        if (r < 0) {
                rkl_log_debug("%s: refused: %s", m->path + 1, err.msg);
                rkl_api__call_send(c, rkl_api_status_from_errno(r),
                                   rkl_arena_printf(c->arena, "%s: %s", m->path + 1, err.msg));
                return;
        }
        ProtobufCAllocator alloc = {
            .alloc = arena_alloc, .free = arena_free, .allocator_data = c->arena};
        ProtobufCMessage *req = protobuf_c_message_unpack(m->desc->input, &alloc, len, buf);
        if (!req) {
                rkl_api__call_send(c, GRPC_STATUS_INVALID_ARGUMENT,
                                   rkl_arena_printf(c->arena, "%s: cannot decode %s", m->path + 1,
                                                    m->desc->input->name));
                return;
        }

        ProtobufCMessage *resp = rkl_arena_alloc(c->arena, m->desc->output->sizeof_message);
        protobuf_c_message_init(m->desc->output, resp);
        c->req = req;
        c->resp = resp;
        rkl_api__call_handle(c, c->w->store, false);
}

void rkl_api__call_answer(rkl_api_call *c, int r, const rkl_error *err)
{
        const char *path = c->m->path + 1;
        if (r < 0) {
                grpc_status_code code = rkl_api_status_from_errno(r);
                if (code == GRPC_STATUS_INTERNAL)
                        rkl_log_error("%s failed: %s", path, err->msg);
                else
                        rkl_log_debug("%s: %s", path, err->msg);
                rkl_api__call_send(c, code, isempty(err->msg) ? strerror(-r) : err->msg);
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
        rkl_api__call_send(c, GRPC_STATUS_OK, NULL);
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
                        rkl_api__call_unref(c);
                        break;
                case TAG_CLOSE:
                        if (ev.success && c->cancelled)
                                atomic_store(&c->cancel_seen, true);
                        if (c->streaming) {
                                if (!ev.success)
                                        atomic_store(&c->cancel_seen, true);
                                rkl_api__stream_pump(c); /* ends it, if the client went away */
                        }
                        rkl_api__call_unref(c);
                        break;
                case TAG_WAKE:
                        atomic_store(&c->wake_pending, false);
                        if (c->streaming)
                                rkl_api__stream_pump(c);
                        else if (c->stream)
                                rkl_api__stream_begin(c); /* handed over by a late run */
                        rkl_api__call_unref(c);
                        break;
                case TAG_STREAM:
                        c->stream_sending = false;
                        if (c->stream_msg) {
                                grpc_byte_buffer_destroy(c->stream_msg);
                                c->stream_msg = NULL;
                        }
                        if (!ev.success)
                                c->stream_failed = true;
                        rkl_api__stream_pump(c);
                        rkl_api__call_unref(c);
                        break;
                case TAG_REQUEST:
                        /* ok=0 means the server is shutting down. */
                        if (!ev.success) {
                                rkl_api__call_unref(c);
                                break;
                        }
                        c->t_start = rkl_now_usec(CLOCK_MONOTONIC);
                        if (!atomic_load(&w->srv->shutting_down))
                                request_arm(w, c->m);
                        call_process(c);
                        rkl_api__call_unref(c); /* the request's own reference */
                        break;
                }
        }
        return NULL;
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

        r = rkl_api__socket_check(o, reterr);
        if (r < 0)
                return r;

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

        r = rkl_api__listen(s, reterr);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
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
        rkl_api__pools_start(s);
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
        return rkl_api__accept_start(s, reterr);
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
        rkl_api__accept_stop(s);

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
         * so do the replies waiting for the reconciler; a stats call's wait for a fresh
         * snapshot ends within seconds: wait for those, while the queues
         * still take their answers, so that none outlives the daemon. */
        rkl_api__pools_drain(s);
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
