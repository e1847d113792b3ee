/* The stats cache and its collector thread. The reconciler hands over, every --stats-interval,
 * what runs (rkl_stats_refresh()); the collector reads the cgroups, /proc/<pid>/net/dev and
 * the writable layers off the reconciler's thread and swaps in a new immutable snapshot. The
 * API serves every *Stats call from the current snapshot (rkl_stats_get()): no request walks
 * a cgroup. A snapshot holds only what the last refresh was given, so a container that has
 * gone has no entry after the next refresh (and the API lists only what the status cache
 * still holds). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/macro.h"
#include "stats/sample.h"

/* Where an app's or a pod's cgroups are, found by whoever knows the layout (the reconciler's
 * app-cgroup.c): the directories to read from, NULL where there is none. Called on the
 * collector thread. */
typedef struct rkl_stats_dirs {
        char *cpu;      /* CPU time (v1 cpuacct) */
        char *cpu_spec; /* CFS settings (v1 cpu) */
        char *memory;   /* memory; an app's holds its processes (cgroup.procs) */
        char *procs;    /* NULL, or where an app's processes are listed instead of memory (v1:
                         * name=systemd, which nothing but its unit's processes ever join) */
        char *pids;     /* the process count (pids.current): pods */
        char *pids_max; /* the pids cgroup whose pids.max bounds the app's threads */
        char *blkio;    /* block I/O (v1 blkio) */
        char *pressure; /* the cgroup2 cgroup with *.pressure (v1: in unified/) */
} rkl_stats_dirs;
void rkl_stats_dirs_done(rkl_stats_dirs *d);
typedef int (*rkl_stats_resolve_fn)(pid_t supervisor, const char *app, rkl_stats_dirs *ret);

typedef struct rkl_stats_config {
        rkl_stats_cgroup_mode mode;
        rkl_stats_resolve_fn resolve; /* app NULL: the pod's own cgroups */
} rkl_stats_config;

/* What runs, as the reconciler saw it at the refresh. */
typedef struct rkl_stats_target {
        char id[65];         /* the container's, or the sandbox's for a pod */
        char sandbox_id[65]; /* the same as id for a pod */
        bool is_pod;
        pid_t supervisor;  /* the pod's stage1 process (in the pod's network namespace) */
        char *app;         /* containers: the rkt app name */
        char *overlay_dir; /* containers: the pod's overlay directory, whose <tree>/upper/<app>
                            * is the app's writable layer; NULL: none */
} rkl_stats_target;
void rkl_stats_targets_free(rkl_stats_target *t, size_t n);

typedef enum rkl_stats_psi_resource {
        RKL_STATS_PSI_CPU,
        RKL_STATS_PSI_MEMORY,
        RKL_STATS_PSI_IO,
        _RKL_STATS_PSI_MAX,
} rkl_stats_psi_resource;

typedef struct rkl_stats_entry {
        char id[65], sandbox_id[65];
        bool is_pod;
        int64_t timestamp_ns; /* when it was read, realtime */
        bool has_cpu, has_nano_cores;
        uint64_t cpu_usage_ns, nano_cores;
        bool has_memory;
        rkl_stats_memory memory;
        bool has_fs;
        uint64_t fs_bytes, fs_inodes; /* the writable layer */
        bool has_pids;
        uint64_t pids;
        bool has_cpu_split, has_cpu_spec;
        uint64_t cpu_user_ns, cpu_system_ns;
        rkl_stats_cpu_spec cpu_spec;
        bool has_psi[_RKL_STATS_PSI_MAX];
        rkl_stats_psi psi[_RKL_STATS_PSI_MAX];
        bool has_procs, has_pids_max;
        rkl_stats_procs procs; /* containers: what the app's processes hold */
        uint64_t pids_max;
        bool has_disk;
        rkl_stats_disk disk; /* containers: the writable layer's filesystem and device */
        bool has_blkio;
        rkl_stats_blkio *blkio; /* containers: per device */
        size_t n_blkio;
        rkl_stats_netif *ifs; /* pods: the network namespace's interfaces */
        size_t n_ifs;
} rkl_stats_entry;

typedef struct rkl_stats_snapshot rkl_stats_snapshot;
rkl_stats_snapshot *rkl_stats_snapshot_ref(rkl_stats_snapshot *s);
rkl_stats_snapshot *rkl_stats_snapshot_unref(rkl_stats_snapshot *s);
RKL_DEFINE_CLEANUP(rkl_stats_snapshot *, rkl_stats_snapshot_unref)
/* Borrowed from the snapshot; NULL when it has no such entry. */
const rkl_stats_entry *rkl_stats_snapshot_container(const rkl_stats_snapshot *s, const char *id);
const rkl_stats_entry *rkl_stats_snapshot_pod(const rkl_stats_snapshot *s, const char *id);
size_t rkl_stats_snapshot_size(const rkl_stats_snapshot *s);

typedef struct rkl_stats rkl_stats;

/* Starts the collector thread. */
int rkl_stats_new(const rkl_stats_config *cfg, rkl_stats **ret, rkl_error *reterr);
rkl_stats *rkl_stats_free(rkl_stats *st); /* stops and joins the thread */
RKL_DEFINE_CLEANUP(rkl_stats *, rkl_stats_free)
rkl_stats_cgroup_mode rkl_stats_mode(rkl_stats *st);

/* Takes the targets over and wakes the collector; a refresh still pending is replaced (the
 * collector never queues up behind a slow read). Any thread. */
void rkl_stats_refresh(rkl_stats *st, rkl_stats_target *t, size_t n);
/* A reference to the current snapshot (never NULL: empty before the first refresh). */
rkl_stats_snapshot *rkl_stats_get(rkl_stats *st);
/* Whether the current snapshot was collected more than max_age_usec ago (never before the
 * first refresh). */
bool rkl_stats_stale(rkl_stats *st, uint64_t max_age_usec);
/* When it is, has the collector read the last targets again at once and waits for that, up
 * to timeout_usec; whether the snapshot is fresh on return. For a client that asks twice
 * within --stats-interval and reads rates off the two (crictl stats: equal timestamps are an
 * error to it). It waits: never on a completion-queue thread. */
bool rkl_stats_renew(rkl_stats *st, uint64_t max_age_usec, uint64_t timeout_usec);
/* Waits until a refresh handed over before the call has been collected, or timeout. For
 * tests and the benchmark. */
bool rkl_stats_wait_collected(rkl_stats *st, uint64_t timeout_usec);
/* Collects targets into a new snapshot on the calling thread, with prev (may be NULL) for
 * the CPU rates. The collector's work, exposed for tests and the benchmark. */
rkl_stats_snapshot *rkl_stats_collect(const rkl_stats_config *cfg, const rkl_stats_target *t,
                                      size_t n, const rkl_stats_snapshot *prev);
