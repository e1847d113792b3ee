/* rkl_exec_run() against a "container" the test makes (as root): a process in fresh mount,
 * UTS, IPC, network and PID namespaces (with a devpts of its own, as rkt's pods have),
 * chrooted into a busybox root, in cgroups of the
 * test's own, running as uid 1000 / gid 1234 with groups 1234 and 5678, one ambient
 * capability, a smaller bounding set, no_new_privs, a umask, a limit and an OOM score. What
 * the command sees from inside must be all of that; what it starts must be gone after. This
 * binary is its own helper: main() dispatches `__exec-in` as rktlet's does. */
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "base/alloc.h"
#include "base/cgroup.h"
#include "base/fileio.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "exec/exec.h"

#define HOSTNAME   "rkl-exec-test"
#define TEST_UID   1000
#define TEST_GID   1234
#define TEST_GROUP 5678

typedef struct fixture {
        char root[64];
        char **cgroups; /* the test's own, one a hierarchy, holding the target */
        pid_t outer;    /* the target's grandparent, in our namespaces */
        pid_t init;     /* PID 1 of the target's PID namespace */
        pid_t target;   /* the "app" */
} fixture;

static fixture *F;

static void write_file(const char *path, const char *s)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, s, strlen(s)) != (ssize_t)strlen(s))
                _exit(100);
        close(fd);
}

/* The app: what rkt's stage1 would have made of a container running as a user. */
_noreturn_ static void target_main(const char *root)
{
        struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
        uint32_t nbs = UINT32_C(1) << CAP_NET_BIND_SERVICE;
        struct __user_cap_data_struct d[2] = {{nbs, nbs, nbs}, {0, 0, 0}};
        gid_t groups[] = {TEST_GID, TEST_GROUP};
        struct rlimit nofile = {512, 1024};

        if (chroot(root) < 0 || chdir("/work") < 0)
                _exit(101);
        write_file("/proc/self/oom_score_adj", "123");
        if (setrlimit(RLIMIT_NOFILE, &nofile) < 0)
                _exit(102);
        umask(027);
        if (prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0) < 0 ||
            prctl(PR_CAPBSET_DROP, CAP_SYS_MODULE, 0, 0, 0) < 0 ||
            setgroups(ELEMENTSOF(groups), groups) < 0 ||
            setresgid(TEST_GID, TEST_GID, TEST_GID) < 0 || prctl(PR_SET_KEEPCAPS, 1) < 0 ||
            setresuid(TEST_UID, TEST_UID, TEST_UID) < 0 || syscall(SYS_capset, &h, d) < 0 ||
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_BIND_SERVICE, 0, 0) < 0 ||
            prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                _exit(103);
        execve("/bin/sleep", RKL_STRV("sleep", "1000"),
               RKL_STRV("PATH=/bin", "FOO=bar", "LISTEN_FDS=2"));
        _exit(104);
}

/* PID 1 of the new PID namespace: mounts its /proc, /dev/null and a devpts of its own (as
 * nspawn does for a pod: /dev/ptmx links to its ptmx) in the root, then reaps, as a pod's
 * systemd does. */
_noreturn_ static void init_main(const char *root)
{
        _cleanup_free_ char *proc = rkl_xasprintf("%s/proc", root);
        _cleanup_free_ char *pts = rkl_xasprintf("%s/dev/pts", root);
        _cleanup_free_ char *null = rkl_xasprintf("%s/dev/null", root);
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount("proc", proc, "proc", 0, NULL) < 0 ||
            mount("/dev/null", null, NULL, MS_BIND, NULL) < 0 ||
            mount("devpts", pts, "devpts", MS_NOSUID | MS_NOEXEC,
                  "newinstance,ptmxmode=0666,mode=620") < 0 ||
            sethostname(HOSTNAME, strlen(HOSTNAME)) < 0)
                _exit(110);
        pid_t pid = fork();
        if (pid == 0)
                target_main(root);
        for (;;) {
                int status;
                pid_t p = wait(&status);
                if (p == pid || (p < 0 && errno == ECHILD))
                        _exit(0);
        }
}

static void copy_file(const char *from, const char *to)
{
        _cleanup_free_ char *data = NULL;
        size_t n;
        assert_int_equal(rkl_read_file_at(AT_FDCWD, from, 64 << 20, &data, &n), 0);
        int fd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, n), (ssize_t)n);
        close(fd);
}

static void rootfs_make(fixture *f)
{
        static const char *const applets[] = {
            "sh", "id",       "pwd",      "env", "cat",  "sleep", "true", "kill", "yes", "head",
            "tr", "hostname", "readlink", "ls",  "grep", "echo",  "tty",  "stat", "stty"};
        (void)snprintf(f->root, sizeof(f->root), "/tmp/rkl-test-exec-XXXXXX");
        assert_non_null(mkdtemp(f->root));
        assert_int_equal(chmod(f->root, 0755), 0);
        static const char *const dirs[] = {"bin", "work", "proc", "etc", "dev", "dev/pts"};
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                _cleanup_free_ char *p = rkl_xasprintf("%s/%s", f->root, dirs[i]);
                assert_int_equal(mkdir(p, 0755), 0);
        }
        _cleanup_free_ char *ptmx = rkl_xasprintf("%s/dev/ptmx", f->root);
        assert_int_equal(symlink("/dev/pts/ptmx", ptmx), 0);
        _cleanup_free_ char *null = rkl_xasprintf("%s/dev/null", f->root);
        int fd = open(null, O_WRONLY | O_CREAT | O_CLOEXEC, 0666); /* where /dev/null goes */
        assert_true(fd >= 0);
        close(fd);
        _cleanup_free_ char *bb = rkl_xasprintf("%s/bin/busybox", f->root);
        copy_file("/bin/busybox", bb);
        for (size_t i = 0; i < ELEMENTSOF(applets); i++) {
                _cleanup_free_ char *p = rkl_xasprintf("%s/bin/%s", f->root, applets[i]);
                assert_int_equal(symlink("busybox", p), 0);
        }
}

/* A cgroup of the test's own under each of its cgroups (v1 cpuset ones get CPUs and
 * memory nodes, which no process can join without). */
static void cgroups_make(fixture *f)
{
        rkl_cgroup_entry *e = NULL;
        size_t n = 0;
        assert_int_equal(rkl_cgroup_entries_of(getpid(), &e, &n), 0);
        for (size_t i = 0; i < n; i++) {
                if (!e[i].dir)
                        continue;
                _cleanup_free_ char *d = rkl_xasprintf("%s/rkl-test-exec-%d", e[i].dir, getpid());
                if (mkdir(d, 0755) < 0)
                        continue;
                if (strstr(e[i].controllers, "cpuset")) {
                        static const char *const files[] = {"cpuset.cpus", "cpuset.mems"};
                        for (size_t k = 0; k < 2; k++) {
                                _cleanup_free_ char *from =
                                    rkl_xasprintf("%s/%s", e[i].dir, files[k]);
                                _cleanup_free_ char *to = rkl_xasprintf("%s/%s", d, files[k]);
                                _cleanup_free_ char *v = NULL;
                                assert_int_equal(rkl_read_file_at(AT_FDCWD, from, 4096, &v, NULL),
                                                 0);
                                int fd = open(to, O_WRONLY | O_CLOEXEC);
                                assert_true(fd >= 0 && write(fd, v, strlen(v)) >= 0);
                                close(fd);
                        }
                }
                rkl_strv_push(&f->cgroups, d);
        }
        rkl_cgroup_entries_free(e, n);
}

static pid_t first_child(pid_t pid)
{
        _cleanup_free_ char *p = rkl_xasprintf("/proc/%d/task/%d/children", pid, pid);
        _cleanup_free_ char *text = NULL;
        if (rkl_read_file_at(AT_FDCWD, p, 4096, &text, NULL) < 0)
                return 0;
        return (pid_t)strtol(text, NULL, 10);
}

static bool is_sleeping(pid_t pid)
{
        _cleanup_free_ char *p = rkl_xasprintf("/proc/%d/comm", pid);
        _cleanup_free_ char *comm = NULL;
        return rkl_read_file_at(AT_FDCWD, p, 64, &comm, NULL) == 0 && streq(comm, "sleep\n");
}

static int setup(void **state)
{
        if (geteuid() != 0)
                return 0; /* every test skips */
        fixture *f = rkl_xnew0(fixture, 1);
        int p[2];

        rootfs_make(f);
        cgroups_make(f);
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        f->outer = fork();
        assert_true(f->outer >= 0);
        if (f->outer == 0) {
                RKL_STRV_FOREACH (d, f->cgroups) {
                        _cleanup_free_ char *procs = rkl_xasprintf("%s/cgroup.procs", *d);
                        write_file(procs, "0");
                }
                if (unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET |
                            CLONE_NEWPID) < 0)
                        _exit(120);
                pid_t init = fork();
                if (init == 0)
                        init_main(f->root);
                if (init < 0 || write(p[1], &init, sizeof(init)) != sizeof(init))
                        _exit(121);
                int status;
                (void)waitpid(init, &status, 0);
                _exit(0);
        }
        close(p[1]);
        assert_int_equal(read(p[0], &f->init, sizeof(f->init)), sizeof(f->init));
        close(p[0]);
        for (int i = 0; i < 500 && !(f->target && is_sleeping(f->target)); i++) {
                usleep(10 * 1000);
                f->target = first_child(f->init);
        }
        assert_true(f->target > 0 && is_sleeping(f->target));
        F = f;
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        fixture *f = *state;
        if (!f)
                return 0;
        (void)kill(f->init, SIGKILL);
        (void)waitpid(f->outer, NULL, 0);
        RKL_STRV_FOREACH (d, f->cgroups)
                assert_int_equal(rkl_cgroup_kill_and_remove(*d, 5 * USEC_PER_SEC), 0);
        rkl_strv_free(f->cgroups);
        assert_int_equal(rkl_rm_rf_at(AT_FDCWD, f->root), 0);
        free(f);
        return 0;
}

static int run_full(const rkl_exec_opts *o, rkl_exec_result *res, rkl_error *err)
{
        return rkl_exec_run(o, res, err);
}

/* Runs argv in the target; asserts it ran. */
static rkl_exec_result run(char *const argv[])
{
        rkl_exec_opts o = {.pid = F->target, .argv = argv, .timeout_usec = 10 * USEC_PER_SEC};
        rkl_exec_result res = {0};
        rkl_error err = RKL_ERROR_INIT;
        int r = run_full(&o, &res, &err);
        if (r < 0)
                fail_msg("exec '%s': %s", argv[0], err.msg);
        return res;
}

static char *run_out(char *const argv[])
{
        rkl_exec_result res = run(argv);
        if (res.exit_code != 0)
                fail_msg("'%s' exited %d: %s", argv[0], res.exit_code, res.err);
        char *out = TAKE_PTR(res.out);
        rkl_exec_result_done(&res);
        return out;
}

/* The line of text that starts with key, without the key. */
static char *line_of(const char *text, const char *key)
{
        const char *p = strstr(text, key);
        if (!p)
                return NULL;
        p += strlen(key);
        return rkl_xstrndup(p, strcspn(p, "\n"));
}

/* What is left in the test's cgroups: a cgroup made below one, or a process in one that
 * is not the test's own; NULL for nothing. Caller frees. */
static char *left_over(void)
{
        RKL_STRV_FOREACH (d, F->cgroups) {
                _cleanup_closedir_ DIR *dir = opendir(*d);
                struct dirent *de;
                assert_non_null(dir);
                while ((de = readdir(dir)))
                        if (de->d_type == DT_DIR && de->d_name[0] != '.')
                                return rkl_xasprintf("cgroup '%s/%s' left", *d, de->d_name);
                _cleanup_free_ char *procs = rkl_xasprintf("%s/cgroup.procs", *d);
                _cleanup_free_ char *text = NULL;
                assert_int_equal(rkl_read_file_at(AT_FDCWD, procs, 1 << 16, &text, NULL), 0);
                for (char *line = text, *next; line && *line; line = next) {
                        next = strchr(line, '\n');
                        if (next)
                                *next++ = 0;
                        pid_t pid = (pid_t)strtol(line, NULL, 10);
                        if (pid != F->outer && pid != F->init && pid != F->target)
                                return rkl_xasprintf("process %d left in '%s'", pid, *d);
                }
        }
        return NULL;
}

static void assert_nothing_left(void)
{
        _cleanup_free_ char *left = left_over();
        if (left)
                fail_msg("%s", left);
}

static void test_identity(void **state)
{
        if (!*state)
                skip();
        _cleanup_free_ char *id = run_out(RKL_STRV("id"));
        assert_string_equal(id, "uid=1000 gid=1234 groups=1234,5678\n");
        _cleanup_free_ char *pwd = run_out(RKL_STRV("pwd"));
        assert_string_equal(pwd, "/work\n");
        _cleanup_free_ char *host = run_out(RKL_STRV("hostname"));
        assert_string_equal(host, HOSTNAME "\n");
        _cleanup_free_ char *env = run_out(RKL_STRV("env"));
        assert_non_null(strstr(env, "FOO=bar\n"));
        assert_non_null(strstr(env, "PATH=/bin\n"));
        assert_null(strstr(env, "LISTEN_FDS"));
        _cleanup_free_ char *limits = run_out(RKL_STRV("sh", "-c", "ulimit -n; umask"));
        assert_string_equal(limits, "512\n0027\n");
        _cleanup_free_ char *oom = run_out(RKL_STRV("cat", "/proc/self/oom_score_adj"));
        assert_string_equal(oom, "123\n");
        assert_nothing_left();
}

static void test_capabilities(void **state)
{
        if (!*state)
                skip();
        _cleanup_free_ char *path = rkl_xasprintf("/proc/%d/status", F->target);
        _cleanup_free_ char *app = NULL;
        assert_int_equal(rkl_read_file_at(AT_FDCWD, path, 1 << 16, &app, NULL), 0);
        _cleanup_free_ char *seen = run_out(RKL_STRV("cat", "/proc/self/status"));
        static const char *const keys[] = {
            "\nUid:",    "\nGid:",    "\nGroups:", "\nCapInh:",    "\nCapPrm:",
            "\nCapEff:", "\nCapBnd:", "\nCapAmb:", "\nNoNewPrivs:"};
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                _cleanup_free_ char *want = line_of(app, keys[i]);
                _cleanup_free_ char *got = line_of(seen, keys[i]);
                assert_non_null(want);
                assert_non_null(got);
                if (!streq(want, got))
                        fail_msg("%s app '%s', exec '%s'", keys[i] + 1, want, got);
        }
        _cleanup_free_ char *amb = line_of(seen, "\nCapAmb:");
        assert_string_equal(amb, "\t0000000000000400");
        _cleanup_free_ char *nnp = line_of(seen, "\nNoNewPrivs:");
        assert_string_equal(nnp, "\t1");
}

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif

static void test_namespaces_and_cgroups(void **state)
{
        if (!*state)
                skip();
        static const char *const ns[] = {"mnt", "uts", "ipc", "net", "pid"};
        for (size_t i = 0; i < ELEMENTSOF(ns); i++) {
                char want[64] = "";
                _cleanup_free_ char *link = rkl_xasprintf("/proc/%d/ns/%s", F->target, ns[i]);
                _cleanup_free_ char *self = rkl_xasprintf("/proc/self/ns/%s", ns[i]);
                assert_true(readlink(link, want, sizeof(want) - 1) > 0);
                _cleanup_free_ char *got = run_out(RKL_STRV("readlink", self));
                got[strcspn(got, "\n")] = 0;
                assert_string_equal(got, want);
        }
        /* Only the namespace's own loopback. */
        _cleanup_free_ char *dev = run_out(RKL_STRV("cat", "/proc/net/dev"));
        assert_non_null(strstr(dev, "lo:"));
        assert_null(strstr(dev, "eth"));
        /* The namespace's init is PID 1 there, the app 2, the command after them. */
        /* The fixture's app may not have exec'd yet on a slow (sanitized) run: ask again. */
        char *pids = NULL;
        for (int i = 0; i < 100; i++) {
                free(pids);
                pids = run_out(RKL_STRV("sh", "-c", "echo $$; tr '\\0' ' ' </proc/2/cmdline"));
                if (strstr(pids, "\nsleep 1000 "))
                        break;
                usleep(50 * 1000);
        }
        assert_true(strtol(pids, NULL, 10) > 2);
#if !UNDER_TSAN /* TSan's runtime starts a helper of its own in the namespace first */
        assert_non_null(strstr(pids, "\nsleep 1000 "));
#endif
        free(pids);

        _cleanup_free_ char *cg = run_out(RKL_STRV("cat", "/proc/self/cgroup"));
        _cleanup_free_ char *mine = rkl_xasprintf("/rkl-test-exec-%d/rktlet-exec-", getpid());
        size_t lines = 0, cpusets = 0;
        for (char *p = cg; (p = strstr(p, mine)); p++)
                lines++;
        for (char *p = cg; (p = strstr(p, ":cpuset:")); p++)
                cpusets++;
        /* Every hierarchy the test has a cgroup of its own in has the command one below, but
         * v1's cpuset, where it joins the app's (exec.c, cgroups_make). */
        assert_int_equal(lines, rkl_strv_length(F->cgroups) - cpusets);
        assert_nothing_left();
}

static void test_exit_codes(void **state)
{
        if (!*state)
                skip();
        rkl_exec_result res = run(RKL_STRV("true"));
        assert_int_equal(res.exit_code, 0);
        rkl_exec_result_done(&res);
        res = run(RKL_STRV("sh", "-c", "echo out; echo err >&2; exit 3"));
        assert_int_equal(res.exit_code, 3);
        assert_string_equal(res.out, "out\n");
        assert_string_equal(res.err, "err\n");
        rkl_exec_result_done(&res);
        res = run(RKL_STRV("no-such-command", "x"));
        assert_int_equal(res.exit_code, 127);
        assert_string_equal(res.err,
                            "exec: \"no-such-command\": executable file not found in $PATH\n");
        rkl_exec_result_done(&res);
        res = run(RKL_STRV("/work"));
        assert_int_equal(res.exit_code, 126);
        assert_non_null(strstr(res.err, "Permission denied"));
        rkl_exec_result_done(&res);
        res = run(RKL_STRV("sh", "-c", "kill -9 $$"));
        assert_int_equal(res.exit_code, 128 + SIGKILL);
        rkl_exec_result_done(&res);
        assert_nothing_left();
}

static void test_output(void **state)
{
        if (!*state)
                skip();
        rkl_exec_result res = run(RKL_STRV("sh", "-c", "yes | head -c 1048576"));
        assert_int_equal(res.exit_code, 0);
        assert_int_equal(res.out_len, 1048576);
        assert_false(res.out_truncated);
        assert_int_equal(res.err_len, 0);
        rkl_exec_result_done(&res);

        rkl_exec_opts o = {.pid = F->target,
                           .argv = RKL_STRV("sh", "-c", "yes | head -c 100000; echo e >&2"),
                           .max_output = 1000};
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(run_full(&o, &res, &err), 0);
        assert_int_equal(res.out_len, 1000);
        assert_true(res.out_truncated);
        rkl_exec_result_done(&res);
}

static void test_timeout(void **state)
{
        if (!*state)
                skip();
        rkl_exec_opts o = {.pid = F->target,
                           .argv = RKL_STRV("sh", "-c", "sleep 100 & sleep 100 & exec sleep 100"),
                           .timeout_usec = 300 * USEC_PER_MSEC};
        rkl_exec_result res = {0};
        rkl_error err = RKL_ERROR_INIT;
        uint64_t t0 = rkl_now_usec(CLOCK_MONOTONIC);
        assert_int_equal(run_full(&o, &res, &err), -ETIMEDOUT);
        uint64_t took = rkl_now_usec(CLOCK_MONOTONIC) - t0;
        /* Not before the timeout, and by the kill, not by the command's own end. */
        assert_true(took >= 300 * USEC_PER_MSEC && took < 60 * USEC_PER_SEC);
        assert_non_null(strstr(err.msg, "timeout"));
        assert_nothing_left();
}

/* What the command leaves running when it exits goes with it. */
static void test_leftovers(void **state)
{
        if (!*state)
                skip();
        rkl_exec_result res = run(RKL_STRV("sh", "-c", "sleep 100 >/dev/null 2>&1 & echo bg"));
        assert_int_equal(res.exit_code, 0);
        assert_string_equal(res.out, "bg\n");
        rkl_exec_result_done(&res);
        assert_nothing_left();
        /* Even one that holds the output pipes. */
        uint64_t t0 = rkl_now_usec(CLOCK_MONOTONIC);
        res = run(RKL_STRV("sh", "-c", "sleep 100 & echo held"));
        assert_true(rkl_now_usec(CLOCK_MONOTONIC) - t0 < 60 * USEC_PER_SEC); /* not its 100 s */
        assert_string_equal(res.out, "held\n");
        rkl_exec_result_done(&res);
        assert_nothing_left();
}

static bool cancel_third(void *userdata)
{
        int *polls = userdata;
        return ++*polls >= 3;
}

static void test_cancel(void **state)
{
        if (!*state)
                skip();
        int polls = 0;
        rkl_exec_opts o = {.pid = F->target,
                           .argv = RKL_STRV("sleep", "100"),
                           .cancelled = cancel_third,
                           .userdata = &polls};
        rkl_exec_result res = {0};
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(run_full(&o, &res, &err), -ECANCELED);
        assert_true(polls >= 3);
        assert_nothing_left();
}

static void test_process_gone(void **state)
{
        if (!*state)
                skip();
        pid_t pid = fork();
        if (pid == 0)
                _exit(0);
        assert_int_equal(waitpid(pid, NULL, 0), pid);
        rkl_exec_opts o = {.pid = pid, .argv = RKL_STRV("true")};
        rkl_exec_result res = {0};
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(run_full(&o, &res, &err), -ESRCH);
}

/* A process that systemd forked for a service but that has not exec'd its program yet is
 * named "(program)": the command waits for the exec, and gives up at its deadline. */
static pid_t service_child(bool execs)
{
        int p[2];
        char c;
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid > 0) {
                close(p[1]);
                assert_int_equal(read(p[0], &c, 1), 1); /* named, in its cgroups */
                close(p[0]);
                return pid;
        }
        RKL_STRV_FOREACH (d, F->cgroups) {
                _cleanup_free_ char *procs = rkl_xasprintf("%s/cgroup.procs", *d);
                write_file(procs, "0");
        }
        (void)prctl(PR_SET_NAME, "(sleep)", 0, 0, 0);
        if (write(p[1], "x", 1) != 1)
                _exit(1);
        usleep(300 * 1000);
        if (execs)
                execve("/bin/sleep", RKL_STRV("sleep", "1000"), RKL_STRV("PATH=/bin:/usr/bin"));
        pause();
        _exit(0);
}

static void test_not_started(void **state)
{
        if (!*state)
                skip();
        rkl_exec_result res = {0};
        rkl_error err = RKL_ERROR_INIT;
        pid_t pid = service_child(false);
        rkl_exec_opts o = {.pid = pid, .argv = RKL_STRV("true"), .timeout_usec = USEC_PER_SEC};
        assert_int_equal(run_full(&o, &res, &err), -EAGAIN);
        assert_non_null(strstr(err.msg, "(sleep)"));
        (void)kill(pid, SIGKILL);
        assert_int_equal(waitpid(pid, NULL, 0), pid);

        pid = service_child(true);
        uint64_t t0 = rkl_now_usec(CLOCK_MONOTONIC);
        o.pid = pid;
        assert_int_equal(run_full(&o, &res, &err), 0);
        assert_int_equal(res.exit_code, 0);
        assert_true(rkl_now_usec(CLOCK_MONOTONIC) - t0 >= 200 * USEC_PER_MSEC);
        rkl_exec_result_done(&res);
        (void)kill(pid, SIGKILL);
        assert_int_equal(waitpid(pid, NULL, 0), pid);
}

/* Runs argv in the target under a filter given as unit lines; asserts it ran. */
static rkl_exec_result run_filtered(char *const argv[], const char *seccomp)
{
        rkl_exec_opts o = {
            .pid = F->target, .argv = argv, .timeout_usec = 10 * USEC_PER_SEC, .seccomp = seccomp};
        rkl_exec_result res = {0};
        rkl_error err = RKL_ERROR_INIT;
        if (run_full(&o, &res, &err) < 0)
                fail_msg("exec '%s': %s", argv[0], err.msg);
        return res;
}

/* The app's filter, as its unit has it, on the command (the target has no_new_privs: loaded
 * last; rkt's root apps without it are in tests/integration/test_security.py). */
static void test_seccomp(void **state)
{
        if (!*state)
                skip();
        char *const *status = RKL_STRV("cat", "/proc/self/status");
        _cleanup_free_ char *plain = run_out(status);
        _cleanup_free_ char *mode = line_of(plain, "\nSeccomp:");
        assert_string_equal(mode, "\t0");

        /* A denylist with an errno: EOPNOTSUPP, which nothing else would give. */
        rkl_exec_result res =
            run_filtered(status, "SystemCallFilter=\nSystemCallFilter=~openat open\n"
                                 "SystemCallErrorNumber=95\n");
        assert_int_equal(res.exit_code, 1);
        assert_non_null(strstr(res.err, strerror(EOPNOTSUPP)));
        rkl_exec_result_done(&res);
        res = run_filtered(status, "SystemCallFilter=~chmod\nSystemCallErrorNumber=1\n");
        assert_int_equal(res.exit_code, 0);
        _cleanup_free_ char *filtered = line_of(res.out, "\nSeccomp:");
        assert_string_equal(filtered, "\t2");
        _cleanup_free_ char *nnp = line_of(res.out, "\nNoNewPrivs:");
        assert_string_equal(nnp, "\t1");
        rkl_exec_result_done(&res);

        /* Without an error number the call kills (SIGSYS). */
        res = run_filtered(status, "SystemCallFilter=~openat open\n");
        assert_int_equal(res.exit_code, 128 + SIGSYS);
        rkl_exec_result_done(&res);

        /* An allow list: systemd's @default on top, enough for `true`, not for `cat`.
         * (sigaltstack: a sanitizer's runtime calls it in the helper before the execve.) */
        static const char allow[] = "SystemCallFilter=\nSystemCallFilter=write sigaltstack\n"
                                    "SystemCallErrorNumber=95\n";
        res = run_filtered(RKL_STRV("true"), allow);
        if (res.exit_code != 0)
                fail_msg("exit %d: %s", res.exit_code, res.err);
        rkl_exec_result_done(&res);
        res = run_filtered(status, allow);
        assert_int_equal(res.exit_code, 1);
        assert_non_null(strstr(res.err, strerror(EOPNOTSUPP)));
        rkl_exec_result_done(&res);

        /* What the helper cannot read is the call's error, not the command's. */
        rkl_exec_opts o = {.pid = F->target, .argv = status, .seccomp = "SystemCallFilter=@x\n"};
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(run_full(&o, &res, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "seccomp"));
        assert_nothing_left();
}

/* How many processes have arg as their argv[1]. */
static int procs_with_arg(const char *arg)
{
        _cleanup_closedir_ DIR *d = opendir("/proc");
        struct dirent *de;
        int n = 0;
        assert_non_null(d);
        while ((de = readdir(d))) {
                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                _cleanup_free_ char *p = rkl_xasprintf("/proc/%s/cmdline", de->d_name);
                _cleanup_free_ char *cmdline = NULL;
                size_t len;
                if (rkl_read_file_at(AT_FDCWD, p, 4096, &cmdline, &len) < 0)
                        continue;
                size_t first = strnlen(cmdline, len);
                if (first + 1 < len && streq(cmdline + first + 1, arg))
                        n++;
        }
        return n;
}

/* Cgroups made below the test's own (an exec's that were not removed). */
static bool anything_left(void)
{
        _cleanup_free_ char *left = left_over();
        return left != NULL;
}

/* The daemon dies while an exec runs (here: the process that called rkl_exec_run()): the
 * command and everything it started go, and the exec's cgroups with them. The helper
 * watches the daemon; dying with it, it left the command's children running in the
 * container. */
static void test_daemon_gone(void **state)
{
        if (!*state)
                skip();
        pid_t daemon = fork();
        assert_true(daemon >= 0);
        if (daemon == 0) {
                rkl_exec_opts o = {.pid = F->target,
                                   .argv = RKL_STRV("sh", "-c", "sleep 4242001 & sleep 4242002")};
                rkl_exec_result res = {0};
                rkl_error err = RKL_ERROR_INIT;
                (void)rkl_exec_run(&o, &res, &err);
                _exit(0);
        }
        for (int i = 0; i < 1000 && procs_with_arg("4242001") + procs_with_arg("4242002") < 2; i++)
                usleep(10 * 1000);
        assert_int_equal(procs_with_arg("4242001") + procs_with_arg("4242002"), 2);
        assert_int_equal(kill(daemon, SIGKILL), 0);
        assert_int_equal(waitpid(daemon, NULL, 0), daemon);
        /* The helper ends the exec, then itself: slower under a sanitizer. */
        for (int i = 0; i < 3000 && (procs_with_arg("4242001") + procs_with_arg("4242002") > 0 ||
                                     anything_left());
             i++)
                usleep(10 * 1000);
        assert_int_equal(procs_with_arg("4242001") + procs_with_arg("4242002"), 0);
        assert_nothing_left();
}

/* The cgroup made for an exec can be gone before the helper joins it (on v1, systemd removes
 * the empty directories it did not make below a unit it realizes again): the helper makes it
 * again and runs the command in it. The helper is run directly, with the cgroup never made. */
static void test_owned_cgroup_gone(void **state)
{
        if (!*state)
                skip();
        const char *parent = NULL;
        RKL_STRV_FOREACH (d, F->cgroups)
                if (!parent && strstr(*d, "/memory/"))
                        parent = *d;
        if (!parent)
                skip(); /* no v1 memory hierarchy here */
        _cleanup_free_ char *gone = rkl_xasprintf("%s/rktlet-exec-gone", parent);
        assert_true(access(gone, F_OK) < 0);
        char pid[16];
        (void)snprintf(pid, sizeof(pid), "%d", (int)F->target);
        int status[2], out[2];
        assert_int_equal(pipe2(status, O_CLOEXEC), 0);
        assert_int_equal(pipe2(out, O_CLOEXEC), 0);
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                if (dup2(status[1], 3) < 0 || dup2(out[1], STDOUT_FILENO) < 0)
                        _exit(127);
                execv("/proc/self/exe",
                      RKL_STRV("test_exec", RKL_EXEC_IN_COMMAND, "--pid", pid, "--cgroup-own", gone,
                               "--", "cat", "/proc/self/cgroup"));
                _exit(127);
        }
        (void)close(status[1]);
        (void)close(out[1]);
        char buf[8192];
        size_t n = 0;
        ssize_t k;
        while (n < sizeof(buf) - 1 && (k = read(out[0], buf + n, sizeof(buf) - 1 - n)) > 0)
                n += (size_t)k;
        buf[n] = 0;
        int st;
        assert_int_equal(waitpid(child, &st, 0), child);
        (void)close(out[0]);
        (void)close(status[0]);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
        assert_non_null(strstr(buf, "/rktlet-exec-gone"));
        assert_int_equal(rmdir(gone), 0);
        assert_nothing_left();
}

typedef struct tty_run {
        rkl_exec_opts o;
        rkl_exec_result res;
        rkl_error err;
        int r;
} tty_run;

static void *tty_run_main(void *userdata)
{
        tty_run *t = userdata;
        t->r = rkl_exec_run(&t->o, &t->res, &t->err);
        return NULL;
}

/* The master the helper sends on the console socket. */
static int console_receive(int fd)
{
        char byte;
        struct iovec iov = {.iov_base = &byte, .iov_len = 1};
        char control[CMSG_SPACE(sizeof(int))];
        struct msghdr msg = {.msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = control,
                             .msg_controllen = sizeof(control)};
        if (recvmsg(fd, &msg, MSG_CMSG_CLOEXEC) <= 0)
                return -1;
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        if (!c || c->cmsg_type != SCM_RIGHTS)
                return -1;
        int master;
        memcpy(&master, CMSG_DATA(c), sizeof(int));
        return master;
}

/* A terminal is the container's: made in its devpts, so the name the command's stdin has
 * is there inside and ttyname() finds it (tty exits 1, "not a tty", on a pty from the
 * daemon's devpts), owned by the command's user, and its controlling terminal. The helper
 * waits for the size before the command runs. */
static void test_tty(void **state)
{
        if (!*state)
                skip();
        int sv[2], stdio[3] = {-1, -1, -1};
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        tty_run t = {
            .o = {.pid = F->target,
                  .argv = RKL_STRV("sh", "-c", "tty && stat -c 'owner %u' $(tty) && stty size"),
                  .timeout_usec = 10 * USEC_PER_SEC,
                  .stdio = stdio,
                  .tty = true,
                  .console = sv[1]},
            .err = RKL_ERROR_INIT,
        };
        pthread_t thread;
        assert_int_equal(pthread_create(&thread, NULL, tty_run_main, &t), 0);
        int master = console_receive(sv[0]);
        assert_true(master >= 0);
        struct winsize ws = {.ws_row = 33, .ws_col = 111};
        assert_int_equal(ioctl(master, TIOCSWINSZ, &ws), 0);
        char go = 0;
        assert_int_equal(send(sv[0], &go, 1, MSG_NOSIGNAL), 1);
        char out[4096];
        size_t n = 0;
        for (;;) {
                ssize_t k = read(master, out + n, sizeof(out) - 1 - n);
                if (k <= 0) /* EIO once the last slave is closed */
                        break;
                n += (size_t)k;
        }
        out[n] = 0;
        assert_int_equal(pthread_join(thread, NULL), 0);
        if (t.r < 0)
                fail_msg("exec: %s", t.err.msg);
        if (t.res.exit_code != 0)
                fail_msg("exit %d: %s", t.res.exit_code, out);
        assert_non_null(strstr(out, "/dev/pts/0\r\n"));
        assert_non_null(strstr(out, "owner 1000\r\n"));
        assert_non_null(strstr(out, "33 111\r\n"));
        rkl_exec_result_done(&t.res);
        close(master);
        close(sv[0]);
        close(sv[1]);
        assert_nothing_left();

        /* A container without a devpts: the call's error, saying so. */
        _cleanup_free_ char *ptmx = rkl_xasprintf("%s/dev/ptmx", F->root);
        _cleanup_free_ char *moved = rkl_xasprintf("%s/dev/ptmx.away", F->root);
        assert_int_equal(rename(ptmx, moved), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        t.o.console = sv[1];
        t.o.argv = RKL_STRV("true");
        t.err = (rkl_error)RKL_ERROR_INIT;
        t.r = rkl_exec_run(&t.o, &t.res, &t.err);
        assert_int_equal(rename(moved, ptmx), 0);
        assert_int_equal(t.r, -ENOENT);
        assert_non_null(strstr(t.err.msg, "/dev/ptmx"));
        close(sv[0]);
        close(sv[1]);
        assert_nothing_left();
}

int main(int argc, char *argv[])
{
        if (argc > 1 && streq(argv[1], RKL_EXEC_IN_COMMAND))
                return rkl_exec_in_main(argc - 1, argv + 1);
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_identity),    cmocka_unit_test(test_capabilities),
            cmocka_unit_test(test_seccomp),     cmocka_unit_test(test_namespaces_and_cgroups),
            cmocka_unit_test(test_exit_codes),  cmocka_unit_test(test_output),
            cmocka_unit_test(test_timeout),     cmocka_unit_test(test_leftovers),
            cmocka_unit_test(test_cancel),      cmocka_unit_test(test_process_gone),
            cmocka_unit_test(test_not_started), cmocka_unit_test(test_tty),
            cmocka_unit_test(test_daemon_gone), cmocka_unit_test(test_owned_cgroup_gone),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
