/* Which CRI methods rktlet implements. A method missing here answers UNIMPLEMENTED naming
 * itself, which is what kubelet's fallbacks expect (never UNKNOWN). */
#include "api.h"
#include "checkpoint.h"
#include "container.h"
#include "cri-metrics.h"
#include "events.h"
#include "exec.h"
#include "image.h"
#include "logs.h"
#include "runtime.h"
#include "sandbox.h"
#include "stats.h"
#include "streaming.h"

#include "base/banned.h"

typedef struct handler_entry {
        const char *service;
        const char *method;
        rkl_api_handler handler;
} handler_entry;

/* Typed handlers are called through a generic thunk, never through a cast pointer. */
#define THUNK(fn, Req, Resp)                                                                       \
        static int fn##_thunk(rkl_api_ctx *ctx, const ProtobufCMessage *req,                       \
                              ProtobufCMessage *resp, rkl_error *reterr)                           \
        {                                                                                          \
                return fn(ctx, (const Req *)req, (Resp *)resp, reterr);                            \
        }

THUNK(rkl_api_version, Runtime__V1__VersionRequest, Runtime__V1__VersionResponse)
THUNK(rkl_api_status, Runtime__V1__StatusRequest, Runtime__V1__StatusResponse)
THUNK(rkl_api_runtime_config, Runtime__V1__RuntimeConfigRequest, Runtime__V1__RuntimeConfigResponse)
THUNK(rkl_api_update_runtime_config, Runtime__V1__UpdateRuntimeConfigRequest,
      Runtime__V1__UpdateRuntimeConfigResponse)
THUNK(rkl_api_run_pod_sandbox, Runtime__V1__RunPodSandboxRequest,
      Runtime__V1__RunPodSandboxResponse)
THUNK(rkl_api_stop_pod_sandbox, Runtime__V1__StopPodSandboxRequest,
      Runtime__V1__StopPodSandboxResponse)
THUNK(rkl_api_remove_pod_sandbox, Runtime__V1__RemovePodSandboxRequest,
      Runtime__V1__RemovePodSandboxResponse)
THUNK(rkl_api_pod_sandbox_status, Runtime__V1__PodSandboxStatusRequest,
      Runtime__V1__PodSandboxStatusResponse)
THUNK(rkl_api_list_pod_sandbox, Runtime__V1__ListPodSandboxRequest,
      Runtime__V1__ListPodSandboxResponse)
THUNK(rkl_api_create_container, Runtime__V1__CreateContainerRequest,
      Runtime__V1__CreateContainerResponse)
THUNK(rkl_api_start_container, Runtime__V1__StartContainerRequest,
      Runtime__V1__StartContainerResponse)
THUNK(rkl_api_stop_container, Runtime__V1__StopContainerRequest, Runtime__V1__StopContainerResponse)
THUNK(rkl_api_remove_container, Runtime__V1__RemoveContainerRequest,
      Runtime__V1__RemoveContainerResponse)
THUNK(rkl_api_list_containers, Runtime__V1__ListContainersRequest,
      Runtime__V1__ListContainersResponse)
THUNK(rkl_api_container_status, Runtime__V1__ContainerStatusRequest,
      Runtime__V1__ContainerStatusResponse)
THUNK(rkl_api_exec_sync, Runtime__V1__ExecSyncRequest, Runtime__V1__ExecSyncResponse)
THUNK(rkl_api_exec, Runtime__V1__ExecRequest, Runtime__V1__ExecResponse)
THUNK(rkl_api_attach, Runtime__V1__AttachRequest, Runtime__V1__AttachResponse)
THUNK(rkl_api_port_forward, Runtime__V1__PortForwardRequest, Runtime__V1__PortForwardResponse)
THUNK(rkl_api_reopen_container_log, Runtime__V1__ReopenContainerLogRequest,
      Runtime__V1__ReopenContainerLogResponse)
THUNK(rkl_api_container_stats, Runtime__V1__ContainerStatsRequest,
      Runtime__V1__ContainerStatsResponse)
THUNK(rkl_api_list_container_stats, Runtime__V1__ListContainerStatsRequest,
      Runtime__V1__ListContainerStatsResponse)
THUNK(rkl_api_pod_sandbox_stats, Runtime__V1__PodSandboxStatsRequest,
      Runtime__V1__PodSandboxStatsResponse)
THUNK(rkl_api_list_pod_sandbox_stats, Runtime__V1__ListPodSandboxStatsRequest,
      Runtime__V1__ListPodSandboxStatsResponse)
THUNK(rkl_api_update_container_resources, Runtime__V1__UpdateContainerResourcesRequest,
      Runtime__V1__UpdateContainerResourcesResponse)
THUNK(rkl_api_update_pod_sandbox_resources, Runtime__V1__UpdatePodSandboxResourcesRequest,
      Runtime__V1__UpdatePodSandboxResourcesResponse)
THUNK(rkl_api_get_container_events, Runtime__V1__GetEventsRequest,
      Runtime__V1__ContainerEventResponse)
THUNK(rkl_api_stream_pod_sandboxes, Runtime__V1__StreamPodSandboxesRequest,
      Runtime__V1__StreamPodSandboxesResponse)
THUNK(rkl_api_stream_containers, Runtime__V1__StreamContainersRequest,
      Runtime__V1__StreamContainersResponse)
THUNK(rkl_api_stream_container_stats, Runtime__V1__StreamContainerStatsRequest,
      Runtime__V1__StreamContainerStatsResponse)
THUNK(rkl_api_stream_pod_sandbox_stats, Runtime__V1__StreamPodSandboxStatsRequest,
      Runtime__V1__StreamPodSandboxStatsResponse)
THUNK(rkl_api_stream_images, Runtime__V1__StreamImagesRequest, Runtime__V1__StreamImagesResponse)
THUNK(rkl_api_checkpoint_container, Runtime__V1__CheckpointContainerRequest,
      Runtime__V1__CheckpointContainerResponse)
THUNK(rkl_api_checkpoint_pod, Runtime__V1__CheckpointPodRequest, Runtime__V1__CheckpointPodResponse)
THUNK(rkl_api_restore_pod, Runtime__V1__RestorePodRequest, Runtime__V1__RestorePodResponse)
THUNK(rkl_api_list_metric_descriptors, Runtime__V1__ListMetricDescriptorsRequest,
      Runtime__V1__ListMetricDescriptorsResponse)
THUNK(rkl_api_list_pod_sandbox_metrics, Runtime__V1__ListPodSandboxMetricsRequest,
      Runtime__V1__ListPodSandboxMetricsResponse)
THUNK(rkl_api_stream_pod_sandbox_metrics, Runtime__V1__StreamPodSandboxMetricsRequest,
      Runtime__V1__StreamPodSandboxMetricsResponse)
THUNK(rkl_api_list_images, Runtime__V1__ListImagesRequest, Runtime__V1__ListImagesResponse)
THUNK(rkl_api_image_status, Runtime__V1__ImageStatusRequest, Runtime__V1__ImageStatusResponse)
THUNK(rkl_api_pull_image, Runtime__V1__PullImageRequest, Runtime__V1__PullImageResponse)
THUNK(rkl_api_remove_image, Runtime__V1__RemoveImageRequest, Runtime__V1__RemoveImageResponse)
THUNK(rkl_api_image_fs_info, Runtime__V1__ImageFsInfoRequest, Runtime__V1__ImageFsInfoResponse)

static const handler_entry handlers[] = {
    {"RuntimeService", "Version", rkl_api_version_thunk},
    {"RuntimeService", "Status", rkl_api_status_thunk},
    {"RuntimeService", "RuntimeConfig", rkl_api_runtime_config_thunk},
    {"RuntimeService", "UpdateRuntimeConfig", rkl_api_update_runtime_config_thunk},
    {"RuntimeService", "RunPodSandbox", rkl_api_run_pod_sandbox_thunk},
    {"RuntimeService", "StopPodSandbox", rkl_api_stop_pod_sandbox_thunk},
    {"RuntimeService", "RemovePodSandbox", rkl_api_remove_pod_sandbox_thunk},
    {"RuntimeService", "PodSandboxStatus", rkl_api_pod_sandbox_status_thunk},
    {"RuntimeService", "ListPodSandbox", rkl_api_list_pod_sandbox_thunk},
    {"RuntimeService", "CreateContainer", rkl_api_create_container_thunk},
    {"RuntimeService", "StartContainer", rkl_api_start_container_thunk},
    {"RuntimeService", "StopContainer", rkl_api_stop_container_thunk},
    {"RuntimeService", "RemoveContainer", rkl_api_remove_container_thunk},
    {"RuntimeService", "ListContainers", rkl_api_list_containers_thunk},
    {"RuntimeService", "ContainerStatus", rkl_api_container_status_thunk},
    {"RuntimeService", "ReopenContainerLog", rkl_api_reopen_container_log_thunk},
    {"RuntimeService", "ContainerStats", rkl_api_container_stats_thunk},
    {"RuntimeService", "ListContainerStats", rkl_api_list_container_stats_thunk},
    {"RuntimeService", "PodSandboxStats", rkl_api_pod_sandbox_stats_thunk},
    {"RuntimeService", "ListPodSandboxStats", rkl_api_list_pod_sandbox_stats_thunk},
    {"RuntimeService", "UpdateContainerResources", rkl_api_update_container_resources_thunk},
    {"RuntimeService", "UpdatePodSandboxResources", rkl_api_update_pod_sandbox_resources_thunk},
    {"RuntimeService", "ExecSync", rkl_api_exec_sync_thunk},
    {"RuntimeService", "Exec", rkl_api_exec_thunk},
    {"RuntimeService", "Attach", rkl_api_attach_thunk},
    {"RuntimeService", "PortForward", rkl_api_port_forward_thunk},
    {"RuntimeService", "GetContainerEvents", rkl_api_get_container_events_thunk},
    {"RuntimeService", "StreamPodSandboxes", rkl_api_stream_pod_sandboxes_thunk},
    {"RuntimeService", "StreamContainers", rkl_api_stream_containers_thunk},
    {"RuntimeService", "StreamContainerStats", rkl_api_stream_container_stats_thunk},
    {"RuntimeService", "StreamPodSandboxStats", rkl_api_stream_pod_sandbox_stats_thunk},
    {"RuntimeService", "ListMetricDescriptors", rkl_api_list_metric_descriptors_thunk},
    {"RuntimeService", "ListPodSandboxMetrics", rkl_api_list_pod_sandbox_metrics_thunk},
    {"RuntimeService", "StreamPodSandboxMetrics", rkl_api_stream_pod_sandbox_metrics_thunk},
    /* Answered, to say why they cannot be done (checkpoint.h). */
    {"RuntimeService", "CheckpointContainer", rkl_api_checkpoint_container_thunk},
    {"RuntimeService", "CheckpointPod", rkl_api_checkpoint_pod_thunk},
    {"RuntimeService", "RestorePod", rkl_api_restore_pod_thunk},
    {"ImageService", "ListImages", rkl_api_list_images_thunk},
    {"ImageService", "ImageStatus", rkl_api_image_status_thunk},
    {"ImageService", "PullImage", rkl_api_pull_image_thunk},
    {"ImageService", "RemoveImage", rkl_api_remove_image_thunk},
    {"ImageService", "ImageFsInfo", rkl_api_image_fs_info_thunk},
    {"ImageService", "StreamImages", rkl_api_stream_images_thunk},
};

rkl_api_handler rkl_api_handler_lookup(const char *service, const char *method)
{
        for (size_t i = 0; i < ELEMENTSOF(handlers); i++)
                if (streq(handlers[i].service, service) && streq(handlers[i].method, method))
                        return handlers[i].handler;
        return NULL;
}
