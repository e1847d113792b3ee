/* The log follower (src/logs/logs.c) on a real thread, real files and real inotify in a
 * directory under /tmp: it copies rkt's records into the CRI file and follows it, survives a
 * restart and a crash without losing or doubling a line, reopens the file kubelet rotated,
 * finishes an exited container's last line, and starts over on a truncated source. The waits
 * poll the files up to a generous deadline: a deadline missed is a failure, never a timing
 * claim. Then the checks of log_directory and log_path, and the open beneath the directory
 * (src/logs/path.c). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "logs/logs.h"
#include "logs/record.h"

#define DEADLINE_SEC 60
#define LOG_PATH     "c/0.log"

typedef struct fixture {
        char dir[64];
        char *src, *progress, *logdir, *log, *state;
        rkl_logs *logs;
        rkl_logs_target t;
} fixture;

static int setup(void **state)
{
        fixture *f = rkl_xnew0(fixture, 1);
        memcpy(f->dir, "/tmp/rkl-logs-XXXXXX", sizeof("/tmp/rkl-logs-XXXXXX"));
        assert_non_null(mkdtemp(f->dir));
        _cleanup_free_ char *pod = rkl_xasprintf("%s/state/pods/p1/logs", f->dir);
        assert_int_equal(rkl_mkdir_p(pod, 0755), 0);
        f->state = rkl_xasprintf("%s/state", f->dir);
        f->src = rkl_xasprintf("%s/app.log", pod);
        f->progress = rkl_xasprintf("%s/app.progress", pod);
        f->logdir = rkl_xasprintf("%s/pods/ns_name_uid", f->dir);
        f->log = rkl_xasprintf("%s/" LOG_PATH, f->logdir);
        f->t = (rkl_logs_target){
            .container_id = "c0ffee00000000000000000000000000000000000000000000000000000000c1",
            .source = f->src,
            .progress = f->progress,
            .log_directory = f->logdir,
            .log_path = LOG_PATH,
        };
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        fixture *f = *state;
        rkl_logs_free(f->logs);
        (void)rkl_rm_rf_at(AT_FDCWD, f->dir);
        free(f->src);
        free(f->state);
        free(f->progress);
        free(f->logdir);
        free(f->log);
        free(f);
        return 0;
}

static void start(fixture *f)
{
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(rkl_logs_new(RKL_STRV(f->state), &f->logs, &err), 0);
        rkl_logs_sync(f->logs, &f->t, 1);
}

static void stop(fixture *f)
{
        f->logs = rkl_logs_free(f->logs);
}

static void append(const char *path, const char *data, size_t n)
{
        int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, n), (ssize_t)n);
        close(fd);
}

static void append_str(const char *path, const char *s)
{
        append(path, s, strlen(s));
}

/* What iottymux writes for line i, and what the CRI file gets for it. */
static char *src_line(int i)
{
        return rkl_xasprintf("2024-01-01T00:00:%02d.%09dZ %s line %d\n", i % 60, i,
                             i % 3 == 2 ? "stderr" : "stdout", i);
}

static char *cri_line(int i)
{
        return rkl_xasprintf("2024-01-01T00:00:%02d.%09dZ %s F line %d\n", i % 60, i,
                             i % 3 == 2 ? "stderr" : "stdout", i);
}

static void append_lines(const char *path, int from, int to)
{
        for (int i = from; i < to; i++) {
                _cleanup_free_ char *l = src_line(i);
                append_str(path, l); /* one write per line, as iottymux does */
        }
}

/* The CRI lines from..to-1, then tail. */
static char *expected(int from, int to, const char *tail)
{
        char *s = rkl_xstrdup("");
        for (int i = from; i < to; i++) {
                _cleanup_free_ char *l = cri_line(i);
                char *t = rkl_xasprintf("%s%s", s, l);
                free(s);
                s = t;
        }
        char *t = rkl_xasprintf("%s%s", s, tail ? tail : "");
        free(s);
        return t;
}

/* The file's content, or NULL when there is none. */
static char *slurp(const char *path, size_t *ret_len)
{
        char *s = NULL;
        size_t n = 0;
        if (rkl_read_file_at(AT_FDCWD, path, 64 * 1024 * 1024, &s, &n) < 0)
                return NULL;
        if (ret_len)
                *ret_len = n;
        return s;
}

static int64_t now_sec(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec;
}

static void pause_a_little(void)
{
        (void)nanosleep(&(struct timespec){.tv_nsec = 5 * 1000 * 1000}, NULL);
}

/* Polls until path holds exactly want; fails at the deadline, showing what it holds. */
static void wait_content(const char *path, const char *want)
{
        int64_t until = now_sec() + DEADLINE_SEC;
        for (;;) {
                _cleanup_free_ char *got = slurp(path, NULL);
                if (got && streq(got, want))
                        return;
                if (now_sec() > until) {
                        print_error("%s holds:\n%s\nexpected:\n%s\n", path, got ? got : "(nothing)",
                                    want);
                        fail();
                }
                pause_a_little();
        }
}

typedef struct progress {
        uint64_t src_off, dst_dev, dst_ino, dst_size, punched;
        int done;
} progress;

static bool progress_read(const char *path, progress *p)
{
        _cleanup_free_ char *s = slurp(path, NULL);
        return s && sscanf(s, "2 %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %d",
                           &p->src_off, &p->dst_dev, &p->dst_ino, &p->dst_size, &p->punched,
                           &p->done) == 6;
}

/* Polls until the progress file says the whole source is in the CRI file (and, with done,
 * that the container is finished). */
static progress wait_committed(fixture *f, bool done)
{
        int64_t until = now_sec() + DEADLINE_SEC;
        for (;;) {
                struct stat src, dst;
                progress p = {0};
                bool have = progress_read(f->progress, &p);
                bool all = have && stat(f->src, &src) == 0 && stat(f->log, &dst) == 0 &&
                           p.src_off == (uint64_t)src.st_size &&
                           p.dst_size == (uint64_t)dst.st_size && p.dst_ino == (uint64_t)dst.st_ino;
                if (all && p.done == done)
                        return p;
                /* Done is for good: done short of the end (or done at all when it should not
                 * be) fails at once. */
                if ((have && p.done) || now_sec() > until) {
                        _cleanup_free_ char *s = slurp(f->progress, NULL);
                        print_error("progress: %s\n", s ? s : "(none)");
                        fail();
                }
                pause_a_little();
        }
}

static void assert_mode_0640(const char *path)
{
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0640);
}

static void test_follow(void **state)
{
        fixture *f = *state;
        append_lines(f->src, 0, 3);
        start(f);
        _cleanup_free_ char *a = expected(0, 3, NULL);
        wait_content(f->log, a);
        assert_mode_0640(f->log);

        append_lines(f->src, 3, 7);
        _cleanup_free_ char *b = expected(0, 7, NULL);
        wait_content(f->log, b);
        wait_committed(f, false);
}

static void test_not_started_yet(void **state)
{
        /* Followed before rkt has made its file: it is picked up when it appears. */
        fixture *f = *state;
        start(f);
        append_lines(f->src, 0, 2);
        _cleanup_free_ char *a = expected(0, 2, NULL);
        wait_content(f->log, a);
}

static void test_restart(void **state)
{
        fixture *f = *state;
        append_lines(f->src, 0, 3);
        start(f);
        _cleanup_free_ char *a = expected(0, 3, NULL);
        wait_content(f->log, a);
        stop(f);

        /* Printed while the daemon was down: copied once it is back, once. */
        append_lines(f->src, 3, 6);
        start(f);
        _cleanup_free_ char *b = expected(0, 6, NULL);
        wait_content(f->log, b);
        append_lines(f->src, 6, 8);
        _cleanup_free_ char *c = expected(0, 8, NULL);
        wait_content(f->log, c);
}

static void test_crash_cut_back(void **state)
{
        fixture *f = *state;
        append_lines(f->src, 0, 3);
        start(f);
        _cleanup_free_ char *a = expected(0, 3, NULL);
        wait_content(f->log, a);
        progress p = wait_committed(f, false);
        stop(f);

        /* A kill -9 after a write and before its commit: line 3 (and part of a next write)
         * are in the CRI file, not in the progress. */
        append_lines(f->src, 3, 4);
        _cleanup_free_ char *l3 = cri_line(3);
        append_str(f->log, l3);
        append_str(f->log, "2024-01-01T00:00:04.000000004Z stdout P half a li");

        start(f);
        _cleanup_free_ char *b = expected(0, 4, NULL);
        wait_content(f->log, b);
        append_lines(f->src, 4, 6);
        _cleanup_free_ char *c = expected(0, 6, NULL);
        wait_content(f->log, c);
        progress q = wait_committed(f, false);
        assert_int_equal(q.dst_ino, p.dst_ino); /* cut, not replaced */
}

static void test_restart_in_long_line(void **state)
{
        /* Stopped in the middle of a line longer than RKL_LOGS_LONG_LINE: its P pieces are
         * out, its stream and time are in the progress, its F comes after the restart. */
        fixture *f = *state;
        const char head[] = "2024-01-01T00:00:01.000000001Z stderr ";
        size_t first = RKL_LOGS_LONG_LINE + 1000, rest = 5000;
        _cleanup_free_ char *body = rkl_xmalloc(first + rest + 1);
        for (size_t i = 0; i < first + rest; i++)
                body[i] = (char)('a' + i % 26);
        body[first + rest] = '\n';
        append_str(f->src, head);
        append(f->src, body, first);
        start(f);

        /* The whole pieces of what is there. */
        size_t pieces = first / RKL_LOGS_MAX_CONTENT;
        int64_t until = now_sec() + DEADLINE_SEC;
        for (;;) {
                progress p;
                if (progress_read(f->progress, &p) &&
                    p.src_off == strlen(head) + pieces * RKL_LOGS_MAX_CONTENT)
                        break;
                assert_true(now_sec() <= until);
                pause_a_little();
        }
        stop(f);
        append(f->src, body + first, rest + 1);
        append_lines(f->src, 2, 3);
        start(f);

        const char last[] = "2024-01-01T00:00:02.000000002Z stderr F line 2\n";
        size_t len = 0;
        _cleanup_free_ char *got = NULL;
        until = now_sec() + DEADLINE_SEC;
        for (;;) {
                got = mfree(got);
                got = slurp(f->log, &len);
                if (got && len >= strlen(last) && streq(got + len - strlen(last), last))
                        break;
                assert_true(now_sec() <= until);
                pause_a_little();
        }
        /* The pieces carry the line, in order, all stderr at its time, the last one F. */
        _cleanup_free_ char *content = rkl_xmalloc(len);
        size_t n = 0, k = 0;
        for (const char *p = got; p < got + len - strlen(last); k++) {
                const char *nl = memchr(p, '\n', (size_t)(got + len - p));
                assert_non_null(nl);
                assert_memory_equal(p, head, strlen(head));
                const char *tag = p + strlen(head);
                assert_int_equal(tag[0], nl + 1 == got + len - strlen(last) ? 'F' : 'P');
                assert_int_equal(tag[1], ' ');
                size_t piece = (size_t)(nl - (tag + 2));
                assert_true(piece <= RKL_LOGS_MAX_CONTENT);
                memcpy(content + n, tag + 2, piece);
                n += piece;
                p = nl + 1;
        }
        assert_true(k >= pieces + 1);
        assert_int_equal(n, first + rest);
        assert_memory_equal(content, body, first + rest);
}

/* How many times line appears in s. */
static size_t count(const char *s, const char *line)
{
        size_t k = 0;
        for (const char *p = s; (p = strstr(p, line)); p += strlen(line))
                k++;
        return k;
}

static void test_reopen(void **state)
{
        fixture *f = *state;
        append_lines(f->src, 0, 2);
        start(f);
        _cleanup_free_ char *a = expected(0, 2, NULL);
        wait_content(f->log, a);

        /* kubelet's rotation: rename, then ReopenContainerLog. */
        _cleanup_free_ char *old = rkl_xasprintf("%s.20240101-000000", f->log);
        assert_int_equal(rename(f->log, old), 0);
        append_lines(f->src, 2, 4);
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(rkl_logs_reopen(f->logs, &f->t, &err), 0);
        append_lines(f->src, 4, 6);

        /* What was in the source at the reopen went to the old file, the rest to the new. */
        _cleanup_free_ char *b = expected(4, 6, NULL);
        wait_content(f->log, b);
        assert_mode_0640(f->log);
        _cleanup_free_ char *in_old = slurp(old, NULL);
        _cleanup_free_ char *in_new = slurp(f->log, NULL);
        assert_non_null(in_old);
        for (int i = 0; i < 6; i++) {
                _cleanup_free_ char *l = cri_line(i);
                assert_int_equal(count(in_old, l) + count(in_new, l), 1);
        }
        _cleanup_free_ char *c = expected(0, 4, NULL);
        assert_string_equal(in_old, c);

        /* And it goes on in the new one, across a restart too. */
        stop(f);
        append_lines(f->src, 6, 7);
        start(f);
        _cleanup_free_ char *d = expected(4, 7, NULL);
        wait_content(f->log, d);
        _cleanup_free_ char *in_old2 = slurp(old, NULL);
        assert_string_equal(in_old2, c);
}

static void test_reopen_unknown(void **state)
{
        /* Reopened before the first sync named it: followed from its progress, or an error:
         * never a crash, and the next sync decides. */
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(rkl_logs_new(RKL_STRV(f->state), &f->logs, &err), 0);
        int r = rkl_logs_reopen(f->logs, &f->t, &err);
        assert_true(r == 0 || r == -ENOENT);
        rkl_logs_sync(f->logs, &f->t, 1);
        append_lines(f->src, 0, 1);
        _cleanup_free_ char *a = expected(0, 1, NULL);
        wait_content(f->log, a);
}

static void test_exited(void **state)
{
        fixture *f = *state;
        append_lines(f->src, 0, 2);
        append_str(f->src, "2024-01-01T00:00:09.000000009Z stderr the last words");
        start(f);
        _cleanup_free_ char *a = expected(0, 2, NULL);
        wait_content(f->log, a);

        f->t.exited = true;
        rkl_logs_sync(f->logs, &f->t, 1);
        _cleanup_free_ char *b =
            expected(0, 2, "2024-01-01T00:00:09.000000009Z stderr P the last words\n");
        wait_content(f->log, b);
        wait_committed(f, true);

        /* Done is done, across a restart. */
        stop(f);
        start(f);
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(rkl_logs_reopen(f->logs, &f->t, &err), -ESRCH);
        _cleanup_free_ char *c = slurp(f->log, NULL);
        assert_string_equal(c, b);
}

static void wait_finished(fixture *f)
{
        int64_t until = now_sec() + DEADLINE_SEC;
        while (!rkl_logs_finished(f->logs, f->t.container_id)) {
                if (now_sec() > until)
                        fail_msg("the log was not finished");
                pause_a_little();
        }
}

static void test_finish(void **state)
{
        /* What the reconciler holds a container's exit for: once the log says finished,
         * everything is in it, the last record without a newline too, at once. */
        fixture *f = *state;
        append_lines(f->src, 0, 3);
        start(f);
        assert_false(rkl_logs_finished(f->logs, f->t.container_id));
        append_lines(f->src, 3, 500);
        append_str(f->src, "2024-01-01T00:00:09.000000009Z stdout no newline");
        rkl_logs_target t = f->t;
        t.exited = true;
        rkl_logs_finish(f->logs, &t);
        wait_finished(f);
        _cleanup_free_ char *want =
            expected(0, 500, "2024-01-01T00:00:09.000000009Z stdout P no newline\n");
        _cleanup_free_ char *got = slurp(f->log, NULL);
        assert_string_equal(got, want);
        assert_false(rkl_logs_finished(f->logs, "another"));

        /* Still finished after a restart, and nothing more is copied. */
        append_lines(f->src, 500, 501);
        stop(f);
        start(f);
        wait_finished(f);
        _cleanup_free_ char *again = slurp(f->log, NULL);
        assert_string_equal(again, want);
}

static void test_writer_gone(void **state)
{
        /* Said once per container, and again only once it was forgotten (no longer
         * followed) and comes back. */
        fixture *f = *state;
        start(f);
        assert_true(rkl_logs_writer_gone(f->logs, f->t.container_id));
        assert_false(rkl_logs_writer_gone(f->logs, f->t.container_id));
        assert_true(rkl_logs_writer_gone(f->logs, "another"));
        rkl_logs_sync(f->logs, &f->t, 1); /* "another" is not followed */
        int64_t until = now_sec() + DEADLINE_SEC;
        while (!rkl_logs_writer_gone(f->logs, "another")) {
                if (now_sec() > until)
                        fail_msg("a container no longer followed was not forgotten");
                pause_a_little();
        }
        assert_false(rkl_logs_writer_gone(f->logs, f->t.container_id));
}

static void test_exited_backlog(void **state)
{
        /* More than one read's worth (what an app printed while the daemon was down), then
         * the app exits: all of it is copied before the follower is done, not just what it
         * had read by the end of the grace. */
        fixture *f = *state;
        char pad[100];
        memset(pad, '.', sizeof(pad));
        size_t cap = 6 * 1024 * 1024, n = 0, w = 0;
        _cleanup_free_ char *src = rkl_xmalloc(cap);
        _cleanup_free_ char *want = rkl_xmalloc(cap + cap / 8);
        for (int i = 0; n < 5 * 1024 * 1024; i++) {
                int k = 40 + i % 60;
                n += (size_t)snprintf(src + n, cap - n,
                                      "2024-01-01T00:00:00.%09dZ stdout %d %.*s\n", i, i, k, pad);
                w += (size_t)snprintf(want + w, cap + cap / 8 - w,
                                      "2024-01-01T00:00:00.%09dZ stdout F %d %.*s\n", i, i, k, pad);
        }
        append(f->src, src, n);
        f->t.exited = true;
        start(f);
        wait_committed(f, true);
        _cleanup_free_ char *got = slurp(f->log, NULL);
        assert_non_null(got);
        assert_int_equal(strlen(got), w);
        assert_string_equal(got, want);
}

static void test_source_truncated(void **state)
{
        /* rkt started the app again: iottymux opens its file with O_TRUNC. */
        fixture *f = *state;
        append_lines(f->src, 0, 4);
        start(f);
        _cleanup_free_ char *a = expected(0, 4, NULL);
        wait_content(f->log, a);
        wait_committed(f, false);

        int fd = open(f->src, O_WRONLY | O_TRUNC | O_CLOEXEC);
        assert_true(fd >= 0);
        close(fd);
        append_lines(f->src, 10, 11);
        _cleanup_free_ char *b = expected(0, 4, NULL);
        _cleanup_free_ char *l10 = cri_line(10);
        _cleanup_free_ char *b10 = rkl_xasprintf("%s%s", b, l10);
        wait_content(f->log, b10);
        append_lines(f->src, 11, 12);
        _cleanup_free_ char *l11 = cri_line(11);
        _cleanup_free_ char *c = rkl_xasprintf("%s%s", b10, l11);
        wait_content(f->log, c);

        /* The same while the daemon is down. */
        wait_committed(f, false);
        stop(f);
        fd = open(f->src, O_WRONLY | O_TRUNC | O_CLOEXEC);
        assert_true(fd >= 0);
        close(fd);
        append_lines(f->src, 12, 13);
        start(f);
        _cleanup_free_ char *l12 = cri_line(12);
        _cleanup_free_ char *d = rkl_xasprintf("%s%s", c, l12);
        wait_content(f->log, d);
}

static void test_no_log_directory(void **state)
{
        /* A sandbox without log_directory: followed, nothing written anywhere. */
        fixture *f = *state;
        f->t.log_directory = "";
        append_lines(f->src, 0, 2);
        start(f);
        f->t.exited = true;
        rkl_logs_sync(f->logs, &f->t, 1);
        stop(f);
        struct stat st;
        assert_int_equal(stat(f->logdir, &st), -1);
}

/* ---- Paths ---- */

static void assert_dir_refused(const char *dir, char *const *forbidden)
{
        rkl_error err = RKL_ERROR_INIT;
        int r = rkl_logs_directory_check(dir, forbidden, &err);
        if (r != -EINVAL)
                print_error("log_directory '%s': %d, expected -EINVAL\n", dir, r);
        assert_int_equal(r, -EINVAL);
        assert_true(err.msg[0] != 0);
}

static void assert_dir_accepted(const char *dir, char *const *forbidden)
{
        rkl_error err = RKL_ERROR_INIT;
        int r = rkl_logs_directory_check(dir, forbidden, &err);
        if (r != 0)
                print_error("log_directory '%s': %s\n", dir, err.msg);
        assert_int_equal(r, 0);
}

static void test_log_directory_check(void **state)
{
        fixture *f = *state;
        _cleanup_free_ char *st = rkl_xasprintf("%s/state", f->dir);
        _cleanup_free_ char *rkt = rkl_xasprintf("%s/rkt-data", f->dir);
        char *const forbidden[] = {st, rkt, NULL};

        assert_dir_refused("var/log/pods/x", forbidden);
        assert_dir_refused("./logs", forbidden);
        assert_dir_refused("/", forbidden);
        assert_dir_refused("//", forbidden);
        assert_dir_refused("/etc", forbidden);
        assert_dir_refused("/etc/", forbidden);
        assert_dir_refused("/etc/x", forbidden);
        assert_dir_refused("/usr/lib/x", forbidden);
        assert_dir_refused("/proc/self", forbidden);
        assert_dir_refused("/var/log/../../etc/x", forbidden);
        assert_dir_refused("/var/log/./pods", forbidden);
        assert_dir_refused("/var//log", forbidden);

        /* The daemon's own directories, below them, and whether they exist or not. */
        assert_dir_refused(st, forbidden);
        _cleanup_free_ char *below = rkl_xasprintf("%s/pods/p1/logs", st);
        assert_dir_refused(below, forbidden);
        _cleanup_free_ char *below_rkt = rkl_xasprintf("%s/pods/run", rkt);
        assert_dir_refused(below_rkt, forbidden);

        /* Symlinks into them, to the directory itself and to below it. */
        _cleanup_free_ char *etc_link = rkl_xasprintf("%s/etc-link", f->dir);
        assert_int_equal(symlink("/etc", etc_link), 0);
        assert_dir_refused(etc_link, forbidden);
        _cleanup_free_ char *etc_sub = rkl_xasprintf("%s/etc-link/ssl", f->dir);
        assert_dir_refused(etc_sub, forbidden);
        _cleanup_free_ char *etc_new = rkl_xasprintf("%s/etc-link/not-there-yet/pod", f->dir);
        assert_dir_refused(etc_new, forbidden);
        _cleanup_free_ char *st_link = rkl_xasprintf("%s/state-link", f->dir);
        assert_int_equal(symlink(st, st_link), 0);
        assert_dir_refused(st_link, forbidden);
        _cleanup_free_ char *st_sub = rkl_xasprintf("%s/state-link/pods", f->dir);
        assert_dir_refused(st_sub, forbidden);
        /* A symlink to / is / (such a log directory once had logs written into /etc): refused as
         * / itself is. */
        _cleanup_free_ char *root_link = rkl_xasprintf("%s/root-link", f->dir);
        assert_int_equal(symlink("/", root_link), 0);
        assert_dir_refused(root_link, forbidden);
        _cleanup_free_ char *root_slash = rkl_xasprintf("%s/root-link/", f->dir);
        assert_dir_refused(root_slash, forbidden);
        /* A daemon directory not made yet, named through a symlink. */
        _cleanup_free_ char *real = rkl_xasprintf("%s/real", f->dir);
        assert_int_equal(rkl_mkdir_p(real, 0755), 0);
        _cleanup_free_ char *alias = rkl_xasprintf("%s/alias", f->dir);
        assert_int_equal(symlink(real, alias), 0);
        _cleanup_free_ char *data_alias = rkl_xasprintf("%s/alias/rkt-data", f->dir);
        _cleanup_free_ char *data_real = rkl_xasprintf("%s/real/rkt-data/pods", f->dir);
        assert_dir_refused(data_real, RKL_STRV(data_alias));

        /* Normal ones. */
        assert_dir_accepted("", forbidden);
        assert_dir_accepted(NULL, forbidden);
        assert_dir_accepted("/var/log/pods/default_nginx_0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
                            forbidden);
        assert_dir_accepted("/var/log/pods/ns_name_uid/", forbidden);
        assert_dir_accepted(f->logdir, forbidden);
        _cleanup_free_ char *near = rkl_xasprintf("%s/state-not", f->dir);
        assert_dir_accepted(near, forbidden); /* a name that starts like it */
        assert_dir_accepted("/etcetera/logs", NULL);
        assert_dir_accepted("/var/log/pods/x", NULL);
}

static void assert_path_refused(const char *dir, const char *path, char *const *forbidden)
{
        rkl_error err = RKL_ERROR_INIT;
        int r = rkl_logs_path_check(dir, path, forbidden, &err);
        if (r != -EINVAL)
                print_error("log_path '%s': %d, expected -EINVAL\n", path, r);
        assert_int_equal(r, -EINVAL);
        assert_true(err.msg[0] != 0);
}

static void assert_path_accepted(const char *dir, const char *path, char *const *forbidden)
{
        rkl_error err = RKL_ERROR_INIT;
        int r = rkl_logs_path_check(dir, path, forbidden, &err);
        if (r != 0)
                print_error("log_path '%s': %s\n", path, err.msg);
        assert_int_equal(r, 0);
}

static void test_log_path_check(void **state)
{
        fixture *f = *state;
        char *const *none = NULL;
        _cleanup_free_ char *c = rkl_xasprintf("%s/c", f->logdir);
        assert_int_equal(rkl_mkdir_p(c, 0755), 0);
        _cleanup_free_ char *outside = rkl_xasprintf("%s/outside", f->dir);
        assert_int_equal(rkl_mkdir_p(outside, 0755), 0);

        assert_path_refused(f->logdir, "/var/log/x.log", none);
        assert_path_refused(f->logdir, "../x.log", none);
        assert_path_refused(f->logdir, "c/../../x.log", none);
        assert_path_refused(f->logdir, "c/..", none);
        assert_path_refused(f->logdir, "./x.log", none);
        assert_path_refused(f->logdir, "c/./x.log", none);
        assert_path_refused(f->logdir, "a//b", none);
        assert_path_refused(f->logdir, ".", none);
        /* Without a directory on disk, the same words are refused. */
        assert_path_refused("", "../x.log", none);
        assert_path_refused(NULL, "/x.log", none);

        /* Through a symlink leading out: absolute, relative, and further down; and one that
         * stays inside, since what it points to can change after the check. */
        _cleanup_free_ char *out = rkl_xasprintf("%s/out", f->logdir);
        assert_int_equal(symlink(outside, out), 0);
        assert_path_refused(f->logdir, "out/x.log", none);
        assert_path_refused(f->logdir, "out/new/x.log", none);
        _cleanup_free_ char *up = rkl_xasprintf("%s/c/up", f->logdir);
        assert_int_equal(symlink("../..", up), 0);
        assert_path_refused(f->logdir, "c/up/x.log", none);
        _cleanup_free_ char *file_link = rkl_xasprintf("%s/c/link.log", f->logdir);
        _cleanup_free_ char *target = rkl_xasprintf("%s/f.log", outside);
        assert_int_equal(symlink(target, file_link), 0);
        assert_path_refused(f->logdir, "c/link.log", none);
        _cleanup_free_ char *in = rkl_xasprintf("%s/in", f->logdir);
        assert_int_equal(symlink("c", in), 0);
        assert_path_refused(f->logdir, "in/0.log", none);

        /* The daemon's own directories below the log directory (container output was once
         * appended to the live database): its database, a file not made yet, rkt's data;
         * named through a symlink to the log directory too. */
        _cleanup_free_ char *db = rkl_xasprintf("%s/rktlet.db", f->state);
        append_str(db, "SQLite format 3");
        _cleanup_free_ char *rkt = rkl_xasprintf("%s/rkt", f->dir);
        char *const forbidden[] = {f->state, rkt, NULL};
        assert_path_refused(f->dir, "state/rktlet.db", forbidden);
        assert_path_refused(f->dir, "state/x.log", forbidden);
        assert_path_refused(f->dir, "state", forbidden);
        assert_path_refused(f->dir, "rkt/cas/x.log", forbidden);
        _cleanup_free_ char *dir_link = rkl_xasprintf("%s/outside/dir-link", f->dir);
        assert_int_equal(symlink(f->dir, dir_link), 0);
        assert_path_refused(dir_link, "state/rktlet.db", forbidden);
        assert_path_accepted(f->dir, "state-not/x.log", forbidden);
        /* A directory whose resolution has moved into the daemon's since: refused too. */
        _cleanup_free_ char *moved = rkl_xasprintf("%s/moved", f->dir);
        assert_int_equal(symlink(f->state, moved), 0);
        assert_path_refused(moved, "x.log", forbidden);

        /* Normal ones, existing directories or not. */
        assert_path_accepted(f->logdir, "name.log", forbidden);
        assert_path_accepted(f->logdir, "c/0.log", forbidden);
        assert_path_accepted(f->logdir, "c/sub/dir/1.log", forbidden);
        assert_path_accepted(f->logdir, "new/0.log", forbidden);
        assert_path_accepted(f->logdir, "c/.hidden.log", forbidden);
        assert_path_accepted(f->logdir, "c/x..log", forbidden);
        assert_path_accepted("", "c/0.log", forbidden);
        _cleanup_free_ char *missing = rkl_xasprintf("%s/missing", f->dir);
        assert_path_accepted(missing, "c/0.log", forbidden);
        assert_path_accepted(f->logdir, "", forbidden);
}

static void assert_nothing_in(const char *dir)
{
        _cleanup_closedir_ DIR *d = opendir(dir);
        assert_non_null(d);
        struct dirent *de;
        while ((de = readdir(d)))
                assert_true(streq(de->d_name, ".") || streq(de->d_name, ".."));
}

static int recorded(void *userdata, const rkl_logs_file *lf, rkl_error *reterr)
{
        *(rkl_logs_file_id *)userdata = lf->id;
        return 0;
}

static int not_recorded(void *userdata, const rkl_logs_file *lf, rkl_error *reterr)
{
        return rkl_error_set(reterr, -EIO, "no record");
}

static int file_open(const char *dir, const char *path, char *const *forbidden,
                     rkl_logs_file_id *ours, int *ret_fd, rkl_error *err)
{
        rkl_logs_file lf;
        int r = rkl_logs_file_open(dir, path, forbidden, ours, recorded, ours, &lf, err);
        if (r >= 0)
                *ret_fd = lf.fd;
        return r;
}

/* The daemon killed between making a log file and recording it. */
static int killed(void *userdata, const rkl_logs_file *lf, rkl_error *reterr)
{
        _exit(0);
}

/* A daemon killed after making a container's log file but before recording it as its own
 * left a file that every later start refused as someone else's ("exists and is not the
 * log file rktlet made": the real-rkt chaos test, a StartContainer asked again after a
 * kill). The file is named only once recorded. */
static void test_file_open_killed(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        char *const forbidden[] = {f->state, NULL};
        rkl_logs_file_id id = {0};
        int fd = -1;

        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                rkl_logs_file lf;
                (void)rkl_logs_file_open(f->logdir, "k/0.log", forbidden, &id, killed, NULL, &lf,
                                         &err);
                _exit(1);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0); /* killed in the record */
        _cleanup_free_ char *path = rkl_xasprintf("%s/k/0.log", f->logdir);
        assert_int_equal(access(path, F_OK), -1);
        assert_int_equal(file_open(f->logdir, "k/0.log", forbidden, &id, &fd, &err), 0);
        assert_true(fd >= 0);
        close(fd);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal((uint64_t)st.st_ino, id.ino);
}

static void test_file_open(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        char *const forbidden[] = {f->state, NULL};
        rkl_logs_file_id id = {0}, none = {0};
        int fd = -1;

        /* Made with its parents, 0640, whatever the umask, and recorded. */
        mode_t old = umask(0);
        assert_int_equal(file_open(f->logdir, "c/d/0.log", forbidden, &id, &fd, &err), 0);
        umask(old);
        assert_true(fd >= 0);
        assert_true(id.ino != 0);
        assert_int_equal(write(fd, "x\n", 2), 2);
        close(fd);
        _cleanup_free_ char *made = rkl_xasprintf("%s/c/d/0.log", f->logdir);
        assert_mode_0640(made);
        struct stat st;
        _cleanup_free_ char *d = rkl_xasprintf("%s/c/d", f->logdir);
        assert_int_equal(stat(d, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0755);
        /* Again, as the file rktlet made: appended to. */
        assert_int_equal(file_open(f->logdir, "c/d/0.log", forbidden, &id, &fd, &err), 0);
        assert_int_equal(write(fd, "y\n", 2), 2);
        close(fd);
        _cleanup_free_ char *s = slurp(made, NULL);
        assert_string_equal(s, "x\ny\n");
        /* Without the record, or with another's, it is someone else's: not written. */
        assert_int_equal(file_open(f->logdir, "c/d/0.log", forbidden, &none, &fd, &err), -EEXIST);
        rkl_logs_file_id other = {id.dev, id.ino + 1};
        assert_int_equal(file_open(f->logdir, "c/d/0.log", forbidden, &other, &fd, &err), -EEXIST);
        _cleanup_free_ char *s2 = slurp(made, NULL);
        assert_string_equal(s2, "x\ny\n");
        /* A record without a device (an older rktlet's): the inode. */
        rkl_logs_file_id legacy = {0, id.ino};
        assert_int_equal(file_open(f->logdir, "c/d/0.log", forbidden, &legacy, &fd, &err), 0);
        close(fd);

        /* A file made whose record fails is not left behind. */
        rkl_logs_file lf;
        assert_int_equal(rkl_logs_file_open(f->logdir, "c/d/1.log", forbidden, &none, not_recorded,
                                            NULL, &lf, &err),
                         -EIO);
        _cleanup_free_ char *unrecorded = rkl_xasprintf("%s/c/d/1.log", f->logdir);
        assert_int_equal(access(unrecorded, F_OK), -1);

        /* A FIFO is not a log file, and is not waited on. */
        _cleanup_free_ char *fifo = rkl_xasprintf("%s/c/fifo.log", f->logdir);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        struct stat fst;
        assert_int_equal(stat(fifo, &fst), 0);
        rkl_logs_file_id fifo_id = {fst.st_dev, fst.st_ino};
        assert_int_equal(file_open(f->logdir, "c/fifo.log", forbidden, &fifo_id, &fd, &err),
                         -EEXIST);

        assert_int_equal(file_open(f->logdir, "", forbidden, &none, &fd, &err), -EINVAL);
        assert_int_equal(file_open("", "c/0.log", forbidden, &none, &fd, &err), -EINVAL);

        /* Checked, then a component swapped for a symlink out of it: refused at the open. */
        _cleanup_free_ char *outside = rkl_xasprintf("%s/outside", f->dir);
        assert_int_equal(rkl_mkdir_p(outside, 0755), 0);
        _cleanup_free_ char *s_dir = rkl_xasprintf("%s/s", f->logdir);
        assert_int_equal(rkl_mkdir_p(s_dir, 0755), 0);
        assert_int_equal(rkl_logs_path_check(f->logdir, "s/0.log", forbidden, &err), 0);
        assert_int_equal(rmdir(s_dir), 0);
        assert_int_equal(symlink(outside, s_dir), 0);
        fd = -1;
        assert_int_equal(file_open(f->logdir, "s/0.log", forbidden, &none, &fd, &err), -EXDEV);
        assert_int_equal(fd, -1);
        assert_int_equal(file_open(f->logdir, "s/new/0.log", forbidden, &none, &fd, &err), -EXDEV);
        assert_nothing_in(outside);

        /* A relative symlink up and out, and the file itself a symlink. */
        _cleanup_free_ char *up = rkl_xasprintf("%s/c/up", f->logdir);
        assert_int_equal(symlink("../../../outside", up), 0);
        assert_int_equal(file_open(f->logdir, "c/up/0.log", forbidden, &none, &fd, &err), -EXDEV);
        _cleanup_free_ char *file_link = rkl_xasprintf("%s/c/1.log", f->logdir);
        _cleanup_free_ char *target = rkl_xasprintf("%s/1.log", outside);
        assert_int_equal(symlink(target, file_link), 0);
        assert_int_equal(file_open(f->logdir, "c/1.log", forbidden, &none, &fd, &err), -EXDEV);
        assert_nothing_in(outside);

        /* The log directory itself checked, then swapped for a symlink into the daemon's own
         * directory: judged again as it resolves at the open. */
        _cleanup_free_ char *swapped = rkl_xasprintf("%s/swapped", f->dir);
        assert_int_equal(rkl_mkdir_p(swapped, 0755), 0);
        assert_int_equal(rkl_logs_directory_check(swapped, forbidden, &err), 0);
        assert_int_equal(rmdir(swapped), 0);
        assert_int_equal(symlink(f->state, swapped), 0);
        assert_int_equal(file_open(swapped, "x.log", forbidden, &none, &fd, &err), -EXDEV);
        _cleanup_free_ char *in_state = rkl_xasprintf("%s/x.log", f->state);
        assert_int_equal(access(in_state, F_OK), -1);
        /* Its parent, holding the daemon's directory: the file's whole path is judged. */
        assert_int_equal(file_open(f->dir, "state/y.log", forbidden, &none, &fd, &err), -EXDEV);
        _cleanup_free_ char *in_state2 = rkl_xasprintf("%s/y.log", f->state);
        assert_int_equal(access(in_state2, F_OK), -1);
}

/* StartContainer's file: made and recorded in the progress file, so that the follower
 * appends to it, after a restart too; a file rktlet did not make is refused. */
static void test_file_make(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        char *const forbidden[] = {f->state, NULL};

        assert_int_equal(rkl_logs_file_make(&f->t, forbidden, &err), 0);
        assert_mode_0640(f->log);
        progress p = {0};
        assert_true(progress_read(f->progress, &p));
        struct stat st;
        assert_int_equal(stat(f->log, &st), 0);
        assert_int_equal(p.dst_ino, (uint64_t)st.st_ino);
        assert_int_equal(p.dst_dev, (uint64_t)st.st_dev);
        /* Again (a repeated StartContainer): the same file. */
        assert_int_equal(rkl_logs_file_make(&f->t, forbidden, &err), 0);

        append_lines(f->src, 0, 2);
        start(f);
        _cleanup_free_ char *a = expected(0, 2, NULL);
        wait_content(f->log, a);
        stop(f);
        append_lines(f->src, 2, 3);
        start(f);
        _cleanup_free_ char *b = expected(0, 3, NULL);
        wait_content(f->log, b);
        stop(f);

        /* Someone else's file at another container's path: refused, untouched. */
        f->t.log_path = "c/other.log";
        f->t.progress = f->src; /* any other progress: this one has no record of it */
        _cleanup_free_ char *other = rkl_xasprintf("%s/c/other.log", f->logdir);
        append_str(other, "someone's\n");
        assert_int_equal(rkl_logs_file_make(&f->t, forbidden, &err), -EEXIST);
        _cleanup_free_ char *o = slurp(other, NULL);
        assert_string_equal(o, "someone's\n");
}

/* A file of someone else's where the log goes, at the follower's first open: nothing is
 * written into it; once it is gone, the log is made and has everything. */
static void test_foreign_file(void **state)
{
        fixture *f = *state;
        _cleanup_free_ char *c = rkl_xasprintf("%s/c", f->logdir);
        assert_int_equal(rkl_mkdir_p(c, 0755), 0);
        append_str(f->log, "someone's\n");
        append_lines(f->src, 0, 2);
        start(f);
        /* Given the follower's tick to try, twice. */
        (void)nanosleep(&(struct timespec){.tv_sec = 2, .tv_nsec = 500 * 1000 * 1000}, NULL);
        _cleanup_free_ char *s = slurp(f->log, NULL);
        assert_string_equal(s, "someone's\n");
        assert_int_equal(unlink(f->log), 0);
        _cleanup_free_ char *a = expected(0, 2, NULL);
        wait_content(f->log, a);
}

static void test_paths(void **state)
{
        _cleanup_free_ char *s = rkl_logs_source_path("/var/lib/rktlet", "p1", "app");
        _cleanup_free_ char *p = rkl_logs_progress_path("/var/lib/rktlet", "p1", "app");
        assert_string_equal(s, "/var/lib/rktlet/pods/p1/logs/app.log");
        assert_string_equal(p, "/var/lib/rktlet/pods/p1/logs/app.progress");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_follow, setup, teardown),
            cmocka_unit_test_setup_teardown(test_not_started_yet, setup, teardown),
            cmocka_unit_test_setup_teardown(test_restart, setup, teardown),
            cmocka_unit_test_setup_teardown(test_crash_cut_back, setup, teardown),
            cmocka_unit_test_setup_teardown(test_restart_in_long_line, setup, teardown),
            cmocka_unit_test_setup_teardown(test_reopen, setup, teardown),
            cmocka_unit_test_setup_teardown(test_reopen_unknown, setup, teardown),
            cmocka_unit_test_setup_teardown(test_exited, setup, teardown),
            cmocka_unit_test_setup_teardown(test_exited_backlog, setup, teardown),
            cmocka_unit_test_setup_teardown(test_finish, setup, teardown),
            cmocka_unit_test_setup_teardown(test_writer_gone, setup, teardown),
            cmocka_unit_test_setup_teardown(test_source_truncated, setup, teardown),
            cmocka_unit_test_setup_teardown(test_no_log_directory, setup, teardown),
            cmocka_unit_test_setup_teardown(test_log_directory_check, setup, teardown),
            cmocka_unit_test_setup_teardown(test_log_path_check, setup, teardown),
            cmocka_unit_test_setup_teardown(test_file_open, setup, teardown),
            cmocka_unit_test_setup_teardown(test_file_open_killed, setup, teardown),
            cmocka_unit_test_setup_teardown(test_file_make, setup, teardown),
            cmocka_unit_test_setup_teardown(test_foreign_file, setup, teardown),
            cmocka_unit_test(test_paths),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
