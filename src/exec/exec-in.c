/* The helper side of ExecSync: `rktlet __exec-in`, a fresh single-threaded process that
 * becomes the command, inside the app's container (see exec.h). Everything about the app is
 * read from /proc/PID before the first setns(), while /proc is still the daemon's. */
#include "exec.h"
#include "exec-internal.h"

#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "base/alloc.h"
#include "base/cgroup.h"
#include "base/fileio.h"
#include "base/parse.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "base/banned.h"

/* The helper is single-threaded (a fresh exec of rktlet), where fork() is safe and what a
 * PID namespace needs: it applies to children only. banned.h bans it for the daemon. */
#undef fork

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

#define MAX_ENVIRON (4 << 20)
#define USAGE                                                                                      \
        "usage: %s --pid PID [--cgroup DIR]... [--cgroup-own DIR]... [--seccomp LINES] [--tty] "   \
        "-- COMMAND..."
/* How long the end of an exec whose daemon died waits for its processes to go. */
#define END_ROUNDS     500
#define END_ROUND_USEC (10 * USEC_PER_MSEC)

/* In the order they are joined: the mount namespace last, as nsenter does, so that every
 * other is joined while /proc still shows the daemon's view. */
static const struct {
        const char *name;
        int type;
} namespaces[] = {
    {"cgroup", CLONE_NEWCGROUP}, {"ipc", CLONE_NEWIPC}, {"uts", CLONE_NEWUTS},
    {"net", CLONE_NEWNET},       {"pid", CLONE_NEWPID}, {"time", CLONE_NEWTIME},
    {"mnt", CLONE_NEWNS},
};
#define N_NAMESPACES ELEMENTSOF(namespaces)

typedef struct target {
        pid_t pid;
        int procfd, rootfd, cwdfd;
        int nsfd[N_NAMESPACES]; /* -EBADF: the same as ours, not joined */
        rkl_exec_creds creds;
        char **env;
        struct rlimit limits[RLIM_NLIMITS];
        bool has_limit[RLIM_NLIMITS];
        char oom_score_adj[16];
        unsigned cap_last;
        rkl_exec_filter filter; /* the app's seccomp filter, as the daemon said */
} target;

/* Reports a failure on the status pipe and exits: the daemon turns it into the call's error.
 * err is a positive errno. */
_noreturn_ _printf_(2, 3) static void fail(int err, const char *fmt, ...)
{
        char buf[RKL_EXEC__MAX_STATUS];
        va_list ap;
        int n = snprintf(buf, sizeof(buf), "%d ", err > 0 ? err : EIO);
        va_start(ap, fmt);
        (void)vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
        va_end(ap);
        (void)!write(RKL_EXEC__STATUS_FD, buf, strlen(buf));
        _exit(RKL_EXEC__SETUP_FAILED);
}

/* A file of /proc/PID opened: ENOENT (the process went meanwhile) reads as ESRCH. */
static int proc_open(const target *t, const char *name, int flags)
{
        int fd = openat(t->procfd, name, flags | O_CLOEXEC);
        if (fd < 0)
                fail(errno == ENOENT ? ESRCH : errno, "cannot open /proc/%d/%s: %s", (int)t->pid,
                     name, strerror(errno == ENOENT ? ESRCH : errno));
        return fd;
}

static bool same_file(int fd, const char *path)
{
        struct stat a, b;
        return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
               a.st_ino == b.st_ino;
}

static unsigned cap_last_cap(void)
{
        _cleanup_free_ char *text = NULL;
        unsigned v;
        if (rkl_read_file_at(AT_FDCWD, "/proc/sys/kernel/cap_last_cap", 64, &text, NULL) == 0) {
                text[strcspn(text, "\n")] = 0;
                if (rkl_safe_atou(text, &v) == 0 && v < 64)
                        return v;
        }
        for (v = 0; v < 63 && prctl(PR_CAPBSET_READ, v + 1, 0, 0, 0) >= 0; v++)
                ;
        return v;
}

/* Reads all that is needed of the app's process, while /proc is the daemon's. */
static void target_read(target *t)
{
        char path[64];
        int r;

        (void)snprintf(path, sizeof(path), "/proc/%d", (int)t->pid);
        int pidfd = pidfd_open(t->pid, 0);
        if (pidfd < 0)
                fail(errno, "process %d: %s", (int)t->pid, strerror(errno));
        t->procfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (t->procfd < 0)
                fail(ESRCH, "process %d is gone", (int)t->pid);

        /* A user namespace of its own would need its IDs mapped: rkt's host stage1 never
         * makes one. */
        int userns = proc_open(t, "ns/user", O_RDONLY);
        if (!same_file(userns, "/proc/self/ns/user"))
                fail(EOPNOTSUPP, "process %d is in a user namespace of its own", (int)t->pid);
        (void)close(userns);
        for (size_t i = 0; i < N_NAMESPACES; i++) {
                char name[32];
                (void)snprintf(name, sizeof(name), "ns/%s", namespaces[i].name);
                int fd = openat(t->procfd, name, O_RDONLY | O_CLOEXEC);
                if (fd < 0 && errno == ENOENT && namespaces[i].type == CLONE_NEWTIME) {
                        t->nsfd[i] = -EBADF; /* a kernel without time namespaces */
                        continue;
                }
                if (fd < 0)
                        fail(errno == ENOENT ? ESRCH : errno, "cannot open /proc/%d/%s: %s",
                             (int)t->pid, name, strerror(errno));
                char self[48];
                (void)snprintf(self, sizeof(self), "/proc/self/%s", name);
                if (same_file(fd, self)) {
                        (void)close(fd);
                        fd = -EBADF;
                }
                t->nsfd[i] = fd;
        }
        t->rootfd = proc_open(t, "root", O_PATH | O_DIRECTORY);
        t->cwdfd = proc_open(t, "cwd", O_PATH | O_DIRECTORY);

        _cleanup_free_ char *status = NULL, *environ_text = NULL, *oom = NULL;
        size_t n = 0;
        r = rkl_read_file_at(t->procfd, "status", 1 << 20, &status, NULL);
        if (r < 0)
                fail(-r == ENOENT ? ESRCH : -r, "cannot read /proc/%d/status: %s", (int)t->pid,
                     strerror(-r));
        /* rkl_exec_run() waited for the app's exec; it cannot be undone, but a PID reused
         * since could be a service manager's child again: never join one of those. */
        if (!strncmp(status, "Name:\t(", 7))
                fail(EAGAIN, "process %d has not started its program yet", (int)t->pid);
        r = rkl_exec__creds_parse(status, &t->creds);
        if (r < 0)
                fail(-r, "cannot parse /proc/%d/status", (int)t->pid);
        r = rkl_read_file_at(t->procfd, "environ", MAX_ENVIRON, &environ_text, &n);
        if (r < 0)
                fail(-r == ENOENT ? ESRCH : -r, "cannot read /proc/%d/environ: %s", (int)t->pid,
                     strerror(-r));
        t->env = rkl_exec__environ_parse(environ_text, n);
        if (rkl_read_file_at(t->procfd, "oom_score_adj", 64, &oom, NULL) == 0)
                (void)snprintf(t->oom_score_adj, sizeof(t->oom_score_adj), "%.*s",
                               (int)strcspn(oom, "\n"), oom);
        _cleanup_free_ char *limits = NULL;
        r = rkl_read_file_at(t->procfd, "limits", 64 * 1024, &limits, NULL);
        if (r < 0)
                fail(-r == ENOENT ? ESRCH : -r, "cannot read /proc/%d/limits: %s", (int)t->pid,
                     strerror(-r));
        if (rkl_exec__limits_parse(limits, t->limits, t->has_limit) < 0)
                fail(EBADMSG, "cannot parse /proc/%d/limits", (int)t->pid);
        t->cap_last = cap_last_cap();

        /* Still the process the fds were opened for: its PID was not reused meanwhile. */
        if (pidfd_send_signal(pidfd, 0, NULL, 0) < 0)
                fail(ESRCH, "process %d is gone", (int)t->pid);
        (void)close(pidfd);
}

/* A cgroup made for this exec alone (--cgroup-own): what is in it goes when the daemon does.
 * Held by fds, opened while its path names it (before the mount namespace changes). */
typedef struct owned_cgroup {
        int dirfd, parentfd;
        const char *name; /* in its parent */
} owned_cgroup;

/* How often a made cgroup found gone is made again before the exec fails. */
#define REMAKE_TRIES 5

/* Opens the cgroup made for this exec and joins it. On v1, systemd removes the empty
 * directories it did not make below a unit it realizes again (kubelet's QoS slices are
 * realized again whenever a pod starts beside them), so the cgroup the daemon made can be
 * gone before this process is in it: it is made again then, in its parent, the app's
 * cgroup, which outlives the exec. Once joined it is not empty, and systemd leaves it. */
static owned_cgroup owned_join(const char *dir)
{
        const char *slash = strrchr(dir, '/');
        for (int attempt = 0;; attempt++) {
                owned_cgroup o = {.name = slash ? slash + 1 : dir, .parentfd = -1};
                int fd = -1;
                o.dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (o.dirfd >= 0)
                        o.parentfd = openat(o.dirfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (o.parentfd >= 0)
                        fd = openat(o.dirfd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
                if (fd >= 0 && write(fd, "0", 1) == 1) {
                        (void)close(fd);
                        return o;
                }
                int e = errno;
                if (fd >= 0)
                        (void)close(fd);
                if (o.parentfd >= 0)
                        (void)close(o.parentfd);
                if (o.dirfd >= 0)
                        (void)close(o.dirfd);
                if ((e != ENOENT && e != ENODEV) || attempt == REMAKE_TRIES)
                        fail(e, "cannot join cgroup '%s': %s", dir, strerror(e));
                if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                        fail(errno, "cannot make cgroup '%s' again: %s", dir, strerror(errno));
        }
}

/* Kills every process of the cgroup but this one; how many there were. */
static int owned_kill_others(const owned_cgroup *o)
{
        _cleanup_free_ pid_t *pids = NULL;
        size_t n_pids = 0;
        if (rkl_cgroup_pids_at(o->dirfd, ".", &pids, &n_pids) < 0)
                return 0;
        int n = 0;
        for (size_t i = 0; i < n_pids; i++)
                if (pids[i] != getpid()) {
                        (void)kill(pids[i], SIGKILL);
                        n++;
                }
        return n;
}

/* The daemon died while the command ran: nothing would end the exec, whose processes
 * (children of the app's init once their parents go) would run on in the container, nor
 * remove its cgroups. Everything in them is killed (they all hold the same processes), then
 * this process leaves them for their parents and removes them. */
_noreturn_ static void owned_end(const owned_cgroup *o, size_t n)
{
        for (int round = 0; n > 0 && round < END_ROUNDS && owned_kill_others(&o[0]) > 0; round++)
                (void)usleep(END_ROUND_USEC);
        char self[32];
        (void)snprintf(self, sizeof(self), "%d", (int)getpid());
        for (size_t i = 0; i < n; i++) {
                int fd = openat(o[i].parentfd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
                if (fd >= 0) {
                        (void)!write(fd, self, strlen(self));
                        (void)close(fd);
                }
                (void)unlinkat(o[i].parentfd, o[i].name, AT_REMOVEDIR);
        }
        _exit(RKL_EXEC__SETUP_FAILED);
}

/* Waits for the command, or for the daemon (daemon_fd, a pidfd; -1: no such watch) to go
 * first. */
static int command_wait(pid_t pid, int daemon_fd, const owned_cgroup *o, size_t n)
{
        int status;
        int child_fd = daemon_fd >= 0 ? pidfd_open(pid, 0) : -1;
        while (child_fd >= 0) {
                struct pollfd p[2] = {{.fd = child_fd, .events = POLLIN},
                                      {.fd = daemon_fd, .events = POLLIN}};
                if (poll(p, 2, -1) < 0) {
                        if (errno != EINTR)
                                break;
                        continue;
                }
                if (p[0].revents)
                        break;
                if (p[1].revents)
                        owned_end(o, n);
        }
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        fail(errno, "waitpid: %s", strerror(errno));
        return status;
}

static void cgroup_join(const char *dir)
{
        char path[PATH_MAX];
        (void)snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "0", 1) != 1)
                fail(errno, "cannot join cgroup '%s': %s", dir, strerror(errno));
        (void)close(fd);
}

static void namespaces_join(const target *t)
{
        for (size_t i = 0; i < N_NAMESPACES; i++)
                if (t->nsfd[i] >= 0 && setns(t->nsfd[i], namespaces[i].type) < 0)
                        fail(errno, "cannot join the %s namespace of process %d: %s",
                             namespaces[i].name, (int)t->pid, strerror(errno));
}

static int capset_all(const rkl_exec_creds *c)
{
        struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
        struct __user_cap_data_struct d[2] = {
            {(uint32_t)c->cap_eff, (uint32_t)c->cap_prm, (uint32_t)c->cap_inh},
            {(uint32_t)(c->cap_eff >> 32), (uint32_t)(c->cap_prm >> 32),
             (uint32_t)(c->cap_inh >> 32)},
        };
        return (int)syscall(SYS_capset, &h, d);
}

/* Becomes the app's user, with its capabilities and no more. Runs as root with every
 * capability: drops the bounding set first (that needs CAP_SETPCAP), keeps the permitted
 * set across the change of user, then sets the app's sets. */
static void creds_apply(const target *t)
{
        const rkl_exec_creds *c = &t->creds;

        for (unsigned cap = 0; cap <= t->cap_last; cap++)
                if (!(c->cap_bnd & (UINT64_C(1) << cap)) &&
                    prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
                        fail(errno, "cannot drop capability %u: %s", cap, strerror(errno));
        if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
                fail(errno, "PR_SET_KEEPCAPS: %s", strerror(errno));
        if (setgroups(c->n_groups, c->groups) < 0)
                fail(errno, "setgroups: %s", strerror(errno));
        if (setresgid(c->gid[0], c->gid[1], c->gid[2]) < 0)
                fail(errno, "setresgid: %s", strerror(errno));
        if (setresuid(c->uid[0], c->uid[1], c->uid[2]) < 0)
                fail(errno, "setresuid: %s", strerror(errno));
        (void)setfsgid(c->gid[3]);
        (void)setfsuid(c->uid[3]);
        if (capset_all(c) < 0)
                fail(errno, "capset: %s", strerror(errno));
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && c->cap_amb)
                fail(errno, "PR_CAP_AMBIENT: %s", strerror(errno));
        for (unsigned cap = 0; cap <= t->cap_last; cap++)
                if ((c->cap_amb & (UINT64_C(1) << cap)) &&
                    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) < 0)
                        fail(errno, "cannot raise ambient capability %u: %s", cap, strerror(errno));
        if (c->no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                fail(errno, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
        /* The command dies with the helper (a daemon that died, say). The change of user
         * above cleared what was set before. */
        (void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
}

/* What systemd 252 allows on top of an allow list (`systemd-analyze syscall-filter @default`):
 * the app's unit got them too. */
static const char systemd_default[] =
    "arch_prctl brk cacheflush clock_getres clock_getres_time64 clock_gettime "
    "clock_gettime64 clock_nanosleep clock_nanosleep_time64 execve exit exit_group "
    "futex futex_time64 futex_waitv get_robust_list get_thread_area getegid "
    "getegid32 geteuid geteuid32 getgid getgid32 getgroups getgroups32 getpgid "
    "getpgrp getpid getppid getrandom getresgid getresgid32 getresuid getresuid32 "
    "getrlimit getsid gettid gettimeofday getuid getuid32 membarrier mmap mmap2 "
    "mprotect munmap nanosleep pause prlimit64 restart_syscall riscv_flush_icache "
    "riscv_hwprobe rseq rt_sigreturn sched_getaffinity sched_yield set_robust_list "
    "set_thread_area set_tid_address set_tls sigreturn time ugetrlimit uretprobe";

static const uint32_t secondary_archs[] = {
#if defined(__x86_64__)
    SCMP_ARCH_X86,
    SCMP_ARCH_X32,
#elif defined(__aarch64__)
    SCMP_ARCH_ARM,
#endif
};

static void filter_rule(scmp_filter_ctx ctx, uint32_t action, const char *name)
{
        int nr = seccomp_syscall_resolve_name(name);
        if (nr == __NR_SCMP_ERROR)
                return; /* unknown here: systemd skips it too */
        int r = seccomp_rule_add(ctx, action, nr, 0);
        /* -EEXIST: listed twice; -EACCES: the default action already. */
        if (r < 0 && r != -EEXIST && r != -EACCES)
                fail(-r, "seccomp rule for '%s': %s", name, strerror(-r));
}

/* Loads the app's filter into this process. No no_new_privs of its own (libseccomp sets it
 * by default): the command has the app's. */
static void filter_install(const rkl_exec_filter *f)
{
        if (!f->active)
                return;
        uint32_t refuse =
            f->errno_ret ? SCMP_ACT_ERRNO((uint32_t)f->errno_ret) : SCMP_ACT_KILL_PROCESS;
        scmp_filter_ctx ctx = seccomp_init(f->allow_list ? refuse : SCMP_ACT_ALLOW);
        if (!ctx)
                fail(ENOMEM, "seccomp_init failed");
        int r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
        if (r < 0)
                fail(-r, "seccomp: %s", strerror(-r));
        /* systemd filters the ABIs this one runs too (a 32-bit program), not only its own. */
        for (size_t i = 0; i < ELEMENTSOF(secondary_archs); i++) {
                r = seccomp_arch_add(ctx, secondary_archs[i]);
                if (r < 0 && r != -EEXIST)
                        fail(-r, "seccomp arch %#x: %s", secondary_archs[i], strerror(-r));
        }
        uint32_t listed = f->allow_list ? SCMP_ACT_ALLOW : refuse;
        RKL_STRV_FOREACH (n, f->names)
                filter_rule(ctx, listed, *n);
        if (f->allow_list) {
                char names[sizeof(systemd_default)], *save = NULL;
                memcpy(names, systemd_default, sizeof(names));
                for (char *n = strtok_r(names, " ", &save); n; n = strtok_r(NULL, " ", &save))
                        filter_rule(ctx, listed, n);
        }
        r = seccomp_load(ctx);
        if (r < 0)
                fail(-r, "cannot load the seccomp filter: %s", strerror(-r));
        seccomp_release(ctx);
}

/* execvp() over the app's PATH (execvp would read ours). A command that cannot be run is
 * the command's failure, not the call's: a message on its stderr and the shell's codes. */
_noreturn_ static void command_exec(char **argv, char **env)
{
        const char *cmd = argv[0];
        int err = ENOENT;

        if (strchr(cmd, '/')) {
                execve(cmd, argv, env);
                err = errno;
        } else {
                _cleanup_free_ char *path = rkl_xstrdup(rkl_exec__path_of(env));
                bool denied = false;
                char *save = NULL;
                for (char *dir = strtok_r(path, ":", &save); dir;
                     dir = strtok_r(NULL, ":", &save)) {
                        char file[PATH_MAX];
                        if ((size_t)snprintf(file, sizeof(file), "%s/%s", dir, cmd) >= sizeof(file))
                                continue;
                        execve(file, argv, env);
                        if (errno == EACCES)
                                denied = true;
                        else if (errno != ENOENT && errno != ENOTDIR && errno != ESTALE) {
                                err = errno;
                                break;
                        }
                        err = denied ? EACCES : ENOENT;
                }
        }
        if (err == ENOENT && !strchr(cmd, '/'))
                dprintf(STDERR_FILENO, "exec: \"%s\": executable file not found in $PATH\n", cmd);
        else
                dprintf(STDERR_FILENO, "exec: \"%s\": %s\n", cmd, strerror(err));
        _exit(err == ENOENT ? 127 : 126);
}

/* The app's limits. Raising one above the daemon's hard limit takes CAP_SYS_RESOURCE: without
 * it, as close as allowed (a command with lower limits than the app's beats none at all). */
static void limits_apply(const target *t)
{
        for (int i = 0; i < RLIM_NLIMITS; i++) {
                struct rlimit want = t->limits[i], have;
                if (!t->has_limit[i] || setrlimit(i, &want) == 0)
                        continue;
                if (errno != EPERM || getrlimit(i, &have) < 0)
                        fail(errno, "setrlimit %d: %s", i, strerror(errno));
                if (want.rlim_max > have.rlim_max)
                        want.rlim_max = have.rlim_max;
                if (want.rlim_cur > want.rlim_max)
                        want.rlim_cur = want.rlim_max;
                if (setrlimit(i, &want) < 0)
                        fail(errno, "setrlimit %d: %s", i, strerror(errno));
        }
}

static void console_send(int master)
{
        char byte = 0;
        struct iovec iov = {.iov_base = &byte, .iov_len = 1};
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int))];
        } control = {0};
        struct msghdr msg = {.msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = control.buf,
                             .msg_controllen = sizeof(control.buf)};
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &master, sizeof(int));
        while (sendmsg(RKL_EXEC__CONSOLE_FD, &msg, MSG_NOSIGNAL) < 0)
                if (errno != EINTR)
                        fail(errno, "cannot hand the terminal over: %s", strerror(errno));
}

/* The command's terminal, from the container's devpts: /dev/ptmx as the app sees it (in
 * rkt's stage1 a link to /dev/pts/ptmx, the pod's own devpts), opened after the chroot. So
 * the name the slave has, /dev/pts/N, is there inside, and ttyname() (tty, sudo, ssh,
 * script) finds it, which a pty of the daemon's devpts never was. The master goes to the
 * daemon; the slave becomes the command's stdio and controlling terminal (a shell wants it
 * for job control and ^C), in a session of its own. */
static void terminal_make(const target *t)
{
        int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (master < 0)
                fail(errno, "cannot open /dev/ptmx in the container: %s", strerror(errno));
        int unlock = 0;
        if (ioctl(master, TIOCSPTLCK, &unlock) < 0)
                fail(errno, "cannot unlock the terminal: %s", strerror(errno));
        /* Through the master, not a path: this very pty's slave. */
        int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (slave < 0)
                fail(errno, "cannot open the terminal: %s", strerror(errno));
        /* devpts gave it to its opener, root: the command's user owns its terminal, as
         * after a login. */
        if (fchown(slave, t->creds.uid[1], (gid_t)-1) < 0)
                fail(errno, "cannot hand the terminal to uid %u: %s", (unsigned)t->creds.uid[1],
                     strerror(errno));
        console_send(master);
        (void)close(master);
        /* The daemon answers once it set the terminal's size, which the command may read
         * first thing (an end of file is as good: the daemon is not waiting any more). */
        char ack;
        while (read(RKL_EXEC__CONSOLE_FD, &ack, 1) < 0 && errno == EINTR)
                ;
        (void)close(RKL_EXEC__CONSOLE_FD);
        if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) < 0)
                fail(errno, "cannot make the terminal the controlling one: %s", strerror(errno));
        for (int fd = 0; fd < 3; fd++)
                if (dup2(slave, fd) < 0)
                        fail(errno, "dup2: %s", strerror(errno));
        (void)close(slave);
}

_noreturn_ static void child_main(const target *t, bool tty, char **argv)
{
        /* The fds were opened before the mount namespace changed: they still name the app's
         * root and working directory. */
        if (fchdir(t->rootfd) < 0 || chroot(".") < 0)
                fail(errno, "cannot enter the root of process %d: %s", (int)t->pid,
                     strerror(errno));
        if (tty)
                terminal_make(t);
        if (fchdir(t->cwdfd) < 0)
                fail(errno, "cannot enter the working directory of process %d: %s", (int)t->pid,
                     strerror(errno));
        limits_apply(t);
        if (t->creds.has_umask)
                (void)umask(t->creds.umask);
        /* Without no_new_privs a filter takes CAP_SYS_ADMIN to load: before the app's
         * credentials (which it must then let through, as with runc); with it, as late as
         * can be, so that as little as possible runs under it before the command. */
        if (!t->creds.no_new_privs)
                filter_install(&t->filter);
        creds_apply(t);
        if (t->creds.no_new_privs)
                filter_install(&t->filter);
        command_exec(argv, t->env);
}

int rkl_exec_in_main(int argc, char *argv[])
{
        target t = {.procfd = -EBADF, .rootfd = -EBADF, .cwdfd = -EBADF};
        char **cgroups = NULL, **own = NULL;
        bool tty = false;
        int i;

        /* The status pipe must not reach the command. */
        if (fcntl(RKL_EXEC__STATUS_FD, F_SETFD, FD_CLOEXEC) < 0)
                return RKL_EXEC__SETUP_FAILED; /* not run by rkl_exec_run() */
        /* The daemon is watched: when it goes, what the exec started goes (owned_end()).
         * Without a pidfd of it, this process dies with it, and the command with this one,
         * but not what the command started. */
        pid_t daemon = getppid();
        int daemon_fd = pidfd_open(daemon, 0);
        if (daemon_fd < 0 || getppid() != daemon) {
                daemon_fd = safe_close(daemon_fd);
                (void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        }

        for (i = 1; i < argc; i++) {
                if (streq(argv[i], "--")) {
                        i++;
                        break;
                }
                if (streq(argv[i], "--tty")) {
                        /* Nor the console socket. */
                        if (fcntl(RKL_EXEC__CONSOLE_FD, F_SETFD, FD_CLOEXEC) < 0)
                                fail(errno, "no console socket on fd %d: %s", RKL_EXEC__CONSOLE_FD,
                                     strerror(errno));
                        tty = true;
                        continue;
                }
                if (i + 1 >= argc)
                        fail(EINVAL, USAGE, argv[0]);
                if (streq(argv[i], "--pid")) {
                        unsigned pid;
                        if (rkl_safe_atou(argv[++i], &pid) < 0 || pid == 0 || pid > INT_MAX)
                                fail(EINVAL, "bad PID '%s'", argv[i]);
                        t.pid = (pid_t)pid;
                } else if (streq(argv[i], "--cgroup"))
                        rkl_strv_push(&cgroups, argv[++i]);
                else if (streq(argv[i], "--cgroup-own"))
                        rkl_strv_push(&own, argv[++i]);
                else if (streq(argv[i], "--seccomp")) {
                        if (rkl_exec__filter_parse(argv[++i], &t.filter) < 0)
                                fail(EINVAL, "bad seccomp filter '%.200s'", argv[i]);
                } else
                        fail(EINVAL, "unknown option '%s'", argv[i]);
        }
        if (t.pid == 0 || i >= argc)
                fail(EINVAL, USAGE, argv[0]);

        target_read(&t);
        /* Inherited by the command, and what the kernel's OOM killer goes by. */
        if (t.oom_score_adj[0]) {
                int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
                if (fd >= 0) {
                        (void)!write(fd, t.oom_score_adj, strlen(t.oom_score_adj));
                        (void)close(fd);
                }
        }
        /* Cgroups first: their paths are the daemon's; then the namespaces. */
        size_t n_owned = rkl_strv_length(own);
        owned_cgroup *owned = rkl_xnew0(owned_cgroup, n_owned ? n_owned : 1);
        for (size_t k = 0; k < n_owned; k++)
                owned[k] = owned_join(own[k]);
        RKL_STRV_FOREACH (d, cgroups)
                cgroup_join(*d);
        namespaces_join(&t);

        pid_t pid = fork();
        if (pid < 0)
                fail(errno, "fork: %s", strerror(errno));
        if (pid == 0)
                child_main(&t, tty, argv + i);

        int status = command_wait(pid, daemon_fd, owned, n_owned);
        /* No atexit handlers: this process's /proc is the app's now, where it cannot see
         * itself (a sanitizer's leak check at exit would fail on it), and it has nothing to
         * flush or free that the kernel does not take back. */
        _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}
