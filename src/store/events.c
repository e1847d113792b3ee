#include "events.h"

#include <pthread.h>
#include <stdatomic.h>

#include "base/alloc.h"
#include "base/time-util.h"
#include "metrics/metrics.h"
#include "base/banned.h"

const char *rkl_event_type_to_string(rkl_event_type t)
{
        static const char *const names[_RKL_EVENT_TYPE_MAX] = {
            [RKL_EVENT_CREATED] = "created",
            [RKL_EVENT_STARTED] = "started",
            [RKL_EVENT_STOPPED] = "stopped",
            [RKL_EVENT_DELETED] = "deleted",
        };
        return t >= 0 && t < _RKL_EVENT_TYPE_MAX ? names[t] : NULL;
}

/* ---- Derivation ---- */

static bool pod_started(const rkl_pod_record *p)
{
        return p && p->observed.phase == RKL_POD_PHASE_RUNNING;
}

static bool pod_ready(const rkl_pod_record *p)
{
        return p && rkl_pod_readiness_of(p) == RKL_POD_READY;
}

size_t rkl_event_derive_pod(const rkl_pod_record *before, const rkl_pod_record *after,
                            rkl_event_type ret[static RKL_EVENT_DERIVE_MAX])
{
        size_t n = 0;

        if (!after) {
                if (before)
                        ret[n++] = RKL_EVENT_DELETED;
                return n;
        }
        if (!before)
                ret[n++] = RKL_EVENT_CREATED;
        /* Running is a phase a sandbox reaches once: one that dies goes to failed, and
         * kubelet makes a new one. */
        if (!pod_started(before) && pod_started(after))
                ret[n++] = RKL_EVENT_STARTED;
        /* Ready from acceptance: a new sandbox that is not ready has stopped already. */
        if ((before ? pod_ready(before) : true) && !pod_ready(after))
                ret[n++] = RKL_EVENT_STOPPED;
        return n;
}

static bool container_started(const rkl_container_record *c)
{
        return c &&
               (rkl_container_state_of(c) == RKL_CONTAINER_RUNNING || c->observed.started_ns > 0);
}

static bool container_exited(const rkl_container_record *c)
{
        return c && rkl_container_state_of(c) == RKL_CONTAINER_EXITED;
}

size_t rkl_event_derive_container(const rkl_container_record *before,
                                  const rkl_container_record *after,
                                  rkl_event_type ret[static RKL_EVENT_DERIVE_MAX])
{
        size_t n = 0;

        if (!after) {
                if (before)
                        ret[n++] = RKL_EVENT_DELETED;
                return n;
        }
        if (!before)
                ret[n++] = RKL_EVENT_CREATED;
        if (!container_started(before) && container_started(after))
                ret[n++] = RKL_EVENT_STARTED;
        if (!container_exited(before) && container_exited(after))
                ret[n++] = RKL_EVENT_STOPPED;
        return n;
}

/* ---- Events ---- */

rkl_event *rkl_event_new(rkl_event_type type, bool about_pod, const char *id, rkl_pod_view *pod,
                         rkl_container_view **containers, size_t n_containers)
{
        rkl_event *e = rkl_xnew0(rkl_event, 1);
        e->refs = 1;
        e->type = type;
        e->about_pod = about_pod;
        (void)snprintf(e->id, sizeof(e->id), "%s", id);
        e->created_ns = rkl_realtime_ns();
        e->emitted_usec = rkl_now_usec(CLOCK_MONOTONIC);
        e->pod = pod;
        e->containers = containers;
        e->n_containers = n_containers;
        return e;
}

rkl_event *rkl_event_ref(rkl_event *e)
{
        __atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED);
        return e;
}

rkl_event *rkl_event_unref(rkl_event *e)
{
        if (e && __atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) == 0) {
                rkl_pod_view_unref(e->pod);
                rkl_container_views_unref(e->containers, e->n_containers);
                free(atomic_load(&e->memo));
                free(e);
        }
        return NULL;
}

/* ---- The hub ---- */

/* A ring of events. */
typedef struct ring {
        rkl_event **items;
        size_t head, n, cap;
} ring;

static void ring_init(ring *r, size_t cap)
{
        *r = (ring){.items = rkl_xnew0(rkl_event *, cap ? cap : 1), .cap = cap};
}

static void ring_push(ring *r, rkl_event *e)
{
        assert(r->n < r->cap);
        r->items[(r->head + r->n++) % r->cap] = e;
}

static rkl_event *ring_pop(ring *r)
{
        if (r->n == 0)
                return NULL;
        rkl_event *e = r->items[r->head];
        r->head = (r->head + 1) % r->cap;
        r->n--;
        return e;
}

static const rkl_event *ring_peek(const ring *r)
{
        return r->n ? r->items[r->head] : NULL;
}

static void ring_clear(ring *r)
{
        rkl_event *e;
        while ((e = ring_pop(r)))
                rkl_event_unref(e);
}

static void ring_done(ring *r)
{
        ring_clear(r);
        free(r->items);
        *r = (ring){0};
}

struct rkl_events_sub {
        rkl_events *hub;
        rkl_events_wake_fn wake;
        void *userdata;
        ring queue;
        bool attached; /* in the hub's list: events go to it */
        int end;       /* 0, -ENOSPC (dropped) or -ESHUTDOWN */
        uint64_t lost; /* dropped: the events it had waiting and the one that did not fit */
        rkl_events_sub *prev, *next;
};

struct rkl_events {
        rkl_events_config cfg;
        pthread_mutex_t publish_lock; /* the order of publishes (rkl_events_publish_lock()) */
        pthread_mutex_t lock;         /* everything below, and every subscription's fields */
        uint64_t seq;
        rkl_events_sub *subs;
        size_t n_subs;
        ring kept; /* emitted while nobody was subscribed */
        bool shut_down;
};

rkl_events *rkl_events_new(const rkl_events_config *cfg)
{
        rkl_events *e = rkl_xnew0(rkl_events, 1);
        e->cfg = cfg ? *cfg
                     : (rkl_events_config){.queue_max = RKL_EVENTS_QUEUE_MAX,
                                           .keep_usec = RKL_EVENTS_KEEP_USEC,
                                           .keep_max = RKL_EVENTS_KEEP_MAX};
        if (e->cfg.queue_max == 0)
                e->cfg.queue_max = 1;
        /* What is kept goes into the next subscriber's queue whole. */
        if (e->cfg.keep_max > e->cfg.queue_max)
                e->cfg.keep_max = e->cfg.queue_max;
        pthread_mutex_init(&e->publish_lock, NULL);
        pthread_mutex_init(&e->lock, NULL);
        ring_init(&e->kept, e->cfg.keep_max);
        return e;
}

/* Lock held. The subscription stays the subscriber's to free. */
static void detach(rkl_events *e, rkl_events_sub *s, int end)
{
        if (!s->attached)
                return;
        if (s->prev)
                s->prev->next = s->next;
        else
                e->subs = s->next;
        if (s->next)
                s->next->prev = s->prev;
        s->prev = s->next = NULL;
        s->attached = false;
        s->end = end;
        e->n_subs--;
        rkl_metrics_add(RKL_METRICS_EVENT_STREAMS, -1);
}

rkl_events *rkl_events_free(rkl_events *e)
{
        if (!e)
                return NULL;
        /* Subscriptions belong to their subscribers, who are gone by now. */
        assert(!e->subs);
        while (e->subs)
                detach(e, e->subs, -ESHUTDOWN);
        ring_done(&e->kept);
        pthread_mutex_destroy(&e->publish_lock);
        pthread_mutex_destroy(&e->lock);
        free(e);
        return NULL;
}

void rkl_events_publish_lock(rkl_events *e)
{
        pthread_mutex_lock(&e->publish_lock);
}

void rkl_events_publish_unlock(rkl_events *e)
{
        pthread_mutex_unlock(&e->publish_lock);
}

/* Lock held. Drops kept events older than the window. */
static void kept_expire(rkl_events *e, uint64_t now_usec)
{
        const rkl_event *oldest;
        while ((oldest = ring_peek(&e->kept)) && oldest->emitted_usec + e->cfg.keep_usec < now_usec)
                rkl_event_unref(ring_pop(&e->kept));
}

void rkl_events_emit(rkl_events *e, rkl_event *ev)
{
        pthread_mutex_lock(&e->lock);
        ev->seq = ++e->seq;
        rkl_metrics_add(RKL_METRICS_EVENTS, 1);
        if (e->shut_down) {
                /* The daemon is going: its successor starts with no history. */
        } else if (!e->subs) {
                if (e->cfg.keep_max > 0) {
                        kept_expire(e, ev->emitted_usec);
                        if (e->kept.n == e->kept.cap)
                                rkl_event_unref(ring_pop(&e->kept));
                        ring_push(&e->kept, rkl_event_ref(ev));
                }
        } else {
                rkl_events_sub *next;
                for (rkl_events_sub *s = e->subs; s; s = next) {
                        next = s->next;
                        if (s->queue.n == s->queue.cap) {
                                /* It stopped reading: drop it rather than wait for it or
                                 * hold more for it. Its next read ends its stream. */
                                s->lost = s->queue.n + 1;
                                ring_clear(&s->queue);
                                detach(e, s, -ENOSPC);
                                rkl_metrics_add(RKL_METRICS_EVENT_STREAMS_DROPPED, 1);
                                s->wake(s->userdata);
                                continue;
                        }
                        ring_push(&s->queue, rkl_event_ref(ev));
                        if (s->queue.n == 1)
                                s->wake(s->userdata);
                }
        }
        pthread_mutex_unlock(&e->lock);
        rkl_event_unref(ev);
}

int rkl_events_subscribe(rkl_events *e, rkl_events_wake_fn wake, void *userdata,
                         rkl_events_sub **ret)
{
        RKL_GUARD(&e->lock);
        if (e->shut_down)
                return -ESHUTDOWN;
        rkl_events_sub *s = rkl_xnew0(rkl_events_sub, 1);
        s->hub = e;
        s->wake = wake;
        s->userdata = userdata;
        ring_init(&s->queue, e->cfg.queue_max);
        /* What happened while nobody listened, as long as it is recent. */
        kept_expire(e, rkl_now_usec(CLOCK_MONOTONIC));
        rkl_event *ev;
        while ((ev = ring_pop(&e->kept)))
                ring_push(&s->queue, ev);
        s->next = e->subs;
        if (e->subs)
                e->subs->prev = s;
        e->subs = s;
        s->attached = true;
        e->n_subs++;
        rkl_metrics_add(RKL_METRICS_EVENT_STREAMS, 1);
        *ret = s;
        return 0;
}

int rkl_events_next(rkl_events_sub *s, rkl_event **ret, uint64_t *ret_lost)
{
        RKL_GUARD(&s->hub->lock);
        rkl_event *ev = ring_pop(&s->queue);
        if (ev) {
                *ret = ev;
                return 1;
        }
        if (s->end == -ENOSPC && ret_lost)
                *ret_lost = s->lost;
        return s->end;
}

rkl_events_sub *rkl_events_unsubscribe(rkl_events_sub *s)
{
        if (!s)
                return NULL;
        pthread_mutex_lock(&s->hub->lock);
        detach(s->hub, s, -ESHUTDOWN);
        ring_done(&s->queue);
        pthread_mutex_unlock(&s->hub->lock);
        free(s);
        return NULL;
}

void rkl_events_shutdown(rkl_events *e)
{
        RKL_GUARD(&e->lock);
        e->shut_down = true;
        while (e->subs) {
                rkl_events_sub *s = e->subs;
                ring_clear(&s->queue);
                detach(e, s, -ESHUTDOWN);
                s->wake(s->userdata);
        }
        ring_clear(&e->kept);
}

size_t rkl_events_n_subscribers(rkl_events *e)
{
        RKL_GUARD(&e->lock);
        return e->n_subs;
}
