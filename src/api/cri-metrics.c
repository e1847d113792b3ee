#include "cri-metrics.h"

#include "page.h"
#include "pb.h"
#include "base/alloc.h"
#include "base/time-util.h"
#include "store/cache.h"
#include "stats/stats.h"
#include "base/banned.h"

/* kubelet passes a runtime's metrics on as they come, so the labels are those that
 * cAdvisor's metrics carry on /metrics/cadvisor: the container's name in its pod, an ID
 * (here the container's or the sandbox's), the image, the runtime's name for it (the rkt
 * app's, or the sandbox's rkt pod UUID), the pod's namespace and name. A metric may add
 * labels of its own after these. */
static const char *const base_keys[] = {"container", "id", "image", "name", "namespace", "pod"};
#define N_BASE ELEMENTSOF(base_keys)

typedef enum metric {
        M_CPU_USAGE,
        M_MEMORY_USAGE,
        M_MEMORY_WORKING_SET,
        M_MEMORY_RSS,
        M_MEMORY_FAILURES,
        M_FS_USAGE,
        M_PROCESSES,
        M_OOM_EVENTS,
        M_SPEC_MEMORY_LIMIT,
        M_SPEC_CPU_PERIOD,
        M_SPEC_CPU_QUOTA,
        M_SPEC_CPU_SHARES,
        M_START_TIME,
        M_NET_RX_BYTES,
        M_NET_RX_ERRORS,
        M_NET_TX_BYTES,
        M_NET_TX_ERRORS,
        _M_MAX,
} metric;

typedef struct metric_def {
        const char *name, *help;
        Runtime__V1__MetricType type;
        const char *extra[2]; /* label keys after the base ones */
} metric_def;

#define COUNTER RUNTIME__V1__METRIC_TYPE__COUNTER
#define GAUGE   RUNTIME__V1__METRIC_TYPE__GAUGE

/* cAdvisor's names, types and extra labels. CRI's values are unsigned integers: seconds are
 * whole seconds. */
static const metric_def defs[_M_MAX] = {
    [M_CPU_USAGE] = {"container_cpu_usage_seconds_total",
                     "Cumulative CPU time consumed in seconds.",
                     COUNTER,
                     {"cpu"}},
    [M_MEMORY_USAGE] = {"container_memory_usage_bytes",
                        "Current memory usage in bytes, including all memory regardless of when "
                        "it was accessed.",
                        GAUGE},
    [M_MEMORY_WORKING_SET] = {"container_memory_working_set_bytes", "Current working set in bytes.",
                              GAUGE},
    [M_MEMORY_RSS] = {"container_memory_rss", "Size of RSS in bytes.", GAUGE},
    [M_MEMORY_FAILURES] = {"container_memory_failures_total",
                           "Cumulative count of memory allocation failures.",
                           COUNTER,
                           {"failure_type", "scope"}},
    [M_FS_USAGE] = {"container_fs_usage_bytes",
                    "Number of bytes that are consumed by the container on this filesystem.",
                    GAUGE,
                    {"device"}},
    [M_PROCESSES] = {"container_processes", "Number of processes running inside the container.",
                     GAUGE},
    [M_OOM_EVENTS] = {"container_oom_events_total",
                      "Count of out of memory events observed for the container.", COUNTER},
    [M_SPEC_MEMORY_LIMIT] = {"container_spec_memory_limit_bytes", "Memory limit for the container.",
                             GAUGE},
    [M_SPEC_CPU_PERIOD] = {"container_spec_cpu_period", "CPU period of the container.", GAUGE},
    [M_SPEC_CPU_QUOTA] = {"container_spec_cpu_quota", "CPU quota of the container.", GAUGE},
    [M_SPEC_CPU_SHARES] = {"container_spec_cpu_shares", "CPU share of the container.", GAUGE},
    [M_START_TIME] = {"container_start_time_seconds",
                      "Start time of the container since unix epoch in seconds.", GAUGE},
    [M_NET_RX_BYTES] = {"container_network_receive_bytes_total",
                        "Cumulative count of bytes received.",
                        COUNTER,
                        {"interface"}},
    [M_NET_RX_ERRORS] = {"container_network_receive_errors_total",
                         "Cumulative count of errors encountered while receiving.",
                         COUNTER,
                         {"interface"}},
    [M_NET_TX_BYTES] = {"container_network_transmit_bytes_total",
                        "Cumulative count of bytes transmitted.",
                        COUNTER,
                        {"interface"}},
    [M_NET_TX_ERRORS] = {"container_network_transmit_errors_total",
                         "Cumulative count of errors encountered while transmitting.",
                         COUNTER,
                         {"interface"}},
};

static size_t n_extra(const metric_def *d)
{
        return (d->extra[0] ? 1 : 0) + (d->extra[1] ? 1 : 0);
}

int rkl_api_list_metric_descriptors(rkl_api_ctx *ctx,
                                    const Runtime__V1__ListMetricDescriptorsRequest *req,
                                    Runtime__V1__ListMetricDescriptorsResponse *resp,
                                    rkl_error *reterr)
{
        rkl_arena *a = ctx->arena;
        resp->descriptors = rkl_arena_newa(Runtime__V1__MetricDescriptor *, a, _M_MAX);
        for (size_t i = 0; i < _M_MAX; i++) {
                const metric_def *d = &defs[i];
                Runtime__V1__MetricDescriptor *m =
                    rkl_arena_newa(Runtime__V1__MetricDescriptor, a, 1);
                runtime__v1__metric_descriptor__init(m);
                m->name = (char *)d->name;
                m->help = (char *)d->help;
                m->label_keys = rkl_arena_newa(char *, a, N_BASE + 2);
                for (size_t k = 0; k < N_BASE; k++)
                        m->label_keys[m->n_label_keys++] = (char *)base_keys[k];
                for (size_t k = 0; k < n_extra(d); k++)
                        m->label_keys[m->n_label_keys++] = (char *)d->extra[k];
                resp->descriptors[resp->n_descriptors++] = m;
        }
        return 0;
}

/* The metrics of one object, with its base label values. */
typedef struct metrics {
        rkl_arena *a;
        const char *base[N_BASE];
        Runtime__V1__Metric **items;
        size_t n, cap;
} metrics;

static void add(metrics *l, metric m, int64_t timestamp_ns, uint64_t value, const char *extra0,
                const char *extra1)
{
        const metric_def *d = &defs[m];
        if (l->n == l->cap) {
                size_t cap = l->cap ? 2 * l->cap : 16;
                Runtime__V1__Metric **items = rkl_arena_newa(Runtime__V1__Metric *, l->a, cap);
                if (l->n)
                        memcpy(items, l->items, l->n * sizeof(*items));
                l->items = items;
                l->cap = cap;
        }
        Runtime__V1__Metric *x = rkl_arena_newa(Runtime__V1__Metric, l->a, 1);
        runtime__v1__metric__init(x);
        x->name = (char *)d->name;
        x->timestamp = timestamp_ns; /* 0: made now, from the records */
        x->metric_type = d->type;
        x->label_values = rkl_arena_newa(char *, l->a, N_BASE + 2);
        for (size_t k = 0; k < N_BASE; k++)
                x->label_values[x->n_label_values++] = (char *)l->base[k];
        const char *extra[2] = {extra0, extra1};
        for (size_t k = 0; k < n_extra(d); k++)
                x->label_values[x->n_label_values++] = rkl_api_pb_text(l->a, extra[k]);
        x->value = rkl_arena_newa(Runtime__V1__UInt64Value, l->a, 1);
        runtime__v1__uint64_value__init(x->value);
        x->value->value = value;
        l->items[l->n++] = x;
}

/* What a cgroup's sample says, for a container or for the sandbox's own cgroup. */
static void add_sample(metrics *l, const rkl_stats_entry *e)
{
        if (!e)
                return;
        int64_t t = e->timestamp_ns;
        if (e->has_cpu)
                add(l, M_CPU_USAGE, t, e->cpu_usage_ns / NSEC_PER_SEC, "total", NULL);
        if (e->has_memory) {
                add(l, M_MEMORY_USAGE, t, e->memory.usage, NULL, NULL);
                add(l, M_MEMORY_WORKING_SET, t, e->memory.working_set, NULL, NULL);
                add(l, M_MEMORY_RSS, t, e->memory.rss, NULL, NULL);
                /* memory.stat's counts are the cgroup's and its descendants': cAdvisor
                 * reports them under both scopes. */
                static const char *const scopes[] = {"container", "hierarchy"};
                for (size_t s = 0; s < ELEMENTSOF(scopes); s++) {
                        add(l, M_MEMORY_FAILURES, t, e->memory.page_faults, "pgfault", scopes[s]);
                        add(l, M_MEMORY_FAILURES, t, e->memory.major_page_faults, "pgmajfault",
                            scopes[s]);
                }
        }
        if (e->has_fs)
                add(l, M_FS_USAGE, t, e->fs_bytes, "", NULL);
        if (e->has_pids)
                add(l, M_PROCESSES, t, e->pids, NULL, NULL);
        for (size_t i = 0; i < e->n_ifs; i++) {
                const rkl_stats_netif *f = &e->ifs[i];
                add(l, M_NET_RX_BYTES, t, f->rx_bytes, f->name, NULL);
                add(l, M_NET_RX_ERRORS, t, f->rx_errors, f->name, NULL);
                add(l, M_NET_TX_BYTES, t, f->tx_bytes, f->name, NULL);
                add(l, M_NET_TX_ERRORS, t, f->tx_errors, f->name, NULL);
        }
}

static uint64_t nonneg(int64_t v)
{
        return v > 0 ? (uint64_t)v : 0;
}

static Runtime__V1__ContainerMetrics *container_metrics_pb(rkl_arena *a, const rkl_pod_view *pod,
                                                           const rkl_container_view *v,
                                                           const rkl_stats_snapshot *snapshot)
{
        const rkl_container_record *c = v->rec;
        char *id = rkl_api_pb_str(a, c->id);
        metrics l = {.a = a,
                     .base = {rkl_api_pb_text(a, c->spec.name), id,
                              rkl_api_pb_text(a, rkl_container_spec_image_name(&c->spec)),
                              rkl_api_pb_text(a, c->app_name),
                              rkl_api_pb_text(a, pod->rec->spec.namespace),
                              rkl_api_pb_text(a, pod->rec->spec.name)}};

        if (v->state == RKL_CONTAINER_RUNNING && snapshot)
                add_sample(&l, rkl_stats_snapshot_container(snapshot, c->id));
        /* An OOM kill ends the container: kubelet makes a new one, which starts at 0. */
        add(&l, M_OOM_EVENTS, 0, streq_ptr(c->observed.reason, "OOMKilled") ? 1 : 0, NULL, NULL);
        add(&l, M_SPEC_MEMORY_LIMIT, 0, nonneg(c->spec.memory_limit), NULL, NULL);
        if (c->spec.cpu_period > 0)
                add(&l, M_SPEC_CPU_PERIOD, 0, nonneg(c->spec.cpu_period), NULL, NULL);
        if (c->spec.cpu_quota > 0)
                add(&l, M_SPEC_CPU_QUOTA, 0, nonneg(c->spec.cpu_quota), NULL, NULL);
        if (c->spec.cpu_shares > 0)
                add(&l, M_SPEC_CPU_SHARES, 0, nonneg(c->spec.cpu_shares), NULL, NULL);
        if (c->observed.started_ns > 0)
                add(&l, M_START_TIME, 0, nonneg(c->observed.started_ns) / NSEC_PER_SEC, NULL, NULL);

        Runtime__V1__ContainerMetrics *m = rkl_arena_newa(Runtime__V1__ContainerMetrics, a, 1);
        runtime__v1__container_metrics__init(m);
        m->container_id = id;
        m->metrics = l.items;
        m->n_metrics = l.n;
        return m;
}

Runtime__V1__PodSandboxMetrics *rkl_api_pod_metrics_pb(rkl_arena *a, const rkl_pod_view *pod,
                                                       rkl_container_view *const *containers,
                                                       size_t n_containers,
                                                       const rkl_stats_snapshot *snapshot)
{
        const rkl_pod_record *p = pod->rec;
        char *id = rkl_api_pb_str(a, p->id);
        /* The sandbox's own cgroup and network, as cAdvisor reports a pod's: no container. */
        metrics l = {.a = a,
                     .base = {"", id, "", rkl_api_pb_text(a, p->rkt_uuid),
                              rkl_api_pb_text(a, p->spec.namespace),
                              rkl_api_pb_text(a, p->spec.name)}};
        if (pod->state == RKL_POD_READY && snapshot)
                add_sample(&l, rkl_stats_snapshot_pod(snapshot, p->id));

        Runtime__V1__PodSandboxMetrics *m = rkl_arena_newa(Runtime__V1__PodSandboxMetrics, a, 1);
        runtime__v1__pod_sandbox_metrics__init(m);
        m->pod_sandbox_id = id;
        m->metrics = l.items;
        m->n_metrics = l.n;
        m->container_metrics = rkl_arena_newa(Runtime__V1__ContainerMetrics *, a, n_containers);
        for (size_t i = 0; i < n_containers; i++) {
                const rkl_container_view *v = containers[i];
                if (v->state != RKL_CONTAINER_RUNNING && v->rec->observed.started_ns <= 0)
                        continue; /* never ran: nothing to measure */
                m->container_metrics[m->n_container_metrics++] =
                    container_metrics_pb(a, pod, v, snapshot);
        }
        return m;
}

/* What both calls answer: every ready sandbox, with the stats snapshot of the moment. */
typedef struct pod_metrics {
        rkl_cache *cache;
        rkl_stats_snapshot *snapshot;
        rkl_pod_view **pods;
        size_t n;
} pod_metrics;

static pod_metrics *pod_metrics_new(rkl_api_ctx *ctx)
{
        pod_metrics *p = rkl_xnew0(pod_metrics, 1);
        rkl_view_filter f = {.by_state = true, .state = RKL_POD_READY};
        p->cache = ctx->cache;
        p->snapshot = ctx->cfg->stats ? rkl_stats_get(ctx->cfg->stats) : NULL;
        (void)rkl_cache_pod_list(ctx->cache, &f, &p->pods, &p->n);
        return p;
}

static void pod_metrics_free(void *userdata)
{
        pod_metrics *p = userdata;
        rkl_stats_snapshot_unref(p->snapshot);
        rkl_pod_views_unref(p->pods, p->n);
        free(p);
}

static Runtime__V1__PodSandboxMetrics *pod_metrics_item(pod_metrics *p, size_t i, rkl_arena *a)
{
        rkl_view_filter f = {.sandbox_id = p->pods[i]->rec->id};
        rkl_container_view **containers;
        size_t n;
        (void)rkl_cache_container_list(p->cache, &f, &containers, &n);
        Runtime__V1__PodSandboxMetrics *m =
            rkl_api_pod_metrics_pb(a, p->pods[i], containers, n, p->snapshot);
        rkl_container_views_unref(containers, n); /* m holds copies, in a */
        return m;
}

int rkl_api_list_pod_sandbox_metrics(rkl_api_ctx *ctx,
                                     const Runtime__V1__ListPodSandboxMetricsRequest *req,
                                     Runtime__V1__ListPodSandboxMetricsResponse *resp,
                                     rkl_error *reterr)
{
        pod_metrics *p = pod_metrics_new(ctx);
        resp->pod_metrics = rkl_arena_newa(Runtime__V1__PodSandboxMetrics *, ctx->arena, p->n);
        for (size_t i = 0; i < p->n; i++)
                resp->pod_metrics[resp->n_pod_metrics++] = pod_metrics_item(p, i, ctx->arena);
        pod_metrics_free(p);
        return 0;
}

static const rkl_blob *pod_metrics_page_item(void *userdata, size_t i, rkl_arena *a,
                                             rkl_error *reterr)
{
        return rkl_api_page_pack(a, &pod_metrics_item(userdata, i, a)->base);
}

int rkl_api_stream_pod_sandbox_metrics(rkl_api_ctx *ctx,
                                       const Runtime__V1__StreamPodSandboxMetricsRequest *req,
                                       Runtime__V1__StreamPodSandboxMetricsResponse *resp,
                                       rkl_error *reterr)
{
        pod_metrics *p = pod_metrics_new(ctx);
        rkl_api_page_list pages = {.field =
                                       1 /* StreamPodSandboxMetricsResponse.pod_sandbox_metrics */,
                                   .n = p->n,
                                   .item = pod_metrics_page_item,
                                   .userdata = p,
                                   .free = pod_metrics_free};
        return rkl_api_page_stream(ctx, &pages);
}
