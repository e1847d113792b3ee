/* Reading a cgroup's usage into plain structs: pure functions over a directory fd, for cgroup
 * v1 (legacy or hybrid: one hierarchy per controller) and cgroup2 alike, so that tests run them
 * on fixture trees (tests/fixtures/cgroup/). Also the parser of /proc/<pid>/net/dev and the
 * disk usage of a directory tree (an app's writable layer). */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum rkl_stats_cgroup_mode {
        RKL_STATS_CGROUP_V1 = 1, /* a hierarchy per controller (legacy, or hybrid with unified/) */
        RKL_STATS_CGROUP_V2 = 2, /* the unified hierarchy only */
        _RKL_STATS_CGROUP_MODE_MAX,
        _RKL_STATS_CGROUP_MODE_INVALID = -EINVAL,
} rkl_stats_cgroup_mode;

/* The mode of the cgroup file system mounted at root_fd (/sys/fs/cgroup): cgroup2 when its
 * root holds cgroup.controllers, else v1. */
rkl_stats_cgroup_mode rkl_stats_cgroup_mode_detect(int root_fd);
const char *rkl_stats_cgroup_mode_to_string(rkl_stats_cgroup_mode m);

typedef struct rkl_stats_memory {
        uint64_t usage;       /* memory.usage_in_bytes / memory.current */
        uint64_t working_set; /* usage - inactive file (kubelet's and cAdvisor's rule) */
        uint64_t rss;         /* v1 total_rss / v2 anon */
        uint64_t page_faults, major_page_faults;
        uint64_t limit;     /* 0: none */
        uint64_t available; /* limit - working set when there is a limit, else 0 */
} rkl_stats_memory;

/* CPU time used by the cgroup and its descendants, nanoseconds: v1 cpuacct.usage, v2
 * cpu.stat usage_usec. -ENOENT when the file is not there. */
int rkl_stats_read_cpu(int dirfd, rkl_stats_cgroup_mode m, uint64_t *ret_usage_ns);
/* v1: memory.usage_in_bytes, memory.limit_in_bytes and memory.stat's total_* lines; v2:
 * memory.current, memory.max and memory.stat. */
int rkl_stats_read_memory(int dirfd, rkl_stats_cgroup_mode m, rkl_stats_memory *ret);
/* Processes in the cgroup and below: pids.current (both modes). */
int rkl_stats_read_pids(int dirfd, uint64_t *ret);
/* The OOM kill counter: v2 memory.events oom_kill, v1 memory.oom_control oom_kill. */
int rkl_stats_read_oom_kills(int dirfd, rkl_stats_cgroup_mode m, uint64_t *ret);

typedef struct rkl_stats_netif {
        char name[32];
        uint64_t rx_bytes, rx_errors, tx_bytes, tx_errors;
} rkl_stats_netif;

/* The interfaces of a /proc/<pid>/net/dev text, loopback left out. *ret is malloc'd (NULL
 * when there are none). -EBADMSG on a text that is not net/dev's. */
int rkl_stats_parse_netdev(const char *text, rkl_stats_netif **ret, size_t *ret_n);

/* Bytes (allocated blocks) and inodes of the tree at dirfd/path, not crossing mounts and
 * counting each hard-linked inode once per link seen. -ENOENT when path is not there. */
int rkl_stats_fs_usage(int dirfd, const char *path, uint64_t *ret_bytes, uint64_t *ret_inodes);
