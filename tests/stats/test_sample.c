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
#include <sys/wait.h>
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
        assert_int_equal(m.cache, 2097152); /* total_cache */
        assert_int_equal(m.mapped_file, 1048576);
        assert_int_equal(m.swap, 0);
        assert_int_equal(m.failcnt, 4);
        assert_int_equal(m.max_usage, 12582912);
        assert_int_equal(m.soft_limit, 0); /* unlimited */
        assert_int_equal(m.swap_limit, 33554432);
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
        /* ... but kubelet's pod cgroup above it has one: what is available is under it. */
        assert_true(m.has_available);
        assert_int_equal(m.available, 83886080 - m.working_set);
        assert_int_equal(m.working_set, 20971520);
        assert_int_equal(rkl_stats_read_pids(pids, &n), 0);
        assert_int_equal(n, 7);
        close(mem);
        close(pids);
}

/* One device's Read and Write lines: 4096 bytes in 1 read, 8192 in 2 writes. */
static void check_blkio(int dir, rkl_stats_cgroup_mode mode, unsigned major, unsigned minor)
{
        _cleanup_free_ rkl_stats_blkio *b = NULL;
        size_t n;
        assert_int_equal(rkl_stats_read_blkio(dir, mode, &b, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(b[0].major, major);
        assert_int_equal(b[0].minor, minor);
        assert_int_equal(b[0].read_bytes, 4096);
        assert_int_equal(b[0].write_bytes, 8192);
        assert_int_equal(b[0].reads, 1);
        assert_int_equal(b[0].writes, 2);
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
        assert_int_equal(m.cache, 4194304); /* file */
        assert_int_equal(m.mapped_file, 524288);
        assert_int_equal(m.swap, 4096);
        assert_int_equal(m.failcnt, 3); /* memory.events max */
        assert_int_equal(m.max_usage, 16777216);
        assert_int_equal(m.swap_limit, 0);
        uint64_t user, sys;
        assert_int_equal(rkl_stats_read_cpu_split(app, RKL_STATS_CGROUP_V2, &user, &sys), 0);
        assert_int_equal(user, UINT64_C(2000000000));
        assert_int_equal(sys, UINT64_C(500000000));
        rkl_stats_cpu_spec c;
        assert_int_equal(rkl_stats_read_cpu_spec(app, RKL_STATS_CGROUP_V2, &c), 0);
        assert_int_equal(c.shares, 2 + 99 * 262142 / 9999); /* weight 100: shares 1024-ish */
        assert_int_equal(c.period_us, 100000);
        assert_int_equal(c.quota_us, 50000);
        check_blkio(app, RKL_STATS_CGROUP_V2, 8, 0);
        assert_int_equal(rkl_stats_read_pids_max(app, &n), 0);
        assert_int_equal(n, 1024);
        assert_int_equal(rkl_stats_read_oom_kills(app, RKL_STATS_CGROUP_V2, &kills), 0);
        assert_int_equal(kills, 1);
        assert_int_equal(rkl_stats_read_pids(app, &n), 0);
        assert_int_equal(n, 3);
        assert_int_equal(rkl_stats_read_memory(pod, RKL_STATS_CGROUP_V2, &m), 0);
        assert_int_equal(m.limit, 0); /* "max" */
        close(app);
        close(pod);
}

/* cpuacct.stat's ticks, the cpu cgroup's CFS settings, blkio's Read and Write lines (Sync,
 * Async, Total left out) and the pids limit of a v1 tree. */
static void test_v1_cpu_blkio(void **state)
{
        (void)state;
        int cpuacct = fixture("cgroup/v1/cpuacct/app"), cpu = fixture("cgroup/v1/cpu/app"),
            blkio = fixture("cgroup/v1/blkio/app"), pids = fixture("cgroup/v1/pids/pod");
        uint64_t user, sys, max;
        long hz = sysconf(_SC_CLK_TCK);
        assert_int_equal(rkl_stats_read_cpu_split(cpuacct, RKL_STATS_CGROUP_V1, &user, &sys), 0);
        assert_int_equal(user, 120 * (UINT64_C(1000000000) / (uint64_t)hz));
        assert_int_equal(sys, 30 * (UINT64_C(1000000000) / (uint64_t)hz));
        rkl_stats_cpu_spec c;
        assert_int_equal(rkl_stats_read_cpu_spec(cpu, RKL_STATS_CGROUP_V1, &c), 0);
        assert_int_equal(c.shares, 2);
        assert_int_equal(c.period_us, 100000);
        assert_int_equal(c.quota_us, 0); /* -1: none */
        check_blkio(blkio, RKL_STATS_CGROUP_V1, 254, 0);
        assert_int_equal(rkl_stats_read_pids_max(pids, &max), 0);
        assert_int_equal(max, 0); /* "max" */
        assert_int_equal(rkl_stats_read_cpu_split(cpu, RKL_STATS_CGROUP_V1, &user, &sys), -ENOENT);
        close(cpuacct);
        close(cpu);
        close(blkio);
        close(pids);
}

/* cgroup2's *.pressure in a hybrid host's unified/: some and full; io's lacks full. */
static void test_psi(void **state)
{
        (void)state;
        int dir = fixture("cgroup/v1/unified/app");
        rkl_stats_psi p;
        assert_int_equal(rkl_stats_read_psi(dir, "cpu.pressure", &p), 0);
        assert_true(p.some.avg10 > 1.49 && p.some.avg10 < 1.51);
        assert_true(p.some.avg60 > 0.24 && p.some.avg60 < 0.26);
        assert_true(p.some.avg300 > 0.04 && p.some.avg300 < 0.06);
        assert_int_equal(p.some.total_us, 2500000);
        assert_true(p.full.avg10 > 0.49 && p.full.avg10 < 0.51);
        assert_int_equal(p.full.total_us, 700000);
        assert_int_equal(rkl_stats_read_psi(dir, "io.pressure", &p), 0);
        assert_int_equal(p.full.total_us, 0);
        assert_true(p.full.avg10 == 0);
        assert_int_equal(rkl_stats_read_psi(dir, "irq.pressure", &p), -ENOENT);
        int mem = fixture("cgroup/v1/memory/app");
        assert_int_equal(rkl_stats_read_psi(mem, "memory.stat", &p), -EBADMSG);
        close(mem);
        close(dir);
}

static void put(const char *dir, const char *name, const char *text)
{
        _cleanup_free_ char *p = rkl_xasprintf("%s/%s", dir, name);
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

/* The processes of a cgroup from a /proc made here (its sockets are dangling links, which
 * a fixture tree in git would not keep well): threads, descriptors, sockets and the first
 * process's soft open-files limit. */
static void test_procs(void **state)
{
        (void)state;
        char tmp[] = "/tmp/rkl-test-procs-XXXXXX";
        assert_non_null(mkdtemp(tmp));
        _cleanup_free_ char *cmd = rkl_xasprintf(
            "cd %s && mkdir -p cg proc/1000/task/1000 proc/1000/task/1002 proc/1000/fd "
            "proc/1001/task/1001 proc/1001/fd && ln -s /dev/null proc/1000/fd/0 && "
            "ln -s /dev/null proc/1000/fd/1 && ln -s /dev/null proc/1000/fd/2 && "
            "ln -s 'socket:[4242]' proc/1000/fd/3 && ln -s 'pipe:[7]' proc/1001/fd/0",
            tmp);
        assert_int_equal(WEXITSTATUS(system(cmd)), 0);
        _cleanup_free_ char *cg = rkl_xasprintf("%s/cg", tmp);
        _cleanup_free_ char *p1000 = rkl_xasprintf("%s/proc/1000", tmp);
        put(cg, "cgroup.procs", "1000\n1001\n");
        /* A name with ") " in it: the state is after the last ")". */
        _cleanup_free_ char *t1000 = rkl_xasprintf("%s/proc/1000/task/1000", tmp);
        _cleanup_free_ char *t1002 = rkl_xasprintf("%s/proc/1000/task/1002", tmp);
        _cleanup_free_ char *t1001 = rkl_xasprintf("%s/proc/1001/task/1001", tmp);
        put(t1000, "stat", "1000 (sh) S 1 1000 1000 0 -1\n");
        put(t1002, "stat", "1002 (a) R (b) R 1 1000 1000 0 -1\n");
        put(t1001, "stat", "1001 (dd) D 1 1001 1001 0 -1\n");
        put(p1000, "limits",
            "Limit                     Soft Limit           Hard Limit           Units     \n"
            "Max cpu time              unlimited            unlimited            seconds   \n"
            "Max open files            1024                 524288               files     \n");
        _cleanup_free_ char *procdir = rkl_xasprintf("%s/proc", tmp);
        int cgfd = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int proc = open(procdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        rkl_stats_procs p;
        assert_int_equal(rkl_stats_read_procs(cgfd, proc, &p), 0);
        assert_int_equal(p.processes, 2);
        assert_int_equal(p.threads, 3);
        assert_int_equal(p.fds, 5);
        assert_int_equal(p.sockets, 1);
        assert_int_equal(p.nofile_soft, 1024);
        assert_int_equal(p.running, 1);
        assert_int_equal(p.uninterruptible, 1);
        assert_int_equal(p.stopped, 0);
        int pod = fixture("cgroup/v1/memory/pod");
        assert_int_equal(rkl_stats_read_procs(pod, proc, &p), -ENOENT); /* no cgroup.procs */
        close(pod);
        close(cgfd);
        close(proc);
        _cleanup_free_ char *rm = rkl_xasprintf("rm -rf %s", tmp);
        (void)system(rm);
}

static void test_diskstats(void **state)
{
        (void)state;
        const char *text =
            "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
            " 254       0 vda 166959 29844 6888754 533121 165007 286745 54742064 1040386 2 "
            "177916 1665343 87491 50 32812152 81224 19654 10610\n"
            " 254       1 vda1 1 2 3 4 5 6 7 8 9 10 11\n";
        rkl_stats_disk d = {0};
        assert_int_equal(rkl_stats_parse_diskstats(text, 254, 0, &d), 0);
        assert_true(d.has_io);
        assert_int_equal(d.reads_merged, 29844);
        assert_int_equal(d.sectors_read, 6888754);
        assert_int_equal(d.read_ms, 533121);
        assert_int_equal(d.writes_merged, 286745);
        assert_int_equal(d.sectors_written, 54742064);
        assert_int_equal(d.write_ms, 1040386);
        assert_int_equal(d.ios_in_progress, 2);
        assert_int_equal(d.io_ms, 177916);
        assert_int_equal(d.weighted_io_ms, 1665343);
        assert_int_equal(rkl_stats_parse_diskstats(text, 254, 1, &d), 0); /* older kernels' */
        assert_int_equal(d.weighted_io_ms, 11);
        assert_int_equal(rkl_stats_parse_diskstats(text, 0, 45, &d), -ENOENT);
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
        assert_int_equal(ifs[0].rx_packets, 6);
        assert_int_equal(ifs[0].tx_packets, 6);
        assert_int_equal(ifs[0].rx_dropped, 0);
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
            cmocka_unit_test(test_v1_cpu_blkio),    cmocka_unit_test(test_psi),
            cmocka_unit_test(test_procs),           cmocka_unit_test(test_diskstats),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
