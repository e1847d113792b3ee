/* Server-streaming calls (api.h's rkl_api_stream()): a recv close batch that watches for
 * the client going away, then one batch of initial metadata, then one batch per message,
 * each started once the one before completed, then one batch of status. Its batches all
 * complete on the worker's queue, where its state lives; another thread only posts a
 * wake-up (an empty batch) when its source has something new (docs/architecture.md,
 * 'Streaming calls'). */
#include "server-internal.h"

#include "base/log.h"
#include "base/banned.h"

void rkl_api__stream_over(rkl_api_call *c)
{
        if (c->stream && !c->stream_over) {
                c->stream_over = true;
                c->stream->done(c->stream_userdata);
                c->stream_userdata = NULL;
        }
}

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
        rkl_api__stream_over(c);
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
 * go on from there as each batch completes (rkl_api__stream_pump()). */
void rkl_api__stream_begin(rkl_api_call *c)
{
        grpc_op op = {.op = GRPC_OP_SEND_INITIAL_METADATA};

        c->streaming = true;
        rkl_api__close_watch(c);
        stream_start_send(c, &op);
}

/* On the call's worker, whenever something happened: sends the next message if none is in
 * flight and the source has one, or ends the call. */
void rkl_api__stream_pump(rkl_api_call *c)
{
        unsigned char *buf = NULL;
        size_t len = 0;
        rkl_error err = RKL_ERROR_INIT;

        if (c->stream_over || c->stream_sending)
                return;
        if (c->stream_failed || atomic_load(&c->cancel_seen)) {
                rkl_api__stream_over(c); /* the client is gone: no status to send */
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
        rkl_api__stream_over(c);
        if (r < 0)
                rkl_api__call_answer(c, r, &err);
        else
                rkl_api__call_send(c, GRPC_STATUS_OK, NULL);
}
