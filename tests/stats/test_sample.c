/* Reading cgroup v1 and v2 files (src/stats/sample.c) from fixture trees under
 * tests/fixtures/cgroup/, /proc/<pid>/net/dev texts, and the disk usage of a tree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "stats/sample.h"

static int fixture(const char *rel)
{
        _cleanup_free_ char *p =
            rkl_xasprintf("%s/tests/fixtures/%s", getenv("RKL_SOURCE_DIR"), rel);
        int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        return fd;
}

static void test_detect(void **state)
{
        (void)state;
        int v1 = fixture("cgroup/v1"), v2 = fixture("cgroup/v2");
        assert_int_equal(rkl_stats_cgroup_mode_detect(v1), RKL_STATS_CGROUP_V1);
        assert_int_equal(rkl_stats_cgroup_mode_detect(v2), RKL_STATS_CGROUP_V2);
        assert_string_equal(rkl_stats_cgroup_mode_to_string(RKL_STATS_CGROUP_V2), "v2");
        close(v1);
        close(v2);
}

static void test_v1_app(void **state)
{
        (void)state;
        int cpu = fixture("cgroup/v1/cpuacct/app"), mem = fixture("cgroup/v1/memory/app");
        uint64_t ns, kills;
        rkl_stats_memory m;
        assert_int_equal(rkl_stats_read_cpu(cpu, RKL_STATS_CGROUP_V1, &ns), 0);
        assert_int_equal(ns, 1500000000);
        assert_int_equal(rkl_stats_read_memory(mem, RKL_STATS_CGROUP_V1, &m), 0);
        assert_int_equal(m.usage, 10485760);
        assert_int_equal(m.working_set,
                         10485760 - 2097152); /* total_inactive_file, not inactive_file */
        assert_int_equal(m.rss, 6291456);
        assert_int_equal(m.page_faults, 1234);
        assert_int_equal(m.major_page_faults, 5);
        assert_int_equal(m.limit, 33554432);
        assert_int_equal(m.available, 33554432 - m.working_set);
        assert_int_equal(rkl_stats_read_oom_kills(mem, RKL_STATS_CGROUP_V1, &kills), 0);
        assert_int_equal(kills, 2);
        /* No cpuacct file in the memory hierarchy. */
        assert_int_equal(rkl_stats_read_cpu(mem, RKL_STATS_CGROUP_V1, &ns), -ENOENT);
        close(cpu);
        close(mem);
}

static void test_v1_pod_no_limit(void **state)
{
        (void)state;
        int mem = fixture("cgroup/v1/memory/pod"), pids = fixture("cgroup/v1/pids/pod");
        rkl_stats_memory m;
        uint64_t n;
        assert_int_equal(rkl_stats_read_memory(mem, RKL_STATS_CGROUP_V1, &m), 0);
        assert_int_equal(m.limit, 0); /* v1's "unlimited" page-rounded LONG_MAX */
        assert_int_equal(m.available, 0);
        assert_int_equal(m.working_set, 20971520);
        assert_int_equal(rkl_stats_read_pids(pids, &n), 0);
        assert_int_equal(n, 7);
        close(mem);
        close(pids);
}

static void test_v2(void **state)
{
        (void)state;
        int app = fixture("cgroup/v2/app"), pod = fixture("cgroup/v2/pod");
        uint64_t ns, kills, n;
        rkl_stats_memory m;
        assert_int_equal(rkl_stats_read_cpu(app, RKL_STATS_CGROUP_V2, &ns), 0);
        assert_int_equal(ns, UINT64_C(2500000000));
        assert_int_equal(rkl_stats_read_memory(app, RKL_STATS_CGROUP_V2, &m), 0);
        assert_int_equal(m.usage, 10485760);
        assert_int_equal(m.working_set, 10485760 - 2097152);
        assert_int_equal(m.rss, 6291456);
        assert_int_equal(m.page_faults, 1234);
        assert_int_equal(m.major_page_faults, 5);
        assert_int_equal(m.limit, 33554432);
        assert_int_equal(rkl_stats_read_oom_kills(app, RKL_STATS_CGROUP_V2, &kills), 0);
        assert_int_equal(kills, 1);
        assert_int_equal(rkl_stats_read_pids(app, &n), 0);
        assert_int_equal(n, 3);
        assert_int_equal(rkl_stats_read_memory(pod, RKL_STATS_CGROUP_V2, &m), 0);
        assert_int_equal(m.limit, 0); /* "max" */
        close(app);
        close(pod);
}

static void test_netdev(void **state)
{
        (void)state;
        int dir = fixture("netdev");
        _cleanup_free_ char *text = NULL;
        _cleanup_free_ rkl_stats_netif *ifs = NULL;
        size_t n;
        assert_int_equal(rkl_read_file_at(dir, "pod.txt", 1 << 20, &text, NULL), 0);
        assert_int_equal(rkl_stats_parse_netdev(text, &ifs, &n), 0);
        assert_int_equal(n, 1); /* lo left out */
        assert_string_equal(ifs[0].name, "eth0");
        assert_int_equal(ifs[0].rx_bytes, 516);
        assert_int_equal(ifs[0].rx_errors, 1);
        assert_int_equal(ifs[0].tx_bytes, 734);
        assert_int_equal(ifs[0].tx_errors, 2);
        rkl_stats_netif *none = NULL;
        assert_int_equal(rkl_stats_parse_netdev("garbage\n", &none, &n), -EBADMSG);
        assert_int_equal(rkl_stats_parse_netdev("a|\nb|\n eth0: 1 2\n", &none, &n), -EBADMSG);
        assert_null(none);
        close(dir);
}

static void test_fs_usage(void **state)
{
        (void)state;
        char tmpl[] = "/tmp/test-stats-XXXXXX";
        assert_non_null(mkdtemp(tmpl));
        _cleanup_free_ char *sub = rkl_xasprintf("%s/etc", tmpl);
        _cleanup_free_ char *file = rkl_xasprintf("%s/etc/big", tmpl);
        assert_int_equal(mkdir(sub, 0755), 0);
        int fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        char buf[8192] = {1};
        assert_int_equal(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
        close(fd);
        uint64_t bytes, inodes;
        assert_int_equal(rkl_stats_fs_usage(AT_FDCWD, tmpl, &bytes, &inodes), 0);
        assert_int_equal(inodes, 2);
        assert_true(bytes >= 8192);
        assert_int_equal(rkl_stats_fs_usage(AT_FDCWD, "/nonexistent-x", &bytes, &inodes), -ENOENT);
        assert_int_equal(rkl_rm_rf_at(AT_FDCWD, tmpl), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_detect),          cmocka_unit_test(test_v1_app),
            cmocka_unit_test(test_v1_pod_no_limit), cmocka_unit_test(test_v2),
            cmocka_unit_test(test_netdev),          cmocka_unit_test(test_fs_usage),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
