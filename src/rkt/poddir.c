/* One pod directory read (rkl_poddir_read()) and all of them listed, plus the names of the
 * states. Its apps are read in poddir-apps.c, its files parsed in poddir-parse.c. */
#include "poddir.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "poddir-internal.h"
#include "base/alloc.h"
#include "base/fileio.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "base/utf8.h"
#include "base/banned.h"

#define TREE_ID_MAX 255

static const char *const dir_names[_RKL_PODDIR_DIR_MAX] = {
    [RKL_PODDIR_EMBRYO] = "embryo",
    [RKL_PODDIR_PREPARE] = "prepare",
    [RKL_PODDIR_PREPARED] = "prepared",
    [RKL_PODDIR_RUN] = "run",
    [RKL_PODDIR_EXITED_GARBAGE] = "exited-garbage",
    [RKL_PODDIR_GARBAGE] = "garbage",
};

static const char *const state_names[_RKL_POD_STATE_MAX] = {
    [RKL_POD_STATE_EMBRYO] = "embryo",
    [RKL_POD_STATE_PREPARING] = "preparing",
    [RKL_POD_STATE_ABORTED_PREPARE] = "aborted prepare",
    [RKL_POD_STATE_PREPARED] = "prepared",
    [RKL_POD_STATE_RUNNING] = "running",
    [RKL_POD_STATE_EXITED] = "exited",
    [RKL_POD_STATE_EXITED_GARBAGE] = "exited garbage",
    [RKL_POD_STATE_EXITED_DELETING] = "exited deleting",
    [RKL_POD_STATE_GARBAGE] = "garbage",
    [RKL_POD_STATE_DELETING] = "deleting",
};

static const char *const app_state_names[_RKL_POD_APP_MAX] = {
    [RKL_POD_APP_UNKNOWN] = "unknown",
    [RKL_POD_APP_CREATED] = "created",
    [RKL_POD_APP_RUNNING] = "running",
    [RKL_POD_APP_EXITED] = "exited",
};

const char *rkl_poddir_dir_to_string(rkl_poddir_dir d)
{
        return d >= 0 && d < _RKL_PODDIR_DIR_MAX ? dir_names[d] : NULL;
}

rkl_poddir_dir rkl_poddir_dir_from_string(const char *s)
{
        for (int i = 0; s && i < _RKL_PODDIR_DIR_MAX; i++)
                if (streq(s, dir_names[i]))
                        return (rkl_poddir_dir)i;
        return _RKL_PODDIR_DIR_INVALID;
}

const char *rkl_pod_state_to_string(rkl_pod_state s)
{
        return s >= 0 && s < _RKL_POD_STATE_MAX ? state_names[s] : NULL;
}

const char *rkl_pod_app_state_to_string(rkl_pod_app_state s)
{
        return s >= 0 && s < _RKL_POD_APP_MAX ? app_state_names[s] : NULL;
}

bool rkl_pod_state_is_after_run(rkl_pod_state s)
{
        /* pkg/pod AfterRun(): exited (incl. exited garbage), exited deleting, deleting,
         * garbage. */
        switch (s) {
        case RKL_POD_STATE_EXITED:
        case RKL_POD_STATE_EXITED_GARBAGE:
        case RKL_POD_STATE_EXITED_DELETING:
        case RKL_POD_STATE_GARBAGE:
        case RKL_POD_STATE_DELETING:
                return true;
        default:
                return false;
        }
}

static bool is_hex_lower(char c)
{
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

bool rkl_pod_uuid_is_valid(const char *s)
{
        if (!s)
                return false;
        for (size_t i = 0; i < RKL_POD_UUID_LEN; i++) {
                bool dash = i == 8 || i == 13 || i == 18 || i == 23;
                if (dash ? s[i] != '-' : !is_hex_lower(s[i]))
                        return false;
        }
        return s[RKL_POD_UUID_LEN] == 0;
}

static bool is_alnum_lower(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool rkl_pod_app_name_is_valid(const char *s)
{
        if (!s || !is_alnum_lower(s[0]))
                return false;
        size_t i = 1;
        for (; s[i]; i++) {
                if (i >= RKL_PODDIR__APP_NAME_MAX)
                        return false;
                if (is_alnum_lower(s[i]))
                        continue;
                /* A separator must sit between two alnums: no "..", no trailing '.'. */
                if (!strchr("-._~", s[i]) || !is_alnum_lower(s[i + 1]))
                        return false;
        }
        return true;
}

/* stage1TreeStoreID becomes a path component: "deps-sha512-<hex>" in practice. */
static bool tree_id_is_valid(const char *s)
{
        size_t n = strlen(s);
        if (n == 0 || n > TREE_ID_MAX || streq(s, ".") || streq(s, ".."))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!is_alnum_lower(s[i]) && !(s[i] >= 'A' && s[i] <= 'Z') && !strchr("-_.", s[i]))
                        return false;
        return true;
}

void rkl_poddir_app_done(rkl_poddir_app *a)
{
        if (!a)
                return;
        free(a->name);
        free(a->image_id);
        rkl_kvs_done(&a->annotations);
        rkl_kvs_done(&a->user_annotations);
        rkl_kvs_done(&a->user_labels);
        *a = (rkl_poddir_app){0};
}

static void apps_free(rkl_poddir_app *apps, size_t n)
{
        for (size_t i = 0; i < n; i++)
                rkl_poddir_app_done(&apps[i]);
        free(apps);
}

void rkl_poddir_manifest_done(rkl_poddir_manifest *m)
{
        if (!m)
                return;
        rkl_kvs_done(&m->annotations);
        rkl_kvs_done(&m->user_annotations);
        rkl_kvs_done(&m->user_labels);
        apps_free(m->apps, m->n_apps);
        *m = (rkl_poddir_manifest){0};
}

void rkl_poddir_pod_done(rkl_poddir_pod *p)
{
        if (!p)
                return;
        free(p->ip);
        free(p->net_name);
        free(p->netns);
        free(p->subcgroup);
        free(p->stage1_tree);
        free(p->warning);
        rkl_kvs_done(&p->annotations);
        rkl_kvs_done(&p->user_annotations);
        rkl_kvs_done(&p->user_labels);
        apps_free(p->apps, p->n_apps);
        *p = (rkl_poddir_pod){0};
}

const rkl_poddir_app *rkl_poddir_pod_find_app(const rkl_poddir_pod *p, const char *name)
{
        for (size_t i = 0; i < p->n_apps; i++)
                if (streq(p->apps[i].name, name))
                        return &p->apps[i];
        return NULL;
}

/* ---- reading a pod directory ---- */

/* Reads a regular file (never a FIFO, device or symlink: opening a FIFO would block)
 * relative to dirfd. The stat-then-open window only matters against a hostile root. */
int rkl_poddir__read_regular_at(int dirfd, const char *path, size_t max, char **ret,
                                size_t *ret_len, struct stat *ret_st)
{
        struct stat st;
        if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return S_ISCHR(st.st_mode) && st.st_rdev == 0 ? -ENOENT /* overlay whiteout */
                                                              : -EBADFD;
        int r = rkl_read_file_at(dirfd, path, max, ret, ret_len);
        if (r < 0)
                return r;
        if (ret_st)
                *ret_st = st;
        return 0;
}

/* mtime in ns of a regular file; 0 when it is missing or not a regular file. */
int64_t rkl_poddir__mtime_at(int dirfd, const char *path)
{
        struct stat st;
        if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                return 0;
        return rkl_timespec_ns(&st.st_mtim);
}

/* A one-line text file (stage1TreeStoreID, subcgroup): trimmed; NULL when unusable. */
static char *read_line_at(int dirfd, const char *path)
{
        _cleanup_free_ char *buf = NULL;
        size_t n;
        if (rkl_poddir__read_regular_at(dirfd, path, RKL_PODDIR_FILE_MAX, &buf, &n, NULL) < 0)
                return NULL;
        const char *s = buf;
        rkl_poddir__trim(&s, &n);
        if (n == 0 || memchr(s, 0, n) || memchr(s, '\n', n) || !rkl_utf8_is_valid(s, n))
                return NULL;
        return rkl_xstrndup(s, n);
}

char *rkl_poddir__read_stage1_tree(int pod_dirfd)
{
        char *s = read_line_at(pod_dirfd, "stage1TreeStoreID");
        if (s && !tree_id_is_valid(s)) {
                free(s);
                return NULL;
        }
        return s;
}

/* The first state dir (in rkt's order) holding the pod. rkt only moves pods forward in
 * that order, so one in-order pass finds a pod that is being renamed. */
static int open_pod(int pods_dirfd, const char *uuid, int *ret_fd, rkl_poddir_dir *ret_dir)
{
        for (int d = 0; d < _RKL_PODDIR_DIR_MAX; d++) {
                _cleanup_free_ char *p = rkl_xasprintf("%s/%s", dir_names[d], uuid);
                int fd = openat(pods_dirfd, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (fd < 0) {
                        if (errno == ENOENT || errno == ENOTDIR)
                                continue;
                        return -errno;
                }
                *ret_fd = fd;
                *ret_dir = (rkl_poddir_dir)d;
                return 0;
        }
        return -ENOENT;
}

/* Probes rkt's pod lock like TrySharedLock(): true when someone holds it exclusively.
 * A lock we get is dropped at once so that rkt's own exclusive lock never waits on us. */
static int probe_lock(int fd, bool *ret_locked)
{
        for (;;) {
                if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
                        /* Cannot fail on a lock this fd holds; and the lock goes with the fd
                         * anyway, when the caller closes it. */
                        (void)flock(fd, LOCK_UN);
                        *ret_locked = false;
                        return 0;
                }
                if (errno == EWOULDBLOCK) {
                        *ret_locked = true;
                        return 0;
                }
                if (errno != EINTR)
                        return -errno;
        }
}

static rkl_pod_state derive_state(rkl_poddir_dir d, bool locked)
{
        switch (d) {
        case RKL_PODDIR_EMBRYO:
                return RKL_POD_STATE_EMBRYO;
        case RKL_PODDIR_PREPARE:
                return locked ? RKL_POD_STATE_PREPARING : RKL_POD_STATE_ABORTED_PREPARE;
        case RKL_PODDIR_PREPARED:
                return RKL_POD_STATE_PREPARED;
        case RKL_PODDIR_RUN:
                return locked ? RKL_POD_STATE_RUNNING : RKL_POD_STATE_EXITED;
        case RKL_PODDIR_EXITED_GARBAGE:
                return locked ? RKL_POD_STATE_EXITED_DELETING : RKL_POD_STATE_EXITED_GARBAGE;
        case RKL_PODDIR_GARBAGE:
                return locked ? RKL_POD_STATE_DELETING : RKL_POD_STATE_GARBAGE;
        default:
                return _RKL_POD_STATE_INVALID;
        }
}

/* Adds to p->warning, joined with "; ". */
static void add_warning(rkl_poddir_pod *p, const char *fmt, ...) _printf_(2, 3);
static void add_warning(rkl_poddir_pod *p, const char *fmt, ...)
{
        va_list ap;
        char *s;
        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                rkl_oom();
        va_end(ap);
        if (p->warning) {
                char *joined = rkl_xasprintf("%s; %s", p->warning, s);
                free(s);
                s = joined;
        }
        free(p->warning);
        p->warning = s;
}

static void read_netinfo(int fd, rkl_poddir_pod *p)
{
        _cleanup_free_ char *buf = NULL;
        size_t n;
        int r =
            rkl_poddir__read_regular_at(fd, "net-info.json", RKL_PODDIR_FILE_MAX, &buf, &n, NULL);
        if (r < 0) {
                /* Missing is normal: host network, or not set up yet. */
                if (r != -ENOENT)
                        add_warning(p, "net-info.json: %s", strerror(-r));
                return;
        }
        rkl_error e = RKL_ERROR_INIT;
        r = rkl_poddir_parse_netinfo(buf, n, &p->ip, &p->net_name, &e);
        if (r < 0)
                add_warning(p, "%s", e.msg); /* "net-info.json: ..." */
}

/* The path of the pod's network namespace, which rkt writes before the pod's network is set
 * up (with --net=none, the only thing it sets up). */
static void read_netns(int fd, rkl_poddir_pod *p)
{
        _cleanup_free_ char *buf = NULL;
        size_t n;
        if (rkl_poddir__read_regular_at(fd, "netns", RKL_PODDIR_FILE_MAX, &buf, &n, NULL) < 0)
                return; /* host network, or not there yet */
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
                buf[--n] = 0;
        if (n == 0 || n >= PATH_MAX || buf[0] != '/' || strlen(buf) != n || strchr(buf, '\n')) {
                add_warning(p, "netns: not a path");
                return;
        }
        p->netns = TAKE_PTR(buf);
}

static void read_pid(int fd, rkl_poddir_pod *p)
{
        static const char *const names[] = {"ppid", "pid"};
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_free_ char *buf = NULL;
                struct stat st;
                size_t n;
                if (rkl_poddir__read_regular_at(fd, names[i], RKL_PODDIR_FILE_MAX, &buf, &n, &st) <
                    0)
                        continue;
                /* The file's mtime is the start time even while its content is half-written. */
                p->started_ns = rkl_timespec_ns(&st.st_mtim);
                if (rkl_poddir_parse_pid(buf, n, &p->ppid) < 0)
                        p->ppid = 0;
                return;
        }
}

static void read_manifest(int fd, rkl_poddir_pod *p, rkl_poddir_manifest *m)
{
        _cleanup_free_ char *buf = NULL;
        size_t n;
        int r = rkl_poddir__read_regular_at(fd, "pod", RKL_PODDIR_MANIFEST_MAX, &buf, &n, NULL);
        if (r >= 0) {
                rkl_error e = RKL_ERROR_INIT;
                r = rkl_poddir_parse_manifest(buf, n, m, &e);
                if (r < 0)
                        add_warning(p, "%s", e.msg); /* "pod manifest: ..." */
        } else if (r != -ENOENT) /* missing: a pod just renamed in, nothing written yet */
                add_warning(p, "pod manifest: %s", strerror(-r));
        p->manifest_error = r < 0 ? r : 0;
}

static bool read_supervisor_ready(int fd, const char *tree)
{
        char target[16];
        const char *paths[2] = {NULL, "stage1/rootfs/rkt/supervisor-status"};
        _cleanup_free_ char *upper = NULL;
        if (tree)
                paths[0] = upper = rkl_xasprintf("overlay/%s/upper/rkt/supervisor-status", tree);
        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                if (!paths[i])
                        continue;
                ssize_t k = readlinkat(fd, paths[i], target, sizeof(target));
                if (k < 0)
                        continue;
                return (size_t)k == strlen("ready") && memcmp(target, "ready", k) == 0;
        }
        return false;
}

int rkl_poddir_drop_empty_netinfo(int pods_dirfd, const rkl_poddir_pod *p)
{
        struct stat st;

        if (!rkl_pod_state_is_after_run(p->state) || !rkl_pod_uuid_is_valid(p->uuid))
                return 0; /* a live stage1 may be between its create and its write */
        _cleanup_free_ char *path =
            rkl_xasprintf("%s/%s/net-info.json", rkl_poddir_dir_to_string(p->dir), p->uuid);
        if (fstatat(pods_dirfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISREG(st.st_mode) || st.st_size != 0)
                return 0;
        return unlinkat(pods_dirfd, path, 0) < 0 ? -errno : 1;
}

int rkl_poddir_read(int pods_dirfd, const char *uuid, rkl_poddir_pod *ret, rkl_error *reterr)
{
        _cleanup_(rkl_poddir_pod_done) rkl_poddir_pod p = {0};
        _cleanup_(rkl_poddir_manifest_done) rkl_poddir_manifest m = {0};
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        int r;

        if (!rkl_pod_uuid_is_valid(uuid))
                return rkl_error_set(reterr, -EINVAL, "invalid pod uuid '%.40s'", uuid ? uuid : "");
        memcpy(p.uuid, uuid, sizeof(p.uuid));

        r = open_pod(pods_dirfd, uuid, &fd, &p.dir);
        if (r == -ENOENT)
                return rkl_error_set(reterr, r, "pod %s not found", uuid);
        if (r < 0)
                return rkl_error_set(reterr, r, "open pod %s: %s", uuid, strerror(-r));

        /* embryo and prepared carry no lock meaning (rkt does not probe them either). */
        if (p.dir != RKL_PODDIR_EMBRYO && p.dir != RKL_PODDIR_PREPARED) {
                r = probe_lock(fd, &p.locked);
                if (r < 0)
                        return rkl_error_set(reterr, r, "lock probe of pod %s: %s", uuid,
                                             strerror(-r));
        }
        p.state = derive_state(p.dir, p.locked);

        if (fstat(fd, &st) < 0)
                return rkl_error_set(reterr, -errno, "stat pod %s: %m", uuid);
        /* rkt's GCMarkedTime(): the rename into a garbage dir sets the dir's ctime. */
        if (p.dir == RKL_PODDIR_EXITED_GARBAGE || p.dir == RKL_PODDIR_GARBAGE)
                p.gc_marked_ns = rkl_timespec_ns(&st.st_ctim);

        p.rootfs_lock = faccessat(fd, "stage1/.#rootfs.lck", F_OK, AT_SYMLINK_NOFOLLOW) == 0;
        p.created_ns = rkl_poddir__mtime_at(fd, "pod-created");
        if (p.created_ns == 0)
                p.created_ns = rkl_poddir__mtime_at(fd, "pod");
        read_pid(fd, &p);

        p.stage1_tree = rkl_poddir__read_stage1_tree(fd);
        /* subcgroup becomes a path below the cgroup root for stats: relative, no "..". */
        p.subcgroup = read_line_at(fd, "subcgroup");
        if (p.subcgroup && (strstr(p.subcgroup, "..") || p.subcgroup[0] == '/')) {
                free(p.subcgroup);
                p.subcgroup = NULL;
        }
        read_netinfo(fd, &p);
        read_netns(fd, &p);
        p.supervisor_ready = read_supervisor_ready(fd, p.stage1_tree);

        read_manifest(fd, &p, &m);
        p.annotations = TAKE_STRUCT(m.annotations);
        p.user_annotations = TAKE_STRUCT(m.user_annotations);
        p.user_labels = TAKE_STRUCT(m.user_labels);
        rkl_poddir__read_apps(fd, &p, &m);

        /* Deleted (rkt rm, gc) while we read: what we saw is gone, do not report it. */
        if (fstat(fd, &st) < 0)
                return rkl_error_set(reterr, -errno, "stat pod %s: %m", uuid);
        if (st.st_nlink == 0)
                return rkl_error_set(reterr, -ENOENT, "pod %s vanished", uuid);

        *ret = p;
        p = (rkl_poddir_pod){0};
        return 0;
}

int rkl_poddir__cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

int rkl_poddir_list(int pods_dirfd, char ***ret_uuids, rkl_error *reterr)
{
        _cleanup_strv_free_ char **l = NULL;
        size_t n = 0;

        for (int i = 0; i < _RKL_PODDIR_DIR_MAX; i++) {
                int fd = openat(pods_dirfd, dir_names[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0) {
                        if (errno == ENOENT)
                                continue;
                        return rkl_error_set(reterr, -errno, "open pods/%s: %m", dir_names[i]);
                }
                _cleanup_closedir_ DIR *d = fdopendir(fd);
                if (!d) {
                        safe_close(fd);
                        return rkl_error_set(reterr, -errno, "open pods/%s: %m", dir_names[i]);
                }
                struct dirent *de;
                while ((errno = 0, de = readdir(d))) {
                        if (!rkl_pod_uuid_is_valid(de->d_name))
                                continue;
                        if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
                                continue;
                        rkl_strv_push(&l, de->d_name);
                        n++;
                }
                if (errno)
                        return rkl_error_set(reterr, -errno, "read pods/%s: %m", dir_names[i]);
        }
        if (n > 0) {
                qsort(l, n, sizeof(char *), rkl_poddir__cmp_str);
                /* A pod renamed during the walk shows up twice. */
                size_t k = 0;
                for (size_t i = 0; i < n; i++) {
                        if (k > 0 && streq(l[k - 1], l[i])) {
                                free(l[i]);
                                continue;
                        }
                        l[k++] = l[i];
                }
                l[k] = NULL;
        }
        *ret_uuids = l ? TAKE_PTR(l) : rkl_xnew0(char *, 1);
        return 0;
}

int rkl_poddir_pod_init(uint32_t nspawn_pid, pid_t *ret_pid, rkl_error *reterr)
{
        char path[64];
        _cleanup_free_ char *s = NULL;
        if (nspawn_pid == 0)
                return rkl_error_set(reterr, -ESRCH,
                                     "the pod's systemd is not running (no nspawn)");
        (void)snprintf(path, sizeof(path), "/proc/%" PRIu32 "/task/%" PRIu32 "/children",
                       nspawn_pid, nspawn_pid);
        int r = rkl_read_file_at(AT_FDCWD, path, 4096, &s, NULL);
        if (r == -ENOENT)
                return rkl_error_set(
                    reterr, -ESRCH, "the pod's systemd is not running (nspawn %" PRIu32 " is gone)",
                    nspawn_pid);
        if (r < 0)
                return rkl_error_set(reterr, r, "%s: %s", path, strerror(-r));
        long pid = strtol(s, NULL, 10);
        if (pid <= 0 || pid > INT32_MAX)
                return rkl_error_set(reterr, -ESRCH,
                                     "the pod's systemd is not running (nspawn %" PRIu32
                                     " has no child)",
                                     nspawn_pid);
        *ret_pid = (pid_t)pid;
        return 0;
}
