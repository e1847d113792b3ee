#include "events.h"

#include <inttypes.h>

#include "container.h"
#include "pb.h"
#include "sandbox.h"
#include "base/alloc.h"
#include "base/log.h"
#include "store/events.h"
#include "base/banned.h"

_Static_assert(
    (int)RKL_EVENT_CREATED == RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_CREATED_EVENT &&
        (int)RKL_EVENT_STARTED == RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_STARTED_EVENT &&
        (int)RKL_EVENT_STOPPED == RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_STOPPED_EVENT &&
        (int)RKL_EVENT_DELETED == RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_DELETED_EVENT,
    "event types");

const rkl_blob *rkl_api_event_wire(rkl_event *ev)
{
        const rkl_blob *b = atomic_load(&ev->memo);
        if (b)
                return b;
        _cleanup_(rkl_arena_freep) rkl_arena *a = rkl_arena_new();
        Runtime__V1__ContainerEventResponse m = RUNTIME__V1__CONTAINER_EVENT_RESPONSE__INIT;

        /* A sandbox's own events name it: kubelet tells them apart by that. */
        m.container_id = ev->id;
        m.container_event_type = (Runtime__V1__ContainerEventType)ev->type;
        m.created_at = ev->created_ns;
        /* kubelet ignores an event without its sandbox's status; the store gives every
         * event one but for a container whose sandbox it never knew. */
        if (ev->pod)
                m.pod_sandbox_status = rkl_api_pod_status_pb(a, ev->pod);
        m.containers_statuses = rkl_arena_newa(Runtime__V1__ContainerStatus *, a, ev->n_containers);
        for (size_t i = 0; i < ev->n_containers; i++)
                m.containers_statuses[m.n_containers_statuses++] =
                    rkl_api_container_status_pb(a, ev->containers[i]);
        return rkl_api_pb_wire(&ev->memo, &m.base);
}

typedef struct event_stream {
        rkl_api_call *call; /* NULL when run without a server */
        rkl_events_sub *sub;
} event_stream;

/* The hub's lock is held: only post the wake-up. */
static void event_wake(void *userdata)
{
        rkl_api_stream_wake(((event_stream *)userdata)->call);
}

static int event_next(void *userdata, unsigned char **ret, size_t *ret_len, rkl_error *reterr)
{
        event_stream *s = userdata;
        _cleanup_(rkl_event_unrefp) rkl_event *ev = NULL;
        uint64_t lost = 0;

        int r = rkl_events_next(s->sub, &ev, &lost);
        if (r == 0)
                return RKL_API_STREAM_IDLE;
        if (r == -ENOSPC) {
                /* Once per subscriber: it is dropped now. kubelet relists on the error and
                 * subscribes again. */
                rkl_log_warning("GetContainerEvents: a client stopped reading its events (%d "
                                "waiting), ending its stream; %" PRIu64 " events lost",
                                RKL_EVENTS_QUEUE_MAX, lost);
                return rkl_error_set(reterr, -ENOSPC,
                                     "the client fell behind and %" PRIu64
                                     " events were not delivered: relist, then subscribe again",
                                     lost);
        }
        if (r < 0)
                return rkl_error_set(reterr, r, "rktlet is shutting down");
        const rkl_blob *b = rkl_api_event_wire(ev);
        *ret = rkl_xmalloc(b->len ? b->len : 1);
        memcpy(*ret, b->data, b->len);
        *ret_len = b->len;
        return RKL_API_STREAM_MESSAGE;
}

static void event_done(void *userdata)
{
        event_stream *s = userdata;
        s->sub = rkl_events_unsubscribe(s->sub);
        free(s);
}

static const rkl_api_stream_ops event_ops = {.next = event_next, .done = event_done};

int rkl_api_get_container_events(rkl_api_ctx *ctx, const Runtime__V1__GetEventsRequest *req,
                                 Runtime__V1__ContainerEventResponse *resp, rkl_error *reterr)
{
        event_stream *s = rkl_xnew0(event_stream, 1);
        s->call = ctx->call;
        int r = rkl_events_subscribe(rkl_cache_events(ctx->cache), event_wake, s, &s->sub);
        if (r < 0) {
                free(s);
                return rkl_error_set(reterr, r, "rktlet is shutting down");
        }
        return rkl_api_stream(ctx, &event_ops, s);
}
