#include "sample.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/cgroup.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "base/time-util.h"
#include "base/parse.h"
#include "base/banned.h"

#define SMALL_FILE (64 * 1024)

rkl_stats_cgroup_mode rkl_stats_cgroup_mode_detect(int root_fd)
{
        return faccessat(root_fd, "cgroup.controllers", F_OK, 0) == 0 ? RKL_STATS_CGROUP_V2
                                                                      : RKL_STATS_CGROUP_V1;
}

const char *rkl_stats_cgroup_mode_to_string(rkl_stats_cgroup_mode m)
{
        return m == RKL_STATS_CGROUP_V2 ? "v2" : m == RKL_STATS_CGROUP_V1 ? "v1" : NULL;
}

/* The first line of a file as a number; "max" is UINT64_MAX. */
static int read_u64(int dirfd, const char *name, uint64_t *ret)
{
        _cleanup_free_ char *text = NULL;
        int r = rkl_read_file_at(dirfd, name, SMALL_FILE, &text, NULL);
        if (r < 0)
                return r;
        text[strcspn(text, "\n")] = 0;
        if (streq(text, "max")) {
                *ret = UINT64_MAX;
                return 0;
        }
        return rkl_safe_atou64(text, ret);
}

/* The value of "key value" line key in a flat keyed file's text; -ENODATA when absent. */
static int keyed_u64(const char *text, const char *key, uint64_t *ret)
{
        size_t n = strlen(key);
        for (const char *line = text; line && *line;) {
                const char *end = strchrnul(line, '\n');
                if ((size_t)(end - line) > n && !strncmp(line, key, n) && line[n] == ' ') {
                        char buf[32];
                        size_t len = (size_t)(end - line) - n - 1;
                        if (len >= sizeof(buf))
                                return -EBADMSG;
                        memcpy(buf, line + n + 1, len);
                        buf[len] = 0;
                        return rkl_safe_atou64(buf, ret);
                }
                line = *end ? end + 1 : NULL;
        }
        return -ENODATA;
}

int rkl_stats_read_cpu(int dirfd, rkl_stats_cgroup_mode m, uint64_t *ret_usage_ns)
{
        if (m == RKL_STATS_CGROUP_V1)
                return read_u64(dirfd, "cpuacct.usage", ret_usage_ns);
        _cleanup_free_ char *text = NULL;
        uint64_t usec;
        int r = rkl_read_file_at(dirfd, "cpu.stat", SMALL_FILE, &text, NULL);
        if (r < 0)
                return r;
        r = keyed_u64(text, "usage_usec", &usec);
        if (r < 0)
                return r;
        *ret_usage_ns = usec * NSEC_PER_USEC;
        return 0;
}

/* A limit as cAdvisor reports it: v1 says "no limit" with a huge page-aligned number, v2 with
 * "max"; both are 0. */
static uint64_t limit_value(uint64_t v)
{
        return v < (UINT64_C(1) << 62) ? v : 0;
}

int rkl_stats_read_memory(int dirfd, rkl_stats_cgroup_mode m, rkl_stats_memory *ret)
{
        bool v1 = m == RKL_STATS_CGROUP_V1;
        rkl_stats_memory s = {0};
        _cleanup_free_ char *stat = NULL;
        uint64_t inactive = 0, v = 0;
        int r;

        r = read_u64(dirfd, v1 ? "memory.usage_in_bytes" : "memory.current", &s.usage);
        if (r < 0)
                return r;
        r = rkl_read_file_at(dirfd, "memory.stat", SMALL_FILE, &stat, NULL);
        if (r < 0)
                return r;
        /* v1's total_* lines count the hierarchy below too (an app's own memory cgroup has no
         * children, a pod's has its apps'); cgroup2's are hierarchical already. */
        (void)keyed_u64(stat, v1 ? "total_inactive_file" : "inactive_file", &inactive);
        (void)keyed_u64(stat, v1 ? "total_rss" : "anon", &s.rss);
        (void)keyed_u64(stat, v1 ? "total_pgfault" : "pgfault", &s.page_faults);
        (void)keyed_u64(stat, v1 ? "total_pgmajfault" : "pgmajfault", &s.major_page_faults);
        (void)keyed_u64(stat, v1 ? "total_cache" : "file", &s.cache);
        (void)keyed_u64(stat, v1 ? "total_mapped_file" : "file_mapped", &s.mapped_file);
        if (v1)
                (void)keyed_u64(stat, "total_swap", &s.swap);
        else
                (void)read_u64(dirfd, "memory.swap.current", &s.swap);
        s.working_set = s.usage > inactive ? s.usage - inactive : 0;
        if (read_u64(dirfd, v1 ? "memory.limit_in_bytes" : "memory.max", &v) == 0)
                s.limit = limit_value(v);
        if (read_u64(dirfd, v1 ? "memory.soft_limit_in_bytes" : "memory.low", &v) == 0)
                s.soft_limit = limit_value(v);
        if (read_u64(dirfd, v1 ? "memory.memsw.limit_in_bytes" : "memory.swap.max", &v) == 0)
                s.swap_limit = limit_value(v);
        (void)read_u64(dirfd, v1 ? "memory.max_usage_in_bytes" : "memory.peak", &s.max_usage);
        if (v1)
                (void)read_u64(dirfd, "memory.failcnt", &s.failcnt);
        else {
                _cleanup_free_ char *events = NULL;
                if (rkl_read_file_at(dirfd, "memory.events", SMALL_FILE, &events, NULL) == 0)
                        (void)keyed_u64(events, "max", &s.failcnt);
        }
        /* What bounds the cgroup is the lowest limit on the way up: v1 says which. */
        uint64_t bound = s.limit;
        if (v1 && keyed_u64(stat, "hierarchical_memory_limit", &v) == 0 && limit_value(v) &&
            (!bound || limit_value(v) < bound))
                bound = limit_value(v);
        if (bound) {
                s.available = bound > s.working_set ? bound - s.working_set : 0;
                s.has_available = true;
        }
        *ret = s;
        return 0;
}

int rkl_stats_read_cpu_split(int dirfd, rkl_stats_cgroup_mode m, uint64_t *ret_user_ns,
                             uint64_t *ret_system_ns)
{
        _cleanup_free_ char *text = NULL;
        uint64_t user, sys;
        bool v1 = m == RKL_STATS_CGROUP_V1;
        int r = rkl_read_file_at(dirfd, v1 ? "cpuacct.stat" : "cpu.stat", SMALL_FILE, &text, NULL);
        if (r < 0)
                return r;
        if ((r = keyed_u64(text, v1 ? "user" : "user_usec", &user)) < 0 ||
            (r = keyed_u64(text, v1 ? "system" : "system_usec", &sys)) < 0)
                return r;
        /* cpuacct.stat counts USER_HZ ticks. */
        uint64_t unit = NSEC_PER_USEC;
        if (v1) {
                long hz = sysconf(_SC_CLK_TCK);
                unit = NSEC_PER_SEC / (uint64_t)(hz > 0 ? hz : 100);
        }
        *ret_user_ns = user * unit;
        *ret_system_ns = sys * unit;
        return 0;
}

int rkl_stats_read_cpu_spec(int dirfd, rkl_stats_cgroup_mode m, rkl_stats_cpu_spec *ret)
{
        rkl_stats_cpu_spec c = {0};
        int r;
        if (m == RKL_STATS_CGROUP_V1) {
                int64_t quota;
                _cleanup_free_ char *text = NULL;
                if ((r = read_u64(dirfd, "cpu.shares", &c.shares)) < 0 ||
                    (r = read_u64(dirfd, "cpu.cfs_period_us", &c.period_us)) < 0)
                        return r;
                if (rkl_read_file_at(dirfd, "cpu.cfs_quota_us", SMALL_FILE, &text, NULL) == 0) {
                        text[strcspn(text, "\n")] = 0;
                        if (rkl_safe_atoi64(text, &quota) == 0 && quota > 0)
                                c.quota_us = (uint64_t)quota;
                }
        } else {
                uint64_t weight;
                _cleanup_free_ char *text = NULL;
                if ((r = read_u64(dirfd, "cpu.weight", &weight)) < 0)
                        return r;
                /* systemd's and runc's shares -> weight map, 2..262144 -> 1..10000, inverted. */
                c.shares = weight <= 1 ? 2 : 2 + ((weight - 1) * 262142) / 9999;
                r = rkl_read_file_at(dirfd, "cpu.max", SMALL_FILE, &text, NULL);
                if (r < 0)
                        return r;
                char quota[32];
                unsigned long long period;
                if (sscanf(text, "%31s %llu", quota, &period) != 2)
                        return -EBADMSG;
                c.period_us = period;
                if (!streq(quota, "max") && rkl_safe_atou64(quota, &c.quota_us) < 0)
                        return -EBADMSG;
        }
        *ret = c;
        return 0;
}

/* One "some|full avg10=A avg60=B avg300=C total=T" line. */
static int psi_line(const char *line, rkl_stats_psi_data *ret)
{
        double a10, a60, a300;
        unsigned long long total;
        if (sscanf(line, "%*s avg10=%lf avg60=%lf avg300=%lf total=%llu", &a10, &a60, &a300,
                   &total) != 4)
                return -EBADMSG;
        *ret = (rkl_stats_psi_data){.avg10 = a10, .avg60 = a60, .avg300 = a300, .total_us = total};
        return 0;
}

int rkl_stats_read_psi(int dirfd, const char *file, rkl_stats_psi *ret)
{
        _cleanup_free_ char *text = NULL;
        rkl_stats_psi p = {0};
        bool some = false;
        int r = rkl_read_file_at(dirfd, file, SMALL_FILE, &text, NULL);
        if (r < 0)
                return r;
        for (const char *line = text; line && *line;) {
                const char *end = strchrnul(line, '\n');
                if (startswith(line, "some ")) {
                        if ((r = psi_line(line, &p.some)) < 0)
                                return r;
                        some = true;
                } else if (startswith(line, "full ") && (r = psi_line(line, &p.full)) < 0)
                        return r;
                line = *end ? end + 1 : NULL;
        }
        if (!some)
                return -EBADMSG;
        *ret = p;
        return 0;
}

static rkl_stats_blkio *blkio_dev(rkl_stats_blkio **devs, size_t *n, unsigned major, unsigned minor)
{
        for (size_t i = 0; i < *n; i++)
                if ((*devs)[i].major == major && (*devs)[i].minor == minor)
                        return &(*devs)[i];
        *devs = rkl_xrealloc(*devs, (*n + 1) * sizeof(**devs));
        (*devs)[*n] = (rkl_stats_blkio){.major = major, .minor = minor};
        return &(*devs)[(*n)++];
}

/* v1's "MAJ:MIN Read N" and "MAJ:MIN Write N" lines into bytes (or counts). */
static int blkio_v1(int dirfd, const char *file, bool bytes, rkl_stats_blkio **devs, size_t *n)
{
        _cleanup_free_ char *text = NULL;
        int r = rkl_read_file_at(dirfd, file, 1 << 20, &text, NULL);
        if (r < 0)
                return r;
        for (const char *line = text; line && *line;) {
                const char *end = strchrnul(line, '\n');
                unsigned major, minor;
                char op[16];
                unsigned long long v;
                if (sscanf(line, "%u:%u %15s %llu", &major, &minor, op, &v) == 4 &&
                    (streq(op, "Read") || streq(op, "Write"))) {
                        rkl_stats_blkio *d = blkio_dev(devs, n, major, minor);
                        bool rd = streq(op, "Read");
                        *(bytes ? (rd ? &d->read_bytes : &d->write_bytes)
                                : (rd ? &d->reads : &d->writes)) = v;
                }
                line = *end ? end + 1 : NULL;
        }
        return 0;
}

int rkl_stats_read_blkio(int dirfd, rkl_stats_cgroup_mode m, rkl_stats_blkio **ret, size_t *ret_n)
{
        _cleanup_free_ rkl_stats_blkio *devs = NULL;
        size_t n = 0;
        int r;
        if (m == RKL_STATS_CGROUP_V1) {
                if ((r = blkio_v1(dirfd, "blkio.throttle.io_service_bytes_recursive", true, &devs,
                                  &n)) < 0 ||
                    (r = blkio_v1(dirfd, "blkio.throttle.io_serviced_recursive", false, &devs,
                                  &n)) < 0)
                        return r;
        } else {
                _cleanup_free_ char *text = NULL;
                r = rkl_read_file_at(dirfd, "io.stat", 1 << 20, &text, NULL);
                if (r < 0)
                        return r;
                for (const char *line = text; line && *line;) {
                        const char *end = strchrnul(line, '\n');
                        unsigned major, minor;
                        unsigned long long rb = 0, wb = 0, rios = 0, wios = 0;
                        if (sscanf(line, "%u:%u rbytes=%llu wbytes=%llu rios=%llu wios=%llu",
                                   &major, &minor, &rb, &wb, &rios, &wios) >= 2) {
                                rkl_stats_blkio *d = blkio_dev(&devs, &n, major, minor);
                                d->read_bytes = rb;
                                d->write_bytes = wb;
                                d->reads = rios;
                                d->writes = wios;
                        }
                        line = *end ? end + 1 : NULL;
                }
        }
        *ret = TAKE_PTR(devs);
        *ret_n = n;
        return 0;
}

/* /proc/<pid>/<sub> as a directory stream; NULL when it is gone. */
static DIR *opendir_at(int proc_fd, const char *pid, const char *sub)
{
        char path[64];
        snprintf(path, sizeof(path), "%s/%s", pid, sub);
        int fd = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        DIR *d = fdopendir(fd);
        if (!d)
                close(fd);
        return d;
}

/* The entries of /proc/<pid>/<sub>, and of them the sockets when sockets is not NULL. */
static uint64_t count_entries(int proc_fd, const char *pid, const char *sub, uint64_t *sockets)
{
        _cleanup_closedir_ DIR *d = opendir_at(proc_fd, pid, sub);
        if (!d)
                return 0;
        uint64_t n = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                n++;
                char target[64];
                ssize_t len;
                if (sockets &&
                    (len = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1)) > 0) {
                        target[len] = 0;
                        if (startswith(target, "socket:"))
                                (*sockets)++;
                }
        }
        return n;
}

/* Each thread's state, the field after the ")" ending the name in its stat. */
static void task_states(int proc_fd, const char *pid, rkl_stats_procs *p)
{
        _cleanup_closedir_ DIR *d = opendir_at(proc_fd, pid, "task");
        if (!d)
                return;
        struct dirent *de;
        while ((de = readdir(d))) {
                _cleanup_free_ char *text = NULL, *stat = NULL;
                if (de->d_name[0] == '.')
                        continue;
                stat = rkl_xasprintf("%s/stat", de->d_name);
                if (rkl_read_file_at(dirfd(d), stat, SMALL_FILE, &text, NULL) < 0)
                        continue;
                const char *end = strrchr(text, ')');
                if (!end || end[1] != ' ')
                        continue;
                switch (end[2]) {
                case 'R':
                        p->running++;
                        break;
                case 'D':
                        p->uninterruptible++;
                        break;
                case 'T':
                case 't':
                        p->stopped++;
                        break;
                default:
                        break;
                }
        }
}

/* The soft "Max open files" of /proc/<pid>/limits; "unlimited" is 0. */
static uint64_t nofile_soft(int proc_fd, const char *pid)
{
        char path[64];
        _cleanup_free_ char *text = NULL;
        snprintf(path, sizeof(path), "%s/limits", pid);
        if (rkl_read_file_at(proc_fd, path, SMALL_FILE, &text, NULL) < 0)
                return 0;
        const char *line = strstr(text, "\nMax open files");
        unsigned long long v;
        if (!line || sscanf(line + strlen("\nMax open files"), "%llu", &v) != 1)
                return 0;
        return v;
}

int rkl_stats_read_procs(int cgroup_fd, int proc_fd, rkl_stats_procs *ret)
{
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0;
        rkl_stats_procs p = {0};
        int r = rkl_cgroup_pids_at(cgroup_fd, ".", &pids, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                char pid[16];
                (void)snprintf(pid, sizeof(pid), "%d", (int)pids[i]);
                /* A process that exits meanwhile counts as one without threads. */
                p.processes++;
                p.threads += count_entries(proc_fd, pid, "task", NULL);
                task_states(proc_fd, pid, &p);
                p.fds += count_entries(proc_fd, pid, "fd", &p.sockets);
                if (p.processes == 1)
                        p.nofile_soft = nofile_soft(proc_fd, pid);
        }
        *ret = p;
        return 0;
}

int rkl_stats_read_pids_max(int dirfd, uint64_t *ret)
{
        uint64_t v;
        int r = read_u64(dirfd, "pids.max", &v);
        if (r < 0)
                return r;
        *ret = v == UINT64_MAX ? 0 : v;
        return 0;
}

int rkl_stats_read_pids(int dirfd, uint64_t *ret)
{
        return read_u64(dirfd, "pids.current", ret);
}

int rkl_stats_read_oom_kills(int dirfd, rkl_stats_cgroup_mode m, uint64_t *ret)
{
        _cleanup_free_ char *text = NULL;
        int r = rkl_read_file_at(dirfd,
                                 m == RKL_STATS_CGROUP_V1 ? "memory.oom_control" : "memory.events",
                                 SMALL_FILE, &text, NULL);
        if (r < 0)
                return r;
        return keyed_u64(text, "oom_kill", ret);
}

int rkl_stats_parse_netdev(const char *text, rkl_stats_netif **ret, size_t *ret_n)
{
        _cleanup_free_ rkl_stats_netif *ifs = NULL;
        size_t n = 0, lines = 0;

        for (const char *line = text; line && *line; lines++) {
                const char *end = strchrnul(line, '\n');
                const char *colon = memchr(line, ':', (size_t)(end - line));
                if (lines < 2) { /* two header lines */
                        if (!memchr(line, '|', (size_t)(end - line)))
                                return -EBADMSG;
                } else if (colon) {
                        const char *name = line;
                        while (*name == ' ')
                                name++;
                        size_t len = (size_t)(colon - name);
                        if (len == 0 || len >= sizeof(ifs->name))
                                return -EBADMSG;
                        /* rx: bytes packets errs drop fifo frame compressed multicast,
                         * tx: bytes packets errs drop fifo colls carrier compressed */
                        uint64_t v[16];
                        const char *p = colon + 1;
                        for (int i = 0; i < 16; i++) {
                                char *e;
                                while (*p == ' ')
                                        p++;
                                if (*p < '0' || *p > '9')
                                        return -EBADMSG;
                                errno = 0;
                                v[i] = strtoull(p, &e, 10);
                                if (errno || e > end)
                                        return -EBADMSG;
                                p = e;
                        }
                        if (!(len == 2 && !strncmp(name, "lo", 2))) {
                                ifs = rkl_xrealloc(ifs, (n + 1) * sizeof(*ifs));
                                rkl_stats_netif *f = &ifs[n++];
                                *f = (rkl_stats_netif){.rx_bytes = v[0],
                                                       .rx_packets = v[1],
                                                       .rx_errors = v[2],
                                                       .rx_dropped = v[3],
                                                       .tx_bytes = v[8],
                                                       .tx_packets = v[9],
                                                       .tx_errors = v[10],
                                                       .tx_dropped = v[11]};
                                memcpy(f->name, name, len);
                                f->name[len] = 0;
                        }
                } else if (end != line)
                        return -EBADMSG;
                line = *end ? end + 1 : NULL;
        }
        if (lines < 2)
                return -EBADMSG;
        *ret = TAKE_PTR(ifs);
        *ret_n = n;
        return 0;
}

int rkl_stats_parse_diskstats(const char *text, unsigned major, unsigned minor, rkl_stats_disk *ret)
{
        for (const char *line = text; line && *line;) {
                const char *end = strchrnul(line, '\n');
                unsigned maj, min;
                unsigned long long v[11];
                /* major minor name, then reads reads_merged sectors ms, writes writes_merged
                 * sectors ms, in progress, io ms, weighted io ms */
                if (sscanf(line, "%u %u %*s %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
                           &maj, &min, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
                           &v[8], &v[9], &v[10]) == 13 &&
                    maj == major && min == minor) {
                        ret->reads_merged = v[1];
                        ret->sectors_read = v[2];
                        ret->read_ms = v[3];
                        ret->writes_merged = v[5];
                        ret->sectors_written = v[6];
                        ret->write_ms = v[7];
                        ret->ios_in_progress = v[8];
                        ret->io_ms = v[9];
                        ret->weighted_io_ms = v[10];
                        ret->has_io = true;
                        return 0;
                }
                line = *end ? end + 1 : NULL;
        }
        return -ENOENT;
}

static int fs_usage(int fd, dev_t dev, unsigned depth, uint64_t *bytes, uint64_t *inodes)
{
        _cleanup_closedir_ DIR *d = fdopendir(fd);
        if (!d) {
                int r = -errno;
                close(fd);
                return r;
        }
        struct dirent *de;
        while ((de = readdir(d))) {
                struct stat st;
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue; /* gone meanwhile */
                *bytes += (uint64_t)st.st_blocks * 512;
                *inodes += 1;
                if (S_ISDIR(st.st_mode) && st.st_dev == dev && depth < 256) {
                        int sub = openat(dirfd(d), de->d_name,
                                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub >= 0)
                                (void)fs_usage(sub, dev, depth + 1, bytes, inodes);
                }
        }
        return 0;
}

int rkl_stats_fs_usage(int dirfd, const char *path, uint64_t *ret_bytes, uint64_t *ret_inodes)
{
        int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        uint64_t bytes = 0, inodes = 0;
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        int r = fs_usage(fd, st.st_dev, 0, &bytes, &inodes);
        if (r < 0)
                return r;
        *ret_bytes = bytes;
        *ret_inodes = inodes;
        return 0;
}
