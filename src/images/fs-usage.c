/* The filesystem usage of rkt's image store (ImageFsInfo): a walk of <rkt data dir>/cas and
 * a statvfs of the filesystem holding it, at most once per 10 s. */
#include "images-internal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "base/alloc.h"
#include "base/time-util.h"
#include "base/banned.h"

#define FS_INFO_MAX_AGE (10 * USEC_PER_SEC)
#define DU_MAX_DEPTH    128

void rkl_images_fs_usage_done(rkl_images_fs_usage *u)
{
        free(u->path);
        free(u->mountpoint);
        *u = (rkl_images_fs_usage){0};
}

static void du_at(int fd, unsigned depth, uint64_t *bytes, uint64_t *inodes)
{
        _cleanup_closedir_ DIR *d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return;
        }
        struct dirent *de;
        while ((de = readdir(d))) {
                struct stat st;
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                (*inodes)++;
                *bytes += (uint64_t)st.st_blocks * 512;
                if (S_ISDIR(st.st_mode) && depth < DU_MAX_DEPTH) {
                        int sub = openat(dirfd(d), de->d_name,
                                         O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                        if (sub >= 0)
                                du_at(sub, depth + 1, bytes, inodes);
                }
        }
}

/* The longest mount point in /proc/self/mountinfo that holds path. */
static char *mountpoint_of(const char *path)
{
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
        char *best = NULL, *line = NULL;
        size_t cap = 0, best_len = 0;
        while (f && getline(&line, &cap, f) > 0) {
                /* id parent major:minor root mountpoint ...; octal escapes in paths. */
                char *p = line;
                for (int field = 0; field < 4 && p; field++)
                        p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL;
                if (!p)
                        continue;
                size_t n = strcspn(p, " ");
                char *mp = rkl_xmalloc(n + 1), *o = mp;
                for (size_t i = 0; i < n; i++) {
                        if (p[i] == '\\' && i + 3 < n && p[i + 1] >= '0' && p[i + 1] <= '3') {
                                *o++ = (char)((p[i + 1] - '0') * 64 + (p[i + 2] - '0') * 8 +
                                              (p[i + 3] - '0'));
                                i += 3;
                        } else
                                *o++ = p[i];
                }
                *o = 0;
                size_t m = strlen(mp);
                bool holds = streq(mp, "/") ||
                             (strncmp(path, mp, m) == 0 && (path[m] == 0 || path[m] == '/'));
                if (holds && (m > best_len || !best)) {
                        free(best);
                        best = mp;
                        best_len = m;
                } else
                        free(mp);
        }
        free(line);
        return best ? best : rkl_xstrdup("/");
}

int rkl_images_fs_info(rkl_images *im, rkl_images_fs_usage *ret, rkl_error *reterr)
{
        RKL_GUARD(&im->fs_lock);
        uint64_t now = rkl_now_usec(CLOCK_MONOTONIC);

        if (!im->fs_at_usec || now - im->fs_at_usec >= FS_INFO_MAX_AGE) {
                rkl_images_fs_usage u = {.timestamp_ns = rkl_realtime_ns()};
                u.path = rkl_xasprintf("%s/cas", im->data_dir);
                /* Before the first fetch rkt has no store: measure where it will be. */
                _cleanup_free_ char *probe = rkl_xstrdup(u.path);
                struct statvfs sv;
                while (statvfs(probe, &sv) < 0) {
                        char *slash = strrchr(probe, '/');
                        if (errno != ENOENT || !slash || slash == probe) {
                                int r = -errno;
                                rkl_images_fs_usage_done(&u);
                                return rkl_error_set(reterr, r, "statvfs '%s': %s", probe,
                                                     strerror(-r));
                        }
                        *slash = 0;
                }
                _cleanup_free_ char *real = realpath(probe, NULL);
                u.mountpoint = mountpoint_of(real ? real : probe);
                u.fs_size_bytes = (uint64_t)sv.f_blocks * sv.f_frsize;
                u.fs_avail_bytes = (uint64_t)sv.f_bavail * sv.f_frsize;
                u.fs_inodes = sv.f_files;
                u.fs_inodes_free = sv.f_ffree;
                int fd = open(u.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd >= 0) {
                        struct stat st;
                        if (fstat(fd, &st) == 0) {
                                u.inodes_used = 1;
                                u.used_bytes = (uint64_t)st.st_blocks * 512;
                        }
                        du_at(fd, 0, &u.used_bytes, &u.inodes_used);
                }
                rkl_images_fs_usage_done(&im->fs);
                im->fs = u;
                im->fs_at_usec = now;
        }
        *ret = im->fs;
        ret->path = rkl_xstrdup(im->fs.path);
        ret->mountpoint = rkl_xstrdup(im->fs.mountpoint);
        return 0;
}
