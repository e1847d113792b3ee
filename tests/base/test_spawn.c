/* The one door for child processes: exit codes, signals, capture limits, deadlines. */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/spawn.h"
#include "base/time-util.h"

static rkl_spawn_result run_sh(const char *script, const rkl_spawn_opts *o, int *ret_r)
{
        rkl_spawn_result res = {0};
        rkl_error err = RKL_ERROR_INIT;
        *ret_r = rkl_spawn_run(RKL_STRV("/bin/sh", "-c", script), o, &res, &err);
        return res;
}

static void test_exit_and_capture(void **state)
{
        int r;
        rkl_spawn_result res = run_sh("echo out; echo err >&2; exit 7", NULL, &r);
        assert_int_equal(r, 0);
        assert_int_equal(res.exit_code, 7);
        assert_int_equal(res.signal, 0);
        assert_string_equal(res.out, "out\n");
        assert_string_equal(res.err, "err\n");
        assert_false(res.timed_out);
        rkl_spawn_result_done(&res);
}

/* stdin from a file while stdout and stderr are captured: how a CNI plugin gets its
 * configuration. */
static void test_stdin_fd(void **state)
{
        char path[] = "/tmp/rktlet-test-stdin-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        unlink(path);
        assert_int_equal(write(fd, "hello", 5), 5);
        assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
        rkl_spawn_opts o = {.max_output = 1024, .stdin_fd = &fd};
        int r;
        rkl_spawn_result res = run_sh("cat; echo err >&2", &o, &r);
        assert_int_equal(r, 0);
        assert_int_equal(res.exit_code, 0);
        assert_string_equal(res.out, "hello");
        assert_string_equal(res.err, "err\n");
        rkl_spawn_result_done(&res);
        close(fd);
}

static void test_signal(void **state)
{
        int r;
        rkl_spawn_result res = run_sh("kill -USR1 $$", NULL, &r);
        assert_int_equal(r, 0);
        assert_int_equal(res.exit_code, -1);
        assert_int_equal(res.signal, SIGUSR1);
        rkl_spawn_result_done(&res);
}

static void test_truncation(void **state)
{
        int r;
        rkl_spawn_opts o = {.max_output = 10};
        rkl_spawn_result res = run_sh("yes | head -c 100000", &o, &r);
        assert_int_equal(r, 0);
        assert_int_equal(res.exit_code, 0);
        assert_int_equal(res.out_len, 10);
        assert_true(res.out_truncated);
        rkl_spawn_result_done(&res);
}

static void test_deadline_term(void **state)
{
        int r;
        rkl_spawn_opts o = {.timeout_usec = 200 * USEC_PER_MSEC};
        rkl_spawn_result res = run_sh("exec sleep 30", &o, &r);
        assert_int_equal(r, 0);
        assert_true(res.timed_out);
        assert_int_equal(res.signal, SIGTERM);
        rkl_spawn_result_done(&res);
}

static void test_deadline_kill(void **state)
{
        int r;
        /* A program that ignores SIGTERM is killed once the grace period is over. */
        rkl_spawn_opts o = {.timeout_usec = 100 * USEC_PER_MSEC,
                            .kill_grace_usec = 200 * USEC_PER_MSEC};
        rkl_spawn_result res = run_sh("trap '' TERM; while :; do sleep 0.05; done", &o, &r);
        assert_int_equal(r, 0);
        assert_true(res.timed_out);
        assert_int_equal(res.signal, SIGKILL);
        rkl_spawn_result_done(&res);
}

static void test_not_found(void **state)
{
        rkl_spawn_result res = {0};
        rkl_error err = RKL_ERROR_INIT;
        int r = rkl_spawn_run(RKL_STRV("/nonexistent/rkt", "version"), NULL, &res, &err);
        assert_int_equal(r, -ENOENT);
        assert_non_null(strstr(err.msg, "/nonexistent/rkt"));
}

static void test_no_fd_leak(void **state)
{
        int r;
        /* Only 0, 1 and 2 are open in the child. */
        rkl_spawn_result res = run_sh("ls /proc/self/fd | wc -l", NULL, &r);
        assert_int_equal(r, 0);
        /* ls itself opens one fd for the directory. */
        assert_string_equal(res.out, "4\n");
        rkl_spawn_result_done(&res);
}

/* An fd handed to the child lands on 3, and nothing else does. */
static void test_pass_fds(void **state)
{
        int p[2], r;
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        rkl_spawn_opts o = {.pass_fds = &p[1], .n_pass_fds = 1};
        rkl_spawn_result res = run_sh("echo hello >&3; ls /proc/self/fd | wc -l", &o, &r);
        close(p[1]);
        assert_int_equal(r, 0);
        assert_string_equal(res.out, "5\n");
        char buf[16] = "";
        assert_int_equal(read(p[0], buf, sizeof(buf) - 1), 6);
        assert_string_equal(buf, "hello\n");
        close(p[0]);
        rkl_spawn_result_done(&res);
}

typedef struct tree {
        int calls;
        pid_t pid;
        int polls, cancel_at;
} tree;

/* The process group stands in for a cgroup here. */
static void kill_group(pid_t pid, void *userdata)
{
        tree *t = userdata;
        t->calls++;
        t->pid = pid;
        (void)kill(-pid, SIGKILL);
}

static bool cancel_at(void *userdata)
{
        tree *t = userdata;
        return t->cancel_at > 0 && ++t->polls >= t->cancel_at;
}

/* Whether a process of group pgid still runs (zombies, which an init that does not reap
 * keeps, do not count). */
static bool group_alive(pid_t pgid)
{
        _cleanup_closedir_ DIR *d = opendir("/proc");
        struct dirent *de;
        while ((de = readdir(d))) {
                char path[300], buf[512];
                if (de->d_name[0] < '0' || de->d_name[0] > '9')
                        continue;
                (void)snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
                _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
                ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
                if (n <= 0)
                        continue;
                buf[n] = 0;
                char state;
                int ppid, pgrp;
                const char *p = strrchr(buf, ')');
                if (p && sscanf(p + 1, " %c %d %d", &state, &ppid, &pgrp) == 3 && pgrp == pgid &&
                    state != 'Z' && state != 'X')
                        return true;
        }
        return false;
}

/* SIGKILL is sent, not yet done with: the group goes within a while. */
static bool group_gone(pid_t pgid)
{
        for (int i = 0; i < 500; i++) {
                if (!group_alive(pgid))
                        return true;
                usleep(10 * 1000);
        }
        return false;
}

static void test_kill_tree_deadline(void **state)
{
        tree t = {0};
        int r;
        rkl_spawn_opts o = {.timeout_usec = 200 * USEC_PER_MSEC,
                            .new_process_group = true,
                            .kill_tree = kill_group,
                            .userdata = &t};
        uint64_t t0 = rkl_now_usec(CLOCK_MONOTONIC);
        rkl_spawn_result res = run_sh("sleep 30 & sleep 30", &o, &r);
        assert_int_equal(r, 0);
        /* Ended by the kill, not by the children's own 30 s. */
        assert_true(rkl_now_usec(CLOCK_MONOTONIC) - t0 < 25 * USEC_PER_SEC);
        assert_true(res.timed_out);
        assert_false(res.cancelled);
        assert_int_equal(res.signal, SIGKILL);
        assert_true(t.calls >= 1);
        /* The whole group went. */
        assert_true(group_gone(t.pid));
        rkl_spawn_result_done(&res);
}

/* The child exits and leaves something behind that holds its pipes: the tree goes then, not
 * at the deadline. */
static void test_kill_tree_leftover(void **state)
{
        tree t = {0};
        int r;
        rkl_spawn_opts o = {.new_process_group = true, .kill_tree = kill_group, .userdata = &t};
        uint64_t t0 = rkl_now_usec(CLOCK_MONOTONIC);
        rkl_spawn_result res = run_sh("sleep 30 & echo done", &o, &r);
        assert_int_equal(r, 0);
        /* Ended by the kill, not by the children's own 30 s. */
        assert_true(rkl_now_usec(CLOCK_MONOTONIC) - t0 < 25 * USEC_PER_SEC);
        assert_false(res.timed_out);
        assert_int_equal(res.exit_code, 0);
        assert_string_equal(res.out, "done\n");
        assert_int_equal(t.calls, 1);
        rkl_spawn_result_done(&res);
}

static void test_cancelled(void **state)
{
        tree t = {.cancel_at = 3};
        int r;
        rkl_spawn_opts o = {.new_process_group = true,
                            .kill_tree = kill_group,
                            .cancelled = cancel_at,
                            .userdata = &t};
        rkl_spawn_result res = run_sh("exec sleep 30", &o, &r);
        assert_int_equal(r, 0);
        assert_true(res.cancelled);
        assert_false(res.timed_out);
        assert_int_equal(res.signal, SIGKILL);
        assert_true(t.polls >= 3);
        rkl_spawn_result_done(&res);

        /* Without a tree to kill, the child alone. */
        t = (tree){.cancel_at = 2};
        o = (rkl_spawn_opts){.cancelled = cancel_at, .userdata = &t};
        res = run_sh("exec sleep 30", &o, &r);
        assert_true(res.cancelled);
        assert_int_equal(res.signal, SIGKILL);
        rkl_spawn_result_done(&res);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_exit_and_capture),   cmocka_unit_test(test_signal),
            cmocka_unit_test(test_truncation),         cmocka_unit_test(test_deadline_term),
            cmocka_unit_test(test_deadline_kill),      cmocka_unit_test(test_not_found),
            cmocka_unit_test(test_no_fd_leak),         cmocka_unit_test(test_pass_fds),
            cmocka_unit_test(test_kill_tree_deadline), cmocka_unit_test(test_kill_tree_leftover),
            cmocka_unit_test(test_cancelled),          cmocka_unit_test(test_stdin_fd),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
