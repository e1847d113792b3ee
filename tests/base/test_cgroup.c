/* cgroup primitives: /proc/PID/cgroup placed with mountinfo (fixtures from a real rkt host
 * and a pure cgroup2 one), and, as root, listing, emptying and removing a live cgroup. */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "fixture.h"

#include "base/alloc.h"
#include "base/cgroup.h"
#include "base/fileio.h"
#include "base/time-util.h"

static char *fixture(const char *name)
{
        _cleanup_free_ char *rel = rkl_xasprintf("cgroup/%s", name);
        return rkl_test_fixture_read(rel, NULL);
}

static const rkl_cgroup_entry *find(const rkl_cgroup_entry *e, size_t n, const char *controllers)
{
        for (size_t i = 0; i < n; i++)
                if (streq(e[i].controllers, controllers))
                        return &e[i];
        fail_msg("no entry '%s'", controllers);
        return NULL;
}

#define UNIT                                                                                       \
        "/system.slice/"                                                                           \
        "rktlet-9cb2c786f10ed7aa1577753c052f10d0d99587045e8fb8e37e1062ed83621228.service"
#define APP UNIT "/payload/system.slice/ccec61408b31eecbf.service"

/* systemd-nspawn 252 under rkt 1.30 on a hybrid host, read inside the host's cgroup
 * namespace: every hierarchy mounted twice, the first set (mount root "/..") hidden under a
 * tmpfs mounted over /sys/fs/cgroup. */
static void test_parse_hybrid(void **state)
{
        _cleanup_free_ char *cg = fixture("hybrid-rkt-app.cgroup");
        _cleanup_free_ char *mi = fixture("hybrid-rkt-host.mountinfo");
        rkl_cgroup_entry *e = NULL;
        size_t n = 0;

        assert_int_equal(rkl_cgroup_entries_parse(cg, mi, &e, &n), 0);
        assert_int_equal(n, 10);
        const rkl_cgroup_entry *u = find(e, n, "");
        assert_true(u->unified);
        assert_string_equal(u->path, APP);
        assert_string_equal(u->dir, "/sys/fs/cgroup/unified" APP);
        assert_string_equal(find(e, n, "name=systemd")->dir, "/sys/fs/cgroup/systemd" APP);
        assert_string_equal(find(e, n, "memory")->dir, "/sys/fs/cgroup/memory" APP);
        assert_string_equal(find(e, n, "pids")->dir, "/sys/fs/cgroup/pids" UNIT);
        assert_string_equal(find(e, n, "cpu")->dir, "/sys/fs/cgroup/cpu/system.slice");
        const rkl_cgroup_entry *cpuset = find(e, n, "cpuset");
        assert_false(cpuset->unified);
        assert_string_equal(cpuset->path, "/");
        assert_string_equal(cpuset->dir, "/sys/fs/cgroup/cpuset");
        assert_true(rkl_cgroup_entry_has(cpuset, "cpuset"));
        assert_false(rkl_cgroup_entry_has(cpuset, "cpu"));
        assert_false(rkl_cgroup_entry_has(u, "cpuset"));
        rkl_cgroup_entries_free(e, n);

        /* Without mountinfo: paths only. */
        assert_int_equal(rkl_cgroup_entries_parse(cg, NULL, &e, &n), 0);
        for (size_t i = 0; i < n; i++)
                assert_null(e[i].dir);
        rkl_cgroup_entries_free(e, n);
}

static void test_parse_unified(void **state)
{
        _cleanup_free_ char *cg = fixture("unified-app.cgroup");
        _cleanup_free_ char *mi = fixture("unified-host.mountinfo");
        rkl_cgroup_entry *e = NULL;
        size_t n = 0;

        assert_int_equal(rkl_cgroup_entries_parse(cg, mi, &e, &n), 0);
        assert_int_equal(n, 1);
        assert_true(e[0].unified);
        assert_string_equal(e[0].dir, "/sys/fs/cgroup/kubepods.slice/kubepods-pod1.slice/"
                                      "rktlet-1234.service/payload/system.slice/web.service");
        rkl_cgroup_entries_free(e, n);

        /* Only a bind mount of a subtree (its mount point escaped in mountinfo) holds it. */
        const char *bind = "40 22 0:24 /kubepods.slice /var/lib/with\\040space/cg rw - cgroup2 "
                           "cgroup2 rw\n";
        assert_int_equal(rkl_cgroup_entries_parse(cg, bind, &e, &n), 0);
        assert_string_equal(e[0].dir, "/var/lib/with space/cg/kubepods-pod1.slice/"
                                      "rktlet-1234.service/payload/system.slice/web.service");
        rkl_cgroup_entries_free(e, n);
        /* A cgroup outside what a mount shows has no directory here. */
        assert_int_equal(rkl_cgroup_entries_parse("0::/other.slice/x\n", bind, &e, &n), 0);
        assert_null(e[0].dir);
        rkl_cgroup_entries_free(e, n);
}

static void test_parse_bad(void **state)
{
        rkl_cgroup_entry *e = NULL;
        size_t n = 0;
        assert_int_equal(rkl_cgroup_entries_parse("garbage\n", NULL, &e, &n), -EBADMSG);
        assert_int_equal(rkl_cgroup_entries_parse("1:cpu:relative\n", NULL, &e, &n), -EBADMSG);
        assert_int_equal(rkl_cgroup_entries_parse("", NULL, &e, &n), 0);
        assert_int_equal(n, 0);
        rkl_cgroup_entries_free(e, n);
}

static void test_path_of_self(void **state)
{
        _cleanup_free_ char *p = NULL;
        rkl_cgroup_entry *e = NULL;
        size_t n = 0;

        assert_int_equal(rkl_cgroup_entries_of(getpid(), &e, &n), 0);
        assert_true(n > 0);
        rkl_cgroup_entries_free(e, n);
        assert_int_equal(rkl_cgroup_entries_of(INT32_MAX, &e, &n), -ESRCH);
        assert_int_equal(rkl_cgroup_path_of(getpid(), "no-such-controller", &p), -ENODATA);
}

/* A cgroup of the test's own under its cgroup2 (or name=systemd) cgroup, with a process
 * that forks more of itself in it: killed and removed, nothing left. */
static void test_kill_and_remove(void **state)
{
        rkl_cgroup_entry *e = NULL;
        size_t n = 0;
        const char *dir = NULL;

        if (geteuid() != 0)
                skip();
        assert_int_equal(rkl_cgroup_entries_of(getpid(), &e, &n), 0);
        for (size_t i = 0; i < n && !dir; i++)
                if (e[i].dir && (e[i].unified || streq(e[i].controllers, "name=systemd")))
                        dir = e[i].dir;
        if (!dir) {
                rkl_cgroup_entries_free(e, n);
                skip();
        }
        _cleanup_free_ char *cg = rkl_xasprintf("%s/rkl-test-cgroup-%d", dir, (int)getpid());
        rkl_cgroup_entries_free(e, n);
        if (mkdir(cg, 0755) < 0)
                skip(); /* a read-only or delegated-away hierarchy */
        _cleanup_free_ char *sub = rkl_xasprintf("%s/nested", cg);
        assert_int_equal(mkdir(sub, 0755), 0);

        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                _cleanup_free_ char *procs = rkl_xasprintf("%s/cgroup.procs", sub);
                int fd = open(procs, O_WRONLY);
                if (fd < 0 || write(fd, "0", 1) != 1)
                        _exit(1);
                close(fd);
                execl("/bin/sh", "sh", "-c", "sleep 100 & sleep 100 & exec sleep 100", NULL);
                _exit(1);
        }
        for (int i = 0; i < 200 && rkl_cgroup_is_empty(cg); i++)
                usleep(10 * 1000);
        assert_false(rkl_cgroup_is_empty(cg));
        assert_int_equal(rkl_cgroup_remove(cg), -EBUSY);

        /* Listed: the child and the two it forks, in nested only; by path or by an open fd. */
        _cleanup_free_ pid_t *pids = NULL;
        size_t n_pids = 0;
        for (int i = 0; i < 200 && n_pids < 3; i++) {
                pids = mfree(pids);
                assert_int_equal(rkl_cgroup_pids_at(AT_FDCWD, sub, &pids, &n_pids), 0);
                usleep(10 * 1000);
        }
        assert_int_equal(n_pids, 3);
        bool child = false;
        for (size_t i = 0; i < n_pids; i++)
                child = child || pids[i] == pid;
        assert_true(child);
        pids = mfree(pids);
        _cleanup_close_ int subfd = open(sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(subfd >= 0);
        assert_int_equal(rkl_cgroup_pids_at(subfd, ".", &pids, &n_pids), 0);
        assert_int_equal(n_pids, 3);
        pids = mfree(pids);
        assert_int_equal(rkl_cgroup_pids_at(AT_FDCWD, cg, &pids, &n_pids), 0);
        assert_int_equal(n_pids, 0);
        assert_null(pids);

        uint64_t t0 = rkl_now_usec(CLOCK_MONOTONIC);
        assert_int_equal(rkl_cgroup_kill_and_remove(cg, 60 * USEC_PER_SEC), 0);
        assert_true(rkl_now_usec(CLOCK_MONOTONIC) - t0 < 30 * USEC_PER_SEC); /* not its timeout */
        struct stat st;
        assert_int_equal(stat(cg, &st), -1);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        assert_int_equal(rkl_cgroup_pids_at(AT_FDCWD, sub, &pids, &n_pids), -ENOENT);
        /* Gone already: nothing to do. */
        assert_int_equal(rkl_cgroup_kill_and_remove(cg, USEC_PER_SEC), 0);
        assert_true(rkl_cgroup_is_empty(cg));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_parse_hybrid),    cmocka_unit_test(test_parse_unified),
            cmocka_unit_test(test_parse_bad),       cmocka_unit_test(test_path_of_self),
            cmocka_unit_test(test_kill_and_remove),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
