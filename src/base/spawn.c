#include "spawn.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "alloc.h"
#include "time-util.h"
#include "banned.h"

extern char **environ;

/* posix_spawn has no umask attribute and umask() is the whole process's: the calling thread
 * takes a private copy of the fs attributes (cwd, root, umask) once, so that a umask set
 * around its posix_spawn reaches only that child, never another thread's files. */
static int thread_umask_private(void)
{
        static _Thread_local bool done;
        if (done)
                return 0;
        if (unshare(CLONE_FS) < 0)
                return -errno;
        done = true;
        return 0;
}

void rkl_spawn_result_done(rkl_spawn_result *r)
{
        if (!r)
                return;
        free(r->out);
        free(r->err);
        *r = (rkl_spawn_result){0};
}

typedef struct capture {
        int fd;
        char *buf;
        size_t len, cap, max;
        bool truncated;
} capture;

/* Returns false at EOF or error. */
static bool capture_read(capture *c)
{
        char tmp[16384];
        ssize_t k = read(c->fd, tmp, sizeof(tmp));
        if (k < 0)
                return errno == EINTR || errno == EAGAIN;
        if (k == 0)
                return false;
        size_t keep = (size_t)k;
        if (c->len + keep > c->max) {
                keep = c->max - c->len;
                c->truncated = true;
        }
        if (keep > 0) {
                if (c->len + keep + 1 > c->cap) {
                        c->cap = c->len + keep + 1 > 2 * c->cap ? c->len + keep + 1 : 2 * c->cap;
                        c->buf = rkl_xrealloc(c->buf, c->cap);
                }
                memcpy(c->buf + c->len, tmp, keep);
                c->len += keep;
        }
        return true;
}

static char *capture_take(capture *c, size_t *ret_len)
{
        char *s = c->buf ? c->buf : rkl_xmalloc(1);
        s[c->len] = 0;
        *ret_len = c->len;
        c->buf = NULL;
        return s;
}

/* Ends the child now: its whole tree when the caller said how, and the child itself. */
static void end_now(const rkl_spawn_opts *o, pid_t pid, int pidfd)
{
        if (o->kill_tree)
                o->kill_tree(pid, o->userdata);
        (void)pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
}

static void fds_close(int *fds, size_t n)
{
        for (size_t i = 0; i < n; i++)
                fds[i] = safe_close(fds[i]);
}

/* What posix_spawn is given: the file actions and attributes, and the copies of the fds
 * they dup2 from; released together whatever happens. */
typedef struct launch {
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        int pass[16], std[3];
        size_t n_pass;
} launch;

static void launch_done(launch *l)
{
        posix_spawn_file_actions_destroy(&l->fa);
        posix_spawnattr_destroy(&l->attr);
        fds_close(l->pass, l->n_pass);
        fds_close(l->std, 3);
}

/* Sets up l for a child whose stdio is in, out, err (-1: /dev/null). */
static int launch_init(launch *l, const rkl_spawn_opts *o, int in, int out, int err,
                       rkl_error *reterr)
{
        *l = (launch){.std = {-1, -1, -1}};
        posix_spawn_file_actions_init(&l->fa);
        posix_spawnattr_init(&l->attr);
        /* Passed fds are copied above the slots they go to first, so that no dup2 clobbers
         * another's source (and dup2 onto itself, which keeps O_CLOEXEC, never happens). */
        for (; l->n_pass < o->n_pass_fds; l->n_pass++) {
                int fd = fcntl(o->pass_fds[l->n_pass], F_DUPFD_CLOEXEC, 3 + (int)o->n_pass_fds);
                if (fd < 0)
                        return rkl_error_set(reterr, -errno, "fcntl: %s", strerror(errno));
                l->pass[l->n_pass] = fd;
        }
        /* The slots 0 to 2 go first: a given fd at 0 to 2 must be read before it is
         * replaced, and dup2 onto itself keeps O_CLOEXEC, so each is copied up first. */
        const int given[3] = {in, out, err};
        for (int i = 0; i < 3; i++)
                if (given[i] >= 0 &&
                    (l->std[i] = fcntl(given[i], F_DUPFD_CLOEXEC, 3 + (int)o->n_pass_fds)) < 0)
                        return rkl_error_set(reterr, -errno, "fcntl: %s", strerror(errno));
        for (int i = 0; i < 3; i++) {
                if (l->std[i] >= 0)
                        posix_spawn_file_actions_adddup2(&l->fa, l->std[i], i);
                else
                        posix_spawn_file_actions_addopen(&l->fa, i, "/dev/null",
                                                         i == 0 ? O_RDONLY : O_WRONLY, 0);
        }
        for (size_t i = 0; i < l->n_pass; i++)
                posix_spawn_file_actions_adddup2(&l->fa, l->pass[i], 3 + (int)i);
        posix_spawn_file_actions_addchdir_np(&l->fa, o->cwd ? o->cwd : "/");
        /* Belt and braces: every fd is O_CLOEXEC already. */
        posix_spawn_file_actions_addclosefrom_np(&l->fa, 3 + (int)l->n_pass);

        /* The child starts with default signal dispositions and an empty mask, whatever the
         * daemon's threads block. */
        sigset_t all, none;
        sigfillset(&all);
        sigemptyset(&none);
        posix_spawnattr_setsigdefault(&l->attr, &all);
        posix_spawnattr_setsigmask(&l->attr, &none);
        short flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
        if (o->new_process_group) {
                posix_spawnattr_setpgroup(&l->attr, 0);
                flags |= POSIX_SPAWN_SETPGROUP;
        }
        posix_spawnattr_setflags(&l->attr, flags);
        return 0;
}

static int start_child(char *const argv[], const rkl_spawn_opts *o, int in, int out, int err,
                       pid_t *ret_pid, rkl_error *reterr)
{
        _cleanup_(launch_done) launch l;
        int r = launch_init(&l, o, in, out, err, reterr);
        if (r < 0)
                return r;
        mode_t old_umask = 0;
        if (o->set_umask) {
                r = thread_umask_private();
                if (r < 0)
                        return rkl_error_set(reterr, r, "unshare(CLONE_FS): %s", strerror(-r));
                old_umask = umask((mode_t)o->umask);
        }
        r = posix_spawn(ret_pid, argv[0], &l.fa, &l.attr, argv, o->envp ? o->envp : environ);
        if (o->set_umask)
                (void)umask(old_umask);
        if (r != 0)
                return rkl_error_set(reterr, -r, "cannot run '%s': %s", argv[0], strerror(r));
        return 0;
}

static void capture_done(capture *c)
{
        free(c->buf);
        c->buf = NULL;
}

typedef struct outcome {
        bool timed_out, cancelled;
} outcome;

/* Until the child exited and both pipes closed (a grandchild holding a pipe must not keep us
 * past the deadline either): the deadline (SIGTERM, then SIGKILL after the grace, or the
 * caller's tree kill), the cancel poll, the output. */
static int supervise(const rkl_spawn_opts *o, pid_t pid, int pidfd, capture *cout, capture *cerr,
                     outcome *ret, rkl_error *reterr)
{
        bool exited = false, timed_out = false, killed = false, cancelled = false;
        uint64_t start = rkl_now_usec(CLOCK_MONOTONIC);
        uint64_t timeout = o->timeout_usec ? o->timeout_usec : USEC_INFINITY;
        uint64_t grace = o->kill_grace_usec ? o->kill_grace_usec : 2 * USEC_PER_SEC;
        uint64_t drain_until = 0; /* the tree was ended after the child exited: pipes by then */

        while (!exited || cout->fd >= 0 || cerr->fd >= 0) {
                struct pollfd pfd[3];
                int n = 0, wait_ms = -1;

                if (killed && exited)
                        break; /* killed child, pipes held by its descendants: give up */
                uint64_t now = rkl_now_usec(CLOCK_MONOTONIC);
                if (exited && o->kill_tree && !drain_until) {
                        /* What the child left behind holds the pipes: it goes with it. */
                        o->kill_tree(pid, o->userdata);
                        drain_until = now + grace;
                }

                if (cout->fd >= 0)
                        pfd[n++] = (struct pollfd){.fd = cout->fd, .events = POLLIN};
                if (cerr->fd >= 0)
                        pfd[n++] = (struct pollfd){.fd = cerr->fd, .events = POLLIN};
                if (!exited)
                        pfd[n++] = (struct pollfd){.fd = pidfd, .events = POLLIN};

                uint64_t deadline = drain_until                ? drain_until
                                    : killed                   ? USEC_INFINITY /* SIGKILLed */
                                    : timeout == USEC_INFINITY ? USEC_INFINITY
                                    : timed_out                ? start + timeout + grace
                                                               : start + timeout;
                if (deadline != USEC_INFINITY)
                        wait_ms = rkl_poll_timeout_ms(now, deadline);
                if (o->cancelled && !killed && (wait_ms < 0 || wait_ms > 50))
                        wait_ms = 50;

                int k = poll(pfd, (nfds_t)n, wait_ms);
                if (k < 0 && errno != EINTR) {
                        int r = -errno;
                        end_now(o, pid, pidfd);
                        return rkl_error_set(reterr, r, "poll: %s", strerror(-r));
                }
                if (o->cancelled && !killed && o->cancelled(o->userdata)) {
                        cancelled = killed = true;
                        end_now(o, pid, pidfd);
                        continue;
                }
                if (k <= 0) {
                        if (deadline == USEC_INFINITY || rkl_now_usec(CLOCK_MONOTONIC) < deadline)
                                continue;
                        if (drain_until)
                                break; /* something the tree's end did not reach holds a pipe */
                        if (!timed_out && !o->kill_tree) {
                                timed_out = true;
                                (void)pidfd_send_signal(pidfd, SIGTERM, NULL, 0);
                        } else {
                                timed_out = killed = true;
                                if (exited)
                                        break;
                                end_now(o, pid, pidfd);
                        }
                        continue;
                }
                for (int i = 0; i < n; i++) {
                        if (!pfd[i].revents)
                                continue;
                        if (pfd[i].fd == pidfd)
                                exited = true;
                        else if (pfd[i].fd == cout->fd && !capture_read(cout))
                                cout->fd = -1;
                        else if (pfd[i].fd == cerr->fd && !capture_read(cerr))
                                cerr->fd = -1;
                }
        }
        *ret = (outcome){.timed_out = timed_out, .cancelled = cancelled};
        return 0;
}

int rkl_spawn_run(char *const argv[], const rkl_spawn_opts *o, rkl_spawn_result *ret,
                  rkl_error *reterr)
{
        static const rkl_spawn_opts defaults = {.max_output = 1 << 20};
        _cleanup_close_ int out_r = -EBADF, out_w = -EBADF, err_r = -EBADF, err_w = -EBADF;
        _cleanup_close_ int pidfd = -EBADF;
        int p[2], r;
        pid_t pid;

        assert(argv && argv[0]);
        if (!o)
                o = &defaults;
        assert(o->n_pass_fds <= 16);

        for (int i = 0; !o->stdio && i < 2; i++) {
                if (pipe2(p, O_CLOEXEC) < 0)
                        return rkl_error_set(reterr, -errno, "pipe: %s", strerror(errno));
                *(i == 0 ? &out_r : &err_r) = p[0];
                *(i == 0 ? &out_w : &err_w) = p[1];
        }
        int in = o->stdio ? o->stdio[0] : o->stdin_fd ? *o->stdin_fd : -1;
        if ((r = start_child(argv, o, in, o->stdio ? o->stdio[1] : out_w,
                             o->stdio ? o->stdio[2] : err_w, &pid, reterr)) < 0)
                return r;
        out_w = safe_close(out_w);
        err_w = safe_close(err_w);

        pidfd = pidfd_open(pid, 0);
        if (pidfd < 0) {
                r = -errno;
                (void)kill(pid, SIGKILL);
                (void)waitpid(pid, NULL, 0);
                return rkl_error_set(reterr, r, "pidfd_open: %s", strerror(-r));
        }

        _cleanup_(capture_done)
            capture cout = {.fd = out_r, .max = o->max_output ? o->max_output : (1 << 20)};
        _cleanup_(capture_done) capture cerr = {.fd = err_r, .max = cout.max};
        outcome done = {0};
        r = supervise(o, pid, pidfd, &cout, &cerr, &done, reterr);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0) {
                if (errno != EINTR)
                        return rkl_error_set(reterr, -errno, "waitpid: %s", strerror(errno));
        }
        if (r < 0)
                return r;

        *ret = (rkl_spawn_result){
            .timed_out = done.timed_out,
            .cancelled = done.cancelled,
            .out_truncated = cout.truncated,
            .err_truncated = cerr.truncated,
        };
        if (WIFEXITED(status)) {
                ret->exit_code = WEXITSTATUS(status);
        } else {
                ret->exit_code = -1;
                ret->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        }
        ret->out = capture_take(&cout, &ret->out_len);
        ret->err = capture_take(&cerr, &ret->err_len);
        return 0;
}
