/* What the machine looks like (observing.c): rkt's pod directories, watched and rescanned,
 * each pod as last read; the observations made of them (observe.c's rules) written through
 * the store when they change, with the timeline of each start under way; adoption of a pod
 * whose UUID was not recorded yet. The state is r->observing. Reconciler thread only, but
 * rkl_observing_pods_fd(). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "observe.h"
#include "base/model.h"
#include "base/time-util.h"

typedef struct rkl_reconciler rkl_reconciler;
typedef struct rkl_observing rkl_observing;
typedef struct rkl_pod_record rkl_pod_record;
typedef struct rkl_container_record rkl_container_record;
typedef struct rkl_pod_observed rkl_pod_observed;
typedef struct rkl_container_observed rkl_container_observed;
typedef struct rkl_poddir_pod rkl_poddir_pod;

/* How soon a pod is read again for what inotify does not show (a process on its way, a
 * held exit's writer). */
#define RECHECK_NS (20 * (int64_t)NSEC_PER_MSEC)

rkl_observing *rkl_observing_new(void);
rkl_observing *rkl_observing_free(rkl_observing *o);

/* ---- Pod directories ---- */
/* Watches the pods directory (made when missing) on the reconciler's event loop, before the
 * first scan, so that nothing falls between the two; without the watch the pods are still
 * read at each rescan, only later. unwatch() drops it before the loop goes. */
int rkl_observing_watch(rkl_reconciler *r);
void rkl_observing_unwatch(rkl_reconciler *r);
/* The pods directory as opened (by the first look at a pod), or -EBADF before; callable from
 * the workers, which never open it. */
int rkl_observing_pods_fd(rkl_reconciler *r);
/* Reads pod uuid's directory again, records what changed of its sandbox and containers, and
 * adopts the pod when it is a creation's whose UUID is not recorded yet. */
void rkl_observing_read(rkl_reconciler *r, const char *uuid);
/* Every pod directory read again, and the records whose pod vanished while nobody looked. */
void rkl_observing_rescan(rkl_reconciler *r);
/* The pods to read again that a pass found (what inotify cannot see), read now. */
void rkl_observing_recheck(rkl_reconciler *r);
/* The pod with uuid as last read, or NULL. */
const rkl_poddir_pod *rkl_observing_pod(rkl_reconciler *r, const char *uuid);
/* Every pod as last read: *i starts at 0; false at the end. Not across a read. */
bool rkl_observing_iterate(rkl_reconciler *r, size_t *i, const rkl_poddir_pod **ret);

/* When the current creation attempt of a sandbox began: a retry starts once the backoff of
 * the last failure ran out. */
int64_t rkl_observing_attempt_start_ns(const rkl_pod_record *rec);
/* A live pod marked for a sandbox being created, whose UUID is not recorded yet, is that
 * creation's (the daemon crashed, or the uuid file was not read yet), unless it was made
 * before the current attempt began: an earlier attempt's pod on its way down, which must
 * not count against the new attempt, nor live on in a sandbox that failed for good. */
bool rkl_observing_pod_adoptable(const rkl_pod_record *rec, const rkl_poddir_pod *p);
/* Is the app's process there yet? (see rkl_app_proc) */
rkl_app_proc rkl_observing_app_process(rkl_reconciler *r, const rkl_container_record *rec,
                                       const rkl_poddir_pod *p, pid_t *ret_pid);

/* ---- Writing observations back ---- */
void rkl_observing_set_pod(rkl_reconciler *r, const rkl_pod_record *rec, const rkl_pod_observed *o);
/* The container's observed state written through the store, with its timeline. */
void rkl_observing_set_container(rkl_reconciler *r, const rkl_container_record *rec,
                                 const rkl_container_observed *o);

/* ---- Timelines ---- */
/* A step of a start seen now: kept in memory and written with the object's next observation
 * (never in a commit of its own). The first step of an attempt (the unit's start, an app
 * add) begins its timeline anew, an app start its own steps; any other step counts once. */
void rkl_observing_pod_step(rkl_reconciler *r, const rkl_pod_record *rec, rkl_pod_step step);
void rkl_observing_container_step(rkl_reconciler *r, const rkl_container_record *rec,
                                  rkl_container_step step);
/* When the current attempt reached step, by the steps kept or stored (realtime ns; 0: not
 * reached). After a restart of the daemon it may be an earlier attempt's, older than the
 * current attempt's start. */
int64_t rkl_observing_pod_step_ns(rkl_reconciler *r, const rkl_pod_record *rec, rkl_pod_step step);
/* Forgets the steps of objects no longer in the cache (removed while starting). */
void rkl_observing_steps_sweep(rkl_reconciler *r);
