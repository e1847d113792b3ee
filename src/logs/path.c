/* Where a container's log may go: checks of log_directory and log_path at create time, and
 * the opening of the file beneath its directory (openat2's RESOLVE_BENEATH), which holds
 * even if someone swaps a component for a symlink between the check and the open. */
#include "logs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "base/banned.h"

/* Places a log must never go, whatever kubelet says. */
static const char *const system_dirs[] = {
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/sbin", "/sys", "/usr",
};

static int openat2_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
        struct open_how how = {
            .flags = (uint64_t)flags | O_CLOEXEC,
            .mode = (flags & O_CREAT) ? mode : 0,
            .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
        };
        long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
        return fd < 0 ? -errno : (int)fd;
}

/* "." and ".." components, and empty ones. */
static bool has_dot_component(const char *p)
{
        for (const char *c = p; *c;) {
                size_t n = strcspn(c, "/");
                if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return true;
                c += n;
                if (*c == '/')
                        c++;
        }
        return false;
}

static bool is_at_or_below(const char *path, const char *dir)
{
        size_t n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/')
                n--;
        if (n == 1 && dir[0] == '/')
                return true;
        return !strncmp(path, dir, n) && (path[n] == 0 || path[n] == '/');
}

/* realpath() of the longest part of path that exists, with the rest appended: where a
 * directory not made yet will be (below a symlink to /etc is below /etc, made or not). */
static char *resolve(const char *path)
{
        _cleanup_free_ char *p = rkl_xstrdup(path);
        for (;;) {
                _cleanup_free_ char *real = realpath(p, NULL);
                if (real) {
                        const char *rest = path + strlen(p);
                        if (*rest == '/' && real[strlen(real) - 1] == '/')
                                rest++;
                        return rkl_xasprintf("%s%s", real, rest);
                }
                char *slash = strrchr(p, '/');
                if (!slash)
                        return NULL; /* relative: not resolved */
                if (slash == p) {
                        if (p[1] == 0)
                                return NULL; /* "/" itself failed */
                        slash[1] = 0;        /* "/x": try "/" */
                } else {
                        *slash = 0;
                }
        }
}

static int refuse_below(const char *what, const char *path, const char *dir, rkl_error *reterr)
{
        if (is_at_or_below(path, dir))
                return rkl_error_set(reterr, -EINVAL,
                                     "log_directory: '%s' %s '%s', where no log "
                                     "may go",
                                     what, path, dir);
        return 0;
}

int rkl_log_directory_check(const char *log_directory, char *const *forbidden, rkl_error *reterr)
{
        if (isempty(log_directory))
                return 0;
        if (log_directory[0] != '/')
                return rkl_error_set(reterr, -EINVAL, "log_directory: '%s' is not absolute",
                                     log_directory);
        if (has_dot_component(log_directory + 1) && !streq(log_directory, "/"))
                return rkl_error_set(reterr, -EINVAL,
                                     "log_directory: '%s' has an empty, '.' or '..' component",
                                     log_directory);
        if (streq(log_directory, "/"))
                return rkl_error_set(reterr, -EINVAL, "log_directory: '/' is not a log directory");

        /* The path as given, then as it resolves (a symlink into /etc is /etc). */
        _cleanup_free_ char *real = resolve(log_directory);
        const char *paths[] = {log_directory, real};
        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                if (!paths[i])
                        continue;
                const char *what = i == 0 ? "is" : "resolves to";
                for (size_t j = 0; j < ELEMENTSOF(system_dirs); j++) {
                        int r = refuse_below(what, paths[i], system_dirs[j], reterr);
                        if (r < 0)
                                return r;
                }
                RKL_STRV_FOREACH (d, forbidden) {
                        _cleanup_free_ char *rd = resolve(*d);
                        int r = refuse_below(what, paths[i], rd ? rd : *d, reterr);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int rkl_log_path_check(const char *log_directory, const char *log_path, rkl_error *reterr)
{
        if (isempty(log_path))
                return 0;
        if (log_path[0] == '/')
                return rkl_error_set(reterr, -EINVAL,
                                     "log_path: '%s' is absolute: it is relative to the "
                                     "sandbox's log_directory",
                                     log_path);
        if (has_dot_component(log_path))
                return rkl_error_set(reterr, -EINVAL,
                                     "log_path: '%s' has an empty, '.' or '..' component",
                                     log_path);
        if (isempty(log_directory))
                return 0; /* no log is kept: nothing on disk to check */

        /* The part that exists must resolve beneath the directory. */
        int dirfd = open(log_directory, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0)
                return 0; /* made at start, beneath it */
        _cleanup_free_ char *p = rkl_xstrdup(log_path);
        int r = 0;
        for (char *slash = p + strlen(p); slash; slash = strrchr(p, '/')) {
                int fd = openat2_beneath(dirfd, p, O_PATH, 0);
                if (fd >= 0) {
                        close(fd);
                        break;
                }
                if (fd == -EXDEV || fd == -ELOOP) {
                        r = rkl_error_set(reterr, -EINVAL,
                                          "log_path: '%s' leads out of the log directory '%s' "
                                          "(a symlink)",
                                          log_path, log_directory);
                        break;
                }
                *slash = 0; /* not there yet: try its parent */
                if (slash == p)
                        break;
        }
        close(dirfd);
        return r;
}

char *rkl_log_source_path(const char *state_dir, const char *sandbox_id, const char *app)
{
        return rkl_xasprintf("%s/pods/%s/logs/%s.log", state_dir, sandbox_id, app);
}

char *rkl_log_progress_path(const char *state_dir, const char *sandbox_id, const char *app)
{
        return rkl_xasprintf("%s/pods/%s/logs/%s.progress", state_dir, sandbox_id, app);
}

/* mkdir -p of the directories of path beneath dirfd. */
static int make_parents(int dirfd, const char *path)
{
        _cleanup_free_ char *p = rkl_xstrdup(path);
        for (char *s = strchr(p, '/'); s; s = strchr(s + 1, '/')) {
                *s = 0;
                int fd = openat2_beneath(dirfd, p, O_PATH | O_DIRECTORY, 0);
                if (fd >= 0) {
                        close(fd);
                } else if (fd == -ENOENT) {
                        /* The parent resolved beneath: a plain mkdirat of its child cannot
                         * leave it. */
                        if (mkdirat(dirfd, p, 0755) < 0 && errno != EEXIST)
                                return -errno;
                } else {
                        return fd;
                }
                *s = '/';
        }
        return 0;
}

int rkl_log_file_open(const char *log_directory, const char *log_path, int *ret_fd,
                      rkl_error *reterr)
{
        if (isempty(log_directory) || isempty(log_path))
                return rkl_error_set(reterr, -EINVAL, "no log file");
        int r = rkl_mkdir_p(log_directory, 0755);
        if (r < 0)
                return rkl_error_set(reterr, r, "cannot create '%s': %s", log_directory,
                                     strerror(-r));
        int dirfd = open(log_directory, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0)
                return rkl_error_set(reterr, -errno, "cannot open '%s': %m", log_directory);
        r = make_parents(dirfd, log_path);
        int fd = r < 0 ? r
                       : openat2_beneath(dirfd, log_path, O_WRONLY | O_APPEND | O_CREAT | O_NOCTTY,
                                         0640);
        close(dirfd);
        if (fd == -EXDEV || fd == -ELOOP)
                return rkl_error_set(reterr, -EXDEV, "'%s' leads out of '%s'", log_path,
                                     log_directory);
        if (fd < 0)
                return rkl_error_set(reterr, fd, "cannot open '%s/%s': %s", log_directory, log_path,
                                     strerror(-fd));
        /* Whoever made it: 0640, root's. */
        if (fchmod(fd, 0640) < 0 || (geteuid() == 0 && fchown(fd, 0, 0) < 0)) {
                r = -errno;
                close(fd);
                return rkl_error_set(reterr, r, "cannot set the mode of '%s/%s': %s", log_directory,
                                     log_path, strerror(-r));
        }
        *ret_fd = fd;
        return 0;
}
