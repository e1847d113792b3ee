/* The stats cache (src/stats/stats.c): a collection from fixture trees (v1 and v2), CPU
 * rates from two samples, pods adding up their containers' CPU where they have no CPU cgroup
 * of their own, the collector thread's refresh, and no entry for what was not handed over. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "stats/stats.h"
#include <sys/stat.h>
#include <sys/sysmacros.h>

static char *fx(const char *rel)
{
        return rkl_xasprintf("%s/tests/fixtures/cgroup/%s", getenv("RKL_SOURCE_DIR"), rel);
}

static int resolve_v1(pid_t supervisor, const char *app, rkl_stats_dirs *ret)
{
        (void)supervisor;
        if (app) {
                ret->cpu = fx("v1/cpuacct/app");
                ret->cpu_spec = fx("v1/cpu/app");
                ret->memory = fx("v1/memory/app");
                ret->pids_max = fx("v1/pids/pod");
                /* b has done no block I/O yet */
                ret->blkio = fx(streq(app, "b") ? "v1/blkio/idle" : "v1/blkio/app");
                ret->pressure = fx("v1/unified/app");
        } else {
                ret->memory = fx("v1/memory/pod");
                ret->pids = fx("v1/pids/pod");
        }
        return 0;
}

static int resolve_v2(pid_t supervisor, const char *app, rkl_stats_dirs *ret)
{
        (void)supervisor;
        ret->cpu = fx(app ? "v2/app" : "v2/pod");
        ret->memory = fx(app ? "v2/app" : "v2/pod");
        ret->pids = fx(app ? "v2/app" : "v2/pod");
        return 0;
}

static rkl_stats_target *targets(size_t *n, bool with_b)
{
        rkl_stats_target *t = rkl_xnew0(rkl_stats_target, 3);
        size_t k = 0;
        snprintf(t[k].id, sizeof(t[k].id), "ca");
        snprintf(t[k].sandbox_id, sizeof(t[k].sandbox_id), "pod");
        t[k++].app = rkl_xstrdup("a");
        if (with_b) {
                snprintf(t[k].id, sizeof(t[k].id), "cb");
                snprintf(t[k].sandbox_id, sizeof(t[k].sandbox_id), "pod");
                t[k].overlay_dir = fx("v1");
                t[k++].app = rkl_xstrdup("b");
        }
        snprintf(t[k].id, sizeof(t[k].id), "pod");
        snprintf(t[k].sandbox_id, sizeof(t[k].sandbox_id), "pod");
        t[k].is_pod = true;
        t[k++].supervisor = getpid(); /* some network namespace */
        *n = k;
        return t;
}

static void test_collect_v1(void **state)
{
        (void)state;
        rkl_stats_config cfg = {.mode = RKL_STATS_CGROUP_V1, .resolve = resolve_v1};
        size_t n;
        rkl_stats_target *t = targets(&n, true);
        _cleanup_(rkl_stats_snapshot_unrefp) rkl_stats_snapshot *s =
            rkl_stats_collect(&cfg, t, n, NULL);
        assert_int_equal(rkl_stats_snapshot_size(s), 3);
        const rkl_stats_entry *a = rkl_stats_snapshot_container(s, "ca");
        assert_non_null(a);
        assert_true(a->has_cpu && a->has_memory);
        assert_false(a->has_nano_cores); /* one sample */
        assert_int_equal(a->cpu_usage_ns, 1500000000);
        assert_int_equal(a->memory.limit, 33554432);
        assert_true(a->timestamp_ns > 0);
        assert_true(a->has_cpu_split && a->has_cpu_spec && a->has_pids_max);
        assert_int_equal(a->cpu_spec.shares, 2);
        assert_true(a->has_psi[RKL_STATS_PSI_CPU] && a->has_psi[RKL_STATS_PSI_MEMORY] &&
                    a->has_psi[RKL_STATS_PSI_IO]);
        assert_int_equal(a->psi[RKL_STATS_PSI_CPU].some.total_us, 2500000);
        assert_true(a->has_blkio);
        assert_int_equal(a->n_blkio, 1);
        assert_int_equal(a->blkio[0].write_bytes, 8192);
        assert_true(a->blkio[0].device[0]); /* /dev/<name>, or MAJ:MIN where /sys has none */
        /* No device listed: none written to, the writable layer's device at 0. */
        const rkl_stats_entry *b = rkl_stats_snapshot_container(s, "cb");
        struct stat st;
        _cleanup_free_ char *v1 = fx("v1");
        assert_int_equal(stat(v1, &st), 0);
        assert_int_equal(b->n_blkio, 1);
        assert_int_equal(b->blkio[0].major, major(st.st_dev));
        assert_int_equal(b->blkio[0].minor, minor(st.st_dev));
        assert_int_equal(b->blkio[0].read_bytes + b->blkio[0].writes, 0);
        /* The filesystem under its layer (statvfs), on the same device. */
        assert_true(b->has_disk);
        assert_true(b->disk.capacity_bytes > 0 && b->disk.inodes_total >= b->disk.inodes_free);
        assert_int_equal(b->disk.major, major(st.st_dev));
        assert_false(a->has_disk); /* no overlay directory */
        const rkl_stats_entry *p = rkl_stats_snapshot_pod(s, "pod");
        assert_non_null(p);
        assert_null(rkl_stats_snapshot_container(s, "pod"));
        assert_true(p->has_cpu);
        assert_int_equal(p->cpu_usage_ns, 2 * UINT64_C(1500000000)); /* its two containers */
        assert_true(p->has_pids);
        assert_int_equal(p->pids, 7);
        assert_int_equal(p->memory.working_set, 20971520);
        assert_true(p->memory.has_available);        /* under its parent's limit */
        assert_false(p->has_psi[RKL_STATS_PSI_CPU]); /* no cgroup2 cgroup given */
        rkl_stats_targets_free(t, n);
}

static void test_collect_v2_rate(void **state)
{
        (void)state;
        rkl_stats_config cfg = {.mode = RKL_STATS_CGROUP_V2, .resolve = resolve_v2};
        size_t n;
        rkl_stats_target *t = targets(&n, false);
        _cleanup_(rkl_stats_snapshot_unrefp) rkl_stats_snapshot *s1 =
            rkl_stats_collect(&cfg, t, n, NULL);
        const rkl_stats_entry *p = rkl_stats_snapshot_pod(s1, "pod");
        assert_int_equal(p->cpu_usage_ns, UINT64_C(4000000000)); /* its own cgroup's */
        /* A previous sample 1 s earlier with 0.5 s less CPU: half a core. */
        rkl_stats_entry *a = (rkl_stats_entry *)rkl_stats_snapshot_container(s1, "ca");
        a->timestamp_ns -= 1000000000;
        a->cpu_usage_ns -= 500000000;
        usleep(1000);
        _cleanup_(rkl_stats_snapshot_unrefp) rkl_stats_snapshot *s2 =
            rkl_stats_collect(&cfg, t, n, s1);
        const rkl_stats_entry *a2 = rkl_stats_snapshot_container(s2, "ca");
        assert_true(a2->has_nano_cores);
        /* 0.5 s of CPU over the wall time between the two samples (1 s and however long
         * this machine took), to a billionth of a core. */
        double want = 5e8 / (double)(a2->timestamp_ns - a->timestamp_ns) * 1e9;
        assert_true(a2->nano_cores <= 500000000);
        assert_true((double)a2->nano_cores > want - 2 && (double)a2->nano_cores < want + 2);
        rkl_stats_targets_free(t, n);
}

static void test_refresh_drops_gone(void **state)
{
        (void)state;
        rkl_stats_config cfg = {.mode = RKL_STATS_CGROUP_V1, .resolve = resolve_v1};
        _cleanup_(rkl_stats_freep) rkl_stats *st = NULL;
        rkl_error err = RKL_ERROR_INIT;
        size_t n;
        assert_int_equal(rkl_stats_new(&cfg, &st, &err), 0);
        assert_int_equal(rkl_stats_mode(st), RKL_STATS_CGROUP_V1);
        {
                _cleanup_(rkl_stats_snapshot_unrefp) rkl_stats_snapshot *s = rkl_stats_get(st);
                assert_int_equal(rkl_stats_snapshot_size(s), 0);
        }
        rkl_stats_target *t = targets(&n, true);
        rkl_stats_refresh(st, t, n);
        assert_true(rkl_stats_wait_collected(st, 5000000));
        _cleanup_(rkl_stats_snapshot_unrefp) rkl_stats_snapshot *s1 = rkl_stats_get(st);
        assert_non_null(rkl_stats_snapshot_container(s1, "cb"));
        t = targets(&n, false);
        rkl_stats_refresh(st, t, n);
        assert_true(rkl_stats_wait_collected(st, 5000000));
        _cleanup_(rkl_stats_snapshot_unrefp) rkl_stats_snapshot *s2 = rkl_stats_get(st);
        assert_null(rkl_stats_snapshot_container(s2, "cb"));
        assert_non_null(rkl_stats_snapshot_container(s2, "ca"));
        /* The old snapshot is still whole for whoever holds it. */
        assert_non_null(rkl_stats_snapshot_container(s1, "cb"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_collect_v1),
            cmocka_unit_test(test_collect_v2_rate),
            cmocka_unit_test(test_refresh_drops_gone),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
