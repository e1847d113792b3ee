#include "cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include "alloc.h"
#include "fileio.h"
#include "parse.h"
#include "time-util.h"
#include "banned.h"

#define MAX_PROC_FILE (4 << 20)

void rkl_cgroup_entries_free(rkl_cgroup_entry *e, size_t n)
{
        for (size_t i = 0; e && i < n; i++) {
                free(e[i].controllers);
                free(e[i].path);
                free(e[i].dir);
        }
        free(e);
}

/* Whether every comma-separated word of want is one of have's. */
static bool words_among(const char *want, const char *have)
{
        if (isempty(want))
                return false;
        for (const char *w = want; w;) {
                const char *end = strchrnul(w, ',');
                size_t n = (size_t)(end - w);
                bool found = false;
                for (const char *h = have; h && !found;) {
                        const char *hend = strchrnul(h, ',');
                        found = (size_t)(hend - h) == n && !strncmp(h, w, n);
                        h = *hend ? hend + 1 : NULL;
                }
                if (!found)
                        return false;
                w = *end ? end + 1 : NULL;
        }
        return true;
}

bool rkl_cgroup_entry_has(const rkl_cgroup_entry *e, const char *controller)
{
        return !e->unified && words_among(controller, e->controllers);
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. In place. */
static void unescape(char *s)
{
        char *o = s;
        for (char *p = s; *p; p++) {
                if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
                    p[3] >= '0' && p[3] <= '7') {
                        *o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
                        p += 3;
                } else
                        *o++ = *p;
        }
        *o = 0;
}

typedef struct mount_line {
        char *root, *mountpoint, *fstype, *super;
} mount_line;

/* The lines of a mountinfo text, pointing into text (modified). */
static mount_line *mounts_parse(char *text, size_t *ret_n)
{
        mount_line *v = NULL;
        size_t n = 0;
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER */
                char *f[6], *s = NULL, *sep = strstr(line, " - ");
                if (!sep)
                        continue;
                *sep = 0;
                size_t k = 0;
                for (char *t = strtok_r(line, " ", &s); t && k < 6; t = strtok_r(NULL, " ", &s))
                        f[k++] = t;
                char *fstype = strtok_r(sep + 3, " ", &s);
                char *source = fstype ? strtok_r(NULL, " ", &s) : NULL;
                char *super = source ? strtok_r(NULL, " ", &s) : NULL;
                if (k < 5 || !super)
                        continue;
                unescape(f[3]);
                unescape(f[4]);
                v = rkl_xrealloc(v, (n + 1) * sizeof(*v));
                v[n++] = (mount_line){f[3], f[4], fstype, super};
        }
        *ret_n = n;
        return v;
}

/* Whether a later mount on path or on a directory above it hides mount i. */
static bool hidden(const mount_line *m, size_t n, size_t i)
{
        for (size_t j = i + 1; j < n; j++) {
                size_t k = strlen(m[j].mountpoint);
                if (streq(m[j].mountpoint, "/") ||
                    (!strncmp(m[i].mountpoint, m[j].mountpoint, k) &&
                     (m[i].mountpoint[k] == 0 || m[i].mountpoint[k] == '/')))
                        return true;
        }
        return false;
}

/* The directory of e's cgroup under the first visible mount of its hierarchy that holds it
 * (a mount of the hierarchy's part above the reader's cgroup namespace, "/..", holds none). */
static char *dir_of(const rkl_cgroup_entry *e, const mount_line *m, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                if (e->unified
                        ? !streq(m[i].fstype, "cgroup2")
                        : !streq(m[i].fstype, "cgroup") || !words_among(e->controllers, m[i].super))
                        continue;
                size_t k = streq(m[i].root, "/") ? 0 : strlen(m[i].root);
                if (strncmp(e->path, m[i].root, k) != 0 || (e->path[k] != '/' && e->path[k] != 0))
                        continue; /* this mount shows another part of the hierarchy */
                if (hidden(m, n, i))
                        continue;
                const char *rest = e->path + k;
                return rkl_xasprintf("%s%s", m[i].mountpoint, streq(rest, "/") ? "" : rest);
        }
        return NULL;
}

int rkl_cgroup_entries_parse(const char *proc_cgroup, const char *mountinfo, rkl_cgroup_entry **ret,
                             size_t *ret_n)
{
        _cleanup_free_ char *copy = rkl_xstrdup(proc_cgroup);
        _cleanup_free_ char *mcopy = mountinfo ? rkl_xstrdup(mountinfo) : NULL;
        size_t n_mounts = 0;
        _cleanup_free_ mount_line *mounts = mcopy ? mounts_parse(mcopy, &n_mounts) : NULL;
        rkl_cgroup_entry *v = NULL;
        size_t n = 0;
        char *save = NULL;

        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                /* hierarchy-ID:controller-list:path */
                char *c = strchr(line, ':');
                char *p = c ? strchr(c + 1, ':') : NULL;
                if (!p || p[1] != '/') {
                        rkl_cgroup_entries_free(v, n);
                        return -EBADMSG;
                }
                *c++ = 0;
                *p++ = 0;
                v = rkl_xrealloc(v, (n + 1) * sizeof(*v));
                v[n] = (rkl_cgroup_entry){
                    .unified = streq(line, "0") && !*c,
                    .controllers = rkl_xstrdup(c),
                    .path = rkl_xstrdup(p),
                };
                if (v[n].unified || *c)
                        v[n].dir = dir_of(&v[n], mounts, n_mounts);
                n++;
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

int rkl_cgroup_entries_of(pid_t pid, rkl_cgroup_entry **ret, size_t *ret_n)
{
        _cleanup_free_ char *path = rkl_xasprintf("/proc/%d/cgroup", (int)pid);
        _cleanup_free_ char *text = NULL, *mountinfo = NULL;
        int r = rkl_read_file_at(AT_FDCWD, path, MAX_PROC_FILE, &text, NULL);
        if (r == -ENOENT)
                return -ESRCH;
        if (r < 0)
                return r;
        r = rkl_read_file_at(AT_FDCWD, "/proc/self/mountinfo", MAX_PROC_FILE, &mountinfo, NULL);
        if (r < 0)
                return r;
        return rkl_cgroup_entries_parse(text, mountinfo, ret, ret_n);
}

int rkl_cgroup_path_of(pid_t pid, const char *controller, char **ret)
{
        _cleanup_free_ char *path = rkl_xasprintf("/proc/%d/cgroup", (int)pid);
        _cleanup_free_ char *text = NULL;
        rkl_cgroup_entry *e = NULL;
        size_t n = 0;
        int r = rkl_read_file_at(AT_FDCWD, path, MAX_PROC_FILE, &text, NULL);
        if (r < 0)
                return r;
        r = rkl_cgroup_entries_parse(text, NULL, &e, &n);
        if (r < 0)
                return r;
        r = -ENODATA;
        for (size_t i = 0; i < n && r < 0; i++)
                if (*controller ? words_among(controller, e[i].controllers) : e[i].unified) {
                        *ret = TAKE_PTR(e[i].path);
                        r = 0;
                }
        rkl_cgroup_entries_free(e, n);
        return r;
}

int rkl_cgroup_pids_at(int dirfd, const char *dir, pid_t **ret, size_t *ret_n)
{
        _cleanup_free_ char *procs = rkl_xasprintf("%s/cgroup.procs", dir);
        _cleanup_free_ char *text = NULL;
        *ret = NULL;
        *ret_n = 0;
        int r = rkl_read_file_at(dirfd, procs, MAX_PROC_FILE, &text, NULL);
        if (r < 0)
                return r;
        pid_t *pids = NULL;
        size_t n = 0, room = 0;
        for (char *line = text, *next; *line; line = next) {
                next = line + strcspn(line, "\n");
                if (*next)
                        *next++ = 0;
                unsigned pid;
                if (rkl_safe_atou(line, &pid) < 0 || pid == 0 || pid > INT_MAX)
                        continue;
                if (n == room) {
                        room = room ? 2 * room : 16;
                        pids = rkl_xrealloc(pids, room * sizeof(*pids));
                }
                pids[n++] = (pid_t)pid;
        }
        *ret = pids;
        *ret_n = n;
        return 0;
}

int rkl_cgroup_kill(const char *dir, int sig)
{
        int n = 0;
        _cleanup_free_ pid_t *pids = NULL;
        size_t n_pids = 0;
        if (rkl_cgroup_pids_at(AT_FDCWD, dir, &pids, &n_pids) == 0)
                for (size_t i = 0; i < n_pids; i++)
                        if (pids[i] > 1 && kill(pids[i], sig) == 0)
                                n++;
        _cleanup_closedir_ DIR *d = opendir(dir);
        if (!d)
                return n;
        struct dirent *de;
        while ((de = readdir(d)))
                if (de->d_type == DT_DIR && de->d_name[0] != '.') {
                        _cleanup_free_ char *sub = rkl_xasprintf("%s/%s", dir, de->d_name);
                        n += rkl_cgroup_kill(sub, sig);
                }
        return n;
}

bool rkl_cgroup_is_empty(const char *dir)
{
        _cleanup_free_ char *events = rkl_xasprintf("%s/cgroup.events", dir);
        _cleanup_free_ char *text = NULL;
        /* cgroup2 counts the whole subtree for us. */
        if (rkl_read_file_at(AT_FDCWD, events, 64 * 1024, &text, NULL) == 0) {
                const char *p = strstr(text, "populated ");
                return !p || p[strlen("populated ")] == '0';
        }
        _cleanup_free_ char *procs = rkl_xasprintf("%s/cgroup.procs", dir);
        text = mfree(text);
        if (rkl_read_file_at(AT_FDCWD, procs, MAX_PROC_FILE, &text, NULL) < 0)
                return true; /* gone */
        if (*text)
                return false;
        _cleanup_closedir_ DIR *d = opendir(dir);
        struct dirent *de;
        while (d && (de = readdir(d)))
                if (de->d_type == DT_DIR && de->d_name[0] != '.') {
                        _cleanup_free_ char *sub = rkl_xasprintf("%s/%s", dir, de->d_name);
                        if (!rkl_cgroup_is_empty(sub))
                                return false;
                }
        return true;
}

int rkl_cgroup_remove(const char *dir)
{
        int r = 0;
        _cleanup_closedir_ DIR *d = opendir(dir);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        struct dirent *de;
        while ((de = readdir(d)))
                if (de->d_type == DT_DIR && de->d_name[0] != '.') {
                        _cleanup_free_ char *sub = rkl_xasprintf("%s/%s", dir, de->d_name);
                        int k = rkl_cgroup_remove(sub);
                        if (k < 0 && r == 0)
                                r = k;
                }
        if (rmdir(dir) < 0 && errno != ENOENT && r == 0)
                r = -errno;
        return r;
}

void rkl_cgroup_kill_all(const char *dir)
{
        _cleanup_free_ char *path = rkl_xasprintf("%s/cgroup.kill", dir);
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "1", 1) != 1)
                (void)rkl_cgroup_kill(dir, SIGKILL);
}

int rkl_cgroup_kill_and_remove(const char *dir, uint64_t timeout_usec)
{
        uint64_t start = rkl_now_usec(CLOCK_MONOTONIC);
        long pause_ns = 200 * (long)NSEC_PER_USEC;

        for (;;) {
                if (!rkl_cgroup_is_empty(dir))
                        rkl_cgroup_kill_all(dir);
                else if (rkl_cgroup_remove(dir) == 0)
                        return 0;
                /* Killed processes leave their cgroup as they finish exiting. */
                if (rkl_now_usec(CLOCK_MONOTONIC) - start > timeout_usec)
                        return -EBUSY;
                struct timespec ts = {.tv_nsec = pause_ns};
                (void)nanosleep(&ts, NULL);
                if (pause_ns < 10 * (long)NSEC_PER_MSEC)
                        pause_ns *= 2;
        }
}

/* The parent of pid, from /proc/PID/stat ("pid (comm) state ppid ..."). */
static pid_t parent_of(pid_t pid)
{
        char path[64];
        _cleanup_free_ char *stat = NULL;
        (void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        if (rkl_read_file_at(AT_FDCWD, path, 4096, &stat, NULL) < 0)
                return -1;
        const char *p = strrchr(stat, ')');
        int ppid;
        char state;
        if (!p || sscanf(p + 1, " %c %d", &state, &ppid) != 2)
                return -1;
        return ppid;
}

static bool same_exe(pid_t a, pid_t b)
{
        char pa[64], pb[64];
        struct stat sa, sb;
        (void)snprintf(pa, sizeof(pa), "/proc/%d/exe", (int)a);
        (void)snprintf(pb, sizeof(pb), "/proc/%d/exe", (int)b);
        return stat(pa, &sa) == 0 && stat(pb, &sb) == 0 && sa.st_dev == sb.st_dev &&
               sa.st_ino == sb.st_ino;
}

int rkl_pid_before_exec(pid_t pid, char **ret_comm)
{
        char path[64];
        _cleanup_free_ char *comm = NULL;
        (void)snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
        int r = rkl_read_file_at(AT_FDCWD, path, 64, &comm, NULL);
        if (r == -ENOENT || r == -ESRCH)
                return -ESRCH;
        if (r < 0)
                return r;
        comm[strcspn(comm, "\n")] = 0;
        size_t n = strlen(comm);
        /* Right after the fork it still has the manager's name and binary (only systemd's:
         * a shell whose child is a shell is no manager). */
        bool forked = n >= 2 && comm[0] == '(' && comm[n - 1] == ')';
        if (!forked && streq(comm, "systemd")) {
                pid_t parent = parent_of(pid);
                forked = parent > 0 && same_exe(pid, parent);
        }
        if (ret_comm)
                *ret_comm = TAKE_PTR(comm);
        return forked;
}
