/* Exec and Attach over the channel protocols (v1 to v5 of remotecommand): the client opens
 * an error stream, then stdin, stdout and stderr as asked, and resize for a terminal (over
 * WebSocket the transport opens them all at once, as channels); once
 * all are there the command starts (src/exec/, on a thread of its own that waits for it),
 * with pipes or a terminal, which the helper makes in the container and whose master it
 * sends back on a console socket; its output goes out as the peer takes it, and at its end
 * the exit status goes on the error stream. The peer going away kills the command and all it
 * started.
 *
 * Attach joins rkt's iottymux instead of starting anything: its unix sockets carry the app's
 * output to every client (and to the log file, which attaching leaves alone) and a client's
 * input to the app. Detaching closes our sockets only; the app runs on. */
#include "stream-internal.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/time-util.h"
#include "exec/exec.h"
#include "base/banned.h"

/* kubelet's streamCreationTimeout. */
#define STREAMS_TIMEOUT_USEC (30 * USEC_PER_SEC)
#define RESIZE_MAX           256

enum { ST_ERROR, ST_STDIN, ST_STDOUT, ST_STDERR, ST_RESIZE, _ST_MAX };
static const char *const st_names[_ST_MAX] = {"error", "stdin", "stdout", "stderr", "resize"};

typedef struct exec_state {
        rkl_stream_channel *st[_ST_MAX];
        uint64_t deadline_usec;
        bool started, exited, finished;
        bool attached;
        bool input_done;        /* the client's stdin ended */
        int in_w, out_r, err_r; /* ours; with a pty in_w and out_r are both its master */
        int child[3];
        /* With a terminal: the console socket the pty's master comes on (ours, until it
         * came), and the helper's end of it (the waiter's, as child[]). */
        int console, console_peer;
        bool tty;
        struct winsize size;
        bool has_size;
        pthread_t waiter;
        int done_fd;
        atomic_bool cancel;
        int exec_r, exit_code; /* the waiter's, read after joining it */
        rkl_error err;
} exec_state;

static bool wanted(const rkl_stream_request *r, bool tty_proto, int type)
{
        switch (type) {
        case ST_ERROR:
                return true;
        case ST_STDIN:
                return r->stdin;
        case ST_STDOUT:
                return r->stdout;
        case ST_STDERR:
                return r->stderr && !r->tty;
        case ST_RESIZE:
                return r->tty && tty_proto;
        }
        return false;
}

static exec_state *state(rkl_stream_session *s)
{
        exec_state *x = rkl_stream__session_data(s);
        if (!x) {
                x = rkl_xnew0(exec_state, 1);
                x->in_w = x->out_r = x->err_r = x->done_fd = x->console = x->console_peer = -1;
                x->child[0] = x->child[1] = x->child[2] = -1;
                x->deadline_usec = rkl_now_usec(CLOCK_MONOTONIC) + STREAMS_TIMEOUT_USEC;
                x->err = (rkl_error)RKL_ERROR_INIT;
                rkl_stream__session_set_data(s, x);
        }
        return x;
}

static int exec_open(rkl_stream_session *s, rkl_stream_channel *st, const rkl_stream_header *hs,
                     size_t n)
{
        exec_state *x = state(s);
        const rkl_stream_header *h = rkl_stream__header(hs, n, "streamtype");
        bool tty_proto = rkl_stream__proto_resize(rkl_stream__session_proto(s));
        if (!h || x->started)
                return -EINVAL;
        for (int t = 0; t < _ST_MAX; t++) {
                if (h->value_len != strlen(st_names[t]) ||
                    memcmp(h->value, st_names[t], h->value_len) != 0)
                        continue;
                if (!wanted(rkl_stream__session_request(s), tty_proto, t) || x->st[t])
                        return -EINVAL;
                st->type = t;
                st->data = x;
                x->st[t] = st;
                return 0;
        }
        return -EINVAL;
}

static void resize_apply(exec_state *x)
{
        if (x->has_size && x->tty && x->in_w >= 0)
                (void)ioctl(x->in_w, TIOCSWINSZ, &x->size);
}

/* client-go sends one JSON object a line: {"Width":80,"Height":24}. */
static void resize_parse(rkl_stream_session *s, exec_state *x, rkl_stream_channel *st)
{
        for (;;) {
                uint8_t *nl = memchr(st->in, '\n', st->in_len);
                if (!nl) {
                        if (st->in_len > RESIZE_MAX) /* no line this long is a size */
                                rkl_stream__consumed(s, st, st->in_len);
                        return;
                }
                char line[RESIZE_MAX + 1];
                size_t n = (size_t)(nl - st->in);
                if (n <= RESIZE_MAX) {
                        memcpy(line, st->in, n);
                        line[n] = 0;
                        const char *w = strstr(line, "\"Width\":");
                        const char *h = strstr(line, "\"Height\":");
                        if (w && h) {
                                unsigned long cw = strtoul(w + 8, NULL, 10);
                                unsigned long ch = strtoul(h + 9, NULL, 10);
                                if (cw <= UINT16_MAX && ch <= UINT16_MAX) {
                                        x->size = (struct winsize){.ws_col = (unsigned short)cw,
                                                                   .ws_row = (unsigned short)ch};
                                        x->has_size = true;
                                        resize_apply(x);
                                }
                        }
                }
                rkl_stream__consumed(s, st, n + 1);
        }
}

static void stdin_close(exec_state *x)
{
        if (x->in_w < 0)
                return;
        if (x->attached) {
                /* iottymux's stdin is the app's: ours ends, the app's stays. */
                (void)shutdown(x->in_w, SHUT_WR);
                return;
        }
        if (x->tty) {
                /* The terminal stays (it is stdout too): end of input is ^D. */
                static const char eot = 4;
                (void)!write(x->in_w, &eot, 1);
                return;
        }
        x->in_w = safe_close(x->in_w);
}

static void stdin_pump(rkl_stream_session *s, exec_state *x)
{
        rkl_stream_channel *st = x->st[ST_STDIN];
        /* Before the terminal is there, the client's input waits for it. */
        if (!st || !x->started || x->console >= 0)
                return;
        while (st->in_len > 0 && x->in_w >= 0) {
                ssize_t k = write(x->in_w, st->in, st->in_len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EAGAIN)
                        return;
                if (k < 0) { /* the command closed its stdin: what is left goes nowhere */
                        if (!x->tty)
                                x->in_w = safe_close(x->in_w);
                        rkl_stream__consumed(s, st, st->in_len);
                        break;
                }
                rkl_stream__consumed(s, st, (size_t)k);
        }
        if (st->in_len > 0 && x->in_w < 0)
                rkl_stream__consumed(s, st, st->in_len);
        if (st->in_fin && st->in_len == 0 && st->data) {
                stdin_close(x);
                st->data = NULL; /* done with it */
                x->input_done = true;
        }
}

static void exec_input(rkl_stream_session *s, rkl_stream_channel *st, bool reset)
{
        exec_state *x = state(s);
        if (reset && st->type != ST_STDIN) {
                /* The peer no longer wants this stream: its output is dropped. */
                x->st[st->type] = NULL;
                st->data = NULL;
                return;
        }
        switch (st->type) {
        case ST_STDIN:
                stdin_pump(s, x);
                break;
        case ST_RESIZE:
                resize_parse(s, x, st);
                break;
        default: /* nothing is read from error, stdout, stderr */
                rkl_stream__consumed(s, st, st->in_len);
                break;
        }
}

static bool waiter_cancelled(void *userdata)
{
        exec_state *x = userdata;
        return atomic_load(&x->cancel);
}

typedef struct waiter_args {
        exec_state *x;
        rkl_stream_request *req;
        const char *helper;
} waiter_args;

static void *waiter_main(void *userdata)
{
        waiter_args *a = userdata;
        exec_state *x = a->x;
        rkl_exec_result res = {0};
        rkl_exec_opts o = {
            .pid = a->req->pid,
            .argv = a->req->argv,
            .cancelled = waiter_cancelled,
            .userdata = x,
            .helper = a->helper,
            .stdio = x->child,
            .tty = x->tty,
            .console = x->console_peer,
            .seccomp = a->req->seccomp,
        };
        x->exec_r = rkl_exec_run(&o, &res, &x->err);
        x->exit_code = res.exit_code;
        rkl_exec_result_done(&res);
        /* Our output ends once the command's copies of its ends are gone too. */
        for (int i = 0; i < 3; i++)
                x->child[i] = safe_close(x->child[i]);
        x->console_peer = safe_close(x->console_peer);
        uint64_t one = 1;
        (void)!write(x->done_fd, &one, sizeof(one));
        free(a);
        return NULL;
}

static int nonblock(int fd)
{
        int fl = fcntl(fd, F_GETFL);
        return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
}

static int pipes_make(exec_state *x, const rkl_stream_request *r)
{
        int p[2];
        if (x->tty) {
                /* The terminal comes from the helper (console_receive()); its own stdio
                 * stays /dev/null. */
                if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p) < 0)
                        return -errno;
                x->console = p[0];
                x->console_peer = p[1];
                return nonblock(x->console);
        }
        if (r->stdin) {
                if (pipe2(p, O_CLOEXEC) < 0)
                        return -errno;
                x->child[0] = p[0];
                x->in_w = p[1];
                if (nonblock(x->in_w) < 0)
                        return -errno;
        }
        for (int i = 1; i <= 2; i++) {
                if (!(i == 1 ? r->stdout : r->stderr))
                        continue;
                if (pipe2(p, O_CLOEXEC) < 0)
                        return -errno;
                x->child[i] = p[1];
                *(i == 1 ? &x->out_r : &x->err_r) = p[0];
                if (nonblock(p[0]) < 0)
                        return -errno;
        }
        return 0;
}

/* One of iottymux's sockets, by a path through an fd of its directory: rkt's paths run
 * past sockaddr_un's 108 bytes. */
static int iottymux_connect(int dirfd, const char *name)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s", dirfd, name);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || nonblock(fd) < 0) {
                int r = -errno;
                (void)close(fd);
                return r;
        }
        return fd;
}

static int attach(exec_state *x, const rkl_stream_request *r)
{
        _cleanup_close_ int dirfd = open(r->attach_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0)
                return rkl_error_set(&x->err, -errno, "cannot open '%s': %s", r->attach_dir,
                                     strerror(errno));
        const char *names[3] = {"sock-stdin", "sock-stdout", "sock-stderr"};
        int *fds[3] = {&x->in_w, &x->out_r, &x->err_r};
        bool want[3] = {r->stdin, r->stdout, r->stderr && !r->tty};
        /* Output first: iottymux drops what the app prints while no client listens, and an
         * answer to our input should find us there. */
        for (int k = 0; k < 3; k++) {
                int i = r->tty ? k : (k + 1) % 3;
                if (!want[i])
                        continue;
                /* A terminal is one socket both ways. */
                *fds[i] = r->tty && i == 2 ? -1
                          : r->tty && i == 1 && x->in_w >= 0
                              ? fcntl(x->in_w, F_DUPFD_CLOEXEC, 3)
                              : iottymux_connect(dirfd, r->tty ? "sock-tty" : names[i]);
                if (*fds[i] < 0)
                        return rkl_error_set(&x->err, *fds[i], "cannot attach to %s: %s",
                                             r->tty ? "sock-tty" : names[i], strerror(-*fds[i]));
        }
        /* Nothing to wait for but the streams. */
        x->started = x->exited = x->attached = true;
        return 0;
}

/* The terminal's master, from the helper: from then on it is the command's input and
 * output. Nothing comes when the helper failed first (its exit says why): the socket is
 * closed once the helper is gone, or at its end of file. */
static void console_receive(rkl_stream_session *s, exec_state *x)
{
        char byte;
        struct iovec iov = {.iov_base = &byte, .iov_len = 1};
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int))];
        } control;
        struct msghdr msg = {.msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = control.buf,
                             .msg_controllen = sizeof(control.buf)};
        ssize_t k = recvmsg(x->console, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        struct cmsghdr *c = k > 0 ? CMSG_FIRSTHDR(&msg) : NULL;
        if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
            c->cmsg_len != CMSG_LEN(sizeof(int))) {
                x->console = safe_close(x->console);
                return;
        }
        memcpy(&x->in_w, CMSG_DATA(c), sizeof(int));
        x->out_r = fcntl(x->in_w, F_DUPFD_CLOEXEC, 3);
        if (x->out_r < 0 || nonblock(x->in_w) < 0 || nonblock(x->out_r) < 0) {
                /* No terminal to serve: the command gets a hangup. */
                rkl_log_warning("stream: exec: cannot use the terminal: %m");
                x->in_w = safe_close(x->in_w);
                x->out_r = safe_close(x->out_r);
        }
        /* The size first, then the command may run (the helper waits for this byte). */
        resize_apply(x);
        (void)send(x->console, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        x->console = safe_close(x->console);
        if (x->in_w < 0)
                return;
        /* Without stdin, input ends at once. */
        if (!rkl_stream__session_request(s)->stdin)
                stdin_close(x);
        stdin_pump(s, x);
}

static int start(rkl_stream_session *s, exec_state *x)
{
        rkl_stream_request *r = rkl_stream__session_request(s);
        x->tty = r->tty;
        if (r->kind == RKL_STREAM_ATTACH)
                return attach(x, r);
        int k = pipes_make(x, r);
        if (k < 0)
                return rkl_error_set(&x->err, k, "cannot make the command's stdio: %s",
                                     strerror(-k));
        x->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (x->done_fd < 0)
                return rkl_error_set(&x->err, -errno, "eventfd: %s", strerror(errno));
        waiter_args *a = rkl_xnew0(waiter_args, 1);
        *a = (waiter_args){.x = x, .req = r, .helper = rkl_stream__session_limits(s)->exec_helper};
        k = pthread_create(&x->waiter, NULL, waiter_main, a);
        if (k != 0) {
                free(a);
                return rkl_error_set(&x->err, -k, "cannot start a thread: %s", strerror(k));
        }
        x->started = true;
        return 0;
}

/* The status on the error stream, and the end of every stream. */
static void finish(rkl_stream_session *s, exec_state *x)
{
        rkl_stream_channel *e = x->st[ST_ERROR];
        for (int t = ST_STDOUT; t <= ST_STDERR; t++)
                if (x->st[t])
                        rkl_stream__send(s, x->st[t], NULL, 0, true);
        if (e) {
                _cleanup_free_ char *msg = NULL;
                bool v4 = rkl_stream__proto_json_status(rkl_stream__session_proto(s));
                if (x->exec_r < 0 && v4)
                        msg = rkl_xasprintf("{\"metadata\":{},\"status\":\"Failure\","
                                            "\"message\":\"%s\",\"reason\":\"InternalError\"}",
                                            "cannot run the command (see the daemon's log)");
                else if (x->exec_r < 0)
                        msg = rkl_xasprintf("cannot run the command: %s", x->err.msg);
                else if (v4)
                        msg = rkl_stream__status_json(x->exit_code);
                else if (x->exit_code != 0)
                        msg = rkl_xasprintf("command terminated with non-zero exit code: %d",
                                            x->exit_code);
                if (x->exec_r < 0)
                        rkl_log_info("stream: exec: %s", x->err.msg);
                else
                        rkl_log_debug("stream: %s ends (status %d)",
                                      x->attached ? "attach" : "exec", x->exit_code);
                rkl_stream__send(s, e, msg, msg ? strlen(msg) : 0, true);
        }
        x->finished = true;
}

static void maybe_finish(rkl_stream_session *s, exec_state *x)
{
        /* An attach to stdin alone lasts as long as the client's input. */
        bool input_left = x->attached && !x->st[ST_STDOUT] && !x->st[ST_STDERR] &&
                          x->st[ST_STDIN] && x->st[ST_STDIN]->data;
        /* stdin_once: the attach ends with its input, as kubelet's client expects (the
         * app's stdin ends in iottymux: packaging/rkt/stdin-once.patch). */
        if (x->attached && x->input_done && rkl_stream__session_request(s)->stdin_once) {
                x->out_r = safe_close(x->out_r);
                x->err_r = safe_close(x->err_r);
                if (x->in_w >= 0 && x->tty)
                        x->in_w = safe_close(x->in_w);
        }
        if (x->exited && x->out_r < 0 && x->err_r < 0 && x->console < 0 && !x->finished &&
            !input_left)
                finish(s, x);
}

static int exec_poll(rkl_stream_session *s, struct pollfd *pfd, int max, int *timeout_ms)
{
        exec_state *x = state(s);
        rkl_stream_request *r = rkl_stream__session_request(s);
        bool tty_proto = rkl_stream__proto_resize(rkl_stream__session_proto(s));
        int n = 0;

        if (!x->started && !x->finished) {
                bool all = true;
                for (int t = 0; t < _ST_MAX; t++)
                        all = all && (!wanted(r, tty_proto, t) || x->st[t]);
                uint64_t now = rkl_now_usec(CLOCK_MONOTONIC);
                if (all && start(s, x) < 0) {
                        x->exec_r = x->err.code;
                        finish(s, x);
                } else if (!all && now >= x->deadline_usec) {
                        rkl_error_set(&x->err, -ETIMEDOUT,
                                      "the client did not open its streams within %d s",
                                      (int)(STREAMS_TIMEOUT_USEC / USEC_PER_SEC));
                        x->exec_r = x->err.code;
                        finish(s, x);
                } else if (!all) {
                        int ms = rkl_poll_timeout_ms(now, x->deadline_usec);
                        if (*timeout_ms < 0 || ms < *timeout_ms)
                                *timeout_ms = ms;
                }
                if (x->started)
                        stdin_pump(s, x);
        }
        if (!x->started || max < 5)
                return 0;
        maybe_finish(s, x);
        if (x->finished)
                return 0;
        rkl_stream_channel *out = x->st[ST_STDOUT], *err = x->st[ST_STDERR];
        if (x->out_r >= 0 && (!out || rkl_stream__send_room(s, out) > 0))
                pfd[n++] = (struct pollfd){.fd = x->out_r, .events = POLLIN};
        if (x->err_r >= 0 && (!err || rkl_stream__send_room(s, err) > 0))
                pfd[n++] = (struct pollfd){.fd = x->err_r, .events = POLLIN};
        if (x->in_w >= 0 && x->st[ST_STDIN] && x->st[ST_STDIN]->in_len > 0)
                pfd[n++] = (struct pollfd){.fd = x->in_w, .events = POLLOUT};
        if (!x->exited)
                pfd[n++] = (struct pollfd){.fd = x->done_fd, .events = POLLIN};
        if (x->console >= 0)
                pfd[n++] = (struct pollfd){.fd = x->console, .events = POLLIN};
        return n;
}

/* Reads what the command wrote on fd and sends it on st (dropped when st is gone). */
static void pump_out(rkl_stream_session *s, int *fd, rkl_stream_channel *st, bool is_pty)
{
        char buf[32 << 10];
        size_t room = st ? rkl_stream__send_room(s, st) : sizeof(buf);
        if (room == 0)
                return;
        ssize_t k = read(*fd, buf, room < sizeof(buf) ? room : sizeof(buf));
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (k <= 0) {
                /* A pty's master reads EIO once the last slave is closed. */
                (void)is_pty;
                *fd = safe_close(*fd);
                return;
        }
        if (st)
                rkl_stream__send(s, st, buf, (size_t)k, false);
}

static void exec_events(rkl_stream_session *s, const struct pollfd *pfd, int n)
{
        exec_state *x = state(s);
        for (int i = 0; i < n; i++) {
                if (!pfd[i].revents)
                        continue;
                if (pfd[i].fd == x->out_r)
                        pump_out(s, &x->out_r, x->st[ST_STDOUT], x->tty);
                else if (pfd[i].fd == x->err_r)
                        pump_out(s, &x->err_r, x->st[ST_STDERR], false);
                else if (pfd[i].fd == x->in_w)
                        stdin_pump(s, x);
                else if (pfd[i].fd == x->console && x->console >= 0)
                        console_receive(s, x);
                else if (pfd[i].fd == x->done_fd && !x->exited) {
                        (void)pthread_join(x->waiter, NULL);
                        x->exited = true;
                }
        }
        /* The helper is gone: its terminal came by now, or never will. */
        if (x->exited && x->console >= 0) {
                console_receive(s, x);
                x->console = safe_close(x->console);
        }
        if (x->exited && x->tty && x->out_r >= 0)
                pump_out(s, &x->out_r, x->st[ST_STDOUT], true);
        maybe_finish(s, x);
}

static bool exec_done(rkl_stream_session *s)
{
        exec_state *x = rkl_stream__session_data(s);
        return x && x->finished;
}

static void exec_end(rkl_stream_session *s)
{
        exec_state *x = rkl_stream__session_data(s);
        if (!x)
                return;
        if (x->started && !x->exited) {
                atomic_store(&x->cancel, true);
                (void)pthread_join(x->waiter, NULL);
        }
        for (int t = 0; t < _ST_MAX; t++)
                if (x->st[t])
                        x->st[t]->data = NULL;
        for (int i = 0; i < 3; i++)
                safe_close(x->child[i]);
        safe_close(x->console_peer);
        safe_close(x->console);
        safe_close(x->in_w);
        safe_close(x->out_r);
        safe_close(x->err_r);
        safe_close(x->done_fd);
        free(x);
        rkl_stream__session_set_data(s, NULL);
}

const rkl_stream_ops rkl_stream__exec_ops = {
    .open = exec_open,
    .input = exec_input,
    .poll = exec_poll,
    .events = exec_events,
    .done = exec_done,
    .end = exec_end,
};
