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
        uint64_t cache;       /* v1 total_cache / v2 file */
        uint64_t mapped_file; /* v1 total_mapped_file / v2 file_mapped */
        uint64_t swap;        /* v1 total_swap / v2 memory.swap.current; 0 without swap */
        uint64_t failcnt;     /* v1 memory.failcnt / v2 memory.events max */
        uint64_t max_usage;   /* v1 memory.max_usage_in_bytes / v2 memory.peak; 0: unknown */
        uint64_t limit;       /* the cgroup's own: 0: none */
        uint64_t soft_limit;  /* v1 memory.soft_limit_in_bytes / v2 memory.low; 0: none */
        uint64_t swap_limit;  /* v1 memory.memsw.limit_in_bytes / v2 memory.swap.max; 0: none */
        /* limit - working set, where the cgroup or one above it has a limit (v1
         * hierarchical_memory_limit: a pod's is kubelet's pod cgroup's), else 0 */
        uint64_t available;
        bool has_available;
} rkl_stats_memory;

/* User and system CPU time (v1 cpuacct.stat in USER_HZ ticks, v2 cpu.stat user_usec and
 * system_usec), nanoseconds. */
int rkl_stats_read_cpu_split(int dirfd, rkl_stats_cgroup_mode m, uint64_t *ret_user_ns,
                             uint64_t *ret_system_ns);

/* The CFS settings of a cpu cgroup: v1 cpu.shares, cpu.cfs_period_us, cpu.cfs_quota_us; v2
 * cpu.weight (as shares, the inverse of systemd's mapping) and cpu.max. quota 0: none. */
typedef struct rkl_stats_cpu_spec {
        uint64_t shares, period_us, quota_us;
} rkl_stats_cpu_spec;
int rkl_stats_read_cpu_spec(int dirfd, rkl_stats_cgroup_mode m, rkl_stats_cpu_spec *ret);

/* Pressure stall information of a cgroup2 cgroup's <resource>.pressure (or of
 * /proc/pressure/<resource>): "some" and "full" lines, averages in percent, totals in
 * microseconds as the kernel keeps them. A file without a "full" line (cpu before Linux
 * 5.13) leaves full zero, as the kernel then has no such stall. */
typedef struct rkl_stats_psi_data {
        double avg10, avg60, avg300;
        uint64_t total_us;
} rkl_stats_psi_data;
typedef struct rkl_stats_psi {
        rkl_stats_psi_data some, full;
} rkl_stats_psi;
int rkl_stats_read_psi(int dirfd, const char *file, rkl_stats_psi *ret);

/* Block I/O of a cgroup per device: v1 blkio.throttle.io_service_bytes_recursive and
 * io_serviced_recursive, v2 io.stat. */
typedef struct rkl_stats_blkio {
        unsigned major, minor;
        char device[40]; /* /dev/<DEVNAME> of /sys/dev/block/MAJ:MIN, filled by the collector */
        uint64_t read_bytes, write_bytes, reads, writes;
} rkl_stats_blkio;
int rkl_stats_read_blkio(int dirfd, rkl_stats_cgroup_mode m, rkl_stats_blkio **ret, size_t *ret_n);

/* What the processes of a cgroup hold, from its cgroup.procs and /proc/<pid>/ under proc_fd:
 * processes, their threads, open file descriptors and, of those, sockets; the soft limit on
 * open files of its first process (0 when there is none to read). */
typedef struct rkl_stats_procs {
        uint64_t processes, threads, fds, sockets, nofile_soft;
        /* threads by the state of /proc/<pid>/task/<tid>/stat: R, D, T or t */
        uint64_t running, uninterruptible, stopped;
} rkl_stats_procs;
int rkl_stats_read_procs(int cgroup_fd, int proc_fd, rkl_stats_procs *ret);
/* The thread limit of a pids cgroup: pids.max, 0 for "max" (cAdvisor's "no limit"). */
int rkl_stats_read_pids_max(int dirfd, uint64_t *ret);

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
        uint64_t rx_bytes, rx_packets, rx_errors, rx_dropped;
        uint64_t tx_bytes, tx_packets, tx_errors, tx_dropped;
} rkl_stats_netif;

/* The interfaces of a /proc/<pid>/net/dev text, loopback left out. *ret is malloc'd (NULL
 * when there are none). -EBADMSG on a text that is not net/dev's. */
int rkl_stats_parse_netdev(const char *text, rkl_stats_netif **ret, size_t *ret_n);

/* The filesystem and block device an app's writable layer is on: its size and inodes
 * (statvfs), and the device's own counters, all its users' (a /proc/diskstats line). */
typedef struct rkl_stats_disk {
        unsigned major, minor;
        char device[40]; /* as rkl_stats_blkio's */
        uint64_t capacity_bytes, inodes_total, inodes_free;
        bool has_io;
        uint64_t reads_merged, sectors_read, read_ms, writes_merged, sectors_written, write_ms;
        uint64_t ios_in_progress, io_ms, weighted_io_ms;
} rkl_stats_disk;
/* The counters of device major:minor in a /proc/diskstats text; -ENOENT when it has no line
 * for it. */
int rkl_stats_parse_diskstats(const char *text, unsigned major, unsigned minor,
                              rkl_stats_disk *ret);

/* Bytes (allocated blocks) and inodes of the tree at dirfd/path, not crossing mounts and
 * counting each hard-linked inode once per link seen. -ENOENT when path is not there. */
int rkl_stats_fs_usage(int dirfd, const char *path, uint64_t *ret_bytes, uint64_t *ret_inodes);
