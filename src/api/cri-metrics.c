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
        M_CPU_USER,
        M_CPU_SYSTEM,
        M_MEMORY_USAGE,
        M_MEMORY_WORKING_SET,
        M_MEMORY_RSS,
        M_MEMORY_CACHE,
        M_MEMORY_MAPPED_FILE,
        M_MEMORY_SWAP,
        M_MEMORY_FAILCNT,
        M_MEMORY_MAX_USAGE,
        M_MEMORY_FAILURES,
        M_FS_USAGE,
        M_FS_READS_BYTES,
        M_FS_READS,
        M_FS_WRITES_BYTES,
        M_FS_WRITES,
        M_BLKIO_DEVICE_USAGE,
        M_FS_LIMIT,
        M_FS_INODES_TOTAL,
        M_FS_INODES_FREE,
        M_FS_READS_MERGED,
        M_FS_SECTOR_READS,
        M_FS_READ_SECONDS,
        M_FS_WRITES_MERGED,
        M_FS_SECTOR_WRITES,
        M_FS_WRITE_SECONDS,
        M_FS_IO_CURRENT,
        M_FS_IO_TIME,
        M_FS_IO_TIME_WEIGHTED,
        M_CPU_LOAD,
        M_TASKS_STATE,
        M_PROCESSES,
        M_THREADS,
        M_THREADS_MAX,
        M_FILE_DESCRIPTORS,
        M_SOCKETS,
        M_ULIMITS_SOFT,
        M_OOM_EVENTS,
        M_SPEC_MEMORY_LIMIT,
        M_SPEC_MEMORY_RESERVATION,
        M_SPEC_MEMORY_SWAP_LIMIT,
        M_SPEC_CPU_PERIOD,
        M_SPEC_CPU_QUOTA,
        M_SPEC_CPU_SHARES,
        M_START_TIME,
        M_LAST_SEEN,
        M_NET_RX_BYTES,
        M_NET_RX_PACKETS,
        M_NET_RX_ERRORS,
        M_NET_RX_DROPPED,
        M_NET_TX_BYTES,
        M_NET_TX_PACKETS,
        M_NET_TX_ERRORS,
        M_NET_TX_DROPPED,
        M_PRESSURE_CPU_WAITING,
        M_PRESSURE_CPU_STALLED,
        M_PRESSURE_MEMORY_WAITING,
        M_PRESSURE_MEMORY_STALLED,
        M_PRESSURE_IO_WAITING,
        M_PRESSURE_IO_STALLED,
        _M_MAX,
} metric;

#define MAX_EXTRA 4

typedef struct metric_def {
        const char *name, *help;
        Runtime__V1__MetricType type;
        const char *extra[MAX_EXTRA]; /* label keys after the base ones */
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
    [M_CPU_USER] = {"container_cpu_user_seconds_total",
                    "Cumulative user CPU time consumed in seconds.", COUNTER},
    [M_CPU_SYSTEM] = {"container_cpu_system_seconds_total",
                      "Cumulative system CPU time consumed in seconds.", COUNTER},
    [M_MEMORY_USAGE] = {"container_memory_usage_bytes",
                        "Current memory usage in bytes, including all memory regardless of when "
                        "it was accessed.",
                        GAUGE},
    [M_MEMORY_WORKING_SET] = {"container_memory_working_set_bytes", "Current working set in bytes.",
                              GAUGE},
    [M_MEMORY_RSS] = {"container_memory_rss", "Size of RSS in bytes.", GAUGE},
    [M_MEMORY_CACHE] = {"container_memory_cache", "Number of bytes of page cache memory.", GAUGE},
    [M_MEMORY_MAPPED_FILE] = {"container_memory_mapped_file",
                              "Size of memory mapped files in bytes.", GAUGE},
    [M_MEMORY_SWAP] = {"container_memory_swap", "Container swap usage in bytes.", GAUGE},
    [M_MEMORY_FAILCNT] = {"container_memory_failcnt", "Number of memory usage hits limits",
                          COUNTER},
    [M_MEMORY_MAX_USAGE] = {"container_memory_max_usage_bytes",
                            "Maximum memory usage recorded in bytes", GAUGE},
    [M_MEMORY_FAILURES] = {"container_memory_failures_total",
                           "Cumulative count of memory allocation failures.",
                           COUNTER,
                           {"failure_type", "scope"}},
    [M_FS_USAGE] = {"container_fs_usage_bytes",
                    "Number of bytes that are consumed by the container on this filesystem.",
                    GAUGE,
                    {"device"}},
    [M_FS_READS_BYTES] = {"container_fs_reads_bytes_total",
                          "Cumulative count of bytes read",
                          COUNTER,
                          {"device"}},
    [M_FS_READS] = {"container_fs_reads_total",
                    "Cumulative count of reads completed",
                    COUNTER,
                    {"device"}},
    [M_FS_WRITES_BYTES] = {"container_fs_writes_bytes_total",
                           "Cumulative count of bytes written",
                           COUNTER,
                           {"device"}},
    [M_FS_WRITES] = {"container_fs_writes_total",
                     "Cumulative count of writes completed",
                     COUNTER,
                     {"device"}},
    [M_BLKIO_DEVICE_USAGE] = {"container_blkio_device_usage_total",
                              "Blkio Device bytes usage",
                              COUNTER,
                              {"device", "major", "minor", "operation"}},
    [M_FS_LIMIT] = {"container_fs_limit_bytes",
                    "Number of bytes that can be consumed by the container on this filesystem.",
                    GAUGE,
                    {"device"}},
    [M_FS_INODES_TOTAL] = {"container_fs_inodes_total", "Number of Inodes", GAUGE, {"device"}},
    [M_FS_INODES_FREE] = {"container_fs_inodes_free",
                          "Number of available Inodes",
                          GAUGE,
                          {"device"}},
    [M_FS_READS_MERGED] = {"container_fs_reads_merged_total",
                           "Cumulative count of reads merged",
                           COUNTER,
                           {"device"}},
    [M_FS_SECTOR_READS] = {"container_fs_sector_reads_total",
                           "Cumulative count of sector reads completed",
                           COUNTER,
                           {"device"}},
    [M_FS_READ_SECONDS] = {"container_fs_read_seconds_total",
                           "Cumulative count of seconds spent reading",
                           COUNTER,
                           {"device"}},
    [M_FS_WRITES_MERGED] = {"container_fs_writes_merged_total",
                            "Cumulative count of writes merged",
                            COUNTER,
                            {"device"}},
    [M_FS_SECTOR_WRITES] = {"container_fs_sector_writes_total",
                            "Cumulative count of sector writes completed",
                            COUNTER,
                            {"device"}},
    [M_FS_WRITE_SECONDS] = {"container_fs_write_seconds_total",
                            "Cumulative count of seconds spent writing",
                            COUNTER,
                            {"device"}},
    [M_FS_IO_CURRENT] = {"container_fs_io_current",
                         "Number of I/Os currently in progress",
                         GAUGE,
                         {"device"}},
    [M_FS_IO_TIME] = {"container_fs_io_time_seconds_total",
                      "Cumulative count of seconds spent doing I/Os",
                      COUNTER,
                      {"device"}},
    [M_FS_IO_TIME_WEIGHTED] = {"container_fs_io_time_weighted_seconds_total",
                               "Cumulative weighted I/O time in seconds",
                               COUNTER,
                               {"device"}},
    [M_CPU_LOAD] = {"container_cpu_load_average_10s",
                    "Value of container cpu load average over the last 10 seconds.", GAUGE},
    [M_TASKS_STATE] = {"container_tasks_state", "Number of tasks in given state", GAUGE, {"state"}},
    [M_PROCESSES] = {"container_processes", "Number of processes running inside the container.",
                     GAUGE},
    [M_THREADS] = {"container_threads", "Number of threads running inside the container", GAUGE},
    [M_THREADS_MAX] = {"container_threads_max",
                       "Maximum number of threads allowed inside the container, infinity if "
                       "value is zero",
                       GAUGE},
    [M_FILE_DESCRIPTORS] = {"container_file_descriptors",
                            "Number of open file descriptors for the container.", GAUGE},
    [M_SOCKETS] = {"container_sockets", "Number of open sockets for the container.", GAUGE},
    [M_ULIMITS_SOFT] = {"container_ulimits_soft",
                        "Soft ulimit values for the container root process. Unlimited if -1, "
                        "except priority and nice",
                        GAUGE,
                        {"ulimit"}},
    [M_OOM_EVENTS] = {"container_oom_events_total",
                      "Count of out of memory events observed for the container.", COUNTER},
    [M_SPEC_MEMORY_LIMIT] = {"container_spec_memory_limit_bytes", "Memory limit for the container.",
                             GAUGE},
    [M_SPEC_MEMORY_RESERVATION] = {"container_spec_memory_reservation_limit_bytes",
                                   "Memory reservation limit for the container.", GAUGE},
    [M_SPEC_MEMORY_SWAP_LIMIT] = {"container_spec_memory_swap_limit_bytes",
                                  "Memory swap limit for the container.", GAUGE},
    [M_SPEC_CPU_PERIOD] = {"container_spec_cpu_period", "CPU period of the container.", GAUGE},
    [M_SPEC_CPU_QUOTA] = {"container_spec_cpu_quota", "CPU quota of the container.", GAUGE},
    [M_SPEC_CPU_SHARES] = {"container_spec_cpu_shares", "CPU share of the container.", GAUGE},
    [M_START_TIME] = {"container_start_time_seconds",
                      "Start time of the container since unix epoch in seconds.", GAUGE},
    [M_LAST_SEEN] = {"container_last_seen", "Last time a container was seen by the exporter",
                     GAUGE},
    [M_NET_RX_BYTES] = {"container_network_receive_bytes_total",
                        "Cumulative count of bytes received.",
                        COUNTER,
                        {"interface"}},
    [M_NET_RX_PACKETS] = {"container_network_receive_packets_total",
                          "Cumulative count of packets received",
                          COUNTER,
                          {"interface"}},
    [M_NET_RX_ERRORS] = {"container_network_receive_errors_total",
                         "Cumulative count of errors encountered while receiving.",
                         COUNTER,
                         {"interface"}},
    [M_NET_RX_DROPPED] = {"container_network_receive_packets_dropped_total",
                          "Cumulative count of packets dropped while receiving",
                          COUNTER,
                          {"interface"}},
    [M_NET_TX_BYTES] = {"container_network_transmit_bytes_total",
                        "Cumulative count of bytes transmitted.",
                        COUNTER,
                        {"interface"}},
    [M_NET_TX_PACKETS] = {"container_network_transmit_packets_total",
                          "Cumulative count of packets transmitted",
                          COUNTER,
                          {"interface"}},
    [M_NET_TX_ERRORS] = {"container_network_transmit_errors_total",
                         "Cumulative count of errors encountered while transmitting.",
                         COUNTER,
                         {"interface"}},
    [M_NET_TX_DROPPED] = {"container_network_transmit_packets_dropped_total",
                          "Cumulative count of packets dropped while transmitting",
                          COUNTER,
                          {"interface"}},
    [M_PRESSURE_CPU_WAITING] = {"container_pressure_cpu_waiting_seconds_total",
                                "Total time duration tasks in the container have waited due to "
                                "CPU pressure in seconds.",
                                COUNTER},
    [M_PRESSURE_CPU_STALLED] = {"container_pressure_cpu_stalled_seconds_total",
                                "Total time duration no tasks in the container could make "
                                "progress due to CPU congestion in seconds.",
                                COUNTER},
    [M_PRESSURE_MEMORY_WAITING] = {"container_pressure_memory_waiting_seconds_total",
                                   "Total time duration tasks in the container have waited due "
                                   "to memory pressure in seconds.",
                                   COUNTER},
    [M_PRESSURE_MEMORY_STALLED] = {"container_pressure_memory_stalled_seconds_total",
                                   "Total time duration no tasks in the container could make "
                                   "progress due to memory congestion in seconds.",
                                   COUNTER},
    [M_PRESSURE_IO_WAITING] = {"container_pressure_io_waiting_seconds_total",
                               "Total time duration tasks in the container have waited due to "
                               "I/O pressure in seconds.",
                               COUNTER},
    [M_PRESSURE_IO_STALLED] = {"container_pressure_io_stalled_seconds_total",
                               "Total time duration no tasks in the container could make "
                               "progress due to I/O congestion in seconds.",
                               COUNTER},
};

static size_t n_extra(const metric_def *d)
{
        size_t n = 0;
        while (n < MAX_EXTRA && d->extra[n])
                n++;
        return n;
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
                m->label_keys = rkl_arena_newa(char *, a, N_BASE + MAX_EXTRA);
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

static uint64_t nonneg(int64_t v)
{
        return v > 0 ? (uint64_t)v : 0;
}

static void add_labels(metrics *l, metric m, int64_t timestamp_ns, uint64_t value,
                       const char *const *extra)
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
        x->label_values = rkl_arena_newa(char *, l->a, N_BASE + MAX_EXTRA);
        for (size_t k = 0; k < N_BASE; k++)
                x->label_values[x->n_label_values++] = (char *)l->base[k];
        for (size_t k = 0; k < n_extra(d); k++)
                x->label_values[x->n_label_values++] = rkl_api_pb_text(l->a, extra[k]);
        x->value = rkl_arena_newa(Runtime__V1__UInt64Value, l->a, 1);
        runtime__v1__uint64_value__init(x->value);
        x->value->value = value;
        l->items[l->n++] = x;
}

static void add(metrics *l, metric m, int64_t timestamp_ns, uint64_t value, const char *extra0,
                const char *extra1)
{
        const char *const extra[MAX_EXTRA] = {extra0, extra1};
        add_labels(l, m, timestamp_ns, value, extra);
}

static void add_memory(metrics *l, int64_t t, const rkl_stats_memory *m)
{
        add(l, M_MEMORY_USAGE, t, m->usage, NULL, NULL);
        add(l, M_MEMORY_WORKING_SET, t, m->working_set, NULL, NULL);
        add(l, M_MEMORY_RSS, t, m->rss, NULL, NULL);
        add(l, M_MEMORY_CACHE, t, m->cache, NULL, NULL);
        add(l, M_MEMORY_MAPPED_FILE, t, m->mapped_file, NULL, NULL);
        add(l, M_MEMORY_SWAP, t, m->swap, NULL, NULL);
        add(l, M_MEMORY_FAILCNT, t, m->failcnt, NULL, NULL);
        add(l, M_MEMORY_MAX_USAGE, t, m->max_usage, NULL, NULL);
        /* memory.stat's counts are the cgroup's and its descendants': cAdvisor reports them
         * under both scopes. */
        static const char *const scopes[] = {"container", "hierarchy"};
        for (size_t s = 0; s < ELEMENTSOF(scopes); s++) {
                add(l, M_MEMORY_FAILURES, t, m->page_faults, "pgfault", scopes[s]);
                add(l, M_MEMORY_FAILURES, t, m->major_page_faults, "pgmajfault", scopes[s]);
        }
}

static void add_blkio(metrics *l, int64_t t, const rkl_stats_blkio *b)
{
        char major[16], minor[16];
        snprintf(major, sizeof(major), "%u", b->major);
        snprintf(minor, sizeof(minor), "%u", b->minor);
        add(l, M_FS_READS_BYTES, t, b->read_bytes, b->device, NULL);
        add(l, M_FS_READS, t, b->reads, b->device, NULL);
        add(l, M_FS_WRITES_BYTES, t, b->write_bytes, b->device, NULL);
        add(l, M_FS_WRITES, t, b->writes, b->device, NULL);
        add_labels(l, M_BLKIO_DEVICE_USAGE, t, b->read_bytes,
                   (const char *const[]){b->device, major, minor, "Read"});
        add_labels(l, M_BLKIO_DEVICE_USAGE, t, b->write_bytes,
                   (const char *const[]){b->device, major, minor, "Write"});
}

/* The filesystem and device under the pod's containers' layers: the device's counters are
 * all its users', so they go on the pod's series, once, not on each container's. */
static void add_disk(metrics *l, int64_t t, const rkl_stats_disk *d)
{
        const char *dev = d->device;
        add(l, M_FS_LIMIT, t, d->capacity_bytes, dev, NULL);
        add(l, M_FS_INODES_TOTAL, t, d->inodes_total, dev, NULL);
        add(l, M_FS_INODES_FREE, t, d->inodes_free, dev, NULL);
        if (!d->has_io)
                return;
        add(l, M_FS_READS_MERGED, t, d->reads_merged, dev, NULL);
        add(l, M_FS_SECTOR_READS, t, d->sectors_read, dev, NULL);
        add(l, M_FS_READ_SECONDS, t, d->read_ms / MSEC_PER_SEC, dev, NULL);
        add(l, M_FS_WRITES_MERGED, t, d->writes_merged, dev, NULL);
        add(l, M_FS_SECTOR_WRITES, t, d->sectors_written, dev, NULL);
        add(l, M_FS_WRITE_SECONDS, t, d->write_ms / MSEC_PER_SEC, dev, NULL);
        add(l, M_FS_IO_CURRENT, t, d->ios_in_progress, dev, NULL);
        add(l, M_FS_IO_TIME, t, d->io_ms / MSEC_PER_SEC, dev, NULL);
        add(l, M_FS_IO_TIME_WEIGHTED, t, d->weighted_io_ms / MSEC_PER_SEC, dev, NULL);
}

static void add_netif(metrics *l, int64_t t, const rkl_stats_netif *f)
{
        add(l, M_NET_RX_BYTES, t, f->rx_bytes, f->name, NULL);
        add(l, M_NET_RX_PACKETS, t, f->rx_packets, f->name, NULL);
        add(l, M_NET_RX_ERRORS, t, f->rx_errors, f->name, NULL);
        add(l, M_NET_RX_DROPPED, t, f->rx_dropped, f->name, NULL);
        add(l, M_NET_TX_BYTES, t, f->tx_bytes, f->name, NULL);
        add(l, M_NET_TX_PACKETS, t, f->tx_packets, f->name, NULL);
        add(l, M_NET_TX_ERRORS, t, f->tx_errors, f->name, NULL);
        add(l, M_NET_TX_DROPPED, t, f->tx_dropped, f->name, NULL);
}

/* What a cgroup's sample says, for a container or for the sandbox's own cgroup. */
static void add_sample(metrics *l, const rkl_stats_entry *e)
{
        static const metric pressure[_RKL_STATS_PSI_MAX][2] = {
            [RKL_STATS_PSI_CPU] = {M_PRESSURE_CPU_WAITING, M_PRESSURE_CPU_STALLED},
            [RKL_STATS_PSI_MEMORY] = {M_PRESSURE_MEMORY_WAITING, M_PRESSURE_MEMORY_STALLED},
            [RKL_STATS_PSI_IO] = {M_PRESSURE_IO_WAITING, M_PRESSURE_IO_STALLED},
        };
        if (!e)
                return;
        int64_t t = e->timestamp_ns;
        add(l, M_LAST_SEEN, t, nonneg(t) / NSEC_PER_SEC, NULL, NULL);
        if (e->has_cpu)
                add(l, M_CPU_USAGE, t, e->cpu_usage_ns / NSEC_PER_SEC, "total", NULL);
        if (e->has_cpu_split) {
                add(l, M_CPU_USER, t, e->cpu_user_ns / NSEC_PER_SEC, NULL, NULL);
                add(l, M_CPU_SYSTEM, t, e->cpu_system_ns / NSEC_PER_SEC, NULL, NULL);
        }
        if (e->has_memory)
                add_memory(l, t, &e->memory);
        if (e->has_fs)
                add(l, M_FS_USAGE, t, e->fs_bytes, "", NULL);
        for (size_t i = 0; i < e->n_blkio; i++)
                add_blkio(l, t, &e->blkio[i]);
        /* A container's processes are those of its own cgroup; a pod's, its pids cgroup's. */
        if (e->has_procs) {
                add(l, M_PROCESSES, t, e->procs.processes, NULL, NULL);
                add(l, M_THREADS, t, e->procs.threads, NULL, NULL);
                add(l, M_FILE_DESCRIPTORS, t, e->procs.fds, NULL, NULL);
                add(l, M_SOCKETS, t, e->procs.sockets, NULL, NULL);
                if (e->procs.processes)
                        add(l, M_ULIMITS_SOFT, t, e->procs.nofile_soft, "max_open_files", NULL);
                /* What wants a CPU or waits on I/O at the sample: the load, unsmoothed. */
                add(l, M_CPU_LOAD, t, e->procs.running + e->procs.uninterruptible, NULL, NULL);
                add(l, M_TASKS_STATE, t, e->procs.running, "running", NULL);
                add(l, M_TASKS_STATE, t, e->procs.uninterruptible, "uninterruptible", NULL);
                add(l, M_TASKS_STATE, t, e->procs.stopped, "stopped", NULL);
        } else if (e->has_pids)
                add(l, M_PROCESSES, t, e->pids, NULL, NULL);
        if (e->has_pids_max)
                add(l, M_THREADS_MAX, t, e->pids_max, NULL, NULL);
        for (size_t i = 0; i < e->n_ifs; i++)
                add_netif(l, t, &e->ifs[i]);
        /* "some" is the time some task waited, "full" the time all did (cAdvisor's waiting
         * and stalled); the kernel counts microseconds. */
        for (int r = 0; r < _RKL_STATS_PSI_MAX; r++)
                if (e->has_psi[r]) {
                        add(l, pressure[r][0], t, e->psi[r].some.total_us / USEC_PER_SEC, NULL,
                            NULL);
                        add(l, pressure[r][1], t, e->psi[r].full.total_us / USEC_PER_SEC, NULL,
                            NULL);
                }
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

        const rkl_stats_entry *e = v->state == RKL_CONTAINER_RUNNING && snapshot
                                       ? rkl_stats_snapshot_container(snapshot, c->id)
                                       : NULL;
        add_sample(&l, e);
        /* An OOM kill ends the container: kubelet makes a new one, which starts at 0. */
        add(&l, M_OOM_EVENTS, 0, streq_ptr(c->observed.reason, "OOMKilled") ? 1 : 0, NULL, NULL);
        /* The limits in force, as the kernel has them (page-rounded, the defaults where
         * CreateContainer set none). A container that does not run has no cgroup, and no
         * limits in force (cAdvisor reports none either). */
        if (e && e->has_memory) {
                int64_t t = e->timestamp_ns;
                add(&l, M_SPEC_MEMORY_LIMIT, t, e->memory.limit, NULL, NULL);
                add(&l, M_SPEC_MEMORY_RESERVATION, t, e->memory.soft_limit, NULL, NULL);
                add(&l, M_SPEC_MEMORY_SWAP_LIMIT, t, e->memory.swap_limit, NULL, NULL);
        }
        if (e && e->has_cpu_spec) {
                int64_t t = e->timestamp_ns;
                add(&l, M_SPEC_CPU_PERIOD, t, e->cpu_spec.period_us, NULL, NULL);
                if (e->cpu_spec.quota_us)
                        add(&l, M_SPEC_CPU_QUOTA, t, e->cpu_spec.quota_us, NULL, NULL);
                add(&l, M_SPEC_CPU_SHARES, t, e->cpu_spec.shares, NULL, NULL);
        }
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
        if (pod->state == RKL_POD_READY && snapshot) {
                add_sample(&l, rkl_stats_snapshot_pod(snapshot, p->id));
                for (size_t i = 0; i < n_containers; i++) {
                        const rkl_stats_entry *e =
                            rkl_stats_snapshot_container(snapshot, containers[i]->rec->id);
                        if (e && e->has_disk) {
                                add_disk(&l, e->timestamp_ns, &e->disk);
                                break;
                        }
                }
        }

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
