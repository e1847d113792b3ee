/* The one door for child processes: exit codes, signals, capture limits, deadlines. */
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

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_exit_and_capture), cmocka_unit_test(test_signal),
            cmocka_unit_test(test_truncation),       cmocka_unit_test(test_deadline_term),
            cmocka_unit_test(test_deadline_kill),    cmocka_unit_test(test_not_found),
            cmocka_unit_test(test_no_fd_leak),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
