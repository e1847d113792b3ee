/* The reconciler's cgroup helpers (reconciler/app-cgroup.c) over directories that look like
 * cgroups: a temporary directory whose control files are plain files, written as the kernel
 * would be. What needs the machine's own hierarchy (an app's cgroup found from its
 * supervisor's) is checked for what holds everywhere: that a process with no app finds none. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reconciler/app-cgroup.h"
#include "base/alloc.h"
#include "base/fileio.h"

typedef struct fixture {
        char dir[64];
        char *procs, *memory; /* an app's cgroup, and its own memory cgroup (v1's layout) */
} fixture;

static int setup(void **state)
{
        fixture *f = rkl_xnew0(fixture, 1);
        (void)snprintf(f->dir, sizeof(f->dir), "/tmp/rkl-test-cgroup-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        f->procs = rkl_xasprintf("%s/app.service", f->dir);
        f->memory = rkl_xasprintf("%s/memory/app.service", f->dir);
        assert_int_equal(rkl_mkdir_p(f->procs, 0755), 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        fixture *f = *state;
        assert_int_equal(rkl_rm_rf_at(AT_FDCWD, f->dir), 0);
        free(f->procs);
        free(f->memory);
        free(f);
        return 0;
}

static void put(const char *dir, const char *file, const char *text)
{
        _cleanup_free_ char *p = rkl_xasprintf("%s/%s", dir, file);
        assert_int_equal(rkl_write_file_atomic_at(AT_FDCWD, p, text, strlen(text), 0644), 0);
}

static char *get(const char *dir, const char *file)
{
        _cleanup_free_ char *p = rkl_xasprintf("%s/%s", dir, file);
        char *text = NULL;
        assert_int_equal(rkl_read_file_at(AT_FDCWD, p, 4096, &text, NULL), 0);
        return text;
}

#define assert_file(dir, file, want)                                                               \
        do {                                                                                       \
                _cleanup_free_ char *_t = get(dir, file);                                          \
                assert_string_equal(_t, want);                                                     \
        } while (0)

static void test_first_pid(void **state)
{
        fixture *f = *state;
        pid_t pid = -1;
        assert_int_equal(rkl_app_cgroup_first_pid(f->procs, &pid), -ENOENT);
        put(f->procs, "cgroup.procs", "");
        assert_int_equal(rkl_app_cgroup_first_pid(f->procs, &pid), 0);
        assert_int_equal(pid, 0); /* empty: no process yet */
        put(f->procs, "cgroup.procs", "4242\n4243\n");
        assert_int_equal(rkl_app_cgroup_first_pid(f->procs, &pid), 0);
        assert_int_equal(pid, 4242);
}

/* The app's processes move into a memory cgroup of its own, made on the way; once only. */
static void test_memory_adopt(void **state)
{
        fixture *f = *state;
        put(f->procs, "cgroup.procs", "4242\n");
        /* The kernel makes a new cgroup's files; here the test does, once mkdir ran. */
        assert_int_equal(rkl_mkdir_p(f->memory, 0755), 0);
        put(f->memory, "cgroup.procs", "");
        /* A plain file does not list what was written as the kernel would: the count is the
         * writes, the content what matters. */
        assert_true(rkl_app_cgroup_memory_adopt(f->procs, f->memory) > 0);
        assert_file(f->memory, "cgroup.procs", "4242");
        put(f->memory, "cgroup.procs", "4242\n"); /* as the kernel lists it */
        assert_int_equal(rkl_app_cgroup_memory_adopt(f->procs, f->memory), 0);
        /* cgroup2: one cgroup for all, nothing to move or release. */
        assert_int_equal(rkl_app_cgroup_memory_adopt(f->procs, f->procs), 0);
        assert_int_equal(rkl_app_cgroup_memory_adopt(f->procs, NULL), 0);
        assert_int_equal(rkl_app_cgroup_memory_release(f->procs, f->procs), 0);
        /* Released: the directory goes (once empty, as the kernel wants). */
        _cleanup_free_ char *procs = rkl_xasprintf("%s/cgroup.procs", f->memory);
        assert_int_equal(unlink(procs), 0);
        assert_int_equal(rkl_app_cgroup_memory_release(f->procs, f->memory), 0);
        assert_int_equal(access(f->memory, F_OK), -1);
        assert_int_equal(rkl_app_cgroup_memory_release(f->procs, f->memory), 0); /* gone: fine */
        /* Not under /sys/fs/cgroup/memory: no cpu or cpuacct sibling to adopt or release. */
        assert_int_equal(rkl_app_cgroup_cpu_adopt(f->procs, f->memory), 0);
        rkl_app_cgroup_cpu_release(f->procs, f->memory);
        rkl_app_cgroup_cpu_release(f->procs, NULL);
}

/* Lent: the memory cgroup holds a process the app's does not (the pod's systemd). */
static void test_memory_lent(void **state)
{
        fixture *f = *state;
        put(f->procs, "cgroup.procs", "4242\n");
        assert_false(rkl_app_cgroup_memory_lent(f->procs, f->memory)); /* not made yet */
        assert_int_equal(rkl_mkdir_p(f->memory, 0755), 0);
        put(f->memory, "cgroup.procs", "");
        assert_false(rkl_app_cgroup_memory_lent(f->procs, f->memory)); /* nothing moved in */
        put(f->memory, "cgroup.procs", "77\n4242\n");
        assert_true(rkl_app_cgroup_memory_lent(f->procs, f->memory));
        put(f->memory, "cgroup.procs", "4242\n");
        assert_false(rkl_app_cgroup_memory_lent(f->procs, f->memory)); /* given back */
        assert_false(rkl_app_cgroup_memory_lent(f->procs, f->procs));  /* cgroup2 */
        assert_false(rkl_app_cgroup_memory_lent(f->procs, NULL));
}

/* OOM kills as cgroup2 (memory.events) and v1 (memory.oom_control) count them. */
static void test_oom_kills(void **state)
{
        fixture *f = *state;
        unsigned n = 99;
        _cleanup_free_ char *gone = rkl_xasprintf("%s/gone", f->dir);
        assert_int_equal(rkl_app_cgroup_oom_kills(gone, &n), -ENOENT);
        assert_int_equal(rkl_app_cgroup_oom_kills(f->procs, &n), -ENODATA);
        put(f->procs, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
        assert_int_equal(rkl_app_cgroup_oom_kills(f->procs, &n), 0);
        assert_int_equal(n, 2);
        put(f->procs, "memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n");
        assert_int_equal(rkl_app_cgroup_oom_kills(f->procs, &n), 0);
        assert_int_equal(n, 1);
}

/* cgroup2: one cgroup, memory.max (no swap), cpu.weight from shares, cpu.max, cpuset.cpus. */
static void test_limits_v2(void **state)
{
        fixture *f = *state;
        static const char *const files[] = {"memory.max", "memory.swap.max", "cpu.weight",
                                            "cpu.max", "cpuset.cpus"};
        for (size_t i = 0; i < ELEMENTSOF(files); i++)
                put(f->procs, files[i], "");
        rkl_app_cgroup_limits l = {
            .memory_limit = 64 << 20,
            .cpu_shares = 1024,
            .cpu_quota = 50000,
            .cpu_period = 100000,
            .cpuset_cpus = "0-1",
        };
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(rkl_app_cgroup_apply_limits(f->procs, NULL, &l, &err), 0);
        assert_file(f->procs, "memory.max", "67108864");
        assert_file(f->procs, "memory.swap.max", "0");
        assert_file(f->procs, "cpu.weight", "39"); /* runc's mapping of 1024 shares */
        assert_file(f->procs, "cpu.max", "50000 100000");
        assert_file(f->procs, "cpuset.cpus", "0-1");
        /* No quota: no ceiling, the period kept. (A plain file is not replaced by a write
         * as a control file is: emptied first.) */
        put(f->procs, "cpu.max", "");
        l = (rkl_app_cgroup_limits){.cpu_period = 200000};
        assert_int_equal(rkl_app_cgroup_apply_limits(f->procs, f->procs, &l, &err), 0);
        assert_file(f->procs, "cpu.max", "max 200000");
}

/* A limit that cannot be written says which, and the others are written all the same. */
static void test_limits_error(void **state)
{
        fixture *f = *state;
        put(f->procs, "cpu.weight", "");
        rkl_app_cgroup_limits l = {.memory_limit = 1 << 20, .cpu_shares = 2};
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(rkl_app_cgroup_apply_limits(f->procs, NULL, &l, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "memory limit"));
        assert_file(f->procs, "cpu.weight", "1");
}

/* v1 (the app has a memory cgroup of its own): memory.limit_in_bytes with memsw; its cpu
 * cgroup is the memory one's sibling under /sys/fs/cgroup, which a directory elsewhere has
 * none of; a cpuset asked for there cannot be had. */
static void test_limits_v1(void **state)
{
        fixture *f = *state;
        assert_int_equal(rkl_mkdir_p(f->memory, 0755), 0);
        put(f->memory, "memory.limit_in_bytes", "");
        put(f->memory, "memory.memsw.limit_in_bytes", "");
        rkl_app_cgroup_limits l = {.memory_limit = 32 << 20, .cpu_shares = 512, .cpuset_cpus = "0"};
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(rkl_app_cgroup_apply_limits(f->procs, f->memory, &l, &err), -EOPNOTSUPP);
        assert_non_null(strstr(err.msg, "cpuset"));
        assert_file(f->memory, "memory.limit_in_bytes", "33554432");
        assert_file(f->memory, "memory.memsw.limit_in_bytes", "33554432");
}

/* This process runs no rkt app: none is found, whatever the host's hierarchy. */
static void test_app_paths_none(void **state)
{
        char *procs = NULL, *memory = NULL;
        assert_true(rkl_app_cgroup_paths(getpid(), "no-such-app", &procs, &memory) < 0);
        assert_null(procs);
        assert_null(memory);
        assert_null(rkl_app_cgroup_relative("/elsewhere/x"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_first_pid, setup, teardown),
            cmocka_unit_test_setup_teardown(test_memory_adopt, setup, teardown),
            cmocka_unit_test_setup_teardown(test_memory_lent, setup, teardown),
            cmocka_unit_test_setup_teardown(test_oom_kills, setup, teardown),
            cmocka_unit_test_setup_teardown(test_limits_v2, setup, teardown),
            cmocka_unit_test_setup_teardown(test_limits_error, setup, teardown),
            cmocka_unit_test_setup_teardown(test_limits_v1, setup, teardown),
            cmocka_unit_test(test_app_paths_none),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
