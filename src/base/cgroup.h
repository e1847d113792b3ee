/* cgroup primitives without policy: which cgroups a process is in and where each of them is
 * in this mount namespace (v1, v2 or both: a hybrid machine), and signalling or emptying a
 * cgroup. What rkt makes of them (an app's cgroup under its pod's unit) is the reconciler's
 * (reconciler/app-cgroup.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One line of /proc/PID/cgroup: the process's cgroup in one hierarchy. */
typedef struct rkl_cgroup_entry {
        bool unified;      /* cgroup2 ("0::/path") */
        char *controllers; /* "cpu,cpuacct", "name=systemd"; "" for cgroup2 */
        char *path;        /* as the reader's cgroup namespace sees it: "/system.slice/x" */
        char *dir;         /* that cgroup's directory in this mount namespace; NULL when the
                            * hierarchy is not mounted here or the cgroup is outside what is */
} rkl_cgroup_entry;

void rkl_cgroup_entries_free(rkl_cgroup_entry *e, size_t n);
/* Whether e's hierarchy is that of controller (a v1 controller or "name=..."). */
bool rkl_cgroup_entry_has(const rkl_cgroup_entry *e, const char *controller);

/* Parses the text of /proc/PID/cgroup, placing each entry with the cgroup mounts of a
 * /proc/self/mountinfo text (NULL: leave every dir NULL). -EBADMSG when a line is malformed. */
int rkl_cgroup_entries_parse(const char *proc_cgroup, const char *mountinfo, rkl_cgroup_entry **ret,
                             size_t *ret_n);
/* The same for a live process: -ESRCH when it is gone. */
int rkl_cgroup_entries_of(pid_t pid, rkl_cgroup_entry **ret, size_t *ret_n);
/* The path of pid's cgroup in one hierarchy: controller "" for cgroup2, else a v1 controller
 * ("memory") or name ("name=systemd") of the hierarchy. -ENODATA when it has none. */
int rkl_cgroup_path_of(pid_t pid, const char *controller, char **ret);

/* The processes dir's cgroup.procs lists, in its order (dir relative to dirfd: AT_FDCWD, or
 * an open cgroup with dir "."); *ret is NULL when there are none. -errno when it cannot be
 * read (-ENOENT: the cgroup is gone). */
int rkl_cgroup_pids_at(int dirfd, const char *dir, pid_t **ret, size_t *ret_n);

/* Sends sig to every process in dir and its descendants; returns how many were signalled. */
int rkl_cgroup_kill(const char *dir, int sig);
/* SIGKILLs everything in dir and below, once: through cgroup.kill where the kernel has it
 * (cgroup2, 5.14: atomic, forks in flight included), else by kill() of each process listed. */
void rkl_cgroup_kill_all(const char *dir);
/* Whether dir and its descendants hold no process (a cgroup that is gone is empty). */
bool rkl_cgroup_is_empty(const char *dir);
/* SIGKILLs everything in dir and below until it is empty (cgroup.kill where the kernel has
 * it, else rounds of kill() that also catch what was forked meanwhile), then removes dir and
 * what it holds. -EBUSY when it is not empty within timeout_usec. */
int rkl_cgroup_kill_and_remove(const char *dir, uint64_t timeout_usec);
/* Removes dir and its descendants, deepest first (ENOENT is fine); the first error, e.g.
 * -EBUSY for a cgroup that still holds processes. */
int rkl_cgroup_remove(const char *dir);

/* A service's process runs the service manager's code from its fork to its exec of the
 * program: first as "systemd" with its parent's binary, then named "(program)" by systemd.
 * 1 while pid is so, 0 once it runs its program, -ESRCH when it is gone, else -errno;
 * *ret_comm (may be NULL) gets its name. */
int rkl_pid_before_exec(pid_t pid, char **ret_comm);
