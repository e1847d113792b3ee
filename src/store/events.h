/* Container events (CRI's GetContainerEvents): every creation, start, stop and deletion of a
 * container or a sandbox, derived where the store publishes a change to the cache
 * (store.c), and handed to subscribers in the order it happened.
 *
 * An event is immutable and refcounted. It holds references to the views it speaks of: its
 * sandbox and all the sandbox's containers as they were when it was emitted, which is what
 * kubelet rebuilds a pod's status from.
 *
 * Subscribers each have a bounded queue. Emitting appends to every queue and wakes the
 * subscriber whose queue was empty; a subscriber whose queue is full is dropped on the
 * spot (its queue is emptied, and its next read says so), so that neither the publisher
 * nor the other subscribers ever wait for a slow one. Events emitted while nobody is
 * subscribed are kept for a while and handed to the next subscriber first, as containerd
 * does: a kubelet that restarts is told what happened meanwhile. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/macro.h"
#include "base/time-util.h"
#include "store/cache.h"

/* CRI's ContainerEventType numbers. */
typedef enum rkl_event_type {
        RKL_EVENT_CREATED = 0,
        RKL_EVENT_STARTED = 1,
        RKL_EVENT_STOPPED = 2,
        RKL_EVENT_DELETED = 3,
        _RKL_EVENT_TYPE_MAX,
} rkl_event_type;

const char *rkl_event_type_to_string(rkl_event_type t);

/* The events one change of a record makes, in order, into ret; returns how many (0: the
 * change is none that CRI names). before is the record the cache held (NULL: none), after
 * the one replacing it (NULL: deleted). A sandbox is created when accepted, started when
 * its rkt pod runs (ready, with its network), stopped when it stops being ready (stopped,
 * failed for good, or its pod died); a container is created when accepted, started once
 * its process has run, stopped once it has exited. A change that skips a step makes the
 * events of the steps it skipped: a container first seen exited, whose start rkt recorded,
 * was started too. Pure: no clock, no state. */
#define RKL_EVENT_DERIVE_MAX 3
size_t rkl_event_derive_pod(const rkl_pod_record *before, const rkl_pod_record *after,
                            rkl_event_type ret[static RKL_EVENT_DERIVE_MAX]);
size_t rkl_event_derive_container(const rkl_container_record *before,
                                  const rkl_container_record *after,
                                  rkl_event_type ret[static RKL_EVENT_DERIVE_MAX]);

typedef struct rkl_event {
        int refs; /* atomic */
        rkl_event_type type;
        bool about_pod;          /* the sandbox's own event: id is the sandbox's */
        char id[RKL_ID_LEN + 1]; /* the container's, or the sandbox's */
        int64_t created_ns;      /* realtime, when it was emitted */
        uint64_t emitted_usec;   /* CLOCK_MONOTONIC, the same moment */
        uint64_t seq;            /* 1, 2, ...: the order of emission */
        rkl_pod_view *pod;       /* its sandbox then (a deleted one as it last was); may be NULL */
        rkl_container_view **containers; /* the sandbox's containers then, oldest first */
        size_t n_containers;
        _Atomic(rkl_blob *) memo; /* its encoding, made by the first reader that needs it */
} rkl_event;

/* An event with one reference; takes over pod (a reference, may be NULL) and the
 * containers array with its references. */
rkl_event *rkl_event_new(rkl_event_type type, bool about_pod, const char *id, rkl_pod_view *pod,
                         rkl_container_view **containers, size_t n_containers);
rkl_event *rkl_event_ref(rkl_event *e);
rkl_event *rkl_event_unref(rkl_event *e);
RKL_DEFINE_CLEANUP(rkl_event *, rkl_event_unref)

typedef struct rkl_events_config {
        size_t queue_max;   /* events a subscriber may have waiting before it is dropped */
        uint64_t keep_usec; /* how long events nobody received are kept for the next one */
        size_t keep_max;    /* and how many at most (no more than queue_max) */
} rkl_events_config;

/* kubelet reads its stream into a channel of 1000 as events arrive, and grpc buffers what
 * is sent before that: a subscriber with this many events waiting has stopped reading. */
#define RKL_EVENTS_QUEUE_MAX 512
#define RKL_EVENTS_KEEP_USEC (5 * 60 * USEC_PER_SEC) /* containerd's 5 minutes */
#define RKL_EVENTS_KEEP_MAX  RKL_EVENTS_QUEUE_MAX

typedef struct rkl_events rkl_events;

/* cfg NULL: the defaults above. */
rkl_events *rkl_events_new(const rkl_events_config *cfg);
rkl_events *rkl_events_free(rkl_events *e);
RKL_DEFINE_CLEANUP(rkl_events *, rkl_events_free)

/* The publisher's side (store.c). The publish lock is held across a change's swap into the
 * cache and the emission of the events it makes, so that the events of one object go out
 * in the order its views went in, whichever threads publish. Nothing waits with it held. */
void rkl_events_publish_lock(rkl_events *e);
void rkl_events_publish_unlock(rkl_events *e);
/* Numbers, keeps or queues ev (takes the reference over). Publish lock held. */
void rkl_events_emit(rkl_events *e, rkl_event *ev);

/* The subscriber's side. wake(userdata) is called, with the hub's lock held (it may only
 * post a wake-up: never read or unsubscribe from it), when events arrive in an empty queue
 * and when the subscription ends (dropped, shut down). */
typedef void (*rkl_events_wake_fn)(void *userdata);
typedef struct rkl_events_sub rkl_events_sub;
/* A subscription whose queue starts with the events kept for it (read them at once: no
 * wake is called for those). -ESHUTDOWN once rkl_events_shutdown() ran. */
int rkl_events_subscribe(rkl_events *e, rkl_events_wake_fn wake, void *userdata,
                         rkl_events_sub **ret);
/* 1 and the next event (a reference) in *ret; 0 when none is waiting; -ENOSPC when the
 * subscriber fell behind and was dropped (*ret_lost, if given, is how many events it lost),
 * -ESHUTDOWN when the hub shut down. Once dropped or shut down, always that. */
int rkl_events_next(rkl_events_sub *s, rkl_event **ret, uint64_t *ret_lost);
/* Ends the subscription (if still on) and frees it: no wake is called once it returns.
 * Accepts NULL, returns NULL. */
rkl_events_sub *rkl_events_unsubscribe(rkl_events_sub *s);
RKL_DEFINE_CLEANUP(rkl_events_sub *, rkl_events_unsubscribe)
/* Ends every subscription (their next read says -ESHUTDOWN) and refuses new ones; later
 * events are dropped. The daemon's shutdown. */
void rkl_events_shutdown(rkl_events *e);
/* Subscriptions on now. */
size_t rkl_events_n_subscribers(rkl_events *e);
