/* A CRI client on grpc's core C API (docs/design.md, 'The gRPC server'): one batch per unary
 * call with all six client ops; the batch's tag is its slot. */
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include "client.h"
#include "base/alloc.h"
#include "base/time-util.h"
#include "base/banned.h"

struct rkb_client {
        grpc_channel *channel;
        grpc_completion_queue *cq;
        bool borrowed; /* the channel is another client's */
};

struct rkb_request {
        grpc_slice method;
        grpc_slice payload;
};

typedef struct slot {
        grpc_call *call;
        grpc_metadata_array initial_md, trailing_md;
        grpc_byte_buffer *send, *recv;
        grpc_status_code status;
        grpc_slice details;
        uint64_t start_ns;
} slot;

int rkb_client_new(const char *endpoint, rkb_client **ret)
{
        /* Reconnect fast: the restart scenario measures how soon the daemon answers, which a
         * 1 s default backoff would hide. grpc core also takes the minimum backoff as the
         * connect timeout (SETTINGS included): keep that one long enough for a daemon that is
         * still starting. Lists of 1,000+ containers pass 4 MiB. */
        grpc_arg args[] = {
            {.type = GRPC_ARG_INTEGER,
             .key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
             .value.integer = 64 << 20},
            {.type = GRPC_ARG_INTEGER,
             .key = (char *)GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
             .value.integer = 5},
            {.type = GRPC_ARG_INTEGER,
             .key = (char *)GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
             .value.integer = 2000},
            {.type = GRPC_ARG_INTEGER,
             .key = (char *)GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
             .value.integer = 50},
            {.type = GRPC_ARG_INTEGER, .key = (char *)GRPC_ARG_ENABLE_RETRIES, .value.integer = 0},
            /* A new channel must not inherit the dead daemon's subchannel and its backoff. */
            {.type = GRPC_ARG_INTEGER,
             .key = (char *)GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL,
             .value.integer = 1},
        };
        grpc_channel_args cargs = {.num_args = ELEMENTSOF(args), .args = args};
        grpc_channel_credentials *creds = grpc_insecure_credentials_create();
        rkb_client *c = rkl_xnew0(rkb_client, 1);

        c->channel = grpc_channel_create(endpoint, creds, &cargs);
        grpc_channel_credentials_release(creds);
        if (!c->channel) {
                free(c);
                return -EINVAL;
        }
        c->cq = grpc_completion_queue_create_for_next(NULL);
        *ret = c;
        return 0;
}

rkb_client *rkb_client_new_sharing(rkb_client *c)
{
        rkb_client *n = rkl_xnew0(rkb_client, 1);
        n->channel = c->channel;
        n->borrowed = true;
        n->cq = grpc_completion_queue_create_for_next(NULL);
        return n;
}

rkb_client *rkb_client_free(rkb_client *c)
{
        if (!c)
                return NULL;
        if (!c->borrowed)
                grpc_channel_destroy(c->channel);
        grpc_completion_queue_shutdown(c->cq);
        for (;;) {
                grpc_event ev =
                    grpc_completion_queue_next(c->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
                if (ev.type == GRPC_QUEUE_SHUTDOWN)
                        break;
        }
        grpc_completion_queue_destroy(c->cq);
        return mfree(c);
}

rkb_request *rkb_request_new(const char *method, const ProtobufCMessage *msg)
{
        rkb_request *r = rkl_xnew0(rkb_request, 1);
        size_t n = protobuf_c_message_get_packed_size(msg);

        r->method = grpc_slice_from_copied_string(method);
        r->payload = grpc_slice_malloc(n);
        protobuf_c_message_pack(msg, GRPC_SLICE_START_PTR(r->payload));
        return r;
}

rkb_request *rkb_request_free(rkb_request *r)
{
        if (!r)
                return NULL;
        grpc_slice_unref(r->method);
        grpc_slice_unref(r->payload);
        return mfree(r);
}

static int slot_start(rkb_client *c, slot *s, const rkb_request *req, uint64_t timeout_usec)
{
        gpr_timespec deadline =
            gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                         gpr_time_from_micros((int64_t)timeout_usec, GPR_TIMESPAN));
        grpc_slice payload = req->payload;
        grpc_op ops[6];
        grpc_call_error e;

        memset(s, 0, sizeof(*s));
        memset(ops, 0, sizeof(ops));
        grpc_metadata_array_init(&s->initial_md);
        grpc_metadata_array_init(&s->trailing_md);
        s->call = grpc_channel_create_call(c->channel, NULL, GRPC_PROPAGATE_DEFAULTS, c->cq,
                                           req->method, NULL, deadline, NULL);
        if (!s->call)
                return -EIO;
        /* Takes a reference on the slice: the request stays reusable. */
        s->send = grpc_raw_byte_buffer_create(&payload, 1);
        ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[1].op = GRPC_OP_SEND_MESSAGE;
        ops[1].data.send_message.send_message = s->send;
        ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
        ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
        ops[3].data.recv_initial_metadata.recv_initial_metadata = &s->initial_md;
        ops[4].op = GRPC_OP_RECV_MESSAGE;
        ops[4].data.recv_message.recv_message = &s->recv;
        ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
        ops[5].data.recv_status_on_client.trailing_metadata = &s->trailing_md;
        ops[5].data.recv_status_on_client.status = &s->status;
        ops[5].data.recv_status_on_client.status_details = &s->details;
        s->start_ns = rkb_now_ns();
        e = grpc_call_start_batch(s->call, ops, ELEMENTSOF(ops), s, NULL);
        if (e != GRPC_CALL_OK) {
                /* A bug in this file, never a peer's doing (CONTRIBUTING.md, 'Foreign errors
                 * at the edge'). */
                assert(!"grpc_call_start_batch failed");
                grpc_call_unref(s->call);
                grpc_byte_buffer_destroy(s->send);
                grpc_metadata_array_destroy(&s->initial_md);
                grpc_metadata_array_destroy(&s->trailing_md);
                return -EIO;
        }
        return 0;
}

static void slot_release(slot *s)
{
        grpc_call_unref(s->call);
        grpc_byte_buffer_destroy(s->send);
        if (s->recv)
                grpc_byte_buffer_destroy(s->recv);
        grpc_metadata_array_destroy(&s->initial_md);
        grpc_metadata_array_destroy(&s->trailing_md);
        grpc_slice_unref(s->details);
}

static ProtobufCMessage *unpack(grpc_byte_buffer *bb, const ProtobufCMessageDescriptor *desc)
{
        grpc_byte_buffer_reader reader;
        ProtobufCMessage *m;
        grpc_slice all;

        if (!bb || !grpc_byte_buffer_reader_init(&reader, bb))
                return NULL;
        all = grpc_byte_buffer_reader_readall(&reader);
        grpc_byte_buffer_reader_destroy(&reader);
        m = protobuf_c_message_unpack(desc, NULL, GRPC_SLICE_LENGTH(all),
                                      GRPC_SLICE_START_PTR(all));
        grpc_slice_unref(all);
        return m;
}

int rkb_client_call(rkb_client *c, const rkb_request *req,
                    const ProtobufCMessageDescriptor *resp_desc, uint64_t timeout_usec,
                    rkb_reply *reply)
{
        slot s;
        grpc_event ev;
        int r;

        memset(reply, 0, sizeof(*reply));
        r = slot_start(c, &s, req, timeout_usec);
        if (r < 0)
                return r;
        /* One call in flight on this queue: the next event is ours. */
        do
                ev = grpc_completion_queue_next(c->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        while (ev.type != GRPC_OP_COMPLETE || ev.tag != &s);
        reply->took_ns = rkb_now_ns() - s.start_ns;
        reply->status = s.status;
        if (s.status != GRPC_STATUS_OK) {
                char *d = grpc_slice_to_c_string(s.details);
                reply->details = rkl_xstrdup(d);
                gpr_free(d);
        } else if (resp_desc) {
                reply->resp = unpack(s.recv, resp_desc);
                if (!reply->resp) {
                        reply->status = GRPC_STATUS_INTERNAL;
                        reply->details = rkl_xstrdup("cannot unpack the response");
                }
        }
        slot_release(&s);
        return 0;
}

void rkb_reply_release(rkb_reply *reply)
{
        free(reply->details);
        if (reply->resp)
                protobuf_c_message_free_unpacked(reply->resp, NULL);
        memset(reply, 0, sizeof(*reply));
}

int rkb_client_pipeline(rkb_client *c, const rkb_request *req, unsigned inflight,
                        uint64_t duration_usec, rkb_samples *lat, rkb_pipeline_result *ret)
{
        _cleanup_free_ slot *slots = rkl_xnew0(slot, inflight);
        rkb_pipeline_result res = {0};
        uint64_t start = rkb_now_ns(), end = start + duration_usec * NSEC_PER_USEC;
        unsigned active = 0;
        int r = 0;

        for (unsigned i = 0; i < inflight; i++) {
                r = slot_start(c, &slots[i], req, 30 * USEC_PER_SEC);
                if (r < 0)
                        break;
                active++;
        }
        while (active > 0) {
                grpc_event ev =
                    grpc_completion_queue_next(c->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
                slot *s = ev.tag;
                uint64_t now = rkb_now_ns();

                if (ev.type != GRPC_OP_COMPLETE)
                        continue;
                res.calls++;
                if (s->status != GRPC_STATUS_OK) {
                        if (res.errors++ == 0)
                                res.first_error = s->status;
                } else
                        rkb_samples_add(lat, now - s->start_ns);
                slot_release(s);
                active--;
                if (r >= 0 && now < end) {
                        r = slot_start(c, s, req, 30 * USEC_PER_SEC);
                        if (r >= 0)
                                active++;
                }
        }
        res.elapsed_ns = rkb_now_ns() - start;
        *ret = res;
        return r < 0 ? r : 0;
}
