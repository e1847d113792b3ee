/* CRI's metrics: cAdvisor's names, every metric with as many label values as its
 * descriptor has keys, values from a stats snapshot collected from fixture cgroups and from
 * the records (limits, start time, OOM kill), containers that never ran left out, and the
 * streamed pages equal to the unary answer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <unistd.h>

#include "api/api.h"
#include "api/cri-metrics.h"
#include "base/alloc.h"
#include "base/config.h"
#include "base/strv.h"
#include "stats/stats.h"
#include "store/cache.h"

static char *fx(const char *rel)
{
        return rkl_xasprintf("%s/tests/fixtures/cgroup/%s", getenv("RKL_SOURCE_DIR"), rel);
}

static int resolve_v2(pid_t supervisor, const char *app, rkl_stats_dirs *ret)
{
        ret->cpu = fx(app ? "v2/app" : "v2/pod");
        ret->memory = fx(app ? "v2/app" : "v2/pod");
        ret->pids = fx(app ? "v2/app" : "v2/pod");
        if (app) {
                ret->cpu_spec = fx("v2/app");
                ret->blkio = fx("v2/app");
                ret->pids_max = fx("v2/app");
        }
        ret->pressure = fx("v1/unified/app"); /* cgroup2's files, as a hybrid host has them */
        return 0;
}

#define POD_ID "aaaaaaaa00000000000000000000000000000000000000000000000000000000"
#define RUN_ID "bbbbbbbb00000000000000000000000000000000000000000000000000000000"
#define OOM_ID "cccccccc00000000000000000000000000000000000000000000000000000000"
#define NEW_ID "dddddddd00000000000000000000000000000000000000000000000000000000"

static rkl_pod_view *pod_view(void)
{
        rkl_pod_record *r = rkl_xnew0(rkl_pod_record, 1);
        memcpy(r->id, POD_ID, sizeof(r->id));
        r->spec.name = rkl_xstrdup("web");
        r->spec.namespace = rkl_xstrdup("prod");
        r->spec.uid = rkl_xstrdup("uid");
        r->rkt_uuid = rkl_xstrdup("1234abcd-0000-0000-0000-000000000000");
        r->desired = RKL_POD_DESIRED_READY;
        r->observed.phase = RKL_POD_PHASE_RUNNING;
        return rkl_pod_view_new(r);
}

static rkl_container_view *ctr_view(const char *id, rkl_container_phase phase, const char *reason)
{
        rkl_container_record *r = rkl_xnew0(rkl_container_record, 1);
        memcpy(r->id, id, sizeof(r->id));
        memcpy(r->sandbox_id, POD_ID, sizeof(r->sandbox_id));
        r->app_name = rkl_container_app_name(id);
        r->spec.name = rkl_xstrdup("app");
        r->spec.image = rkl_xstrdup("busybox:1.36");
        r->spec.memory_limit = 64 << 20;
        r->spec.cpu_period = 100000;
        r->spec.cpu_quota = 50000;
        r->spec.cpu_shares = 512;
        r->observed.phase = phase;
        if (phase != RKL_CONTAINER_PHASE_CREATED)
                r->observed.started_ns = INT64_C(1700000000123456789);
        r->observed.reason = reason ? rkl_xstrdup(reason) : NULL;
        return rkl_container_view_new(r, NULL);
}

/* The descriptors, by name: their label keys' count. */
typedef struct descriptors {
        Runtime__V1__ListMetricDescriptorsResponse resp;
        rkl_arena *a;
} descriptors;

static size_t keys_of(const descriptors *d, const char *name)
{
        for (size_t i = 0; i < d->resp.n_descriptors; i++)
                if (streq(d->resp.descriptors[i]->name, name))
                        return d->resp.descriptors[i]->n_label_keys;
        fail_msg("no descriptor for %s", name);
        return 0;
}

/* The value of the metric named name whose extra label values (after the 6 base ones)
 * are extra (NULL: any); -1 when none. */
static int64_t value_of(Runtime__V1__Metric *const *m, size_t n, const char *name,
                        char *const *extra)
{
        for (size_t i = 0; i < n; i++) {
                if (!streq(m[i]->name, name))
                        continue;
                bool match = true;
                for (size_t k = 0; extra && extra[k]; k++)
                        match = match && 6 + k < m[i]->n_label_values &&
                                streq(m[i]->label_values[6 + k], extra[k]);
                if (match)
                        return (int64_t)m[i]->value->value;
        }
        return -1;
}

static void check_labels(const descriptors *d, Runtime__V1__Metric *const *m, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (m[i]->n_label_values != keys_of(d, m[i]->name))
                        fail_msg("%s: %zu label values, %zu keys", m[i]->name, m[i]->n_label_values,
                                 keys_of(d, m[i]->name));
}

static void test_metrics(void **state)
{
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_(rkl_arena_freep) rkl_arena *a = rkl_arena_new();
        rkl_config options = {0};
        rkl_api_config cfg = {.config = &options};
        rkl_api_ctx ctx = {.cfg = &cfg, .arena = a};
        descriptors d = {.resp = RUNTIME__V1__LIST_METRIC_DESCRIPTORS_RESPONSE__INIT};
        assert_int_equal(rkl_api_list_metric_descriptors(&ctx, NULL, &d.resp, &err), 0);

        /* cAdvisor's names, once each, every one with the base labels first. */
        for (size_t i = 0; i < d.resp.n_descriptors; i++) {
                const Runtime__V1__MetricDescriptor *x = d.resp.descriptors[i];
                assert_true(strncmp(x->name, "container_", 10) == 0);
                assert_true(*x->help);
                assert_true(x->n_label_keys >= 6);
                assert_string_equal(x->label_keys[0], "container");
                assert_string_equal(x->label_keys[5], "pod");
                for (size_t k = 0; k < i; k++)
                        assert_string_not_equal(x->name, d.resp.descriptors[k]->name);
        }
        assert_int_equal(keys_of(&d, "container_cpu_usage_seconds_total"), 7);
        assert_int_equal(keys_of(&d, "container_memory_failures_total"), 8);
        assert_int_equal(keys_of(&d, "container_network_receive_bytes_total"), 7);
        assert_int_equal(keys_of(&d, "container_blkio_device_usage_total"), 10);
        assert_int_equal(keys_of(&d, "container_ulimits_soft"), 7);

        /* A snapshot of one running container and its sandbox, from fixture cgroups. */
        rkl_stats_config sc = {.mode = RKL_STATS_CGROUP_V2, .resolve = resolve_v2};
        rkl_stats_target *t = rkl_xnew0(rkl_stats_target, 2);
        memcpy(t[0].id, RUN_ID, sizeof(t[0].id));
        memcpy(t[0].sandbox_id, POD_ID, sizeof(t[0].sandbox_id));
        t[0].app = rkl_xstrdup("app");
        memcpy(t[1].id, POD_ID, sizeof(t[1].id));
        memcpy(t[1].sandbox_id, POD_ID, sizeof(t[1].sandbox_id));
        t[1].is_pod = true;
        t[1].supervisor = getpid(); /* this process's interfaces */
        _cleanup_(rkl_stats_snapshot_unrefp) rkl_stats_snapshot *s =
            rkl_stats_collect(&sc, t, 2, NULL);
        rkl_stats_targets_free(t, 2);
        const rkl_stats_entry *e = rkl_stats_snapshot_container(s, RUN_ID);
        const rkl_stats_entry *pe = rkl_stats_snapshot_pod(s, POD_ID);
        assert_non_null(e);
        assert_non_null(pe);

        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *pod = pod_view();
        rkl_container_view *ctrs[] = {ctr_view(RUN_ID, RKL_CONTAINER_PHASE_RUNNING, NULL),
                                      ctr_view(OOM_ID, RKL_CONTAINER_PHASE_EXITED, "OOMKilled"),
                                      ctr_view(NEW_ID, RKL_CONTAINER_PHASE_CREATED, NULL)};
        Runtime__V1__PodSandboxMetrics *m = rkl_api_pod_metrics_pb(a, pod, ctrs, 3, s);
        for (size_t i = 0; i < ELEMENTSOF(ctrs); i++)
                rkl_container_view_unref(ctrs[i]);

        assert_string_equal(m->pod_sandbox_id, POD_ID);
        check_labels(&d, m->metrics, m->n_metrics);
        /* The sandbox's cgroup, with no container name and its rkt pod as the name. */
        assert_int_equal(value_of(m->metrics, m->n_metrics, "container_processes", NULL),
                         (int64_t)pe->pids);
        assert_string_equal(m->metrics[0]->label_values[0], "");
        assert_string_equal(m->metrics[0]->label_values[1], POD_ID);
        assert_string_equal(m->metrics[0]->label_values[3], "1234abcd-0000-0000-0000-000000000000");
        assert_string_equal(m->metrics[0]->label_values[4], "prod");
        assert_string_equal(m->metrics[0]->label_values[5], "web");
        for (size_t i = 0; i < pe->n_ifs; i++)
                assert_int_equal(value_of(m->metrics, m->n_metrics,
                                          "container_network_transmit_bytes_total",
                                          RKL_STRV(pe->ifs[i].name)),
                                 (int64_t)pe->ifs[i].tx_bytes);

        /* The container that never ran is left out. */
        assert_int_equal(m->n_container_metrics, 2);
        Runtime__V1__ContainerMetrics *run = m->container_metrics[0],
                                      *oom = m->container_metrics[1];
        assert_string_equal(run->container_id, RUN_ID);
        check_labels(&d, run->metrics, run->n_metrics);
        check_labels(&d, oom->metrics, oom->n_metrics);
        Runtime__V1__Metric *const *rm = run->metrics;
        size_t rn = run->n_metrics;
        assert_string_equal(rm[0]->label_values[0], "app");
        assert_string_equal(rm[0]->label_values[2], "busybox:1.36");
        assert_int_equal(value_of(rm, rn, "container_cpu_usage_seconds_total", RKL_STRV("total")),
                         (int64_t)(e->cpu_usage_ns / 1000000000));
        assert_int_equal(value_of(rm, rn, "container_memory_working_set_bytes", NULL),
                         (int64_t)e->memory.working_set);
        assert_int_equal(value_of(rm, rn, "container_memory_failures_total",
                                  RKL_STRV("pgmajfault", "hierarchy")),
                         (int64_t)e->memory.major_page_faults);
        /* The limit in force, the cgroup's (memory.max), not the one asked for. */
        assert_int_equal(value_of(rm, rn, "container_spec_memory_limit_bytes", NULL), 33554432);
        /* The CFS settings in force, the cgroup's (cpu.max, cpu.weight). */
        assert_int_equal(value_of(rm, rn, "container_spec_cpu_quota", NULL), 50000);
        assert_int_equal(value_of(rm, rn, "container_spec_cpu_period", NULL), 100000);
        assert_int_equal(value_of(rm, rn, "container_spec_cpu_shares", NULL),
                         2 + 99 * 262142 / 9999);
        assert_int_equal(value_of(rm, rn, "container_cpu_user_seconds_total", NULL), 2);
        assert_int_equal(value_of(rm, rn, "container_cpu_system_seconds_total", NULL), 0);
        assert_int_equal(value_of(rm, rn, "container_memory_cache", NULL), 4194304);
        assert_int_equal(value_of(rm, rn, "container_memory_mapped_file", NULL), 524288);
        assert_int_equal(value_of(rm, rn, "container_memory_swap", NULL), 4096);
        assert_int_equal(value_of(rm, rn, "container_memory_failcnt", NULL), 3);
        assert_int_equal(value_of(rm, rn, "container_memory_max_usage_bytes", NULL), 16777216);
        assert_int_equal(value_of(rm, rn, "container_spec_memory_swap_limit_bytes", NULL), 0);
        assert_int_equal(value_of(rm, rn, "container_threads_max", NULL), 1024);
        assert_int_equal(value_of(rm, rn, "container_processes", NULL), 3); /* pids.current */
        assert_int_equal(value_of(rm, rn, "container_last_seen", NULL),
                         e->timestamp_ns / 1000000000);
        const char *dev = e->blkio[0].device;
        assert_int_equal(value_of(rm, rn, "container_fs_writes_bytes_total", RKL_STRV(dev)), 8192);
        assert_int_equal(value_of(rm, rn, "container_fs_reads_total", RKL_STRV(dev)), 1);
        assert_int_equal(value_of(rm, rn, "container_blkio_device_usage_total",
                                  RKL_STRV(dev, "8", "0", "Write")),
                         8192);
        assert_int_equal(value_of(rm, rn, "container_pressure_cpu_waiting_seconds_total", NULL), 2);
        assert_int_equal(value_of(m->metrics, m->n_metrics,
                                  "container_pressure_cpu_stalled_seconds_total", NULL),
                         0);
        assert_int_equal(value_of(rm, rn, "container_start_time_seconds", NULL), 1700000000);
        assert_int_equal(value_of(rm, rn, "container_oom_events_total", NULL), 0);
        assert_true(rm[0]->timestamp > 0); /* a sample: when it was read */
        /* The exited one: its OOM kill and limits, no sample. */
        assert_int_equal(value_of(oom->metrics, oom->n_metrics, "container_oom_events_total", NULL),
                         1);
        assert_int_equal(
            value_of(oom->metrics, oom->n_metrics, "container_memory_working_set_bytes", NULL), -1);
        /* ... and no limits: it has no cgroup they are in force in. */
        assert_int_equal(
            value_of(oom->metrics, oom->n_metrics, "container_spec_memory_limit_bytes", NULL), -1);
}

static void test_list_and_stream(void **state)
{
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_(rkl_cache_freep) rkl_cache *cache = rkl_cache_new();
        _cleanup_(rkl_arena_freep) rkl_arena *a = rkl_arena_new();
        rkl_config options = {0};
        rkl_api_config cfg = {.config = &options}; /* no stats: records only */
        rkl_api_ctx ctx = {.cfg = &cfg, .cache = cache, .arena = a};

        assert_true(rkl_cache_pod_put(cache, pod_view()));
        assert_true(
            rkl_cache_container_put(cache, ctr_view(RUN_ID, RKL_CONTAINER_PHASE_RUNNING, NULL)));
        Runtime__V1__ListPodSandboxMetricsResponse resp =
            RUNTIME__V1__LIST_POD_SANDBOX_METRICS_RESPONSE__INIT;
        assert_int_equal(rkl_api_list_pod_sandbox_metrics(&ctx, NULL, &resp, &err), 0);
        assert_int_equal(resp.n_pod_metrics, 1);
        assert_int_equal(resp.pod_metrics[0]->n_container_metrics, 1);
        size_t n = runtime__v1__list_pod_sandbox_metrics_response__get_packed_size(&resp);
        _cleanup_free_ unsigned char *want = rkl_xmalloc(n);
        runtime__v1__list_pod_sandbox_metrics_response__pack(&resp, want);

        assert_int_equal(rkl_api_stream_pod_sandbox_metrics(&ctx, NULL, NULL, &err),
                         RKL_API_STREAMING);
        unsigned char *page = NULL;
        size_t len = 0;
        assert_int_equal(ctx.stream_ops->next(ctx.stream_userdata, &page, &len, &err),
                         RKL_API_STREAM_MESSAGE);
        assert_int_equal(len, n);
        assert_memory_equal(page, want, n);
        free(page);
        assert_int_equal(ctx.stream_ops->next(ctx.stream_userdata, &page, &len, &err),
                         RKL_API_STREAM_END);
        ctx.stream_ops->done(ctx.stream_userdata);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_metrics),
            cmocka_unit_test(test_list_and_stream),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
