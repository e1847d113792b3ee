#include "fileio.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "alloc.h"
#include "macro.h"
#include "banned.h"

int rkl_read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_size)
{
        _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;

        size_t cap = 4096, n = 0;
        _cleanup_free_ char *buf = rkl_xmalloc(cap + 1);
        for (;;) {
                if (n == cap) {
                        if (cap > max)
                                return -EFBIG;
                        cap *= 2;
                        buf = rkl_xrealloc(buf, cap + 1);
                }
                ssize_t k = read(fd, buf + n, cap - n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                n += (size_t)k;
        }
        if (n > max)
                return -EFBIG;
        buf[n] = 0;
        *ret = TAKE_PTR(buf);
        if (ret_size)
                *ret_size = n;
        return 0;
}

int rkl_write_file_atomic_at(int dirfd, const char *path, const void *buf, size_t n, mode_t mode)
{
        _cleanup_free_ char *tmp = rkl_xasprintf("%s.tmp%ld", path, (long)getpid());
        _cleanup_close_ int fd =
            openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
        if (fd < 0)
                return -errno;
        const char *p = buf;
        while (n > 0) {
                ssize_t k = write(fd, p, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        int r = -errno;
                        (void)unlinkat(dirfd, tmp, 0);
                        return r;
                }
                p += k;
                n -= (size_t)k;
        }
        if (renameat(dirfd, tmp, dirfd, path) < 0) {
                int r = -errno;
                (void)unlinkat(dirfd, tmp, 0);
                return r;
        }
        return 0;
}

int rkl_mkdir_p(const char *path, mode_t mode)
{
        _cleanup_free_ char *p = rkl_xstrdup(path);
        for (char *s = p + 1;; s++) {
                if (*s != '/' && *s != 0)
                        continue;
                char c = *s;
                *s = 0;
                if (mkdir(p, mode) < 0 && errno != EEXIST)
                        return -errno;
                *s = c;
                if (!c)
                        break;
        }
        return 0;
}

int rkl_rm_rf_at(int dirfd, const char *path)
{
        struct stat st, parent;
        if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISDIR(st.st_mode))
                return unlinkat(dirfd, path, 0) < 0 && errno != ENOENT ? -errno : 0;

        if (fstat(dirfd == AT_FDCWD ? AT_FDCWD : dirfd, &parent) == 0 && dirfd != AT_FDCWD &&
            parent.st_dev != st.st_dev)
                return -EXDEV;

        int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        _cleanup_closedir_ DIR *d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return -errno;
        }
        int r = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                struct stat cst;
                if (fstatat(fd, de->d_name, &cst, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (S_ISDIR(cst.st_mode) && cst.st_dev != st.st_dev) {
                        r = -EBUSY; /* a mount point: never descend */
                        continue;
                }
                int k = rkl_rm_rf_at(fd, de->d_name);
                if (k < 0 && r == 0)
                        r = k;
        }
        if (unlinkat(dirfd, path, AT_REMOVEDIR) < 0 && errno != ENOENT && r == 0)
                r = -errno;
        return r;
}
