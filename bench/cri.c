/* CRI requests as kubelet sends them. Messages are built in an arena, packed, and dropped. */
#include "api.pb-c.h"
#include "cri.h"
#include "base/arena.h"
#include "base/banned.h"

static const struct {
        const char *name, *method;
        const ProtobufCMessageDescriptor *resp;
        bool mutating;
} rpcs[_RKB_RPC_MAX] = {
#define R(e, n, svc, m, d, mut) [e] = {n, "/runtime.v1." svc "/" m, &d, mut}
    R(RKB_VERSION, "Version", "RuntimeService", "Version",
      runtime__v1__version_response__descriptor, false),
    R(RKB_STATUS, "Status", "RuntimeService", "Status", runtime__v1__status_response__descriptor,
      false),
    R(RKB_RUN_POD, "RunPodSandbox", "RuntimeService", "RunPodSandbox",
      runtime__v1__run_pod_sandbox_response__descriptor, true),
    R(RKB_CREATE, "CreateContainer", "RuntimeService", "CreateContainer",
      runtime__v1__create_container_response__descriptor, true),
    R(RKB_START, "StartContainer", "RuntimeService", "StartContainer",
      runtime__v1__start_container_response__descriptor, true),
    R(RKB_POD_STATUS, "PodSandboxStatus", "RuntimeService", "PodSandboxStatus",
      runtime__v1__pod_sandbox_status_response__descriptor, false),
    R(RKB_CONTAINER_STATUS, "ContainerStatus", "RuntimeService", "ContainerStatus",
      runtime__v1__container_status_response__descriptor, false),
    R(RKB_LIST_PODS, "ListPodSandbox", "RuntimeService", "ListPodSandbox",
      runtime__v1__list_pod_sandbox_response__descriptor, false),
    R(RKB_LIST_CONTAINERS, "ListContainers", "RuntimeService", "ListContainers",
      runtime__v1__list_containers_response__descriptor, false),
    R(RKB_LIST_CONTAINERS_POD, "ListContainers(pod)", "RuntimeService", "ListContainers",
      runtime__v1__list_containers_response__descriptor, false),
    R(RKB_LIST_CONTAINER_STATS, "ListContainerStats", "RuntimeService", "ListContainerStats",
      runtime__v1__list_container_stats_response__descriptor, false),
    R(RKB_LIST_POD_STATS, "ListPodSandboxStats", "RuntimeService", "ListPodSandboxStats",
      runtime__v1__list_pod_sandbox_stats_response__descriptor, false),
    R(RKB_STOP_CONTAINER, "StopContainer", "RuntimeService", "StopContainer",
      runtime__v1__stop_container_response__descriptor, true),
    R(RKB_REMOVE_CONTAINER, "RemoveContainer", "RuntimeService", "RemoveContainer",
      runtime__v1__remove_container_response__descriptor, true),
    R(RKB_STOP_POD, "StopPodSandbox", "RuntimeService", "StopPodSandbox",
      runtime__v1__stop_pod_sandbox_response__descriptor, true),
    R(RKB_REMOVE_POD, "RemovePodSandbox", "RuntimeService", "RemovePodSandbox",
      runtime__v1__remove_pod_sandbox_response__descriptor, true),
    R(RKB_PULL_IMAGE, "PullImage", "ImageService", "PullImage",
      runtime__v1__pull_image_response__descriptor, true),
    R(RKB_EXEC_SYNC, "ExecSync", "RuntimeService", "ExecSync",
      runtime__v1__exec_sync_response__descriptor, false),
#undef R
};

const char *rkb_rpc_name(rkb_rpc rpc)
{
        return rpcs[rpc].name;
}

const ProtobufCMessageDescriptor *rkb_rpc_response(rkb_rpc rpc)
{
        return rpcs[rpc].resp;
}

bool rkb_rpc_is_mutating(rkb_rpc rpc)
{
        return rpcs[rpc].mutating;
}

static rkb_request *pack(rkb_rpc rpc, const void *msg)
{
        return rkb_request_new(rpcs[rpc].method, msg);
}

/* Every protobuf-c map entry is {base, key, value}: one builder serves all map types. */
typedef struct kv_entry {
        ProtobufCMessage base;
        char *key, *value;
} kv_entry;

typedef struct kv_list {
        const ProtobufCMessageDescriptor *desc;
        size_t n;
        kv_entry *v[16];
} kv_list;

static void kv_add(rkl_arena *a, kv_list *l, const char *key, const char *value)
{
        kv_entry *e = rkl_arena_newa(kv_entry, a, 1);

        assert(l->n < ELEMENTSOF(l->v));
        protobuf_c_message_init(l->desc, e);
        e->key = rkl_arena_strdup(a, key);
        e->value = rkl_arena_strdup(a, value);
        l->v[l->n++] = e;
}

rkb_request *rkb_cri_version(void)
{
        Runtime__V1__VersionRequest m = RUNTIME__V1__VERSION_REQUEST__INIT;
        m.version = (char *)"v1";
        return pack(RKB_VERSION, &m);
}

rkb_request *rkb_cri_status(void)
{
        Runtime__V1__StatusRequest m = RUNTIME__V1__STATUS_REQUEST__INIT;
        return pack(RKB_STATUS, &m);
}

rkb_request *rkb_cri_pull(const rkb_cri_opts *o)
{
        Runtime__V1__PullImageRequest m = RUNTIME__V1__PULL_IMAGE_REQUEST__INIT;
        Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
        spec.image = (char *)o->image;
        m.image = &spec;
        return pack(RKB_PULL_IMAGE, &m);
}

/* kubelet's pod config: metadata, log directory, labels and annotations (kuberuntime). */
static Runtime__V1__PodSandboxConfig *pod_config(rkl_arena *a, const rkb_cri_opts *o,
                                                 const char *name, const char *uid)
{
        Runtime__V1__PodSandboxConfig *c = rkl_arena_newa(Runtime__V1__PodSandboxConfig, a, 1);
        Runtime__V1__PodSandboxMetadata *md = rkl_arena_newa(Runtime__V1__PodSandboxMetadata, a, 1);
        Runtime__V1__LinuxPodSandboxConfig *lx =
            rkl_arena_newa(Runtime__V1__LinuxPodSandboxConfig, a, 1);
        kv_list *labels = rkl_arena_newa(kv_list, a, 1), *ann = rkl_arena_newa(kv_list, a, 1);

        runtime__v1__pod_sandbox_config__init(c);
        runtime__v1__pod_sandbox_metadata__init(md);
        runtime__v1__linux_pod_sandbox_config__init(lx);
        md->name = (char *)name;
        md->uid = (char *)uid;
        md->namespace_ = (char *)o->namespace_;
        c->metadata = md;
        c->hostname = (char *)name;
        c->log_directory = rkl_arena_printf(a, "%s/%s_%s_%s", o->log_dir, o->namespace_, name, uid);
        c->linux = lx;

        labels->desc = &runtime__v1__pod_sandbox_config__labels_entry__descriptor;
        kv_add(a, labels, "io.kubernetes.pod.name", name);
        kv_add(a, labels, "io.kubernetes.pod.namespace", o->namespace_);
        kv_add(a, labels, "io.kubernetes.pod.uid", uid);
        kv_add(a, labels, "app", "bench");
        kv_add(a, labels, "pod-template-hash", "5d8f7c9b6d");
        kv_add(a, labels, RKB_LABEL_RUN, o->run_id);
        c->n_labels = labels->n;
        c->labels = (Runtime__V1__PodSandboxConfig__LabelsEntry **)labels->v;

        ann->desc = &runtime__v1__pod_sandbox_config__annotations_entry__descriptor;
        kv_add(a, ann, "kubernetes.io/config.seen", "2026-11-21T08:00:00.000000000Z");
        kv_add(a, ann, "kubernetes.io/config.source", "api");
        c->n_annotations = ann->n;
        c->annotations = (Runtime__V1__PodSandboxConfig__AnnotationsEntry **)ann->v;
        return c;
}

rkb_request *rkb_cri_run_pod(const rkb_cri_opts *o, const char *name, const char *uid)
{
        _cleanup_(rkl_arena_freep) rkl_arena *a = rkl_arena_new();
        Runtime__V1__RunPodSandboxRequest m = RUNTIME__V1__RUN_POD_SANDBOX_REQUEST__INIT;

        m.config = pod_config(a, o, name, uid);
        return pack(RKB_RUN_POD, &m);
}

rkb_request *rkb_cri_create(const rkb_cri_opts *o, const char *pod_id, const char *pod_name,
                            const char *pod_uid, const char *container_name)
{
        _cleanup_(rkl_arena_freep) rkl_arena *a = rkl_arena_new();
        Runtime__V1__CreateContainerRequest m = RUNTIME__V1__CREATE_CONTAINER_REQUEST__INIT;
        Runtime__V1__ContainerConfig c = RUNTIME__V1__CONTAINER_CONFIG__INIT;
        Runtime__V1__ContainerMetadata md = RUNTIME__V1__CONTAINER_METADATA__INIT;
        Runtime__V1__ImageSpec image = RUNTIME__V1__IMAGE_SPEC__INIT;
        kv_list labels = {.desc = &runtime__v1__container_config__labels_entry__descriptor};
        kv_list ann = {.desc = &runtime__v1__container_config__annotations_entry__descriptor};
        size_t n_cmd = 0;

        md.name = (char *)container_name;
        image.image = (char *)o->image;
        while (o->command[n_cmd])
                n_cmd++;
        c.metadata = &md;
        c.image = &image;
        c.command = o->command;
        c.n_command = n_cmd;
        c.log_path = rkl_arena_printf(a, "%s/0.log", container_name);

        kv_add(a, &labels, "io.kubernetes.container.name", container_name);
        kv_add(a, &labels, "io.kubernetes.pod.name", pod_name);
        kv_add(a, &labels, "io.kubernetes.pod.namespace", o->namespace_);
        kv_add(a, &labels, "io.kubernetes.pod.uid", pod_uid);
        kv_add(a, &labels, RKB_LABEL_RUN, o->run_id);
        c.n_labels = labels.n;
        c.labels = (Runtime__V1__ContainerConfig__LabelsEntry **)labels.v;

        kv_add(a, &ann, "io.kubernetes.container.hash", "8a2f4c1e");
        kv_add(a, &ann, "io.kubernetes.container.restartCount", "0");
        kv_add(a, &ann, "io.kubernetes.container.terminationMessagePath", "/dev/termination-log");
        kv_add(a, &ann, "io.kubernetes.container.terminationMessagePolicy", "File");
        kv_add(a, &ann, "io.kubernetes.pod.terminationGracePeriod", "30");
        c.n_annotations = ann.n;
        c.annotations = (Runtime__V1__ContainerConfig__AnnotationsEntry **)ann.v;

        m.pod_sandbox_id = (char *)pod_id;
        m.config = &c;
        m.sandbox_config = pod_config(a, o, pod_name, pod_uid);
        return pack(RKB_CREATE, &m);
}

rkb_request *rkb_cri_exec_sync(const char *container_id, char *const *cmd, long timeout)
{
        Runtime__V1__ExecSyncRequest m = RUNTIME__V1__EXEC_SYNC_REQUEST__INIT;
        size_t n = 0;

        while (cmd[n])
                n++;
        m.container_id = (char *)container_id;
        m.cmd = (char **)cmd;
        m.n_cmd = n;
        m.timeout = timeout;
        return pack(RKB_EXEC_SYNC, &m);
}

rkb_request *rkb_cri_by_id(const rkb_cri_opts *o, rkb_rpc rpc, const char *id, bool verbose)
{
        char *cid = (char *)id;

        switch (rpc) {
        case RKB_START: {
                Runtime__V1__StartContainerRequest m = RUNTIME__V1__START_CONTAINER_REQUEST__INIT;
                m.container_id = cid;
                return pack(rpc, &m);
        }
        case RKB_POD_STATUS: {
                Runtime__V1__PodSandboxStatusRequest m =
                    RUNTIME__V1__POD_SANDBOX_STATUS_REQUEST__INIT;
                m.pod_sandbox_id = cid;
                m.verbose = verbose;
                return pack(rpc, &m);
        }
        case RKB_CONTAINER_STATUS: {
                Runtime__V1__ContainerStatusRequest m = RUNTIME__V1__CONTAINER_STATUS_REQUEST__INIT;
                m.container_id = cid;
                m.verbose = verbose;
                return pack(rpc, &m);
        }
        case RKB_LIST_PODS: {
                Runtime__V1__ListPodSandboxRequest m = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
                return pack(rpc, &m);
        }
        case RKB_LIST_CONTAINER_STATS: {
                Runtime__V1__ListContainerStatsRequest m =
                    RUNTIME__V1__LIST_CONTAINER_STATS_REQUEST__INIT;
                return pack(rpc, &m);
        }
        case RKB_LIST_POD_STATS: {
                Runtime__V1__ListPodSandboxStatsRequest m =
                    RUNTIME__V1__LIST_POD_SANDBOX_STATS_REQUEST__INIT;
                return pack(rpc, &m);
        }
        case RKB_LIST_CONTAINERS:
        case RKB_LIST_CONTAINERS_POD: {
                Runtime__V1__ListContainersRequest m = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
                Runtime__V1__ContainerFilter f = RUNTIME__V1__CONTAINER_FILTER__INIT;
                if (id) {
                        f.pod_sandbox_id = cid;
                        m.filter = &f;
                }
                return pack(rpc, &m);
        }
        case RKB_STOP_CONTAINER: {
                Runtime__V1__StopContainerRequest m = RUNTIME__V1__STOP_CONTAINER_REQUEST__INIT;
                m.container_id = cid;
                m.timeout = o->stop_timeout;
                return pack(rpc, &m);
        }
        case RKB_REMOVE_CONTAINER: {
                Runtime__V1__RemoveContainerRequest m = RUNTIME__V1__REMOVE_CONTAINER_REQUEST__INIT;
                m.container_id = cid;
                return pack(rpc, &m);
        }
        case RKB_STOP_POD: {
                Runtime__V1__StopPodSandboxRequest m = RUNTIME__V1__STOP_POD_SANDBOX_REQUEST__INIT;
                m.pod_sandbox_id = cid;
                return pack(rpc, &m);
        }
        case RKB_REMOVE_POD: {
                Runtime__V1__RemovePodSandboxRequest m =
                    RUNTIME__V1__REMOVE_POD_SANDBOX_REQUEST__INIT;
                m.pod_sandbox_id = cid;
                return pack(rpc, &m);
        }
        default:
                assert(!"not a by-id call");
                return NULL;
        }
}
