/* The spawn-and-wait side of ExecSync (see exec.h). */
#include "exec.h"
#include "exec-internal.h"

#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/cgroup.h"
#include "base/fileio.h"
#include "base/model.h"
#include "base/spawn.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "base/banned.h"

#define CGROUP_PREFIX     "rktlet-exec-"
#define KILL_TIMEOUT_USEC (5 * USEC_PER_SEC)
#define START_WAIT_USEC   (5 * USEC_PER_SEC)
#define DEFAULT_OUTPUT    (16 << 20)

void rkl_exec_result_done(rkl_exec_result *r)
{
        if (!r)
                return;
        free(r->out);
        free(r->err);
        *r = (rkl_exec_result){0};
}

/* Where the helper goes, one cgroup a hierarchy, and which of them are this exec's own. */
typedef struct exec_cgroups {
        char **join;
        char **owned; /* made for this exec: emptied and removed after it */
} exec_cgroups;

/* Kills what is left in the exec's own cgroups and removes them: the first error. */
static int exec_cgroups_release(exec_cgroups *c)
{
        int r = 0;
        RKL_STRV_FOREACH (d, c->owned) {
                int k = rkl_cgroup_kill_and_remove(*d, KILL_TIMEOUT_USEC);
                if (k < 0 && r == 0)
                        r = k;
        }
        c->join = rkl_strv_free(c->join);
        c->owned = rkl_strv_free(c->owned);
        return r;
}

static void exec_cgroups_releasep(exec_cgroups *c)
{
        (void)exec_cgroups_release(c);
}

/* Whether a cgroup2 cgroup may have a child that holds processes: not when it hands
 * controllers down, as the app's own processes would then break cgroup2's "no internal
 * processes" rule. */
static bool v2_child_allowed(const char *dir)
{
        _cleanup_free_ char *p = rkl_xasprintf("%s/cgroup.subtree_control", dir);
        _cleanup_free_ char *v = NULL;
        return rkl_read_file_at(AT_FDCWD, p, 64 * 1024, &v, NULL) == 0 && v[strspn(v, " \n")] == 0;
}

/* In every hierarchy mounted here: a child of the app's cgroup, rktlet-exec-<random>, to
 * hold the command and all it starts. The app's cgroup itself where no child can be made
 * (cgroup2 handing controllers down), where it is a hierarchy's root (which the app shares
 * with every process not placed elsewhere: no cgroup of rktlet's goes there), and in v1's
 * cpuset hierarchy: systemd does not manage it there but removes any empty directory of it
 * below a unit it realizes again, and a child made there can be gone before the helper joins
 * it ("No such device"; docs/cluster.md, 'cgroup v1 and cpuset'). The other hierarchies
 * hold what the exec owns. */
static int cgroups_make(pid_t pid, exec_cgroups *c, rkl_error *reterr)
{
        rkl_cgroup_entry *e = NULL;
        size_t n = 0;
        char id[RKL_ID_LEN + 1];

        int r = rkl_cgroup_entries_of(pid, &e, &n);
        if (r == -ESRCH)
                return rkl_error_set(reterr, r, "process %d is gone", (int)pid);
        if (r < 0)
                return rkl_error_set(reterr, r, "cannot read the cgroups of process %d: %s",
                                     (int)pid, strerror(-r));
        rkl_id_new(id);
        for (size_t i = 0; i < n && r >= 0; i++) {
                if (!e[i].dir)
                        continue; /* not mounted here: the helper stays where it is */
                if (streq(e[i].path, "/") || (e[i].unified && !v2_child_allowed(e[i].dir)) ||
                    rkl_cgroup_entry_has(&e[i], "cpuset")) {
                        rkl_strv_push(&c->join, e[i].dir);
                        continue;
                }
                _cleanup_free_ char *child =
                    rkl_xasprintf("%s/" CGROUP_PREFIX "%.16s", e[i].dir, id);
                if (mkdir(child, 0755) < 0) {
                        r = errno == ENOENT
                                ? rkl_error_set(reterr, -ESRCH, "process %d is gone", (int)pid)
                                : rkl_error_set(reterr, -errno, "cannot make cgroup '%s': %s",
                                                child, strerror(errno));
                        break;
                }
                rkl_strv_push(&c->owned, child);
                rkl_strv_push(&c->join, child);
        }
        rkl_cgroup_entries_free(e, n);
        return r < 0 ? r : 0;
}

/* systemd names a service's process "(program)" from its fork to its exec of the program:
 * until then it runs the service manager's code with the manager's root and privileges (in a
 * rkt pod: the stage1's root, every capability), and joining it would run the command as
 * that. rkt reports the app started (and rktlet running) from the fork on, and the exec
 * comes hundreds of ms later: wait for it, until the deadline. */
static int wait_exec(const rkl_exec_opts *o, uint64_t deadline, rkl_error *reterr)
{
        pid_t pid = o->pid;
        for (;;) {
                _cleanup_free_ char *comm = NULL;
                int r = rkl_pid_before_exec(pid, &comm);
                if (r == -ESRCH)
                        return rkl_error_set(reterr, -ESRCH, "process %d is gone", (int)pid);
                if (r < 0)
                        return rkl_error_set(reterr, r, "cannot read /proc/%d/comm: %s", (int)pid,
                                             strerror(-r));
                if (r == 0)
                        return 0;
                if (o->cancelled && o->cancelled(o->userdata))
                        return rkl_error_set(reterr, -ECANCELED, "cancelled");
                if (rkl_now_usec(CLOCK_MONOTONIC) >= deadline)
                        return rkl_error_set(reterr, -EAGAIN,
                                             "process %d has not started its program yet "
                                             "(it is still '%s')",
                                             (int)pid, comm);
                struct timespec ts = {.tv_nsec = 5 * (long)NSEC_PER_MSEC};
                (void)nanosleep(&ts, NULL);
        }
}

typedef struct run_ctx {
        const rkl_exec_opts *o;
        const exec_cgroups *cgroups;
} run_ctx;

/* The deadline passed, the caller gave up, or the helper exited and left something behind:
 * everything in the exec's cgroups dies, and in its process group (all there is before the
 * helper joined its cgroups). Runs before the helper is reaped: its group cannot be
 * another's yet. */
static void kill_tree(pid_t pid, void *userdata)
{
        const run_ctx *x = userdata;
        (void)kill(-pid, SIGKILL);
        RKL_STRV_FOREACH (d, x->cgroups->owned)
                rkl_cgroup_kill_all(*d);
}

static bool cancelled(void *userdata)
{
        const run_ctx *x = userdata;
        return x->o->cancelled(x->o->userdata);
}

/* What the helper said on its status pipe before the command ran: 0 when nothing. */
static int status_read(int fd, rkl_error *reterr)
{
        char buf[RKL_EXEC__MAX_STATUS + 1], msg[RKL_EXEC__MAX_STATUS];
        ssize_t k = read(fd, buf, sizeof(buf) - 1);
        if (k <= 0)
                return 0;
        buf[k] = 0;
        int r = rkl_exec__status_parse(buf, msg, sizeof(msg));
        if (r == -EBADMSG)
                return rkl_error_set(reterr, -EIO, "the exec helper said '%.200s'", buf);
        return rkl_error_set(reterr, r, "%s", msg);
}

static char *usec_text(uint64_t usec)
{
        return usec % USEC_PER_SEC == 0 ? rkl_xasprintf("%" PRIu64 " s", usec / USEC_PER_SEC)
                                        : rkl_xasprintf("%" PRIu64 " ms", usec / USEC_PER_MSEC);
}

int rkl_exec_run(const rkl_exec_opts *o, rkl_exec_result *ret, rkl_error *reterr)
{
        _cleanup_(exec_cgroups_releasep) exec_cgroups cg = {0};
        _cleanup_close_ int status_r = -EBADF, status_w = -EBADF;
        _cleanup_strv_free_ char **argv = NULL;
        rkl_spawn_result res = {0};
        int p[2], r;

        assert(o && o->pid > 0 && o->argv && o->argv[0] && (!o->tty || o->console >= 0));
        uint64_t start = rkl_now_usec(CLOCK_MONOTONIC);
        uint64_t wait = o->timeout_usec && o->timeout_usec < START_WAIT_USEC ? o->timeout_usec
                                                                             : START_WAIT_USEC;
        r = wait_exec(o, start + wait, reterr);
        if (r < 0)
                return r;
        uint64_t waited = rkl_now_usec(CLOCK_MONOTONIC) - start;
        r = cgroups_make(o->pid, &cg, reterr);
        if (r < 0)
                return r;
        if (pipe2(p, O_CLOEXEC) < 0)
                return rkl_error_set(reterr, -errno, "pipe: %s", strerror(errno));
        status_r = p[0];
        status_w = p[1];
        if (fcntl(status_r, F_SETFL, O_NONBLOCK) < 0)
                return rkl_error_set(reterr, -errno, "fcntl: %s", strerror(errno));

        rkl_strv_push(&argv, o->helper ? o->helper : "/proc/self/exe");
        rkl_strv_push(&argv, RKL_EXEC_IN_COMMAND);
        rkl_strv_push(&argv, "--pid");
        rkl_strv_consume(&argv, rkl_xasprintf("%d", (int)o->pid));
        RKL_STRV_FOREACH (d, cg.join) {
                rkl_strv_push(&argv, rkl_strv_contains(cg.owned, *d) ? "--cgroup-own" : "--cgroup");
                rkl_strv_push(&argv, *d);
        }
        if (o->seccomp) {
                rkl_strv_push(&argv, "--seccomp");
                rkl_strv_push(&argv, o->seccomp);
        }
        if (o->tty)
                rkl_strv_push(&argv, "--tty");
        rkl_strv_push(&argv, "--");
        RKL_STRV_FOREACH (a, o->argv)
                rkl_strv_push(&argv, *a);

        int pass[] = {status_w, o->console};
        run_ctx x = {.o = o, .cgroups = &cg};
        rkl_spawn_opts so = {
            /* The time spent waiting for the app counts: never 0 (none) once it was not. */
            .timeout_usec = !o->timeout_usec               ? 0
                            : o->timeout_usec > waited + 1 ? o->timeout_usec - waited
                                                           : 1,
            .max_output = o->max_output ? o->max_output : DEFAULT_OUTPUT,
            .stdio = o->stdio,
            .pass_fds = pass, /* RKL_EXEC__STATUS_FD, RKL_EXEC__CONSOLE_FD */
            .n_pass_fds = o->tty ? 2 : 1,
            .new_process_group = true,
            .kill_tree = kill_tree,
            .cancelled = o->cancelled ? cancelled : NULL,
            .userdata = &x,
        };
        r = rkl_spawn_run(argv, &so, &res, reterr);
        status_w = safe_close(status_w);
        if (r < 0)
                return rkl_error_prefix(reterr, "cannot start the exec helper");

        if (res.cancelled)
                r = rkl_error_set(reterr, -ECANCELED, "cancelled: the command was killed");
        else if (res.timed_out) {
                _cleanup_free_ char *t = usec_text(o->timeout_usec);
                r = rkl_error_set(reterr, -ETIMEDOUT,
                                  "timeout: the command was still running after %s, killed", t);
        } else
                r = status_read(status_r, reterr);
        /* Whatever the command left behind goes now, and its cgroups with it. */
        int k = exec_cgroups_release(&cg);
        if (r >= 0 && k < 0)
                r = rkl_error_set(reterr, k,
                                  "what the command started could not be killed within %" PRIu64
                                  " s: %s",
                                  KILL_TIMEOUT_USEC / USEC_PER_SEC, strerror(-k));
        if (r < 0) {
                rkl_spawn_result_done(&res);
                return r;
        }
        *ret = (rkl_exec_result){
            /* The helper relays the command's status; a signal that killed the helper
             * itself (the container stopped, the OOM killer) reads the same way. */
            .exit_code = res.signal ? 128 + res.signal : res.exit_code,
            .out = TAKE_PTR(res.out),
            .err = TAKE_PTR(res.err),
            .out_len = res.out_len,
            .err_len = res.err_len,
            .out_truncated = res.out_truncated,
            .err_truncated = res.err_truncated,
        };
        return 0;
}
