#include "sample.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
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

int rkl_stats_read_memory(int dirfd, rkl_stats_cgroup_mode m, rkl_stats_memory *ret)
{
        bool v1 = m == RKL_STATS_CGROUP_V1;
        rkl_stats_memory s = {0};
        _cleanup_free_ char *stat = NULL;
        uint64_t inactive = 0, limit = 0;
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
        s.working_set = s.usage > inactive ? s.usage - inactive : 0;
        /* v1 says "no limit" with a huge page-aligned number, v2 with "max". */
        if (read_u64(dirfd, v1 ? "memory.limit_in_bytes" : "memory.max", &limit) == 0 &&
            limit < (UINT64_C(1) << 62)) {
                s.limit = limit;
                s.available = limit > s.working_set ? limit - s.working_set : 0;
        }
        *ret = s;
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
                                                       .rx_errors = v[2],
                                                       .tx_bytes = v[8],
                                                       .tx_errors = v[10]};
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
