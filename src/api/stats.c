#include "stats.h"

#include <unistd.h>

#include "convert.h"
#include "lookup.h"
#include "page.h"
#include "pb.h"
#include "base/alloc.h"
#include "base/config.h"
#include "base/log.h"
#include "base/time-util.h"
#include "store/cache.h"
#include "store/store.h"
#include "stats/stats.h"
#include "base/banned.h"

/* How long ContainerStats waits for a started container's first sample: 2 s. */
#define FIRST_SAMPLE_POLLS     200
#define FIRST_SAMPLE_POLL_USEC (10 * USEC_PER_MSEC)
/* ... if it started this recently: one whose cgroups cannot be read never waits again. */
#define FIRST_SAMPLE_RECENT_NS (10 * (int64_t)NSEC_PER_SEC)
/* A unary call answers from a snapshot at most this old, waiting on a worker up to
 * FRESH_WAIT_USEC for the collector to read it again (stats.h, rkl_stats_renew): two calls a
 * second apart (crictl stats) must see two samples whatever --stats-interval is. */
#define FRESH_USEC      (500 * USEC_PER_MSEC)
#define FRESH_WAIT_USEC (2 * USEC_PER_SEC)

static Runtime__V1__UInt64Value *u64(rkl_arena *a, uint64_t v)
{
        Runtime__V1__UInt64Value *x = rkl_arena_newa(Runtime__V1__UInt64Value, a, 1);
        runtime__v1__uint64_value__init(x);
        x->value = v;
        return x;
}

static Runtime__V1__PsiData *psi_data_pb(rkl_arena *a, const rkl_stats_psi_data *d)
{
        Runtime__V1__PsiData *x = rkl_arena_newa(Runtime__V1__PsiData, a, 1);
        runtime__v1__psi_data__init(x);
        /* The kernel's microseconds, as kubelet's summary gives them (cAdvisor's unit). */
        x->total = d->total_us;
        x->avg10 = d->avg10;
        x->avg60 = d->avg60;
        x->avg300 = d->avg300;
        return x;
}

/* The cgroup's pressure stall information; NULL where the kernel keeps none for it. */
static Runtime__V1__PsiStats *psi_pb(rkl_arena *a, const rkl_stats_entry *e,
                                     rkl_stats_psi_resource r)
{
        if (!e || !e->has_psi[r])
                return NULL;
        Runtime__V1__PsiStats *x = rkl_arena_newa(Runtime__V1__PsiStats, a, 1);
        runtime__v1__psi_stats__init(x);
        x->some = psi_data_pb(a, &e->psi[r].some);
        x->full = psi_data_pb(a, &e->psi[r].full);
        return x;
}

static Runtime__V1__IoUsage *io_pb(rkl_arena *a, const rkl_stats_entry *e)
{
        if (!e || !e->has_psi[RKL_STATS_PSI_IO])
                return NULL;
        Runtime__V1__IoUsage *x = rkl_arena_newa(Runtime__V1__IoUsage, a, 1);
        runtime__v1__io_usage__init(x);
        x->timestamp = e->timestamp_ns;
        x->psi = psi_pb(a, e, RKL_STATS_PSI_IO);
        return x;
}

static Runtime__V1__CpuUsage *cpu_pb(rkl_arena *a, const rkl_stats_entry *e)
{
        if (!e || !e->has_cpu)
                return NULL;
        Runtime__V1__CpuUsage *c = rkl_arena_newa(Runtime__V1__CpuUsage, a, 1);
        runtime__v1__cpu_usage__init(c);
        c->timestamp = e->timestamp_ns;
        c->usage_core_nano_seconds = u64(a, e->cpu_usage_ns);
        if (e->has_nano_cores)
                c->usage_nano_cores = u64(a, e->nano_cores);
        c->psi = psi_pb(a, e, RKL_STATS_PSI_CPU);
        return c;
}

static Runtime__V1__MemoryUsage *memory_pb(rkl_arena *a, const rkl_stats_entry *e)
{
        if (!e || !e->has_memory)
                return NULL;
        Runtime__V1__MemoryUsage *m = rkl_arena_newa(Runtime__V1__MemoryUsage, a, 1);
        runtime__v1__memory_usage__init(m);
        m->timestamp = e->timestamp_ns;
        m->working_set_bytes = u64(a, e->memory.working_set);
        m->usage_bytes = u64(a, e->memory.usage);
        m->rss_bytes = u64(a, e->memory.rss);
        m->page_faults = u64(a, e->memory.page_faults);
        m->major_page_faults = u64(a, e->memory.major_page_faults);
        if (e->memory.has_available)
                m->available_bytes = u64(a, e->memory.available);
        m->psi = psi_pb(a, e, RKL_STATS_PSI_MEMORY);
        return m;
}

/* Where a container's writable layer is: rkt's data directory, which holds the pods' trees.
 * kubelet measures the filesystem of this directory (an empty one fails its whole summary). */
static const char *layer_dir(const rkl_api_config *cfg)
{
        return cfg->config && cfg->config->rkt_data_dir ? cfg->config->rkt_data_dir : "/";
}

static Runtime__V1__ContainerStats *container_stats_pb(rkl_arena *a, const rkl_api_config *cfg,
                                                       const rkl_container_view *v,
                                                       const rkl_stats_snapshot *s)
{
        const rkl_container_record *c = v->rec;
        const rkl_stats_entry *e =
            s && v->state == RKL_CONTAINER_RUNNING ? rkl_stats_snapshot_container(s, c->id) : NULL;
        Runtime__V1__ContainerStats *st = rkl_arena_newa(Runtime__V1__ContainerStats, a, 1);
        runtime__v1__container_stats__init(st);
        Runtime__V1__ContainerAttributes *at =
            rkl_arena_newa(Runtime__V1__ContainerAttributes, a, 1);
        runtime__v1__container_attributes__init(at);
        at->id = rkl_api_pb_str(a, c->id);
        Runtime__V1__ContainerMetadata *m = rkl_arena_newa(Runtime__V1__ContainerMetadata, a, 1);
        runtime__v1__container_metadata__init(m);
        m->name = rkl_api_pb_str(a, c->spec.name);
        m->attempt = c->spec.attempt;
        at->metadata = m;
        RKL_API_PB_KVS(a, &c->spec.labels, Runtime__V1__ContainerAttributes__LabelsEntry,
                       RUNTIME__V1__CONTAINER_ATTRIBUTES__LABELS_ENTRY__INIT, at->labels,
                       at->n_labels);
        RKL_API_PB_KVS(a, &c->spec.annotations, Runtime__V1__ContainerAttributes__AnnotationsEntry,
                       RUNTIME__V1__CONTAINER_ATTRIBUTES__ANNOTATIONS_ENTRY__INIT, at->annotations,
                       at->n_annotations);
        st->attributes = at;
        st->cpu = cpu_pb(a, e);
        st->memory = memory_pb(a, e);
        st->io = io_pb(a, e);
        if (e && e->has_fs) {
                Runtime__V1__FilesystemUsage *fs =
                    rkl_arena_newa(Runtime__V1__FilesystemUsage, a, 1);
                runtime__v1__filesystem_usage__init(fs);
                fs->timestamp = e->timestamp_ns;
                Runtime__V1__FilesystemIdentifier *id =
                    rkl_arena_newa(Runtime__V1__FilesystemIdentifier, a, 1);
                runtime__v1__filesystem_identifier__init(id);
                id->mountpoint = (char *)layer_dir(cfg);
                fs->fs_id = id;
                fs->used_bytes = u64(a, e->fs_bytes);
                fs->inodes_used = u64(a, e->fs_inodes);
                st->writable_layer = fs;
        }
        return st;
}

/* The cache's filter of a ListContainerStats or StreamContainerStats request's (cf may be
 * NULL): the selector's strings stay the request's. */
static void container_stats_filter(rkl_arena *a, const Runtime__V1__ContainerStatsFilter *cf,
                                   rkl_view_filter *f, rkl_kvs *selector)
{
        RKL_API_STATS_FILTER_FROM_PB(a, cf, f, selector);
        if (cf)
                f->sandbox_id = cf->pod_sandbox_id;
}

static rkl_stats_snapshot *snapshot(rkl_api_ctx *ctx)
{
        return ctx->cfg->stats ? rkl_stats_get(ctx->cfg->stats) : NULL;
}

static int container_list(rkl_api_ctx *ctx, const rkl_view_filter *f,
                          Runtime__V1__ContainerStats ***ret, size_t *ret_n, rkl_error *reterr)
{
        rkl_container_view **v;
        size_t n;
        int r = rkl_cache_container_list(ctx->cache, f, &v, &n);
        if (r < 0)
                return rkl_error_set(reterr, r, "list containers: %s", strerror(-r));
        _cleanup_(rkl_stats_snapshot_unrefp) rkl_stats_snapshot *s = snapshot(ctx);
        Runtime__V1__ContainerStats **out =
            rkl_arena_newa(Runtime__V1__ContainerStats *, ctx->arena, n);
        for (size_t i = 0; i < n; i++)
                out[i] = container_stats_pb(ctx->arena, ctx->cfg, v[i], s);
        rkl_container_views_unref(v, n);
        *ret = out;
        *ret_n = n;
        return 0;
}

static void container_attributes_trim(Runtime__V1__ContainerAttributes *at, unsigned level)
{
        RKL_API_PB_TRIM(at->labels, at->n_labels, level, true);
        RKL_API_PB_TRIM(at->annotations, at->n_annotations, level, false);
}

/* Entry i of a ListContainerStats answer, with less of its labels and annotations (pb.h). */
static size_t container_stats_trim(void *items, size_t i, unsigned level)
{
        Runtime__V1__ContainerStats *st = ((Runtime__V1__ContainerStats **)items)[i];
        if (level > 0)
                container_attributes_trim(st->attributes, level);
        return runtime__v1__container_stats__get_packed_size(st);
}

/* Entry i of a ListPodSandboxStats answer: the sandbox's and its containers' (pb.h). */
static size_t pod_stats_trim(void *items, size_t i, unsigned level)
{
        Runtime__V1__PodSandboxStats *st = ((Runtime__V1__PodSandboxStats **)items)[i];
        if (level > 0) {
                Runtime__V1__PodSandboxAttributes *at = st->attributes;
                RKL_API_PB_TRIM(at->labels, at->n_labels, level, true);
                RKL_API_PB_TRIM(at->annotations, at->n_annotations, level, false);
                for (size_t k = 0; st->linux && k < st->linux->n_containers; k++)
                        container_attributes_trim(st->linux->containers[k]->attributes, level);
        }
        return runtime__v1__pod_sandbox_stats__get_packed_size(st);
}

typedef struct stats_wait {
        rkl_stats *stats;
        char id[RKL_ID_LEN + 1]; /* "": no first sample to wait for */
} stats_wait;

/* On a worker (rkl_api_defer_until): the snapshot read again if stale, then a container's
 * first sample, briefly (the reconciler refreshes the stats as soon as it sees one run). */
static void wait_stats(void *userdata)
{
        const stats_wait *w = userdata;
        (void)rkl_stats_renew(w->stats, FRESH_USEC, FRESH_WAIT_USEC);
        for (int i = 0; w->id[0] && i < FIRST_SAMPLE_POLLS; i++) {
                _cleanup_(rkl_stats_snapshot_unrefp) rkl_stats_snapshot *s =
                    rkl_stats_get(w->stats);
                if (s && rkl_stats_snapshot_container(s, w->id))
                        return;
                usleep(FIRST_SAMPLE_POLL_USEC);
        }
}

/* RKL_API_DEFERRED (the handler runs again, late, once wait_stats is done), or -EMFILE. */
static int defer_stats(rkl_api_ctx *ctx, const char *first_of)
{
        stats_wait *w = rkl_arena_newa(stats_wait, ctx->arena, 1);
        w->stats = ctx->cfg->stats;
        snprintf(w->id, sizeof(w->id), "%s", first_of ? first_of : "");
        return rkl_api_defer_until(ctx, RKL_API_POOL_STATS, wait_stats, w);
}

/* Whether a unary call must first have the snapshot read again (FRESH_USEC). */
static bool must_renew(rkl_api_ctx *ctx)
{
        return ctx->cfg->stats && !ctx->late && rkl_stats_stale(ctx->cfg->stats, FRESH_USEC);
}

int rkl_api_container_stats(rkl_api_ctx *ctx, const Runtime__V1__ContainerStatsRequest *req,
                            Runtime__V1__ContainerStatsResponse *resp, rkl_error *reterr)
{
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *v = NULL;
        int r = rkl_api_container_lookup(ctx, "container_id", req->container_id, &v, reterr);
        if (r < 0)
                return r;
        _cleanup_(rkl_stats_snapshot_unrefp) rkl_stats_snapshot *s = snapshot(ctx);
        /* A container asked for right after it started (kubelet's first look, critest's
         * check) has no sample yet: an answer without CPU and memory would read as a
         * runtime that has none. */
        bool first = s && !ctx->late && v->state == RKL_CONTAINER_RUNNING &&
                     rkl_realtime_ns() - v->rec->observed.started_ns < FIRST_SAMPLE_RECENT_NS &&
                     !rkl_stats_snapshot_container(s, v->rec->id);
        if (first || must_renew(ctx))
                return defer_stats(ctx, first ? v->rec->id : NULL);
        resp->stats = container_stats_pb(ctx->arena, ctx->cfg, v, s);
        return 0;
}

int rkl_api_list_container_stats(rkl_api_ctx *ctx,
                                 const Runtime__V1__ListContainerStatsRequest *req,
                                 Runtime__V1__ListContainerStatsResponse *resp, rkl_error *reterr)
{
        rkl_view_filter f;
        rkl_kvs selector;
        container_stats_filter(ctx->arena, req->filter, &f, &selector);
        if (must_renew(ctx))
                return defer_stats(ctx, NULL);
        static _Atomic uint64_t last_warned;
        int r = container_list(ctx, &f, &resp->stats, &resp->n_stats, reterr);
        if (r < 0)
                return r;
        return rkl_api_pb_repeated_fit(ctx, 1 /* ListContainerStatsResponse.stats */, resp->stats,
                                       resp->n_stats, container_stats_trim, "ListContainerStats",
                                       "containers", &last_warned, reterr);
}

static Runtime__V1__PodSandboxStats *pod_stats_pb(rkl_api_ctx *ctx, const rkl_pod_view *v,
                                                  const rkl_stats_snapshot *s, rkl_error *reterr)
{
        rkl_arena *a = ctx->arena;
        const rkl_pod_record *rec = v->rec;
        const rkl_stats_entry *e =
            s && v->state == RKL_POD_READY ? rkl_stats_snapshot_pod(s, rec->id) : NULL;
        Runtime__V1__PodSandboxStats *st = rkl_arena_newa(Runtime__V1__PodSandboxStats, a, 1);
        runtime__v1__pod_sandbox_stats__init(st);
        Runtime__V1__PodSandboxAttributes *at =
            rkl_arena_newa(Runtime__V1__PodSandboxAttributes, a, 1);
        runtime__v1__pod_sandbox_attributes__init(at);
        at->id = rkl_api_pb_str(a, rec->id);
        Runtime__V1__PodSandboxMetadata *m = rkl_arena_newa(Runtime__V1__PodSandboxMetadata, a, 1);
        runtime__v1__pod_sandbox_metadata__init(m);
        m->name = rkl_api_pb_str(a, rec->spec.name);
        m->uid = rkl_api_pb_str(a, rec->spec.uid);
        m->namespace_ = rkl_api_pb_str(a, rec->spec.namespace);
        m->attempt = rec->spec.attempt;
        at->metadata = m;
        RKL_API_PB_KVS(a, &rec->spec.labels, Runtime__V1__PodSandboxAttributes__LabelsEntry,
                       RUNTIME__V1__POD_SANDBOX_ATTRIBUTES__LABELS_ENTRY__INIT, at->labels,
                       at->n_labels);
        RKL_API_PB_KVS(a, &rec->spec.annotations,
                       Runtime__V1__PodSandboxAttributes__AnnotationsEntry,
                       RUNTIME__V1__POD_SANDBOX_ATTRIBUTES__ANNOTATIONS_ENTRY__INIT,
                       at->annotations, at->n_annotations);
        st->attributes = at;

        Runtime__V1__LinuxPodSandboxStats *l =
            rkl_arena_newa(Runtime__V1__LinuxPodSandboxStats, a, 1);
        runtime__v1__linux_pod_sandbox_stats__init(l);
        l->cpu = cpu_pb(a, e);
        l->memory = memory_pb(a, e);
        l->io = io_pb(a, e);
        if (e && e->has_pids) {
                Runtime__V1__ProcessUsage *p = rkl_arena_newa(Runtime__V1__ProcessUsage, a, 1);
                runtime__v1__process_usage__init(p);
                p->timestamp = e->timestamp_ns;
                p->process_count = u64(a, e->pids);
                l->process = p;
        }
        if (e && e->n_ifs) {
                Runtime__V1__NetworkUsage *nu = rkl_arena_newa(Runtime__V1__NetworkUsage, a, 1);
                runtime__v1__network_usage__init(nu);
                nu->timestamp = e->timestamp_ns;
                nu->interfaces = rkl_arena_newa(Runtime__V1__NetworkInterfaceUsage *, a, e->n_ifs);
                for (size_t i = 0; i < e->n_ifs; i++) {
                        Runtime__V1__NetworkInterfaceUsage *f =
                            rkl_arena_newa(Runtime__V1__NetworkInterfaceUsage, a, 1);
                        runtime__v1__network_interface_usage__init(f);
                        f->name = rkl_api_pb_str(a, e->ifs[i].name);
                        f->rx_bytes = u64(a, e->ifs[i].rx_bytes);
                        f->rx_errors = u64(a, e->ifs[i].rx_errors);
                        f->tx_bytes = u64(a, e->ifs[i].tx_bytes);
                        f->tx_errors = u64(a, e->ifs[i].tx_errors);
                        nu->interfaces[nu->n_interfaces++] = f;
                }
                /* rkt's default network gives the pod eth0. */
                nu->default_interface = nu->interfaces[0];
                for (size_t i = 0; i < nu->n_interfaces; i++)
                        if (streq(e->ifs[i].name, "eth0"))
                                nu->default_interface = nu->interfaces[i];
                l->network = nu;
        }
        int r = container_list(ctx, &(rkl_view_filter){.sandbox_id = rec->id}, &l->containers,
                               &l->n_containers, reterr);
        if (r < 0)
                return NULL;
        st->linux = l;
        return st;
}

int rkl_api_pod_sandbox_stats(rkl_api_ctx *ctx, const Runtime__V1__PodSandboxStatsRequest *req,
                              Runtime__V1__PodSandboxStatsResponse *resp, rkl_error *reterr)
{
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = NULL;
        int r = rkl_api_pod_lookup(ctx, "pod_sandbox_id", req->pod_sandbox_id, &v, reterr);
        if (r < 0)
                return r;
        if (must_renew(ctx))
                return defer_stats(ctx, NULL);
        _cleanup_(rkl_stats_snapshot_unrefp) rkl_stats_snapshot *s = snapshot(ctx);
        resp->stats = pod_stats_pb(ctx, v, s, reterr);
        return resp->stats ? 0 : reterr->code;
}

int rkl_api_list_pod_sandbox_stats(rkl_api_ctx *ctx,
                                   const Runtime__V1__ListPodSandboxStatsRequest *req,
                                   Runtime__V1__ListPodSandboxStatsResponse *resp,
                                   rkl_error *reterr)
{
        rkl_view_filter f;
        rkl_kvs selector;
        RKL_API_STATS_FILTER_FROM_PB(ctx->arena, req->filter, &f, &selector);
        if (must_renew(ctx))
                return defer_stats(ctx, NULL);
        rkl_pod_view **v;
        size_t n;
        int r = rkl_cache_pod_list(ctx->cache, &f, &v, &n);
        if (r < 0)
                return rkl_error_set(reterr, r, "list sandboxes: %s", strerror(-r));
        _cleanup_(rkl_stats_snapshot_unrefp) rkl_stats_snapshot *s = snapshot(ctx);
        resp->stats = rkl_arena_newa(Runtime__V1__PodSandboxStats *, ctx->arena, n);
        for (size_t i = 0; i < n && r >= 0; i++) {
                Runtime__V1__PodSandboxStats *p = pod_stats_pb(ctx, v[i], s, reterr);
                if (!p)
                        r = reterr->code;
                else
                        resp->stats[resp->n_stats++] = p;
        }
        rkl_pod_views_unref(v, n);
        if (r < 0)
                return r;
        static _Atomic uint64_t last_warned;
        return rkl_api_pb_repeated_fit(ctx, 1 /* ListPodSandboxStatsResponse.stats */, resp->stats,
                                       resp->n_stats, pod_stats_trim, "ListPodSandboxStats",
                                       "sandboxes", &last_warned, reterr);
}

/* kubelet has resized the pod's own cgroup parent already (in-place resize); the pod's cgroup
 * is rktlet's unit, held to these limits too, so that a pod is never above what kubelet
 * granted it. overhead is what the runtime itself costs beside the containers: rktlet adds
 * none, and checks it only. */
int rkl_api_update_pod_sandbox_resources(rkl_api_ctx *ctx,
                                         const Runtime__V1__UpdatePodSandboxResourcesRequest *req,
                                         Runtime__V1__UpdatePodSandboxResourcesResponse *resp,
                                         rkl_error *reterr)
{
        char id[RKL_ID_LEN + 1];
        rkl_resources res = {0}, overhead;
        int r = rkl_api_pod_resolve(ctx, "pod_sandbox_id", req->pod_sandbox_id, id, reterr);
        if (r < 0)
                return r;
        if (req->overhead && (r = rkl_api_resources_from_pb(req->overhead, &overhead, reterr)) < 0)
                return rkl_error_prefix(reterr, "overhead");
        if (!req->resources)
                return 0;
        if ((r = rkl_api_resources_from_pb(req->resources, &res, reterr)) < 0)
                return rkl_error_prefix(reterr, "resources");
        if (res.cpuset_cpus)
                return rkl_error_set(reterr, -EINVAL,
                                     "resources.cpuset_cpus: a pod's CPUs are its containers' "
                                     "(UpdateContainerResources)");
        r = rkl_store_pod_set_resources(ctx->store, id, &res, reterr);
        if (r == -ENOENT)
                return rkl_error_set(reterr, -ENOENT, "sandbox %s not found", id);
        if (r < 0)
                return r;
        rkl_api_kick(ctx);
        return 0;
}

int rkl_api_update_container_resources(rkl_api_ctx *ctx,
                                       const Runtime__V1__UpdateContainerResourcesRequest *req,
                                       Runtime__V1__UpdateContainerResourcesResponse *resp,
                                       rkl_error *reterr)
{
        char id[RKL_ID_LEN + 1];
        rkl_resources res;
        int r = rkl_api_container_resolve(ctx, "container_id", req->container_id, id, reterr);
        if (r < 0)
                return r;
        if (!req->linux)
                return 0; /* Windows resources only: nothing for Linux to do */
        r = rkl_api_resources_from_pb(req->linux, &res, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "linux");
        /* Persisted first, then applied by the reconciler at its next pass (it alone knows
         * where the app's cgroups are, and it applies them again after a restart). */
        r = rkl_store_container_set_resources(ctx->store, id, &res, reterr);
        if (r == -ENOENT)
                return rkl_error_set(reterr, -ENOENT, "container %s not found", id);
        if (r < 0)
                return r;
        rkl_api_kick(ctx);
        return 0;
}

/* The stats lists in pages (page.h): the views taken, with the stats snapshot of the
 * moment, when the call arrives; each item made as the List makes it. */
typedef struct stats_pages {
        const rkl_api_config *cfg;
        rkl_cache *cache;
        rkl_stats_snapshot *snapshot; /* NULL: no stats */
        rkl_container_view **containers;
        size_t n_containers;
        rkl_pod_view **pods;
        size_t n_pods;
} stats_pages;

static stats_pages *stats_pages_new(rkl_api_ctx *ctx)
{
        stats_pages *p = rkl_xnew0(stats_pages, 1);
        p->cfg = ctx->cfg;
        p->cache = ctx->cache;
        p->snapshot = ctx->cfg->stats ? rkl_stats_get(ctx->cfg->stats) : NULL;
        return p;
}

static void stats_pages_free(void *userdata)
{
        stats_pages *p = userdata;
        rkl_stats_snapshot_unref(p->snapshot);
        rkl_container_views_unref(p->containers, p->n_containers);
        rkl_pod_views_unref(p->pods, p->n_pods);
        free(p);
}

static const rkl_blob *container_stats_item(void *userdata, size_t i, rkl_arena *a,
                                            rkl_error *reterr)
{
        stats_pages *p = userdata;
        return rkl_api_page_pack(
            a, &container_stats_pb(a, p->cfg, p->containers[i], p->snapshot)->base);
}

static const rkl_blob *pod_stats_item(void *userdata, size_t i, rkl_arena *a, rkl_error *reterr)
{
        stats_pages *p = userdata;
        /* pod_stats_pb() reads what a handler's context gives it, in the page's arena. */
        rkl_api_ctx ctx = {.cfg = p->cfg, .cache = p->cache, .arena = a};
        Runtime__V1__PodSandboxStats *st = pod_stats_pb(&ctx, p->pods[i], p->snapshot, reterr);
        return st ? rkl_api_page_pack(a, &st->base) : NULL;
}

int rkl_api_stream_container_stats(rkl_api_ctx *ctx,
                                   const Runtime__V1__StreamContainerStatsRequest *req,
                                   Runtime__V1__StreamContainerStatsResponse *resp,
                                   rkl_error *reterr)
{
        rkl_view_filter f;
        rkl_kvs selector;
        container_stats_filter(ctx->arena, req->filter, &f, &selector);
        stats_pages *p = stats_pages_new(ctx);
        int r = rkl_cache_container_list(ctx->cache, &f, &p->containers, &p->n_containers);
        if (r < 0) {
                stats_pages_free(p);
                return rkl_error_set(reterr, r, "list containers: %s", strerror(-r));
        }
        rkl_api_page_list pages = {.field = 1 /* StreamContainerStatsResponse.container_stats */,
                                   .n = p->n_containers,
                                   .item = container_stats_item,
                                   .userdata = p,
                                   .free = stats_pages_free};
        return rkl_api_page_stream(ctx, &pages);
}

int rkl_api_stream_pod_sandbox_stats(rkl_api_ctx *ctx,
                                     const Runtime__V1__StreamPodSandboxStatsRequest *req,
                                     Runtime__V1__StreamPodSandboxStatsResponse *resp,
                                     rkl_error *reterr)
{
        rkl_view_filter f;
        rkl_kvs selector;
        RKL_API_STATS_FILTER_FROM_PB(ctx->arena, req->filter, &f, &selector);
        stats_pages *p = stats_pages_new(ctx);
        int r = rkl_cache_pod_list(ctx->cache, &f, &p->pods, &p->n_pods);
        if (r < 0) {
                stats_pages_free(p);
                return rkl_error_set(reterr, r, "list sandboxes: %s", strerror(-r));
        }
        rkl_api_page_list pages = {.field = 1 /* StreamPodSandboxStatsResponse.pod_sandbox_stats */,
                                   .n = p->n_pods,
                                   .item = pod_stats_item,
                                   .userdata = p,
                                   .free = stats_pages_free};
        return rkl_api_page_stream(ctx, &pages);
}
