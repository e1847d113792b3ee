#include "sandbox.h"

#include "container.h"
#include "convert.h"
#include "pb.h"
#include "logs.h"
#include "lookup.h"
#include "views.h"
#include "wait.h"
#include "base/alloc.h"
#include "base/log.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "store/cache.h"
#include "store/store.h"
#include "base/banned.h"

/* The cache's states are CRI's numbers. */
_Static_assert((int)RKL_POD_READY == RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY &&
                   (int)RKL_POD_NOT_READY == RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_NOTREADY,
               "sandbox states");

/* Says which sandbox holds the name, for a client that retried a call it thought lost. */
static int already_exists(rkl_api_ctx *ctx, const rkl_pod_spec *s, rkl_error *reterr)
{
        rkl_pod_view **pods = NULL;
        size_t n = 0;
        const char *holder = NULL;

        if (rkl_cache_pod_list(ctx->cache, NULL, &pods, &n) >= 0)
                for (size_t i = 0; i < n && !holder; i++) {
                        const rkl_pod_spec *o = &pods[i]->rec->spec;
                        if (streq(o->name, s->name) && streq(o->namespace, s->namespace) &&
                            streq(o->uid, s->uid) && o->attempt == s->attempt)
                                holder = rkl_arena_strdup(ctx->arena, pods[i]->rec->id);
                }
        rkl_pod_views_unref(pods, n);
        return rkl_error_set(reterr, -EEXIST,
                             "config.metadata: a sandbox named '%s' in namespace '%s' with uid "
                             "'%s' and attempt %u already exists%s%s",
                             s->name, s->namespace, s->uid, s->attempt, holder ? ": " : "",
                             holder ? holder : "");
}

int rkl_api_run_pod_sandbox(rkl_api_ctx *ctx, const Runtime__V1__RunPodSandboxRequest *req,
                            Runtime__V1__RunPodSandboxResponse *resp, rkl_error *reterr)
{
        _cleanup_(rkl_pod_spec_done) rkl_pod_spec spec = {0};
        char id[RKL_ID_LEN + 1];
        int r;

        /* rkt is the one runtime behind rktlet: no handler but the default exists. */
        if (!isempty(req->runtime_handler))
                return rkl_error_set(reterr, -EINVAL,
                                     "runtime_handler: '%s' is unknown: rktlet has only the "
                                     "default handler (\"\")",
                                     rkl_api_echo(ctx, req->runtime_handler));
        r = rkl_api_pod_spec_from_pb(req->config, &spec, reterr);
        if (r < 0)
                return r;
        r = rkl_api_log_directory_check(ctx, spec.log_directory, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "config");

        rkl_id_new(id);
        rkl_log_debug("sandbox %s for %s/%s (attempt %u)", id, spec.namespace, spec.name,
                      spec.attempt);
        r = rkl_store_pod_create(ctx->store, id, &spec, reterr); /* spec moved in on success */
        if (r == -EEXIST)
                return already_exists(ctx, &spec, reterr);
        if (r < 0)
                return r;
        rkl_api_kick(ctx);
        resp->pod_sandbox_id = rkl_arena_strdup(ctx->arena, id);
        return rkl_api_wait(ctx, RKL_API_WAIT_POD_READY, id, 0);
}

int rkl_api_stop_pod_sandbox(rkl_api_ctx *ctx, const Runtime__V1__StopPodSandboxRequest *req,
                             Runtime__V1__StopPodSandboxResponse *resp, rkl_error *reterr)
{
        char id[RKL_ID_LEN + 1];

        /* CRI: stopping a sandbox that is already gone succeeds. */
        int r = rkl_api_unless_gone(
            rkl_api_pod_resolve(ctx, "pod_sandbox_id", req->pod_sandbox_id, id, reterr), reterr);
        if (r <= 0)
                return r;
        r = rkl_api_unless_gone(rkl_store_pod_stop(ctx->store, id, reterr), reterr);
        if (r <= 0)
                return r;
        rkl_api_kick(ctx);
        return rkl_api_wait(ctx, RKL_API_WAIT_POD_STOPPED, id, 0);
}

int rkl_api_remove_pod_sandbox(rkl_api_ctx *ctx, const Runtime__V1__RemovePodSandboxRequest *req,
                               Runtime__V1__RemovePodSandboxResponse *resp, rkl_error *reterr)
{
        char id[RKL_ID_LEN + 1];

        /* CRI: removing a sandbox that is already gone succeeds. */
        int r = rkl_api_unless_gone(
            rkl_api_pod_resolve(ctx, "pod_sandbox_id", req->pod_sandbox_id, id, reterr), reterr);
        if (r <= 0)
                return r;
        /* The reconciler stops and removes what rkt still runs for it: the store no longer
         * wants it. */
        r = rkl_store_pod_delete(ctx->store, id, reterr);
        if (r < 0 && r != -ENOENT)
                return r;
        rkl_error_clear(reterr);
        rkl_api_kick(ctx);
        return 0;
}

static Runtime__V1__PodSandboxMetadata *
metadata_pb(rkl_arena *a, Runtime__V1__PodSandboxMetadata *m, const rkl_pod_spec *s)
{
        *m = (Runtime__V1__PodSandboxMetadata)RUNTIME__V1__POD_SANDBOX_METADATA__INIT;
        m->name = rkl_api_pb_str(a, s->name);
        m->uid = rkl_api_pb_str(a, s->uid);
        m->namespace_ = rkl_api_pb_str(a, s->namespace);
        m->attempt = s->attempt;
        return m;
}

/* What the reconciler knows and kubelet's fields cannot say: for people debugging. */
static json_object *pod_info(const rkl_pod_record *p)
{
        const rkl_pod_observed *o = &p->observed;
        json_object *j = json_object_new_object();

        json_object_object_add(j, "id", json_object_new_string(p->id));
        json_object_object_add(j, "desired",
                               rkl_api_json_str(rkl_pod_desired_to_string(p->desired)));
        json_object_object_add(j, "phase", rkl_api_json_str(rkl_pod_phase_to_string(o->phase)));
        json_object_object_add(j, "rktUuid", rkl_api_json_str(p->rkt_uuid));
        json_object_object_add(j, "unitName", rkl_api_json_str(p->unit_name));
        json_object_object_add(j, "pid", o->pid > 0 ? json_object_new_int64(o->pid) : NULL);
        json_object_object_add(j, "ip", rkl_api_json_str(o->ip));
        json_object_object_add(j, "reason", rkl_api_json_str(o->reason));
        json_object_object_add(j, "message", rkl_api_json_str(o->message));
        json_object_object_add(j, "createdAt", rkl_api_json_ns(o->created_ns));
        json_object_object_add(j, "startedAt", rkl_api_json_ns(o->started_ns));
        json_object_object_add(j, "finishedAt", rkl_api_json_ns(o->finished_ns));
        rkl_api_json_book(j, &p->book, &o->timeline, true);
        json_object_object_add(j, "hostNetwork", json_object_new_boolean(p->spec.host_network));
        json_object_object_add(j, "hostname", rkl_api_json_str(p->spec.hostname));
        json_object_object_add(j, "logDirectory", rkl_api_json_str(p->spec.log_directory));
        json_object_object_add(j, "cgroupParent", rkl_api_json_str(p->spec.cgroup_parent));
        json_object_object_add(j, "runtimeHandler", json_object_new_string(""));
        return j;
}

Runtime__V1__PodSandboxStatus *rkl_api_pod_status_pb(rkl_arena *a, const rkl_pod_view *v)
{
        const rkl_pod_record *p = v->rec;

        Runtime__V1__PodSandboxStatus *st = rkl_arena_newa(Runtime__V1__PodSandboxStatus, a, 1);
        runtime__v1__pod_sandbox_status__init(st);
        st->id = rkl_api_pb_str(a, p->id);
        st->metadata =
            metadata_pb(a, rkl_arena_newa(Runtime__V1__PodSandboxMetadata, a, 1), &p->spec);
        st->state = (Runtime__V1__PodSandboxState)v->state;
        st->created_at = p->book.accepted_ns;

        Runtime__V1__PodSandboxNetworkStatus *net =
            rkl_arena_newa(Runtime__V1__PodSandboxNetworkStatus, a, 1);
        runtime__v1__pod_sandbox_network_status__init(net);
        net->ip = rkl_api_pb_text(a, p->observed.ip);
        size_t n_more = rkl_strv_length(p->observed.additional_ips);
        if (n_more > 0) {
                net->additional_ips = rkl_arena_newa(Runtime__V1__PodIP *, a, n_more);
                for (size_t i = 0; i < n_more; i++) {
                        Runtime__V1__PodIP *ip = rkl_arena_newa(Runtime__V1__PodIP, a, 1);
                        runtime__v1__pod_ip__init(ip);
                        ip->ip = rkl_api_pb_text(a, p->observed.additional_ips[i]);
                        net->additional_ips[net->n_additional_ips++] = ip;
                }
        }
        st->network = net;

        /* rkt pods always have their own PID and IPC namespaces (convert.c refuses the
         * host's); the network is the host's only when asked. */
        Runtime__V1__NamespaceOption *nso = rkl_arena_newa(Runtime__V1__NamespaceOption, a, 1);
        runtime__v1__namespace_option__init(nso);
        nso->network = p->spec.host_network ? RUNTIME__V1__NAMESPACE_MODE__NODE
                                            : RUNTIME__V1__NAMESPACE_MODE__POD;
        nso->pid = RUNTIME__V1__NAMESPACE_MODE__POD;
        nso->ipc = RUNTIME__V1__NAMESPACE_MODE__POD;
        Runtime__V1__Namespace *ns = rkl_arena_newa(Runtime__V1__Namespace, a, 1);
        runtime__v1__namespace__init(ns);
        ns->options = nso;
        st->linux = rkl_arena_newa(Runtime__V1__LinuxPodSandboxStatus, a, 1);
        runtime__v1__linux_pod_sandbox_status__init(st->linux);
        st->linux->namespaces = ns;

        RKL_API_PB_KVS(a, &p->spec.labels, Runtime__V1__PodSandboxStatus__LabelsEntry,
                       RUNTIME__V1__POD_SANDBOX_STATUS__LABELS_ENTRY__INIT, st->labels,
                       st->n_labels);
        RKL_API_PB_KVS(a, &p->spec.annotations, Runtime__V1__PodSandboxStatus__AnnotationsEntry,
                       RUNTIME__V1__POD_SANDBOX_STATUS__ANNOTATIONS_ENTRY__INIT, st->annotations,
                       st->n_annotations);
        return st;
}

int rkl_api_pod_sandbox_status(rkl_api_ctx *ctx, const Runtime__V1__PodSandboxStatusRequest *req,
                               Runtime__V1__PodSandboxStatusResponse *resp, rkl_error *reterr)
{
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = NULL;
        rkl_arena *a = ctx->arena;

        int r = rkl_api_pod_lookup(ctx, "pod_sandbox_id", req->pod_sandbox_id, &v, reterr);
        if (r < 0)
                return r;
        const rkl_pod_record *p = v->rec;

        resp->status = rkl_api_pod_status_pb(a, v);
        resp->timestamp = rkl_realtime_ns();
        /* Its containers too, newest first: kubelet's Evented PLEG takes a pod's container
         * statuses from here alone (without them, it started every container again) and
         * reads the first of a name as its latest attempt. The cache lists oldest first. */
        rkl_container_view **cv;
        size_t n;
        r = rkl_cache_container_list(ctx->cache, &(rkl_view_filter){.sandbox_id = p->id}, &cv, &n);
        if (r < 0)
                return rkl_error_set(reterr, r, "list the sandbox's containers: %s", strerror(-r));
        resp->containers_statuses = rkl_arena_newa(Runtime__V1__ContainerStatus *, a, n);
        for (size_t i = n; i > 0; i--)
                resp->containers_statuses[resp->n_containers_statuses++] =
                    rkl_api_container_status_pb(a, cv[i - 1]);
        rkl_container_views_unref(cv, n);

        if (req->verbose)
                RKL_API_PB_SET_INFO(a, resp, Runtime__V1__PodSandboxStatusResponse__InfoEntry,
                                    runtime__v1__pod_sandbox_status_response__info_entry__init,
                                    pod_info(p));
        return 0;
}

/* The sandbox (an rkl_pod_view) as a ListPodSandbox item, at a trim level (pb.h; 0:
 * whole), in a: its strings point into the view or into a. */
static const ProtobufCMessage *pod_item(rkl_arena *a, const void *view, unsigned level)
{
        const rkl_pod_view *v = view;
        const rkl_pod_record *rec = v->rec;
        Runtime__V1__PodSandbox *p = rkl_arena_newa(Runtime__V1__PodSandbox, a, 1);
        Runtime__V1__PodSandboxMetadata *m = rkl_arena_newa(Runtime__V1__PodSandboxMetadata, a, 1);
        *p = (Runtime__V1__PodSandbox)RUNTIME__V1__POD_SANDBOX__INIT;
        *m = (Runtime__V1__PodSandboxMetadata)RUNTIME__V1__POD_SANDBOX_METADATA__INIT;
        p->id = (char *)rec->id;
        m->name = rec->spec.name;
        m->uid = rec->spec.uid;
        m->namespace_ = rec->spec.namespace;
        m->attempt = rec->spec.attempt;
        p->metadata = m;
        p->state = (Runtime__V1__PodSandboxState)v->state;
        p->created_at = rec->book.accepted_ns;
        RKL_API_PB_KVS(a, rkl_api_trim_labels(a, &rec->spec.labels, level),
                       Runtime__V1__PodSandbox__LabelsEntry,
                       RUNTIME__V1__POD_SANDBOX__LABELS_ENTRY__INIT, p->labels, p->n_labels);
        RKL_API_PB_KVS(a, rkl_api_trim_annotations(a, &rec->spec.annotations, level),
                       Runtime__V1__PodSandbox__AnnotationsEntry,
                       RUNTIME__V1__POD_SANDBOX__ANNOTATIONS_ENTRY__INIT, p->annotations,
                       p->n_annotations);
        return &p->base;
}

static _Atomic uint64_t pods_warned;

static const rkl_api_views_kind pods = {
    .pods = true,
    .method = "ListPodSandbox",
    .noun = "sandboxes",
    .list_field = 1,   /* ListPodSandboxResponse.items */
    .stream_field = 1, /* StreamPodSandboxesResponse.pod_sandboxes */
    .item = pod_item,
    .last_warned = &pods_warned,
};

int rkl_api_list_pod_sandbox(rkl_api_ctx *ctx, const Runtime__V1__ListPodSandboxRequest *req,
                             Runtime__V1__ListPodSandboxResponse *resp, rkl_error *reterr)
{
        rkl_view_filter f;
        rkl_kvs selector;

        RKL_API_VIEW_FILTER_FROM_PB(ctx->arena, req->filter, &f, &selector);
        return rkl_api_views_list(ctx, &pods, &f, reterr);
}

int rkl_api_update_runtime_config(rkl_api_ctx *ctx,
                                  const Runtime__V1__UpdateRuntimeConfigRequest *req,
                                  Runtime__V1__UpdateRuntimeConfigResponse *resp, rkl_error *reterr)
{
        const char *cidr = NULL;

        if (req->runtime_config && req->runtime_config->network_config)
                cidr = req->runtime_config->network_config->pod_cidr;
        /* Dual-stack sends two CIDRs joined by a comma. */
        int r = rkl_api_check_string("runtime_config.network_config.pod_cidr", cidr, RKL_MAX_NAME,
                                     false, reterr);
        if (r < 0)
                return r;
        /* Nothing to apply: the network's IPAM configuration (CNI's, or rkt's with --net)
         * hands out pod IPs, as containerd's does without a config template. kubelet sends
         * this only when the node's CIDR changes. */
        rkl_log_info("kubelet's pod CIDR is '%s'; pod IPs come from the network's IPAM "
                     "configuration",
                     isempty(cidr) ? "" : cidr);
        return 0;
}

int rkl_api_stream_pod_sandboxes(rkl_api_ctx *ctx,
                                 const Runtime__V1__StreamPodSandboxesRequest *req,
                                 Runtime__V1__StreamPodSandboxesResponse *resp, rkl_error *reterr)
{
        rkl_view_filter f;
        rkl_kvs selector;

        /* The sandboxes as ListPodSandbox takes them, items as it encodes them. */
        RKL_API_VIEW_FILTER_FROM_PB(ctx->arena, req->filter, &f, &selector);
        return rkl_api_views_stream(ctx, &pods, &f, reterr);
}
