/* Where a container's log may go: checks of log_directory and log_path at create time, and
 * the opening of the file, which judges the directory again once resolved and then walks to
 * the file without following any symlink, so that a path swapped after the checks leads
 * nowhere. */
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

/* Beneath dirfd, and through no symlink at all: not even one that would stay beneath, since
 * what it points to can change between a check and a use. */
static int openat2_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
        struct open_how how = {
            .flags = (uint64_t)flags | O_CLOEXEC,
            .mode = (flags & O_CREAT) ? mode : 0,
            .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
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

/* realpath() of the longest part of path that exists, with the rest appended and no
 * trailing slash: where a directory not made yet will be (below a symlink to /etc is below
 * /etc, made or not). NULL for a relative path. */
static char *resolve(const char *path)
{
        _cleanup_free_ char *p = rkl_xstrdup(path);
        for (;;) {
                _cleanup_free_ char *real = realpath(p, NULL);
                if (real) {
                        const char *rest = path + strlen(p);
                        while (*rest == '/' && real[strlen(real) - 1] == '/')
                                rest++;
                        char *r = rkl_xasprintf("%s%s", real, rest);
                        for (size_t n = strlen(r); n > 1 && r[n - 1] == '/'; n--)
                                r[n - 1] = 0;
                        return r;
                }
                char *slash = strrchr(p, '/');
                if (!slash)
                        return NULL;
                if (slash == p) {
                        if (p[1] == 0)
                                return NULL; /* "/" itself failed */
                        slash[1] = 0;        /* "/x": try "/" */
                } else {
                        *slash = 0;
                }
        }
}

/* -EINVAL when path (absolute; given, as the client named it, or resolved) is at or below a
 * system directory or a forbidden one (itself resolved). */
static int judge(const char *field, const char *given, const char *path, char *const *forbidden,
                 rkl_error *reterr)
{
        for (size_t j = 0; j < ELEMENTSOF(system_dirs); j++)
                if (is_at_or_below(path, system_dirs[j]))
                        return streq(given, path)
                                   ? rkl_error_set(reterr, -EINVAL,
                                                   "%s: '%s' is in '%s', where no log may go",
                                                   field, path, system_dirs[j])
                                   : rkl_error_set(reterr, -EINVAL,
                                                   "%s: '%s' is '%s' once resolved, in '%s', "
                                                   "where no log may go",
                                                   field, given, path, system_dirs[j]);
        RKL_STRV_FOREACH (d, forbidden) {
                _cleanup_free_ char *rd = resolve(*d);
                const char *dir = rd ? rd : *d;
                if (!is_at_or_below(path, dir))
                        continue;
                return streq(given, path)
                           ? rkl_error_set(reterr, -EINVAL,
                                           "%s: '%s' is in '%s', the daemon's own directory, "
                                           "where no log may go",
                                           field, path, dir)
                           : rkl_error_set(reterr, -EINVAL,
                                           "%s: '%s' is '%s' once resolved, in '%s', the "
                                           "daemon's own directory, where no log may go",
                                           field, given, path, dir);
        }
        return 0;
}

/* The checks of a log directory that hold whether it exists or not; its resolved path in
 * *ret_real. */
static int directory_check(const char *log_directory, char *const *forbidden, char **ret_real,
                           rkl_error *reterr)
{
        if (log_directory[0] != '/')
                return rkl_error_set(reterr, -EINVAL, "log_directory: '%s' is not absolute",
                                     log_directory);
        if (streq(log_directory, "/"))
                return rkl_error_set(reterr, -EINVAL, "log_directory: '/' is not a log directory");
        if (has_dot_component(log_directory + 1))
                return rkl_error_set(reterr, -EINVAL,
                                     "log_directory: '%s' has an empty, '.' or '..' component",
                                     log_directory);
        int r = judge("log_directory", log_directory, log_directory, forbidden, reterr);
        if (r < 0)
                return r;
        /* Judged as it resolves: a symlink to / is /, one into /etc is in /etc. */
        _cleanup_free_ char *real = resolve(log_directory);
        if (!real)
                return rkl_error_set(reterr, -EINVAL, "log_directory: '%s' does not resolve",
                                     log_directory);
        if (streq(real, "/"))
                return rkl_error_set(reterr, -EINVAL,
                                     "log_directory: '%s' is '/' once resolved, which is not a "
                                     "log directory",
                                     log_directory);
        r = judge("log_directory", log_directory, real, forbidden, reterr);
        if (r < 0)
                return r;
        *ret_real = TAKE_PTR(real);
        return 0;
}

int rkl_logs_directory_check(const char *log_directory, char *const *forbidden, rkl_error *reterr)
{
        _cleanup_free_ char *real = NULL;
        if (isempty(log_directory))
                return 0;
        return directory_check(log_directory, forbidden, &real, reterr);
}

/* The checks of a log path that hold whether it exists or not; the file's whole resolved
 * path (real_dir/log_path) judged too: a log directory may hold the daemon's own. */
static int path_check(const char *real_dir, const char *log_path, char *const *forbidden,
                      rkl_error *reterr)
{
        if (log_path[0] == '/')
                return rkl_error_set(reterr, -EINVAL,
                                     "log_path: '%s' is absolute: it is relative to the "
                                     "sandbox's log_directory",
                                     log_path);
        if (has_dot_component(log_path))
                return rkl_error_set(reterr, -EINVAL,
                                     "log_path: '%s' has an empty, '.' or '..' component",
                                     log_path);
        if (!real_dir)
                return 0;
        _cleanup_free_ char *full = rkl_xasprintf("%s/%s", real_dir, log_path);
        return judge("log_path", full, full, forbidden, reterr);
}

int rkl_logs_path_check(const char *log_directory, const char *log_path, char *const *forbidden,
                        rkl_error *reterr)
{
        _cleanup_free_ char *real = NULL;
        int r;
        if (isempty(log_path))
                return 0;
        /* Judged again: what it resolves to may have changed since RunPodSandbox. */
        if (!isempty(log_directory) &&
            (r = directory_check(log_directory, forbidden, &real, reterr)) < 0)
                return r;
        r = path_check(real, log_path, forbidden, reterr);
        if (r < 0 || !real)
                return r; /* without a directory no log is kept: nothing on disk to check */

        /* What exists of it must be plain directories beneath the log directory (a file
         * there is judged when it is opened: StartContainer, which makes it). */
        _cleanup_close_ int dirfd = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dirfd < 0)
                return 0; /* made at start, beneath it */
        _cleanup_free_ char *p = rkl_xstrdup(log_path);
        for (char *slash = p + strlen(p); slash; slash = strrchr(p, '/')) {
                int fd = openat2_beneath(dirfd, p, O_PATH, 0);
                if (fd >= 0) {
                        close(fd);
                        return 0;
                }
                if (fd == -EXDEV || fd == -ELOOP)
                        return rkl_error_set(reterr, -EINVAL,
                                             "log_path: '%s' leads through a symlink in the log "
                                             "directory '%s'",
                                             log_path, log_directory);
                *slash = 0; /* not there yet: try its parent */
                if (slash == p)
                        break;
        }
        return 0;
}

char *rkl_logs_source_path(const char *state_dir, const char *sandbox_id, const char *app)
{
        return rkl_xasprintf("%s/pods/%s/logs/%s.log", state_dir, sandbox_id, app);
}

char *rkl_logs_progress_path(const char *state_dir, const char *sandbox_id, const char *app)
{
        return rkl_xasprintf("%s/pods/%s/logs/%s.progress", state_dir, sandbox_id, app);
}

/* Opens directory name beneath dirfd, made (0755) when it is not there: a plain directory,
 * never through a symlink. */
static int dir_open_or_make(int dirfd, const char *name)
{
        int fd = openat2_beneath(dirfd, name, O_PATH | O_DIRECTORY, 0);
        if (fd != -ENOENT)
                return fd;
        if (mkdirat(dirfd, name, 0755) < 0 && errno != EEXIST)
                return -errno;
        return openat2_beneath(dirfd, name, O_PATH | O_DIRECTORY, 0);
}

/* Walks path's components from dirfd (each a plain directory, made when missing) and
 * returns the last one's fd; with leaf, the last component is left for the caller (its
 * name in *ret_leaf, pointing into path). */
static int walk_dirs(int dirfd, char *path, bool leaf, const char **ret_leaf)
{
        _cleanup_close_ int cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return -errno;
        char *c = path;
        while (*c == '/')
                c++;
        for (;;) {
                char *slash = strchr(c, '/');
                if (!slash && leaf) {
                        *ret_leaf = c;
                        return TAKE_FD(cur);
                }
                if (slash)
                        *slash = 0;
                if (*c) {
                        int next = dir_open_or_make(cur, c);
                        if (next < 0)
                                return next;
                        safe_close(cur);
                        cur = next;
                }
                if (!slash)
                        return TAKE_FD(cur);
                c = slash + 1;
        }
}

/* A refusal of the checks at the open: the path leads where no log may go (-EXDEV). */
static int led_out(rkl_error *reterr)
{
        if (reterr)
                reterr->code = -EXDEV;
        return -EXDEV;
}

/* The directory that holds the log file, reached from / through the resolved directory
 * (real) and then log_path's directories: a symlink swapped in after the resolution is
 * refused, not followed. file_path is a copy of log_path, cut at its last '/'; the file's
 * name in the directory goes in *ret_leaf, which points into it. */
static int open_parent(const char *log_directory, const char *real, const char *log_path,
                       char *file_path, const char **ret_leaf, rkl_error *reterr)
{
        _cleanup_close_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return rkl_error_set(reterr, -errno, "cannot open '/': %m");
        _cleanup_free_ char *dir_path = rkl_xstrdup(real);
        _cleanup_close_ int dirfd = walk_dirs(root, dir_path, false, NULL);
        if (dirfd == -ELOOP || dirfd == -EXDEV || dirfd == -ENOTDIR)
                return rkl_error_set(reterr, -EXDEV,
                                     "'%s' (as '%s') has a symlink or a file in its way",
                                     log_directory, real);
        if (dirfd < 0)
                return rkl_error_set(reterr, dirfd, "cannot open '%s': %s", real, strerror(-dirfd));
        int parent = walk_dirs(dirfd, file_path, true, ret_leaf);
        if (parent == -ELOOP || parent == -EXDEV || parent == -ENOTDIR)
                return rkl_error_set(reterr, -EXDEV, "'%s' leads out of '%s' (a symlink)", log_path,
                                     log_directory);
        if (parent < 0)
                return rkl_error_set(reterr, parent, "cannot open '%s/%s': %s", log_directory,
                                     log_path, strerror(-parent));
        return parent;
}

/* The log file leaf in parent, for writing: made now (*ret_created), or the one rktlet made
 * before (ours) opened again, whose identity before the open goes in *ret_st. A file made
 * now may have no name yet (*ret_named false): name_leaf() gives it its name. */
static int open_leaf(int parent, const char *leaf, const char *log_directory, const char *log_path,
                     const rkl_logs_file_id *ours, bool *ret_created, bool *ret_named,
                     struct stat *ret_st, rkl_error *reterr)
{
        struct stat st = {0};
        int fd, r;

        *ret_created = false;
        *ret_named = true;
        int probe = openat2_beneath(parent, leaf, O_PATH, 0);
        if (probe == -ENOENT) {
                /* Made without a name (O_TMPFILE), named once recorded: a daemon killed in
                 * between leaves no file, which it would then refuse as someone else's for
                 * ever. A file system without O_TMPFILE gets the name at once. */
                fd = openat2_beneath(parent, ".", O_WRONLY | O_TMPFILE | O_NOCTTY, 0640);
                *ret_named = fd == -EOPNOTSUPP || fd == -EISDIR || fd == -EINVAL;
                if (*ret_named)
                        fd = openat2_beneath(
                            parent, leaf, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOCTTY, 0640);
                if (fd == -EEXIST)
                        return rkl_error_set(reterr, -EEXIST,
                                             "'%s/%s' appeared while rktlet made it: not "
                                             "written",
                                             log_directory, log_path);
                *ret_created = fd >= 0;
        } else if (probe >= 0) {
                /* rktlet writes only into the files it made: a file of anyone else's (the
                 * daemon's database, a host's file) is never appended to. */
                r = fstat(probe, &st) < 0 ? -errno : 0;
                close(probe);
                if (r < 0)
                        return rkl_error_set(reterr, r, "cannot stat '%s/%s': %s", log_directory,
                                             log_path, strerror(-r));
                if (!S_ISREG(st.st_mode) || !ours || ours->ino == 0 ||
                    (uint64_t)st.st_ino != ours->ino ||
                    (ours->dev != 0 && (uint64_t)st.st_dev != ours->dev))
                        return rkl_error_set(reterr, -EEXIST,
                                             "'%s/%s' exists and is not the log file rktlet made "
                                             "for the container: not written",
                                             log_directory, log_path);
                /* Not blocking: a FIFO swapped in meanwhile is not waited on (and refused
                 * below). */
                fd = openat2_beneath(parent, leaf, O_WRONLY | O_APPEND | O_NOCTTY | O_NONBLOCK, 0);
        } else {
                fd = probe;
        }
        if (fd == -ELOOP || fd == -EXDEV)
                return rkl_error_set(reterr, -EXDEV, "'%s' leads out of '%s' (a symlink)", log_path,
                                     log_directory);
        if (fd < 0)
                return rkl_error_set(reterr, fd, "cannot open '%s/%s': %s", log_directory, log_path,
                                     strerror(-fd));
        *ret_st = st;
        return fd;
}

/* Gives fd, made by open_leaf() without a name, the name leaf in parent. */
static int name_leaf(int fd, int parent, const char *leaf, const char *log_directory,
                     const char *log_path, rkl_error *reterr)
{
        char self[64];
        (void)snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
        if (linkat(AT_FDCWD, self, parent, leaf, AT_SYMLINK_FOLLOW) == 0)
                return 0;
        if (errno == EEXIST)
                return rkl_error_set(reterr, -EEXIST,
                                     "'%s/%s' appeared while rktlet made it: not written",
                                     log_directory, log_path);
        return rkl_error_set(reterr, -errno, "cannot name '%s/%s': %m", log_directory, log_path);
}

int rkl_logs_file_open(const char *log_directory, const char *log_path, char *const *forbidden,
                       const rkl_logs_file_id *ours, rkl_logs_record_fn record, void *userdata,
                       rkl_logs_file *ret, rkl_error *reterr)
{
        _cleanup_free_ char *real = NULL;
        int r;

        if (isempty(log_directory) || isempty(log_path))
                return rkl_error_set(reterr, -EINVAL, "no log file");
        /* Judged again as it resolves now, whatever it resolved to at the checks. */
        if (directory_check(log_directory, forbidden, &real, reterr) < 0 ||
            path_check(real, log_path, forbidden, reterr) < 0)
                return led_out(reterr);

        _cleanup_free_ char *file_path = rkl_xstrdup(log_path);
        const char *leaf = NULL;
        _cleanup_close_ int parent =
            open_parent(log_directory, real, log_path, file_path, &leaf, reterr);
        if (parent < 0)
                return parent;
        struct stat st = {0};
        bool created = false, named = true;
        _cleanup_close_ int fd =
            open_leaf(parent, leaf, log_directory, log_path, ours, &created, &named, &st, reterr);
        if (fd < 0)
                return fd;
        struct stat now;
        if (fstat(fd, &now) < 0)
                return rkl_error_set(reterr, -errno, "cannot stat '%s/%s': %m", log_directory,
                                     log_path);
        if (!created && (now.st_ino != st.st_ino || now.st_dev != st.st_dev))
                return rkl_error_set(reterr, -EEXIST,
                                     "'%s/%s' was replaced while rktlet opened it: not written",
                                     log_directory, log_path);
        if (fcntl(fd, F_SETFL, O_APPEND) < 0)
                return rkl_error_set(reterr, -errno, "cannot set the flags of '%s/%s': %m",
                                     log_directory, log_path);
        rkl_logs_file f = {
            .fd = fd,
            .id = {.dev = (uint64_t)now.st_dev, .ino = (uint64_t)now.st_ino},
            .size = (uint64_t)now.st_size,
            .created = created,
        };
        if (created) {
                /* rktlet's own: 0640, root's, whatever the umask; and recorded as rktlet's
                 * before anything is written, or it is removed again. */
                if (fchmod(fd, 0640) < 0 || (geteuid() == 0 && fchown(fd, 0, 0) < 0))
                        r = rkl_error_set(reterr, -errno, "cannot set the mode of '%s/%s': %m",
                                          log_directory, log_path);
                else
                        r = record ? record(userdata, &f, reterr) : 0;
                if (r < 0) {
                        if (named)
                                (void)unlinkat(parent, leaf, 0);
                        return r;
                }
                if (!named &&
                    (r = name_leaf(fd, parent, leaf, log_directory, log_path, reterr)) < 0)
                        return r;
        }
        f.fd = TAKE_FD(fd);
        *ret = f;
        return 0;
}
