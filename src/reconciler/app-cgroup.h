/* The cgroups of a pod's apps, found by looking under the pod's unit: rkt's host stage1 on
 * systemd-nspawn 252 puts an app in <unit>/payload/system.slice/<app>.service, older nspawn
 * (and the simulator) in <unit>/system.slice/<app>.service, and the supervisor in <unit> or
 * <unit>/supervisor (docs/rkt.md, 'Cgroups'). Nothing here assumes either layout. Used to tell
 * when an app's process runs, to kill an app whose stop deadline passed (rkt's own stop waits
 * up to systemd's 90 s), and to tell an OOM kill from another SIGKILL. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

typedef struct rkl_stats_dirs rkl_stats_dirs;

/* The app's cgroup directories: in the hierarchy that holds processes (cgroup2, or v1's
 * name=systemd), and its own memory cgroup (on v1 the same relative path in the memory
 * hierarchy, which may not exist yet: see rkl_app_cgroup_memory_adopt; on cgroup2 the first).
 * -ENOENT when the supervisor is gone, -ENXIO when its unit holds no cgroup for the app
 * (no process of it ever ran). app is the unit's name without ".service", or for another
 * unit of the pod its path below the pod's system.slice without it. */
int rkl_app_cgroup_paths(pid_t supervisor, const char *app, char **ret_procs_dir,
                         char **ret_memory_dir);
/* A memory cgroup directory's path from the root of its hierarchy ("/sys/fs/cgroup/memory/a/b"
 * on v1 and "/sys/fs/cgroup/a/b" on cgroup2 give "/a/b"), pointed into dir; NULL for a path
 * outside it. Relative to the daemon's cgroup namespace, so a suffix of what the kernel logs. */
const char *rkl_app_cgroup_relative(const char *dir);
/* The first process of a cgroup: 0 with *ret = 0 when it has none, -ENOENT when the
 * directory does not exist. */
int rkl_app_cgroup_first_pid(const char *dir, pid_t *ret);
/* On cgroup v1, moves the processes of procs_dir into memory_dir, made when missing: rkt 1.30
 * leaves every app in its pod's memory cgroup, where an OOM kill cannot be told apart. Loops
 * until a pass moves nothing, so children forked meanwhile follow. A no-op on cgroup2. Returns
 * how many processes it moved. */
int rkl_app_cgroup_memory_adopt(const char *procs_dir, const char *memory_dir);
/* On cgroup v1, gives an app's first process its own memory cgroup from its first
 * instruction: for the time of its `rkt app start`, the pod's systemd (which forks it) is
 * moved into the app's memory cgroup, made for the purpose, and rkl_app_cgroup_loan_end
 * moves it back. Else the app starts in the pod's memory cgroup and is moved only once seen,
 * and v1 does not move charges with a process: what it touched first would stay the pod's
 * and its own memory would read as nearly nothing. Memory only: its CPU time before it is
 * seen is small, and lending the cpu hierarchies broke a later cpuset of the app (its
 * process listed in no cpuset's cgroup.procs). The pod's app starts are one at a time
 * (actions.h), so no other app's process is forked meanwhile. Nothing is lent (*ret NULL,
 * 0) on cgroup2, or when the app's memory cgroup exists already (a start again, where it may
 * hold a limit the pod's systemd must not run under). */
typedef struct rkl_app_cgroup_loan rkl_app_cgroup_loan;
int rkl_app_cgroup_lend(pid_t supervisor, const char *app, rkl_app_cgroup_loan **ret);
/* Moves the pod's systemd back, with whatever else it forked meanwhile that is not of the
 * app's unit (its reaper-<app>.service, which the app's unit wants), and frees loan (NULL is
 * fine); unless the app started, also removes the cgroup made for it. */
void rkl_app_cgroup_loan_end(rkl_app_cgroup_loan *loan, bool started);
/* Whether memory_dir holds a process that procs_dir does not: the pod's systemd, lent the
 * app's memory cgroup for the app's start. A limit written then would bind it too. */
bool rkl_app_cgroup_memory_lent(const char *procs_dir, const char *memory_dir);
/* Removes an app's own memory cgroup made by rkl_app_cgroup_memory_adopt (ENOENT is fine). */
int rkl_app_cgroup_memory_release(const char *procs_dir, const char *memory_dir);
/* Removes what is left of a unit's cgroup (slice/unit, e.g. "system.slice/rktlet-X.service")
 * in every v1 hierarchy once its processes are gone: systemd 252 cleans only the controllers
 * it manages, and rkt's stage1 leaves the pod's cpuset cgroup behind. Busy ones stay. */
void rkl_app_cgroup_unit_remove(const char *unit_path);
/* Whether any hierarchy still holds that unit's cgroup. */
bool rkl_app_cgroup_unit_left(const char *unit_path);
/* The OOM kill counter of a cgroup (memory.events "oom_kill" on cgroup2, memory.oom_control
 * "oom_kill" on v1), or -ENOENT / -ENODATA. */
int rkl_app_cgroup_oom_kills(const char *memory_dir, unsigned *ret);
/* On cgroup v1, moves the app's processes into cgroups of its own in the cpu and cpuacct
 * hierarchies too (the same relative path as its memory cgroup): rkt 1.30 and the pod's
 * systemd leave apps at the hierarchies' root here, where neither their CPU time can be read
 * nor a quota set. A no-op on cgroup2. */
int rkl_app_cgroup_cpu_adopt(const char *procs_dir, const char *memory_dir);
void rkl_app_cgroup_cpu_release(const char *procs_dir, const char *memory_dir);

/* On cgroup v1, moves every process of the sandbox's unit into the cpuset cgroup
 * <cgroup_parent>/<unit> (made, with each missing level above it, from its parent's CPUs and
 * memory nodes), as runc places a container: kubelet's systemd driver makes each pod's slice in
 * the cpuset hierarchy itself, which systemd 252 does not manage on v1 but trims (removes) as
 * soon as it realizes the slice again, for a unit started in it or a property kubelet sets;
 * kubelet, finding a path of the pod's cgroup missing, then kills the pod (docs/cluster.md,
 * 'cgroup v1 and cpuset'). A slice that holds processes cannot be removed. cgroup_parent is
 * kubelet's ("/kubepods.slice/.../kubepods-besteffort-pod<uid>.slice"); anything else, or no
 * v1 cpuset hierarchy, is a no-op. Returns how many processes moved. */
int rkl_app_cgroup_cpuset_join(const char *cgroup_parent, const char *unit);

/* What CreateContainer and UpdateContainerResources ask of an app; 0: unset. */
typedef struct rkl_app_cgroup_limits {
        int64_t cpu_period, cpu_quota, cpu_shares, memory_limit, oom_score_adj;
        const char *cpuset_cpus; /* NULL: unset */
} rkl_app_cgroup_limits;
/* Writes the limits into the app's cgroups (v1: memory.limit_in_bytes and memsw, cpu.shares,
 * cpu.cfs_period_us/cfs_quota_us and cpuset.cpus in its own cgroups; cgroup2: memory.max,
 * cpu.weight, cpu.max, cpuset.cpus) and oom_score_adj into /proc/<pid>/ of each of its
 * processes, all it can. Returns the first failure, which reterr names ("cpu shares: ..."). */
int rkl_app_cgroup_apply_limits(const char *procs_dir, const char *memory_dir,
                                const rkl_app_cgroup_limits *l, rkl_error *reterr);
/* The stats module's resolve callback (stats.h): an app's (app set) or a pod's cgroups. */
int rkl_app_cgroup_stats_dirs(pid_t supervisor, const char *app, rkl_stats_dirs *ret);
