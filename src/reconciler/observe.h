/* What the reconciler concludes from a pod directory: pure functions from rkt's on-disk
 * truth (rkt/poddir.h) and the store's record to the observed state CRI reports. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "rkt/poddir.h"
#include "store/db.h"

/* p is the pod as last read, or NULL when its directory is gone. net_ready: the sandbox's
 * network is set up (or it needs none); a pending pod runs once its supervisor is ready and
 * its network is. now_ns stamps a finish time rkt did not record. *ret_dead tells that the
 * pod's process is gone for good: a pending pod that died is a failed creation, a running
 * one died on its own. */
void rkl_observe_pod(const rkl_pod_record *rec, const rkl_poddir_pod *p, bool net_ready,
                     int64_t now_ns, rkl_pod_observed *ret, bool *ret_dead);

/* Whether pod p, which sandbox rec has seen running, was removed from outside although
 * its directory is still there: an `rm -rf` that raced a writer, or whose files went while
 * a process of the pod still holds the directory (and rkt's lock on it). rkt replaces a
 * manifest with a rename and never removes it before the directory, so a running pod
 * without one is such a remnant. The reconciler then takes the pod as gone (p NULL). */
bool rkl_observe_pod_removed(const rkl_pod_record *rec, const rkl_poddir_pod *p);

/* Whether the app's process was seen in its cgroup: rkt marks an app started just before
 * its process exists, and CRI must never report running before it runs. */
typedef enum rkl_app_proc {
        RKL_APP_PROC_UNKNOWN, /* the cgroup cannot be read: trust rkt */
        RKL_APP_PROC_NONE,    /* the cgroup is there and empty */
        RKL_APP_PROC_SEEN,
} rkl_app_proc;

/* The reason of a container whose app ended with its pod, which went down without rktlet
 * asking (its unit stopped, its nspawn or its systemd killed) while the container ran. */
#define RKL_CONTAINER_POD_EXITED "PodExited"

/* The container's app in pod p (NULL: the pod is gone). proc/pid: its process, as found
 * in its cgroup. oom: the app's cgroup saw an OOM kill. rkt records a bare signal number when an
 * app is killed; Kubernetes wants 128+N (docs/design.md, 'The async contract'): a stop rktlet
 * asked for (SIGTERM, then SIGKILL at the deadline) gives 143 or 137, an OOM kill 137 with
 * reason OOMKilled; an exit that came with its pod's end, which rktlet did not ask for,
 * has reason RKL_CONTAINER_POD_EXITED. A container that ran in a pod whose directory is gone
 * while its sandbox was wanted (removed outside rktlet) ended then: EXITED at now_ns, with
 * that reason and an unknown exit code. */
void rkl_observe_container(const rkl_container_record *rec, const rkl_pod_record *pod,
                           const rkl_poddir_pod *p, rkl_app_proc proc, pid_t pid, bool oom,
                           int64_t now_ns, rkl_container_observed *ret);

bool rkl_pod_observed_equal(const rkl_pod_observed *a, const rkl_pod_observed *b);
bool rkl_container_observed_equal(const rkl_container_observed *a, const rkl_container_observed *b);
void rkl_pod_observed_copy(rkl_pod_observed *dst, const rkl_pod_observed *src);
void rkl_container_observed_copy(rkl_container_observed *dst, const rkl_container_observed *src);
