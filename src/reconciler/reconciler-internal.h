/* What every file of the reconciler shares: the reconciler itself, that is the services its
 * parts use (the options, the store and the cache, rkt, the operations of ops.h, the pool),
 * each part's own state (opaque here, defined in the part's file and reached through the
 * part's header), and the loop's state (reconciler.c). Reconciler thread only, except where
 * a comment says otherwise. */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "reconciler.h"
#include "ops.h"
#include "base/config.h"
#include "base/log.h"

typedef struct rkl_workpool rkl_workpool;
typedef struct rkl_store rkl_store;
typedef struct rkl_probe rkl_probe;
typedef struct rkl_action_queue rkl_action_queue;
typedef struct rkl_observing rkl_observing;
typedef struct rkl_pods rkl_pods;
typedef struct rkl_containers rkl_containers;
typedef struct rkl_limits rkl_limits;
typedef struct rkl_orphans rkl_orphans;
typedef struct rkl_network rkl_network;

/* Journal fields of a line about the sandbox rec. */
#define POD_OBJECT(rec)                                                                            \
        (&(rkl_log_object){.pod_id = (rec)->id,                                                    \
                           .pod_name = (rec)->spec.name,                                           \
                           .pod_namespace = (rec)->spec.namespace})
/* Journal fields of a line about the container rec: its ID and its sandbox's. */
#define CONTAINER_OBJECT(rec)                                                                      \
        (&(rkl_log_object){.pod_id = (rec)->sandbox_id, .container_id = (rec)->id})

struct rkl_reconciler {
        /* ---- The services: set at creation, never changed (but the bus) ---- */
        /* The options, the defaults of their zeros filled in: a copy whose strings are
         * still the daemon's, never freed here. */
        rkl_config cfg;
        rkl_images *images;
        rkl_logs *logs;
        rkl_stats *stats;
        uint64_t resync_interval_usec, stop_grace_usec;
        char *pods_dir;
        rkl_cache *cache;
        rkl_rkt *rkt;
        /* How rkt, the system manager, the pod directories, the clock and the pool are
         * reached (ops.h), and their userdata: the real table and the reconciler, or a
         * test's doubles. */
        const rkl_reconciler_ops *ops;
        void *ops_userdata;
        rkl_workpool *pool;
        rkl_store *store; /* the reconciler thread's connection, and the shared cache */
        sd_bus *bus;      /* the real table's connection to the system manager (ops.c) */

        /* ---- Each part's own state, in its file ---- */
        rkl_probe *probe;           /* probe.c */
        rkl_action_queue *actions;  /* actions.c */
        rkl_observing *observing;   /* observing.c */
        rkl_pods *pods;             /* pods.c */
        rkl_containers *containers; /* containers.c */
        rkl_limits *limits;         /* limits.c */
        rkl_orphans *orphans;       /* orphans.c */
        rkl_network *net;           /* network.c; NULL with rkt's own (--net) */

        /* ---- The loop's (reconciler.c) ---- */
        int kick_fd, quit_fd;
        pthread_t thread;
        bool running;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool started;
        int thread_error;
        bool store_refused;           /* the store failed its check at start: act on nothing */
        atomic_bool checkpoint_asked; /* by the API's connections: their WAL grew */
        /* Stats (rkl_reconciler_get_stats): the oldest kick not yet passed over
         * (CLOCK_MONOTONIC usec, 0: none), passes run. */
        _Atomic uint64_t kick_since_usec;
        _Atomic uint64_t n_passes;
        /* Reconciler thread only. */
        sd_event *event; /* NULL under a test's passes (rkl_reconciler_run_pass()) */
        sd_event_source *pass_source, *wake_source;
        int64_t wake_at_ns; /* earliest time a pass must run again; 0: none */
        bool rescan;        /* the next pass reads every pod directory again (observing.c) */
        bool stats_new;     /* something started running: refresh the stats after the pass */
};

/* The operations of ops.h, called with their userdata. */
#define RKL_OPS(r, verb, ...) ((r)->ops->verb((r)->ops_userdata, ##__VA_ARGS__))
/* Now, by the reconciler's clock (ops.h's now_ns). */
int64_t rkl_reconciler__now(rkl_reconciler *r);
/* A pass runs at t at the latest (by the reconciler's clock), or soon. */
void rkl_reconciler__wake_at(rkl_reconciler *r, int64_t t);
void rkl_reconciler__schedule_pass(rkl_reconciler *r);
/* A write that failed: the object keeps its recorded state, and the next pass, seeing
 * the same difference, tries again. Gone is no failure: its removal ends the work. */
void rkl_reconciler__write_failed(const char *kind, const char *id, const char *what, int k,
                                  const rkl_error *err);
/* Stops a unit (no wait for the job); a failure is logged, since the next pass finds the
 * unit again and retries. Gone already is success; without the manager, nothing. */
void rkl_reconciler__unit_stop(rkl_reconciler *r, const char *unit);
