/* CRI requests as kubelet sends them: kubelet's labels and annotations on every pod and
 * container, so that the server stores and returns what it would on a node. */
#pragma once

#include <stdbool.h>

#include <protobuf-c/protobuf-c.h>

#include "client.h"

typedef enum rkb_rpc {
        RKB_VERSION,
        RKB_STATUS,
        RKB_RUN_POD,
        RKB_CREATE,
        RKB_START,
        RKB_POD_STATUS,
        RKB_CONTAINER_STATUS,
        RKB_LIST_PODS,
        RKB_LIST_CONTAINERS,
        RKB_LIST_CONTAINERS_POD, /* ListContainers filtered by sandbox, as kubelet's GetPodStatus */
        RKB_LIST_CONTAINER_STATS,
        RKB_LIST_POD_STATS,
        RKB_STOP_CONTAINER,
        RKB_REMOVE_CONTAINER,
        RKB_STOP_POD,
        RKB_REMOVE_POD,
        RKB_PULL_IMAGE,
        RKB_EXEC_SYNC,
        _RKB_RPC_MAX,
} rkb_rpc;

const char *rkb_rpc_name(rkb_rpc rpc);
const ProtobufCMessageDescriptor *rkb_rpc_response(rkb_rpc rpc);
bool rkb_rpc_is_mutating(rkb_rpc rpc);

typedef struct rkb_cri_opts {
        const char *image;      /* ContainerConfig.image */
        const char *log_dir;    /* parent of each pod's log directory */
        const char *namespace_; /* Kubernetes namespace */
        const char *run_id;     /* label rkl-bench/run: which objects are this run's */
        char **command;         /* NULL-terminated */
        long stop_timeout;      /* StopContainer.timeout, seconds */
} rkb_cri_opts;

#define RKB_LABEL_RUN "rkl-bench/run"

rkb_request *rkb_cri_version(void);
rkb_request *rkb_cri_status(void);
rkb_request *rkb_cri_pull(const rkb_cri_opts *o);
rkb_request *rkb_cri_run_pod(const rkb_cri_opts *o, const char *name, const char *uid);
rkb_request *rkb_cri_create(const rkb_cri_opts *o, const char *pod_id, const char *pod_name,
                            const char *pod_uid, const char *container_name);
/* The calls that take one ID: RKB_START, RKB_POD_STATUS, RKB_CONTAINER_STATUS,
 * RKB_LIST_CONTAINERS_POD, RKB_STOP_CONTAINER, RKB_REMOVE_CONTAINER, RKB_STOP_POD, RKB_REMOVE_POD;
 * and the lists (id NULL). */
rkb_request *rkb_cri_by_id(const rkb_cri_opts *o, rkb_rpc rpc, const char *id, bool verbose);
/* ExecSync of cmd (NULL-terminated) in a container, with a timeout in seconds (0: none). */
rkb_request *rkb_cri_exec_sync(const char *container_id, char *const *cmd, long timeout);
