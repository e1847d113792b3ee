/* The reconciler thread: owns sd-event, the systemd bus and the pod-directory watcher, and
 * drives rkt and systemd toward the desired state in the store. Level-triggered: woken by
 * kicks (every committed CRI change), watcher events, finished actions and timers, it
 * compares desired state with what it observes and starts what closes the difference, at
 * most max_actions rkt commands at once. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

typedef struct rkl_cache rkl_cache;
typedef struct rkl_images rkl_images;
typedef struct rkl_logs rkl_logs;
typedef struct rkl_stats rkl_stats;
typedef struct rkl_reconciler rkl_reconciler;
typedef struct rkl_db_options rkl_db_options;
typedef struct rkl_config rkl_config;
typedef struct rkl_reconciler_ops rkl_reconciler_ops;

typedef struct rkl_reconciler_config {
        const rkl_config *config; /* the options (base/config.h); zeros get their defaults */
        const char *db_path;      /* the thread opens its own connection; NULL: probe only */
        const rkl_db_options *store_opts;
        rkl_images *images;            /* resolves containers' images to IDs */
        rkl_logs *logs;                /* told which containers' logs to follow; NULL: none */
        rkl_stats *stats;              /* refreshed every stats_interval_usec; NULL: no stats */
        uint64_t resync_interval_usec; /* the rescan of the pod directories; 0: 10 s */
        uint64_t stop_grace_usec; /* SIGTERM to SIGKILL when no deadline was asked for; 0: 10 s */
        /* How rkt, systemd, the pod directories, the clock and the worker pool are reached
         * (ops.h), with the userdata its verbs get; NULL: the real ones, with the reconciler
         * as userdata. A test's doubles go here. */
        const rkl_reconciler_ops *ops;
        void *ops_userdata;
} rkl_reconciler_config;

int rkl_reconciler_new(const rkl_reconciler_config *cfg, rkl_cache *cache, rkl_reconciler **ret,
                       rkl_error *reterr);
/* Starts the thread; returns once it runs. Its first acts are the first probe of rkt and
 * systemd (rkl_cache_wait_health() waits for it) and the first image list
 * (rkl_images_wait_listed()), then the first pass. */
int rkl_reconciler_start(rkl_reconciler *r, rkl_error *reterr);
/* Wakes the thread; callable from any thread. */
void rkl_reconciler_kick(rkl_reconciler *r);
/* For the API threads' connections (rkl_db_options.checkpoint_wanted): their WAL has
 * grown; the reconciler's next pass checkpoints it, off the threads that answer calls. */
void rkl_reconciler_checkpoint_wanted(void *reconciler);
/* For metrics and systemd's STATUS=; callable from any thread, takes no lock. */
typedef struct rkl_reconciler_stats {
        uint64_t lag_usec;  /* age of the oldest kick no pass has started on; 0: none */
        unsigned in_flight; /* rkt actions under way */
        uint64_t passes;    /* passes run since start */
} rkl_reconciler_stats;
void rkl_reconciler_get_stats(rkl_reconciler *r, rkl_reconciler_stats *ret);
/* For tests, on a reconciler whose thread was not started: applies the results of the
 * actions finished since the last call, then runs one pass on the caller's thread, as the
 * thread does when woken. The first call also does what the thread does before its first
 * pass: pod networking set up (the networks recorded, the CNI configuration read, but not
 * watched) and rkt and systemd probed for Status. rescan: read every pod directory again and
 * reap leftover units and state directories first, as the first pass and every resync do.
 * *ret_wake_at_ns (may be NULL): when, by the ops' clock, the pass wants to run again; 0: not
 * before something happens. */
void rkl_reconciler_run_pass(rkl_reconciler *r, bool rescan, int64_t *ret_wake_at_ns);
/* Stops and joins the thread; actions under way finish first. */
void rkl_reconciler_stop(rkl_reconciler *r);
rkl_reconciler *rkl_reconciler_free(rkl_reconciler *r);

RKL_DEFINE_CLEANUP(rkl_reconciler *, rkl_reconciler_free)

/* The stats collector's resolve callback (stats/stats.h): where an app's or a pod's cgroups
 * are, as the reconciler finds them. */
typedef struct rkl_stats_dirs rkl_stats_dirs;
int rkl_reconciler_stats_dirs(pid_t supervisor, const char *app, rkl_stats_dirs *ret);
