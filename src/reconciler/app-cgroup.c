#include "app-cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>

#include "base/alloc.h"
#include "base/cgroup.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/model.h"
#include "base/parse.h"
#include "stats/stats.h"
#include "base/banned.h"

#define CGROUP_ROOT    "/sys/fs/cgroup"
#define CPU_WEIGHT_MAX 10000 /* cgroup2's cpu.weight: 1 to 10000 */

static bool is_dir(const char *p)
{
        struct stat st;
        return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The pod unit's part of a supervisor's cgroup path: up to its last component that is a
 * service ("/system.slice/rktlet-X.service/supervisor" -> "/system.slice/rktlet-X.service";
 * under a user manager the path holds user@0.service too, above the pod's unit). */
static char *unit_part(const char *path)
{
        const char *unit_end = NULL;
        for (const char *c = path; *c;) {
                const char *end = strchrnul(c + 1, '/');
                if (end - c > 8 && !strncmp(end - 8, ".service", 8))
                        unit_end = end;
                c = end;
        }
        return unit_end ? rkl_xstrndup(path, (size_t)(unit_end - path)) : NULL;
}

/* Looks for a directory called name at most depth levels below dir; its path relative to
 * dir goes to *ret. Shallow first, so a shallower match wins. */
static int find_dir(const char *dir, const char *name, int depth, char **ret)
{
        _cleanup_free_ char *direct = rkl_xasprintf("%s/%s", dir, name);
        if (is_dir(direct)) {
                *ret = rkl_xstrdup(name);
                return 0;
        }
        if (depth <= 1)
                return -ENXIO;
        _cleanup_closedir_ DIR *d = opendir(dir);
        if (!d)
                return -errno;
        struct dirent *de;
        while ((de = readdir(d)))
                if (de->d_type == DT_DIR && de->d_name[0] != '.') {
                        _cleanup_free_ char *sub = rkl_xasprintf("%s/%s", dir, de->d_name);
                        _cleanup_free_ char *rel = NULL;
                        if (find_dir(sub, name, depth - 1, &rel) == 0) {
                                *ret = rkl_xasprintf("%s/%s", de->d_name, rel);
                                return 0;
                        }
                }
        return -ENXIO;
}

int rkl_app_cgroup_paths(pid_t supervisor, const char *app, char **ret_procs_dir,
                         char **ret_memory_dir)
{
        _cleanup_free_ char *own = NULL, *unit = NULL, *base = NULL, *rel = NULL;
        _cleanup_free_ char *name = rkl_xasprintf("%s.service", app);
        const char *root;
        bool v1 = rkl_cgroup_path_of(supervisor, "name=systemd", &own) == 0 &&
                  is_dir(CGROUP_ROOT "/systemd");
        int r;

        if (v1)
                root = CGROUP_ROOT "/systemd";
        else {
                r = rkl_cgroup_path_of(supervisor, "", &own);
                if (r < 0)
                        return r;
                root = CGROUP_ROOT;
        }
        unit = unit_part(own);
        if (!unit)
                return -ENXIO;
        base = rkl_xasprintf("%s%s", root, unit);
        /* <unit>/payload/system.slice/<app>.service is three levels down. */
        r = find_dir(base, name, 3, &rel);
        if (r < 0)
                return r == -ENOENT && kill(supervisor, 0) < 0 ? -ENOENT : -ENXIO;

        char *memory = NULL;
        if (v1) {
                _cleanup_free_ char *mem = NULL, *mem_unit = NULL;
                if (rkl_cgroup_path_of(supervisor, "memory", &mem) == 0 &&
                    (mem_unit = unit_part(mem)))
                        memory = rkl_xasprintf(CGROUP_ROOT "/memory%s/%s", mem_unit, rel);
        } else
                memory = rkl_xasprintf("%s/%s", base, rel);
        *ret_procs_dir = rkl_xasprintf("%s/%s", base, rel);
        *ret_memory_dir = memory;
        return 0;
}

const char *rkl_app_cgroup_relative(const char *dir)
{
        /* cgroup2 has cgroup.controllers at its root; v1 mounts a tmpfs there. */
        bool v2 = access(CGROUP_ROOT "/cgroup.controllers", F_OK) == 0;
        const char *rel = startswith(dir, v2 ? CGROUP_ROOT : CGROUP_ROOT "/memory");
        return rel && rel[0] == '/' && rel[1] ? rel : NULL;
}

int rkl_app_cgroup_first_pid(const char *dir, pid_t *ret)
{
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0;
        int r = rkl_cgroup_pids_at(AT_FDCWD, dir, &pids, &n);
        if (r < 0)
                return r;
        *ret = n > 0 ? pids[0] : 0;
        return 0;
}

static bool pid_among(const pid_t *pids, size_t n, pid_t pid)
{
        for (size_t i = 0; i < n; i++)
                if (pids[i] == pid)
                        return true;
        return false;
}

/* Moves pid into the cgroup dir: -ESRCH when the process is gone. */
static int move_pid(const char *dir, pid_t pid)
{
        _cleanup_free_ char *procs = rkl_xasprintf("%s/cgroup.procs", dir);
        _cleanup_close_ int fd = open(procs, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        char text[16];
        int n = snprintf(text, sizeof(text), "%d", (int)pid);
        return write(fd, text, (size_t)n) < 0 ? -errno : 0;
}

int rkl_app_cgroup_memory_adopt(const char *procs_dir, const char *memory_dir)
{
        if (!memory_dir || streq(procs_dir, memory_dir))
                return 0;
        int r = rkl_mkdir_p(memory_dir, 0755);
        if (r < 0)
                return r;
        int moved = 0;
        /* Each pass moves what it saw; a child forked meanwhile shows up in the next. */
        for (int pass = 0; pass < 16; pass++) {
                _cleanup_free_ pid_t *pids = NULL, *have = NULL;
                size_t n_pids = 0, n_have = 0;
                r = rkl_cgroup_pids_at(AT_FDCWD, procs_dir, &pids, &n_pids);
                if (r < 0)
                        return r;
                r = rkl_cgroup_pids_at(AT_FDCWD, memory_dir, &have, &n_have);
                if (r < 0)
                        return r;
                int n = 0;
                for (size_t i = 0; i < n_pids; i++) {
                        if (pid_among(have, n_have, pids[i]))
                                continue;
                        r = move_pid(memory_dir, pids[i]);
                        if (r == -ESRCH)
                                continue; /* it exited meanwhile */
                        if (r < 0)
                                return r;
                        n++;
                }
                if (n == 0)
                        return moved;
                moved += n;
        }
        return moved;
}

bool rkl_app_cgroup_memory_lent(const char *procs_dir, const char *memory_dir)
{
        if (!memory_dir || streq(procs_dir, memory_dir))
                return false;
        _cleanup_free_ pid_t *app = NULL, *all = NULL;
        size_t n_app = 0, n_all = 0;
        if (rkl_cgroup_pids_at(AT_FDCWD, procs_dir, &app, &n_app) < 0 ||
            rkl_cgroup_pids_at(AT_FDCWD, memory_dir, &all, &n_all) < 0)
                return false;
        for (size_t i = 0; i < n_all; i++)
                if (!pid_among(app, n_app, all[i]))
                        return true;
        return false;
}

int rkl_app_cgroup_memory_release(const char *procs_dir, const char *memory_dir)
{
        if (!memory_dir || streq(procs_dir, memory_dir))
                return 0;
        return rmdir(memory_dir) < 0 && errno != ENOENT ? -errno : 0;
}

/* The unit's directory in each hierarchy under CGROUP_ROOT, handed to fn until it returns
 * true; whether one did. */
static bool unit_in_hierarchies(const char *unit_path, bool (*fn)(const char *path))
{
        _cleanup_closedir_ DIR *d = opendir(CGROUP_ROOT);
        struct dirent *de;
        while (d && (de = readdir(d)))
                if (de->d_name[0] != '.') {
                        _cleanup_free_ char *p =
                            rkl_xasprintf(CGROUP_ROOT "/%s/%s", de->d_name, unit_path);
                        if (fn(p))
                                return true;
                }
        return false;
}

static bool remove_one(const char *path)
{
        (void)rkl_cgroup_remove(path); /* busy (processes left) or gone: nothing to do here */
        return false;
}

void rkl_app_cgroup_unit_remove(const char *unit_path)
{
        (void)unit_in_hierarchies(unit_path, remove_one);
}

bool rkl_app_cgroup_unit_left(const char *unit_path)
{
        return unit_in_hierarchies(unit_path, is_dir);
}

int rkl_app_cgroup_oom_kills(const char *memory_dir, unsigned *ret)
{
        static const char *const files[] = {"memory.events", "memory.oom_control"};
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                _cleanup_free_ char *p = rkl_xasprintf("%s/%s", memory_dir, files[i]);
                _cleanup_free_ char *text = NULL;
                if (rkl_read_file_at(AT_FDCWD, p, 64 * 1024, &text, NULL) < 0)
                        continue;
                char *k = strstr(text, "oom_kill ");
                if (!k)
                        continue;
                k += strlen("oom_kill ");
                k[strcspn(k, "\n")] = 0;
                return rkl_safe_atou(k, ret);
        }
        return is_dir(memory_dir) ? -ENODATA : -ENOENT;
}

/* The same relative cgroup in another v1 hierarchy: memory_dir is
 * /sys/fs/cgroup/memory/<path>. NULL when memory_dir is not in the memory hierarchy. */
static char *v1_sibling(const char *memory_dir, const char *controller)
{
        static const char prefix[] = CGROUP_ROOT "/memory/";
        if (!memory_dir || strncmp(memory_dir, prefix, sizeof(prefix) - 1))
                return NULL;
        return rkl_xasprintf(CGROUP_ROOT "/%s/%s", controller, memory_dir + sizeof(prefix) - 1);
}

int rkl_app_cgroup_cpu_adopt(const char *procs_dir, const char *memory_dir)
{
        int r = 0;
        if (!memory_dir || streq(procs_dir, memory_dir))
                return 0;
        /* cpu and cpuacct may be one hierarchy (cpu,cpuacct) or two: adopting into the same
         * directory twice moves nothing the second time. blkio too, so that the app's block
         * I/O is its own (else it counts at the hierarchy's root, the whole machine's). */
        static const char *const controllers[] = {"cpu", "cpuacct", "blkio"};
        for (size_t i = 0; i < ELEMENTSOF(controllers); i++) {
                _cleanup_free_ char *dir = v1_sibling(memory_dir, controllers[i]);
                _cleanup_free_ char *root = rkl_xasprintf(CGROUP_ROOT "/%s", controllers[i]);
                int k = dir && is_dir(root) ? rkl_app_cgroup_memory_adopt(procs_dir, dir) : 0;
                if (k < 0 && r == 0)
                        r = k;
        }
        return r;
}

void rkl_app_cgroup_cpu_release(const char *procs_dir, const char *memory_dir)
{
        if (!memory_dir || streq(procs_dir, memory_dir))
                return;
        _cleanup_free_ char *cpu = v1_sibling(memory_dir, "cpu");
        _cleanup_free_ char *cpuacct = v1_sibling(memory_dir, "cpuacct");
        _cleanup_free_ char *cpuset = v1_sibling(memory_dir, "cpuset");
        _cleanup_free_ char *blkio = v1_sibling(memory_dir, "blkio");
        if (blkio)
                (void)rmdir(blkio);
        if (cpu)
                (void)rmdir(cpu);
        if (cpuacct)
                (void)rmdir(cpuacct);
        if (cpuset)
                (void)rmdir(cpuset);
}

struct rkl_app_cgroup_loan {
        pid_t manager; /* the pod's systemd */
        char *lent;    /* the app's memory cgroup it was moved into */
        char *back;    /* its memory cgroup before, to go back to */
        char *mark;    /* "/<app>.service": the end of the app's own name=systemd cgroup */
};

int rkl_app_cgroup_lend(pid_t supervisor, const char *app, rkl_app_cgroup_loan **ret)
{
        _cleanup_free_ char *own = NULL, *unit = NULL, *base = NULL, *init = NULL, *mem = NULL;
        _cleanup_free_ char *mem_unit = NULL, *init_dir = NULL, *services = NULL, *now = NULL;
        _cleanup_free_ char *dir = NULL;
        pid_t manager = 0;

        *ret = NULL;
        if (!is_dir(CGROUP_ROOT "/memory") || !is_dir(CGROUP_ROOT "/systemd") ||
            rkl_cgroup_path_of(supervisor, "name=systemd", &own) < 0)
                return 0; /* cgroup2: the pod's systemd places its apps itself */
        if (!(unit = unit_part(own)) || rkl_cgroup_path_of(supervisor, "memory", &mem) < 0 ||
            !(mem_unit = unit_part(mem)))
                return -ENXIO;
        /* The pod's systemd runs in init.scope (<unit>/payload/init.scope with nspawn 252),
         * whose sibling system.slice is where it puts its services. */
        base = rkl_xasprintf(CGROUP_ROOT "/systemd%s", unit);
        int r = find_dir(base, "init.scope", 2, &init);
        if (r < 0)
                return r;
        init_dir = rkl_xasprintf("%s/%s", base, init);
        r = rkl_app_cgroup_first_pid(init_dir, &manager);
        if (r < 0)
                return r;
        if (manager <= 0)
                return -ESRCH;
        const char *slash = strrchr(init, '/');
        services = slash ? rkl_xstrndup(init, (size_t)(slash - init + 1)) : rkl_xstrdup("");
        dir = rkl_xasprintf(CGROUP_ROOT "/memory%s/%ssystem.slice/%s.service", mem_unit, services,
                            app);
        if (is_dir(dir))
                return 0;
        r = rkl_cgroup_path_of(manager, "memory", &now);
        if (r < 0)
                return r;
        r = rkl_mkdir_p(dir, 0755);
        if (r >= 0)
                r = move_pid(dir, manager);
        if (r < 0) {
                (void)rmdir(dir);
                return r;
        }
        rkl_app_cgroup_loan *loan = rkl_xnew0(rkl_app_cgroup_loan, 1);
        loan->manager = manager;
        /* Below its unit rather than at the unit's own level, it is still in the cgroup of a
         * loan that a daemon which died did not end: the unit's is where it belongs. */
        bool stray = startswith(now, mem_unit) && now[strlen(mem_unit)] == '/';
        loan->back = rkl_xasprintf(CGROUP_ROOT "/memory%s", stray ? mem_unit : now);
        loan->lent = TAKE_PTR(dir);
        loan->mark = rkl_xasprintf("/%s.service", app);
        *ret = loan;
        return 0;
}

/* Whether pid's name=systemd cgroup ends with mark: a process of the app's own unit. */
static bool in_unit(pid_t pid, const char *mark)
{
        _cleanup_free_ char *path = NULL;
        if (rkl_cgroup_path_of(pid, "name=systemd", &path) < 0)
                return true; /* gone, or unknown: leave it */
        size_t n = strlen(path), m = strlen(mark);
        return n >= m && streq(path + n - m, mark);
}

void rkl_app_cgroup_loan_end(rkl_app_cgroup_loan *loan, bool started)
{
        if (!loan)
                return;
        int k = move_pid(loan->back, loan->manager);
        if (k < 0 && k != -ESRCH)
                rkl_log_warning("cannot move the pod's systemd back to '%s' (%s): the pod's next "
                                "apps start in '%s'",
                                loan->back, strerror(-k), loan->lent);
        /* What else the pod's systemd forked meanwhile (the app's reaper-<app>.service, which
         * its unit wants) is not the app's: back to the pod's cgroup with it. */
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0;
        (void)rkl_cgroup_pids_at(AT_FDCWD, loan->lent, &pids, &n);
        for (size_t i = 0; i < n; i++)
                if (!in_unit(pids[i], loan->mark))
                        (void)move_pid(loan->back, pids[i]);
        if (!started)
                (void)rmdir(loan->lent); /* busy when its process is there after all */
        free(loan->lent);
        free(loan->back);
        free(loan->mark);
        free(loan);
}

static int write_at(const char *dir, const char *file, const char *value)
{
        _cleanup_free_ char *p = rkl_xasprintf("%s/%s", dir, file);
        _cleanup_close_ int fd = open(p, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return write(fd, value, strlen(value)) < 0 ? -errno : 0;
}

/* Keeps the first failure, with what failed. */
static int note(int r, int k, const char *what, rkl_error *reterr)
{
        if (k < 0 && r == 0)
                return rkl_error_set(reterr, k, "%s: %s", what, strerror(-k));
        return r;
}

/* Makes the v1 cpuset cgroup dir and each missing level above it: a new cpuset cgroup starts
 * with no CPUs and no memory nodes, where no process can be moved, so each takes its
 * parent's. */
static int cpuset_mkdir(const char *dir)
{
        if (is_dir(dir))
                return 0;
        _cleanup_free_ char *parent = rkl_xstrndup(dir, (size_t)(strrchr(dir, '/') - dir));
        if (strlen(parent) <= strlen(CGROUP_ROOT "/cpuset"))
                return -ENOENT;
        int r = cpuset_mkdir(parent);
        if (r < 0)
                return r;
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        static const char *const files[] = {"cpuset.cpus", "cpuset.mems"};
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                _cleanup_free_ char *from = rkl_xasprintf("%s/%s", parent, files[i]);
                _cleanup_free_ char *value = NULL;
                r = rkl_read_file_at(AT_FDCWD, from, 4096, &value, NULL);
                if (r < 0)
                        return r;
                value[strcspn(value, "\n")] = 0;
                r = write_at(dir, files[i], value);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Moves every process of the tree below dir into target. */
static int adopt_tree(const char *dir, const char *target)
{
        int moved = rkl_app_cgroup_memory_adopt(dir, target);
        if (moved < 0)
                return moved == -ENOENT ? 0 : moved; /* gone meanwhile */
        _cleanup_closedir_ DIR *d = opendir(dir);
        struct dirent *de;
        while (d && (de = readdir(d)))
                if (de->d_type == DT_DIR && de->d_name[0] != '.') {
                        _cleanup_free_ char *sub = rkl_xasprintf("%s/%s", dir, de->d_name);
                        int k = adopt_tree(sub, target);
                        if (k < 0)
                                return k;
                        moved += k;
                }
        return moved;
}

int rkl_app_cgroup_cpuset_join(const char *cgroup_parent, const char *unit)
{
        if (!cgroup_parent || cgroup_parent[0] != '/' || strstr(cgroup_parent, "/..") || !unit ||
            strchr(unit, '/') || !is_dir(CGROUP_ROOT "/cpuset"))
                return 0;
        _cleanup_free_ char *dir = rkl_xasprintf(CGROUP_ROOT "/cpuset%s/%s", cgroup_parent, unit);
        int r = cpuset_mkdir(dir);
        if (r < 0)
                return r;
        /* The unit's processes, in the hierarchy that tracks them: v1's name=systemd, or the
         * unified one of a hybrid machine. */
        static const char *const trackers[] = {"systemd", "unified"};
        for (size_t i = 0; i < ELEMENTSOF(trackers); i++) {
                _cleanup_free_ char *procs =
                    rkl_xasprintf(CGROUP_ROOT "/%s%s/%s", trackers[i], cgroup_parent, unit);
                if (is_dir(procs))
                        return adopt_tree(procs, dir);
        }
        return 0;
}

/* The CPUs the app may run on: on v1 in a cpuset cgroup of its own (the same relative path as
 * its memory cgroup, made here and its processes moved in: rkt leaves apps in the pod's);
 * on cgroup2 in its own cgroup's cpuset.cpus, where the cpuset controller is enabled. */
static int apply_cpuset(const char *procs_dir, const char *memory_dir, bool v1, const char *cpus)
{
        if (!v1)
                return write_at(procs_dir, "cpuset.cpus", cpus);
        _cleanup_free_ char *dir = v1_sibling(memory_dir, "cpuset");
        if (!dir || !is_dir(CGROUP_ROOT "/cpuset"))
                return -EOPNOTSUPP;
        int r = cpuset_mkdir(dir);
        if (r >= 0)
                r = write_at(dir, "cpuset.cpus", cpus);
        if (r >= 0)
                r = rkl_app_cgroup_memory_adopt(procs_dir, dir);
        return r < 0 ? r : 0;
}

int rkl_app_cgroup_apply_limits(const char *procs_dir, const char *memory_dir,
                                const rkl_app_cgroup_limits *l, rkl_error *reterr)
{
        bool v1 = memory_dir && !streq(procs_dir, memory_dir);
        _cleanup_free_ char *cpu = v1 ? v1_sibling(memory_dir, "cpu") : rkl_xstrdup(procs_dir);
        const char *mem = memory_dir ? memory_dir : procs_dir;
        char buf[64];
        int r = 0;

        if (l->memory_limit > 0) {
                snprintf(buf, sizeof(buf), "%" PRId64, l->memory_limit);
                int k = write_at(mem, v1 ? "memory.limit_in_bytes" : "memory.max", buf);
                /* v1: swap counts against memsw; without it the app would swap instead of
                 * being OOM-killed at its limit (kubelet gives no swap). The kernel wants
                 * limit <= memsw at every step: a raise goes memsw first, then memory. */
                if (v1) {
                        (void)write_at(mem, "memory.memsw.limit_in_bytes", buf);
                        if (k < 0)
                                k = write_at(mem, "memory.limit_in_bytes", buf);
                } else
                        (void)write_at(mem, "memory.swap.max", "0");
                r = note(r, k, "memory limit", reterr);
        }
        if (cpu && l->cpu_shares > 0) {
                if (v1)
                        snprintf(buf, sizeof(buf), "%" PRId64, l->cpu_shares);
                else /* shares onto cgroup2's weight, as runc does */
                        snprintf(buf, sizeof(buf), "%" PRId64,
                                 1 + ((l->cpu_shares - RKL_MIN_CPU_SHARES) * (CPU_WEIGHT_MAX - 1)) /
                                         (RKL_MAX_CPU_SHARES - RKL_MIN_CPU_SHARES));
                r = note(r, write_at(cpu, v1 ? "cpu.shares" : "cpu.weight", buf), "cpu shares",
                         reterr);
        }
        if (cpu && (l->cpu_quota > 0 || l->cpu_period > 0)) {
                int64_t period = l->cpu_period > 0 ? l->cpu_period : RKL_DEFAULT_CPU_PERIOD_USEC;
                if (v1) {
                        snprintf(buf, sizeof(buf), "%" PRId64, period);
                        r = note(r, write_at(cpu, "cpu.cfs_period_us", buf), "cpu period", reterr);
                        snprintf(buf, sizeof(buf), "%" PRId64,
                                 l->cpu_quota > 0 ? l->cpu_quota : -1);
                        r = note(r, write_at(cpu, "cpu.cfs_quota_us", buf), "cpu quota", reterr);
                } else {
                        if (l->cpu_quota > 0)
                                snprintf(buf, sizeof(buf), "%" PRId64 " %" PRId64, l->cpu_quota,
                                         period);
                        else
                                snprintf(buf, sizeof(buf), "max %" PRId64, period);
                        r = note(r, write_at(cpu, "cpu.max", buf), "cpu quota", reterr);
                }
        }
        if (l->cpuset_cpus)
                r = note(r, apply_cpuset(procs_dir, memory_dir, v1, l->cpuset_cpus), "cpuset",
                         reterr);
        if (l->oom_score_adj != 0) {
                /* Every process the app has now; its children inherit the value. */
                _cleanup_free_ pid_t *pids = NULL;
                size_t n = 0;
                snprintf(buf, sizeof(buf), "%" PRId64, l->oom_score_adj);
                (void)rkl_cgroup_pids_at(AT_FDCWD, procs_dir, &pids, &n);
                for (size_t i = 0; i < n; i++) {
                        _cleanup_free_ char *p = rkl_xasprintf("/proc/%d", (int)pids[i]);
                        int k = write_at(p, "oom_score_adj", buf);
                        if (k != -ENOENT && k != -ESRCH)
                                r = note(r, k, "oom_score_adj", reterr);
                }
        }
        return r;
}

/* The same cgroup in the unified hierarchy of a hybrid host (where its *.pressure are). */
static char *unified_of(const char *systemd_dir)
{
        static const char prefix[] = CGROUP_ROOT "/systemd/";
        if (!systemd_dir || strncmp(systemd_dir, prefix, sizeof(prefix) - 1) ||
            !is_dir(CGROUP_ROOT "/unified"))
                return NULL;
        return rkl_xasprintf(CGROUP_ROOT "/unified/%s", systemd_dir + sizeof(prefix) - 1);
}

/* The pod unit's cgroup in a v1 hierarchy, from the supervisor's. */
static char *v1_unit_dir(pid_t supervisor, const char *controller)
{
        _cleanup_free_ char *own = NULL, *unit = NULL;
        if (rkl_cgroup_path_of(supervisor, controller, &own) < 0 || !(unit = unit_part(own)))
                return NULL;
        const char *dir = streq(controller, "name=systemd") ? "systemd" : controller;
        return rkl_xasprintf(CGROUP_ROOT "/%s%s", dir, unit);
}

int rkl_app_cgroup_stats_dirs(pid_t supervisor, const char *app, rkl_stats_dirs *ret)
{
        rkl_stats_dirs d = {0};
        if (app) {
                _cleanup_free_ char *procs = NULL, *memory = NULL;
                int r = rkl_app_cgroup_paths(supervisor, app, &procs, &memory);
                if (r < 0)
                        return r;
                if (memory && !streq(procs, memory)) { /* v1 */
                        d.cpu = v1_sibling(memory, "cpuacct");
                        d.cpu_spec = v1_sibling(memory, "cpu");
                        d.blkio = v1_sibling(memory, "blkio");
                        /* The app's processes stay in the pod unit's pids cgroup. */
                        d.pids_max = v1_unit_dir(supervisor, "pids");
                        d.pressure = unified_of(procs);
                        d.memory = TAKE_PTR(memory);
                        /* The memory cgroup holds the pod's systemd too while it starts
                         * the app (rkl_app_cgroup_lend). */
                        d.procs = TAKE_PTR(procs);
                } else {
                        d.cpu = rkl_xstrdup(procs);
                        d.cpu_spec = rkl_xstrdup(procs);
                        d.memory = rkl_xstrdup(procs);
                        d.pids_max = rkl_xstrdup(procs);
                        d.blkio = rkl_xstrdup(procs);
                        d.pressure = rkl_xstrdup(procs);
                        d.pids = TAKE_PTR(procs);
                }
                *ret = d;
                return 0;
        }
        if (is_dir(CGROUP_ROOT "/memory")) {
                /* v1: the pod's unit has memory and pids cgroups; its CPU is its apps' (the
                 * unit gets no cpuacct cgroup of its own here: docs/rkt.md, 'Cgroups'). */
                d.memory = v1_unit_dir(supervisor, "memory");
                if (!d.memory)
                        return -ENXIO;
                d.pids = v1_unit_dir(supervisor, "pids");
                d.cpu = v1_unit_dir(supervisor, "cpuacct");
                _cleanup_free_ char *systemd = v1_unit_dir(supervisor, "name=systemd");
                d.pressure = unified_of(systemd);
        } else {
                _cleanup_free_ char *own = NULL;
                int r = rkl_cgroup_path_of(supervisor, "", &own);
                if (r < 0)
                        return r;
                _cleanup_free_ char *unit = unit_part(own);
                if (!unit)
                        return -ENXIO;
                d.cpu = rkl_xasprintf(CGROUP_ROOT "%s", unit);
                d.memory = rkl_xstrdup(d.cpu);
                d.pids = rkl_xstrdup(d.cpu);
                d.pressure = rkl_xstrdup(d.cpu);
        }
        *ret = d;
        return 0;
}
