#include "watch.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/inotify.h>

#include "base/alloc.h"
#include "base/strv.h"
#include "poddir.h"
#include "poddir-internal.h"
#include "base/banned.h"

/* Distinct pods remembered between two drains; beyond that the owner rescans everything,
 * which costs the same as reading that many pods anyway. */
#define PENDING_MAX 4096
/* Reads per drain: a writer that never pauses must not starve the owner's loop; the fd
 * stays readable and the loop comes back. */
#define READS_PER_DRAIN 64

#define M_DIR (IN_ONLYDIR | IN_DONT_FOLLOW)
/* Directories that only matter once a child directory appears in them. */
#define MASK_ANCESTOR (IN_CREATE | IN_MOVED_TO | M_DIR)
/* pods/ and the state dirs: entries come and go by mkdir, rename and rm -rf. */
#define MASK_ENTRIES (IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | M_DIR)
/* The pod dir: ppid, net-info.json, subcgroup written; pod replaced by rename. */
#define MASK_POD (MASK_ENTRIES | IN_CLOSE_WRITE)
/* rkt/status/: <app>-created, <app>-started, <app> written by the reaper. */
#define MASK_STATUS (MASK_ENTRIES | IN_CLOSE_WRITE | IN_ATTRIB)

typedef enum kind {
        W_PARENT, /* the parent of pods/, while pods/ does not exist */
        W_PODS,   /* pods/ */
        W_STATE,  /* pods/<state dir> */
        W_POD,    /* pods/run/<uuid> and directories below it */
} kind;

typedef struct entry {
        int wd;
        kind kind;
        rkl_poddir_dir state; /* W_STATE */
        char uuid[RKL_POD_UUID_LEN + 1];
} entry;

struct rkl_poddir_watch {
        int fd;
        char *pods_dir;
        char *parent_dir;
        entry *entries; /* sorted by wd */
        size_t n_entries;
        char **pending; /* distinct uuids touched since the last drain, sorted, NULL-ended */
        size_t n_pending;
        bool rescan;
};

/* ---- the wd table ---- */

static size_t entry_pos(const rkl_poddir_watch *w, int wd)
{
        size_t lo = 0, hi = w->n_entries;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (w->entries[mid].wd < wd)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static entry *entry_find(rkl_poddir_watch *w, int wd)
{
        size_t i = entry_pos(w, wd);
        return i < w->n_entries && w->entries[i].wd == wd ? &w->entries[i] : NULL;
}

static void entry_remove(rkl_poddir_watch *w, int wd)
{
        size_t i = entry_pos(w, wd);
        if (i >= w->n_entries || w->entries[i].wd != wd)
                return;
        memmove(&w->entries[i], &w->entries[i + 1], (w->n_entries - i - 1) * sizeof(entry));
        w->n_entries--;
}

/* inotify_add_watch() plus bookkeeping. Adding a path already watched returns its wd again,
 * which makes every arm idempotent. */
static int add_watch(rkl_poddir_watch *w, const char *path, uint32_t mask, kind k,
                     rkl_poddir_dir state, const char *uuid)
{
        int wd = inotify_add_watch(w->fd, path, mask);
        if (wd < 0)
                return -errno;
        entry e = {.wd = wd, .kind = k, .state = state};
        if (uuid)
                memcpy(e.uuid, uuid, sizeof(e.uuid));
        size_t i = entry_pos(w, wd);
        if (i < w->n_entries && w->entries[i].wd == wd) {
                w->entries[i] = e;
                return wd;
        }
        w->entries = rkl_xrealloc(w->entries, (w->n_entries + 1) * sizeof(entry));
        memmove(&w->entries[i + 1], &w->entries[i], (w->n_entries - i) * sizeof(entry));
        w->entries[i] = e;
        w->n_entries++;
        return wd;
}

static void rm_watch(rkl_poddir_watch *w, int wd)
{
        /* EINVAL: the kernel dropped it already (its IN_IGNORED is queued or was read). */
        (void)inotify_rm_watch(w->fd, wd);
        entry_remove(w, wd);
}

/* ---- pending notices ---- */

/* pending stays sorted: bursts of events for many pods cost log(n) each, and drain hands
 * the array out as is. */
static void touch(rkl_poddir_watch *w, const char *uuid)
{
        size_t lo = 0, hi = w->n_pending;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(w->pending[mid], uuid);
                if (c == 0)
                        return;
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (w->n_pending >= PENDING_MAX) {
                w->rescan = true;
                return;
        }
        w->pending = rkl_xrealloc(w->pending, (w->n_pending + 2) * sizeof(char *));
        memmove(&w->pending[lo + 1], &w->pending[lo], (w->n_pending - lo) * sizeof(char *));
        w->pending[lo] = rkl_xstrdup(uuid);
        w->pending[++w->n_pending] = NULL;
}

/* ---- arming ---- */

static void disarm_pod(rkl_poddir_watch *w, const char *uuid)
{
        for (size_t i = w->n_entries; i > 0; i--) {
                entry *e = &w->entries[i - 1];
                if (e->kind == W_POD && streq(e->uuid, uuid))
                        rm_watch(w, e->wd);
        }
}

static int arm_pod(rkl_poddir_watch *w, const char *uuid)
{
        _cleanup_free_ char *pod = rkl_xasprintf("%s/run/%s", w->pods_dir, uuid);
        int r = add_watch(w, pod, MASK_POD, W_POD, 0, uuid);
        if (r < 0) {
                disarm_pod(w, uuid);
                return r == -ENOENT || r == -ENOTDIR ? 0 : r;
        }

        /* stage1/ shows .#rootfs.lck created when nspawn starts and deleted when it exits. */
        _cleanup_free_ char *stage1 = rkl_xasprintf("%s/stage1", pod);
        r = add_watch(w, stage1, MASK_ENTRIES, W_POD, 0, uuid);
        if (r < 0 && r != -ENOENT)
                return r;

        _cleanup_close_ int fd = open(pod, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        _cleanup_free_ char *tree = rkl_poddir__read_stage1_tree(fd);
        if (!tree)
                return 0; /* its CLOSE_WRITE on the pod dir re-arms us */

        /* Down to upper/rkt/status, as deep as exists; the deepest existing level's
         * IN_CREATE re-arms us when the next one appears. */
        static const struct {
                const char *fmt;
                uint32_t mask;
        } levels[] = {
            {"%s/overlay", MASK_ANCESTOR},
            {"%s/overlay/%s", MASK_ANCESTOR},
            {"%s/overlay/%s/upper", MASK_ANCESTOR},
            {"%s/overlay/%s/upper/rkt", MASK_ENTRIES},
            {"%s/overlay/%s/upper/rkt/status", MASK_STATUS},
        };
        for (size_t i = 0; i < ELEMENTSOF(levels); i++) {
                _cleanup_free_ char *p = rkl_xasprintf(levels[i].fmt, pod, tree);
                r = add_watch(w, p, levels[i].mask, W_POD, 0, uuid);
                if (r == -ENOENT || r == -ENOTDIR)
                        return 0;
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Calls fn for every pod uuid in pods/<state dir>. */
static int foreach_pod(rkl_poddir_watch *w, rkl_poddir_dir d,
                       int (*fn)(rkl_poddir_watch *w, const char *uuid))
{
        _cleanup_free_ char *p = rkl_xasprintf("%s/%s", w->pods_dir, rkl_poddir_dir_to_string(d));
        _cleanup_closedir_ DIR *dir = opendir(p);
        if (!dir)
                return errno == ENOENT ? 0 : -errno;
        struct dirent *de;
        int ret = 0;
        while ((de = readdir(dir)))
                if (rkl_pod_uuid_is_valid(de->d_name)) {
                        int r = fn(w, de->d_name);
                        if (r < 0 && ret == 0)
                                ret = r;
                }
        return ret;
}

static int touch_cb(rkl_poddir_watch *w, const char *uuid)
{
        touch(w, uuid);
        return 0;
}

static int touch_and_arm_cb(rkl_poddir_watch *w, const char *uuid)
{
        touch(w, uuid);
        return arm_pod(w, uuid);
}

/* A state dir (re)appeared: its pods arrived with it, unannounced. */
static int arm_state_dir(rkl_poddir_watch *w, rkl_poddir_dir d, bool announce)
{
        _cleanup_free_ char *p = rkl_xasprintf("%s/%s", w->pods_dir, rkl_poddir_dir_to_string(d));
        int r = add_watch(w, p, MASK_ENTRIES, W_STATE, d, NULL);
        if (r < 0)
                return r == -ENOENT || r == -ENOTDIR ? 0 : r;
        if (d == RKL_PODDIR_RUN)
                return foreach_pod(w, d, announce ? touch_and_arm_cb : arm_pod);
        return announce ? foreach_pod(w, d, touch_cb) : 0;
}

/* Watches pods/ (or its parent while pods/ is missing) and every state dir that exists. */
static int arm_all(rkl_poddir_watch *w, bool announce)
{
        int r = add_watch(w, w->pods_dir, MASK_ENTRIES, W_PODS, 0, NULL);
        if (r == -ENOENT) {
                r = add_watch(w, w->parent_dir, MASK_ANCESTOR, W_PARENT, 0, NULL);
                return r < 0 ? r : 0;
        }
        if (r < 0)
                return r;
        for (size_t i = w->n_entries; i > 0; i--)
                if (w->entries[i - 1].kind == W_PARENT)
                        rm_watch(w, w->entries[i - 1].wd);
        for (int d = 0; d < _RKL_PODDIR_DIR_MAX; d++) {
                r = arm_state_dir(w, (rkl_poddir_dir)d, announce);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* After lost events: re-add what may have appeared and drop pods that left run/. */
static void recover(rkl_poddir_watch *w)
{
        w->rescan = true;
        /* A failure (out of watches, a dir gone again) is told as the rescan just asked for,
         * the owner's remedy for anything missed; what is missing is armed again with the
         * next event, recovery or rkl_poddir_watch_pod(). */
        (void)arm_all(w, false);
        _cleanup_strv_free_ char **gone = NULL;
        for (size_t i = 0; i < w->n_entries; i++) {
                const entry *e = &w->entries[i];
                if (e->kind != W_POD)
                        continue;
                _cleanup_free_ char *p = rkl_xasprintf("%s/run/%s", w->pods_dir, e->uuid);
                if (access(p, F_OK) < 0 && errno == ENOENT)
                        rkl_strv_push(&gone, e->uuid);
        }
        RKL_STRV_FOREACH (u, gone)
                disarm_pod(w, *u);
}

/* ---- events ---- */

static void handle_event(rkl_poddir_watch *w, int wd, uint32_t mask, const char *name)
{
        if (mask & IN_Q_OVERFLOW) {
                recover(w);
                return;
        }
        entry *e = entry_find(w, wd);
        if (!e)
                return; /* an event queued before we removed its watch */
        if (mask & IN_IGNORED) {
                /* The watched dir is gone (or was unmounted); the kernel dropped the wd. */
                kind k = e->kind;
                entry_remove(w, wd);
                if (k == W_PODS || k == W_STATE)
                        recover(w);
                return;
        }

        bool created = mask & (IN_CREATE | IN_MOVED_TO);
        switch (e->kind) {
        case W_PARENT:
                if (created && name && streq(name, "pods")) {
                        int r = arm_all(w, true);
                        if (r < 0)
                                recover(w);
                }
                break;
        case W_PODS: {
                rkl_poddir_dir d =
                    name ? rkl_poddir_dir_from_string(name) : _RKL_PODDIR_DIR_INVALID;
                if (d < 0)
                        break;
                if (created) {
                        if (arm_state_dir(w, d, true) < 0)
                                w->rescan = true;
                } else
                        w->rescan = true; /* a state dir went away with its pods */
                break;
        }
        case W_STATE:
                if (!name || !rkl_pod_uuid_is_valid(name))
                        break;
                touch(w, name);
                if (e->state != RKL_PODDIR_RUN)
                        break;
                if (created) {
                        if (arm_pod(w, name) < 0)
                                w->rescan = true;
                } else if (mask & (IN_DELETE | IN_MOVED_FROM))
                        disarm_pod(w, name);
                break;
        case W_POD: {
                char uuid[sizeof(e->uuid)];
                memcpy(uuid, e->uuid, sizeof(uuid));
                touch(w, uuid);
                /* A directory on the way to upper/rkt/status appeared, or the id that names
                 * it was written: arm what now exists. */
                if ((created && (mask & IN_ISDIR)) || (name && streq(name, "stage1TreeStoreID") &&
                                                       (mask & (IN_CLOSE_WRITE | IN_MOVED_TO)))) {
                        if (arm_pod(w, uuid) < 0)
                                w->rescan = true;
                }
                break;
        }
        }
}

int rkl_poddir_watch__feed(rkl_poddir_watch *w, const void *buf, size_t len)
{
        const char *p = buf;
        while (len > 0) {
                struct inotify_event ev;
                char name[NAME_MAX + 1];
                if (len < sizeof(ev))
                        return -EBADMSG;
                memcpy(&ev, p, sizeof(ev));
                if (ev.len > len - sizeof(ev))
                        return -EBADMSG;
                size_t n = strnlen(p + sizeof(ev), ev.len);
                bool has_name = n > 0 && n < sizeof(name);
                if (has_name) {
                        memcpy(name, p + sizeof(ev), n);
                        name[n] = 0;
                }
                /* An over-long name is no name of ours: still a notice for the wd's pod. */
                handle_event(w, ev.wd, ev.mask, has_name ? name : NULL);
                p += sizeof(ev) + ev.len;
                len -= sizeof(ev) + ev.len;
        }
        return 0;
}

/* ---- public ---- */

int rkl_poddir_watch_new(const char *pods_dir, rkl_poddir_watch **ret, rkl_error *reterr)
{
        _cleanup_(rkl_poddir_watch_freep) rkl_poddir_watch *w = NULL;
        size_t n = strlen(pods_dir);
        while (n > 1 && pods_dir[n - 1] == '/')
                n--;
        if (n == 0 || pods_dir[0] != '/')
                return rkl_error_set(reterr, -EINVAL, "pods dir '%s' is not absolute", pods_dir);

        w = rkl_xnew0(rkl_poddir_watch, 1);
        w->fd = -EBADF;
        w->pods_dir = rkl_xstrndup(pods_dir, n);
        const char *slash = strrchr(w->pods_dir, '/');
        w->parent_dir = slash == w->pods_dir ? rkl_xstrdup("/")
                                             : rkl_xstrndup(w->pods_dir, slash - w->pods_dir);

        w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (w->fd < 0)
                return rkl_error_set(reterr, -errno, "inotify_init1: %m");
        int r = arm_all(w, false);
        if (r < 0)
                return rkl_error_set(reterr, r, "watch '%s': %s", w->pods_dir, strerror(-r));
        *ret = TAKE_PTR(w);
        return 0;
}

rkl_poddir_watch *rkl_poddir_watch_free(rkl_poddir_watch *w)
{
        if (!w)
                return NULL;
        safe_close(w->fd);
        free(w->pods_dir);
        free(w->parent_dir);
        free(w->entries);
        rkl_strv_free(w->pending);
        free(w);
        return NULL;
}

int rkl_poddir_watch_fd(const rkl_poddir_watch *w)
{
        return w->fd;
}

size_t rkl_poddir_watch_count(const rkl_poddir_watch *w)
{
        return w->n_entries;
}

int rkl_poddir_watch_drain(rkl_poddir_watch *w, char ***ret_uuids, bool *ret_rescan,
                           rkl_error *reterr)
{
        /* Aligned for struct inotify_event, as inotify(7) asks. */
        char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));

        for (int i = 0; i < READS_PER_DRAIN; i++) {
                ssize_t k = read(w->fd, buf, sizeof(buf));
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                break;
                        return rkl_error_set(reterr, -errno, "read inotify: %m");
                }
                if (k == 0)
                        break;
                int r = rkl_poddir_watch__feed(w, buf, (size_t)k);
                if (r < 0)
                        return rkl_error_set(reterr, r, "malformed inotify event");
        }

        size_t n = w->n_pending;
        char **l = w->pending ? TAKE_PTR(w->pending) : rkl_xnew0(char *, 1);
        w->n_pending = 0;
        *ret_rescan = w->rescan;
        w->rescan = false;
        *ret_uuids = l;
        return (int)n;
}

int rkl_poddir_watch_pod(rkl_poddir_watch *w, const char *uuid, rkl_error *reterr)
{
        if (!rkl_pod_uuid_is_valid(uuid))
                return rkl_error_set(reterr, -EINVAL, "invalid pod uuid '%.40s'", uuid ? uuid : "");
        int r = arm_pod(w, uuid);
        if (r < 0)
                return rkl_error_set(reterr, r, "watch pod %s: %s", uuid, strerror(-r));
        return 0;
}
