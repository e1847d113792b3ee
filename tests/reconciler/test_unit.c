/* The systemd unit client against a real, private systemd service manager. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <cmocka.h>
#include <systemd/sd-bus.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/spawn.h"
#include "base/time-util.h"
#include "reconciler/unit.h"

typedef struct env {
        char dir[64];
        char *harness;
        sd_bus *bus;
} env;

static int harness(env *e, const char *verb, char **ret_out)
{
        rkl_spawn_result res = {0};
        rkl_error err = RKL_ERROR_INIT;
        int r = rkl_spawn_run(RKL_STRV(e->harness, verb, e->dir), NULL, &res, &err);
        if (r < 0 || res.exit_code != 0) {
                fprintf(stderr, "systemd-env %s failed: %s %s\n", verb, err.msg,
                        res.err ? res.err : "");
                rkl_spawn_result_done(&res);
                return -1;
        }
        if (ret_out)
                *ret_out = rkl_xstrdup(res.out);
        rkl_spawn_result_done(&res);
        return 0;
}

static int setup(void **state)
{
        env *e = rkl_xnew0(env, 1);
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_free_ char *addr = NULL;

        snprintf(e->dir, sizeof(e->dir), "/tmp/rkl-unit-XXXXXX");
        if (!mkdtemp(e->dir))
                return -1;
        e->harness = rkl_xasprintf("%s/tests/lib/systemd-env", getenv("RKL_SOURCE_DIR"));
        if (harness(e, "start", &addr) < 0)
                return -1;
        addr[strcspn(addr, "\n")] = 0;
        if (rkl_unit_connect(addr, &e->bus, &err) < 0) {
                fprintf(stderr, "%s\n", err.msg);
                return -1;
        }
        *state = e;
        return 0;
}

static int teardown(void **state)
{
        env *e = *state;
        sd_bus_flush_close_unref(e->bus);
        harness(e, "stop", NULL);
        rkl_rm_rf_at(AT_FDCWD, e->dir);
        free(e->harness);
        free(e);
        return 0;
}

static rkl_unit_state wait_state(env *e, const char *name, rkl_unit_active want)
{
        rkl_unit_state st = {0};
        rkl_error err = RKL_ERROR_INIT;
        for (int i = 0; i < 200; i++) {
                assert_int_equal(rkl_unit_get_state(e->bus, name, &st, &err), 0);
                if (st.active == want)
                        break;
                usleep(20000);
        }
        return st;
}

static void test_start_stop(void **state)
{
        env *e = *state;
        rkl_error err = RKL_ERROR_INIT;
        rkl_unit_state st;
        char *const argv[] = {(char *)"/bin/sleep", (char *)"300", NULL};
        char *const envv[] = {(char *)"RKT_EXPERIMENT_APP=true", NULL};
        rkl_unit_spec spec = {.name = "rktlet-test1.service", .argv = argv, .env = envv};

        assert_int_equal(rkl_unit_get_state(e->bus, spec.name, &st, &err), 0);
        assert_int_equal(st.active, RKL_UNIT_GONE);

        assert_int_equal(rkl_unit_start(e->bus, &spec, 10 * USEC_PER_SEC, &err), 0);
        st = wait_state(e, spec.name, RKL_UNIT_ACTIVE);
        assert_int_equal(st.active, RKL_UNIT_ACTIVE);
        assert_true(st.main_pid > 0);
        assert_int_equal(kill(st.main_pid, 0), 0);

        /* The environment reached the process. */
        _cleanup_free_ char *path = rkl_xasprintf("/proc/%d/environ", (int)st.main_pid);
        _cleanup_free_ char *environ_ = NULL;
        size_t n;
        assert_int_equal(rkl_read_file_at(AT_FDCWD, path, 1 << 20, &environ_, &n), 0);
        assert_non_null(memmem(environ_, n, "RKT_EXPERIMENT_APP=true", 23));

        /* Listed by pattern, as the reconciler finds leftover units. */
        char **units = NULL;
        assert_int_equal(rkl_unit_list(e->bus, "rktlet-*.service", &units, &err), 0);
        assert_non_null(units[0]);
        assert_string_equal(units[0], spec.name);
        assert_null(units[1]);
        for (char **u = units; *u; u++)
                free(*u);
        free(units);
        /* With their states, in the one call the reconciler makes for all sandboxes. */
        rkl_unit_active *active = NULL;
        assert_int_equal(rkl_unit_list_active(e->bus, "rktlet-*.service", &units, &active, &err),
                         0);
        assert_string_equal(units[0], spec.name);
        assert_null(units[1]);
        assert_int_equal(active[0], RKL_UNIT_ACTIVE);
        free(active);
        for (char **u = units; *u; u++)
                free(*u);
        free(units);
        assert_int_equal(rkl_unit_list_active(e->bus, "none-*.service", &units, &active, &err), 0);
        assert_null(units[0]);
        free(active);
        free(units);

        /* A second start of the same name is refused, not duplicated. */
        assert_int_equal(rkl_unit_start(e->bus, &spec, 10 * USEC_PER_SEC, &err), -EEXIST);

        pid_t pid = st.main_pid;
        assert_int_equal(rkl_unit_stop(e->bus, spec.name, &err), 0);
        st = wait_state(e, spec.name, RKL_UNIT_GONE);
        assert_int_equal(st.active, RKL_UNIT_GONE);
        assert_int_equal(kill(pid, 0), -1);

        /* Stopping what is gone says so; callers treat it as done. */
        assert_int_equal(rkl_unit_stop(e->bus, spec.name, &err), -ENOENT);
}

static void test_exec_failure(void **state)
{
        env *e = *state;
        rkl_error err = RKL_ERROR_INIT;
        char *const argv[] = {(char *)"/nonexistent/rkt", (char *)"app", NULL};
        rkl_unit_spec spec = {.name = "rktlet-test2.service", .argv = argv};

        assert_int_equal(rkl_unit_start(e->bus, &spec, 10 * USEC_PER_SEC, &err), -EIO);
        assert_non_null(strstr(err.msg, "failed"));
        /* Collected at once: failed units do not pile up. */
        rkl_unit_state st = wait_state(e, spec.name, RKL_UNIT_GONE);
        assert_int_equal(st.active, RKL_UNIT_GONE);
}

static void test_log_and_death(void **state)
{
        env *e = *state;
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_free_ char *log = rkl_xasprintf("%s/unit.log", e->dir);
        char *const argv[] = {
            (char *)"/bin/sh", (char *)"-c",
            (char *)"echo started; echo 'no other --dns options' >&2; exec sleep 300", NULL};
        rkl_unit_spec spec = {.name = "rktlet-test3.service", .argv = argv, .log_path = log};

        assert_int_equal(rkl_unit_start(e->bus, &spec, 10 * USEC_PER_SEC, &err), 0);
        rkl_unit_state st = wait_state(e, spec.name, RKL_UNIT_ACTIVE);
        assert_true(st.main_pid > 0);

        /* Both streams reach the log. */
        _cleanup_free_ char *text = NULL;
        for (int i = 0; i < 200; i++) {
                text = mfree(text);
                if (rkl_read_file_at(AT_FDCWD, log, 4096, &text, NULL) == 0 &&
                    strstr(text, "--dns"))
                        break;
                usleep(20000);
        }
        assert_non_null(strstr(text, "started"));
        assert_non_null(strstr(text, "no other --dns options"));

        /* The process dies on its own: the unit goes away, the log stays. */
        kill(st.main_pid, SIGKILL);
        st = wait_state(e, spec.name, RKL_UNIT_GONE);
        assert_int_equal(st.active, RKL_UNIT_GONE);
        assert_int_equal(access(log, F_OK), 0);
}

static void test_slice_and_kill(void **state)
{
        env *e = *state;
        rkl_error err = RKL_ERROR_INIT;
        char *const argv[] = {(char *)"/bin/sh", (char *)"-c",
                              (char *)"trap 'exit 7' USR1; while :; do sleep 0.05; done", NULL};
        rkl_unit_spec spec = {.name = "rktlet-test4.service", .argv = argv, .slice = "test.slice"};

        assert_int_equal(rkl_unit_start(e->bus, &spec, 10 * USEC_PER_SEC, &err), 0);
        rkl_unit_state st = wait_state(e, spec.name, RKL_UNIT_ACTIVE);
        _cleanup_free_ char *path = rkl_xasprintf("/proc/%d/cgroup", (int)st.main_pid);
        _cleanup_free_ char *cg = NULL;
        assert_int_equal(rkl_read_file_at(AT_FDCWD, path, 1 << 16, &cg, NULL), 0);
        assert_non_null(strstr(cg, "/test.slice/rktlet-test4.service"));

        assert_int_equal(rkl_unit_kill(e->bus, spec.name, "main", SIGUSR1, &err), 0);
        st = wait_state(e, spec.name, RKL_UNIT_GONE);
        assert_int_equal(st.active, RKL_UNIT_GONE);
        assert_int_equal(rkl_unit_kill(e->bus, spec.name, "main", SIGUSR1, &err), -ENOENT);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_start_stop),
            cmocka_unit_test(test_exec_failure),
            cmocka_unit_test(test_log_and_death),
            cmocka_unit_test(test_slice_and_kill),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
