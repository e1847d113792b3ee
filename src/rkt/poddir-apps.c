/* The apps of a pod directory: the manifest's and those known only from status files, with
 * their state and exit from rkt's status files (rkt/status/<app>{-created,-started,}). */
#include "poddir.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "poddir-internal.h"
#include "base/alloc.h"
#include "base/fileio.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "base/banned.h"

/* Prefers the overlay upper dir, which holds what the pod wrote even when the overlay is
 * not mounted in our namespace (docs/rkt.md, 'The pod directory'); then the merged stage1
 * rootfs. */
static int open_rkt_subdir(int fd, const char *tree, const char *sub)
{
        if (tree) {
                _cleanup_free_ char *p = rkl_xasprintf("overlay/%s/upper/rkt/%s", tree, sub);
                int d = openat(fd, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (d >= 0 || errno != ENOENT)
                        return d >= 0 ? d : -errno;
        }
        _cleanup_free_ char *p = rkl_xasprintf("stage1/rootfs/rkt/%s", sub);
        int d = openat(fd, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        return d >= 0 ? d : -errno;
}

/* rkt's mutable-pod rules (lib/app.go), made honest: an exit file that cannot be parsed
 * leaves the exit code unknown instead of rkt's "1". */
static void read_app_status(int status_fd, rkl_poddir_app *a)
{
        if (status_fd < 0)
                return;
        _cleanup_free_ char *cpath = rkl_xasprintf("%s-created", a->name);
        _cleanup_free_ char *spath = rkl_xasprintf("%s-started", a->name);
        a->created_ns = rkl_poddir__mtime_at(status_fd, cpath);
        a->started_ns = rkl_poddir__mtime_at(status_fd, spath);
        if (a->created_ns)
                a->state = RKL_POD_APP_CREATED;
        if (a->started_ns)
                a->state = RKL_POD_APP_RUNNING;

        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t n;
        int r = rkl_poddir__read_regular_at(status_fd, a->name, RKL_PODDIR_FILE_MAX, &buf, &n, &st);
        if (r == -ENOENT)
                return;
        /* The reaper creates the file, then writes the code: empty, it is being written
         * (CLOSE_WRITE follows within ms). A pod that dies in between leaves it empty; its
         * released lock makes the app exited then (rkl_poddir_read). */
        if (r >= 0 && n == 0 && a->state == RKL_POD_APP_RUNNING)
                return;
        if (r == -EFBIG || r >= 0) {
                if (r < 0 && fstatat(status_fd, a->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return;
                a->state = RKL_POD_APP_EXITED;
                a->finished_ns = rkl_timespec_ns(&st.st_mtim);
                a->exit_known = r >= 0 && rkl_poddir_parse_exit(buf, n, &a->exit_code) >= 0;
                if (!a->exit_known)
                        a->exit_code = 0;
        }
}

static bool has_suffix(const char *s, const char *suffix, size_t *ret_prefix_len)
{
        size_t n = strlen(s), k = strlen(suffix);
        if (n <= k || !streq(s + n - k, suffix))
                return false;
        *ret_prefix_len = n - k;
        return true;
}

static bool apps_contain(char *const *names, const rkl_poddir_app *apps, size_t n, const char *name)
{
        for (size_t i = 0; i < n; i++)
                if (streq(apps[i].name, name))
                        return true;
        RKL_STRV_FOREACH (s, names)
                if (streq(*s, name))
                        return true;
        return false;
}

/* Apps that have status files but are not in the manifest: being added (the manifest is
 * rewritten after <app>-created appears), removed (`app rm` leaves -created and -started
 * behind), or all apps when the manifest is unreadable. An entry "x-created" is app x's
 * marker unless the manifest names an app "x-created". */
static char **status_only_apps(int status_fd, const rkl_poddir_app *apps, size_t n_apps)
{
        _cleanup_strv_free_ char **names = NULL;
        size_t count = 0;
        if (status_fd < 0)
                return NULL;
        int fd = openat(status_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        _cleanup_closedir_ DIR *d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return NULL;
        }
        struct dirent *de;
        while ((de = readdir(d)) && n_apps + count < RKL_PODDIR_MAX_APPS) {
                _cleanup_free_ char *name = NULL;
                size_t k;
                if (de->d_name[0] == '.' || apps_contain(NULL, apps, n_apps, de->d_name))
                        continue;
                if (has_suffix(de->d_name, "-created", &k) ||
                    has_suffix(de->d_name, "-started", &k))
                        name = rkl_xstrndup(de->d_name, k);
                else
                        name = rkl_xstrdup(de->d_name);
                if (!rkl_pod_app_name_is_valid(name) || apps_contain(names, apps, n_apps, name))
                        continue;
                rkl_strv_consume(&names, TAKE_PTR(name));
                count++;
        }
        if (names)
                qsort(names, count, sizeof(char *), rkl_poddir__cmp_str);
        return TAKE_PTR(names);
}

void rkl_poddir__read_apps(int fd, rkl_poddir_pod *p, rkl_poddir_manifest *m)
{
        _cleanup_close_ int status_fd = open_rkt_subdir(fd, p->stage1_tree, "status");
        _cleanup_strv_free_ char **extra = status_only_apps(status_fd, m->apps, m->n_apps);
        size_t n_extra = rkl_strv_length(extra);
        bool after_run = rkl_pod_state_is_after_run(p->state);

        p->apps = rkl_xnew0(rkl_poddir_app, m->n_apps + n_extra + 1);
        for (size_t i = 0; i < m->n_apps; i++)
                p->apps[p->n_apps++] = TAKE_STRUCT(m->apps[i]);
        for (size_t i = 0; i < n_extra; i++)
                p->apps[p->n_apps++] = (rkl_poddir_app){.name = TAKE_PTR(extra[i])};

        for (size_t i = 0; i < p->n_apps; i++) {
                rkl_poddir_app *a = &p->apps[i];
                read_app_status(status_fd, a);
                /* Not in a readable manifest and not exited: removed or half-added, so its
                 * leftover -created/-started files say nothing about a live process. */
                if (!a->in_manifest && p->manifest_error == 0 && a->state != RKL_POD_APP_EXITED)
                        a->state = RKL_POD_APP_UNKNOWN;
                /* rkt: an app of a pod that is after-run is exited even without a status
                 * file (the pod was killed before the reaper ran); the exit code is unknown. */
                if (after_run && a->state != RKL_POD_APP_EXITED) {
                        a->state = RKL_POD_APP_EXITED;
                        a->finished_ns = p->gc_marked_ns;
                        a->exit_known = false;
                }
        }
}
