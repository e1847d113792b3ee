/* The cgroups of a pod's apps, found from the pod's supervisor: rkt puts each app in
 * <unit cgroup>/system.slice/<app>.service (reference/rkt.md, A.2.7). Used to kill an app
 * whose stop deadline passed (rkt's own stop waits up to systemd's 90 s) and to tell an OOM
 * kill from another SIGKILL. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* The app's cgroup directories: in the hierarchy that holds processes (cgroup2, or v1's
 * name=systemd) and in v1's memory hierarchy (NULL on a pure cgroup2 host, where the first
 * has memory.events). -ENOENT when the supervisor is gone. */
int rkl_cgroup_app_paths(pid_t supervisor, const char *app, char **ret_procs_dir,
                         char **ret_memory_dir);
/* The first process of a cgroup: 0 with *ret = 0 when it has none, -ENOENT when the
 * directory does not exist. */
int rkl_cgroup_first_pid(const char *dir, pid_t *ret);
/* Sends sig to every process in dir and its descendants; returns how many were signalled. */
int rkl_cgroup_kill(const char *dir, int sig);
/* The OOM kill counter of a cgroup (memory.events "oom_kill" on cgroup2, memory.oom_control
 * "oom_kill" on v1), or -ENOENT / -ENODATA. */
int rkl_cgroup_oom_kills(const char *memory_dir, unsigned *ret);
