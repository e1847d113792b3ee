/* The cgroups of a pod's apps, found by looking under the pod's unit: rkt's host stage1 on
 * systemd-nspawn 252 puts an app in <unit>/payload/system.slice/<app>.service, older nspawn
 * (and the simulator) in <unit>/system.slice/<app>.service, and the supervisor in <unit> or
 * <unit>/supervisor (reference/rkt.md, B.1). Nothing here assumes either layout. Used to tell
 * when an app's process runs, to kill an app whose stop deadline passed (rkt's own stop waits
 * up to systemd's 90 s), and to tell an OOM kill from another SIGKILL. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* The app's cgroup directories: in the hierarchy that holds processes (cgroup2, or v1's
 * name=systemd), and its own memory cgroup (on v1 the same relative path in the memory
 * hierarchy, which may not exist yet: see rkl_cgroup_memory_adopt; on cgroup2 the first).
 * -ENOENT when the supervisor is gone, -ENXIO when its unit holds no cgroup for the app
 * (no process of it ever ran). */
int rkl_cgroup_app_paths(pid_t supervisor, const char *app, char **ret_procs_dir,
                         char **ret_memory_dir);
/* The first process of a cgroup: 0 with *ret = 0 when it has none, -ENOENT when the
 * directory does not exist. */
int rkl_cgroup_first_pid(const char *dir, pid_t *ret);
/* On cgroup v1, moves the processes of procs_dir into memory_dir, made when missing: rkt 1.30
 * leaves every app in its pod's memory cgroup, where an OOM kill cannot be told apart. Loops
 * until a pass moves nothing, so children forked meanwhile follow. A no-op on cgroup2. Returns
 * how many processes it moved. */
int rkl_cgroup_memory_adopt(const char *procs_dir, const char *memory_dir);
/* Removes an app's own memory cgroup made by rkl_cgroup_memory_adopt (ENOENT is fine). */
int rkl_cgroup_memory_release(const char *procs_dir, const char *memory_dir);
/* Removes what is left of a unit's cgroup (slice/unit, e.g. "system.slice/rktlet-X.service")
 * in every v1 hierarchy once its processes are gone: systemd 252 cleans only the controllers
 * it manages, and rkt's stage1 leaves the pod's cpuset cgroup behind. Busy ones stay. */
void rkl_cgroup_unit_remove(const char *unit_path);
/* The OOM kill counter of a cgroup (memory.events "oom_kill" on cgroup2, memory.oom_control
 * "oom_kill" on v1), or -ENOENT / -ENODATA. */
int rkl_cgroup_oom_kills(const char *memory_dir, unsigned *ret);
