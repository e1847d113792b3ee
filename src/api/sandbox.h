/* RuntimeService sandbox handlers (and UpdateRuntimeConfig, which concerns pod networks).
 * Writes commit one store transaction and return; reads answer from the cache only. */
#pragma once

#include "api.h"
#include "api.pb-c.h"

int rkl_api_run_pod_sandbox(rkl_api_ctx *ctx, const Runtime__V1__RunPodSandboxRequest *req,
                            Runtime__V1__RunPodSandboxResponse *resp, rkl_error *reterr);
int rkl_api_stop_pod_sandbox(rkl_api_ctx *ctx, const Runtime__V1__StopPodSandboxRequest *req,
                             Runtime__V1__StopPodSandboxResponse *resp, rkl_error *reterr);
int rkl_api_remove_pod_sandbox(rkl_api_ctx *ctx, const Runtime__V1__RemovePodSandboxRequest *req,
                               Runtime__V1__RemovePodSandboxResponse *resp, rkl_error *reterr);
int rkl_api_pod_sandbox_status(rkl_api_ctx *ctx, const Runtime__V1__PodSandboxStatusRequest *req,
                               Runtime__V1__PodSandboxStatusResponse *resp, rkl_error *reterr);
int rkl_api_list_pod_sandbox(rkl_api_ctx *ctx, const Runtime__V1__ListPodSandboxRequest *req,
                             Runtime__V1__ListPodSandboxResponse *resp, rkl_error *reterr);
int rkl_api_update_runtime_config(rkl_api_ctx *ctx,
                                  const Runtime__V1__UpdateRuntimeConfigRequest *req,
                                  Runtime__V1__UpdateRuntimeConfigResponse *resp,
                                  rkl_error *reterr);

typedef struct rkl_pod_view rkl_pod_view;
/* A sandbox's CRI status as PodSandboxStatus answers it (without the verbose info), in a. */
Runtime__V1__PodSandboxStatus *rkl_api_pod_status_pb(rkl_arena *a, const rkl_pod_view *v);
/* ListPodSandbox's answer in pages (page.h). */
int rkl_api_stream_pod_sandboxes(rkl_api_ctx *ctx,
                                 const Runtime__V1__StreamPodSandboxesRequest *req,
                                 Runtime__V1__StreamPodSandboxesResponse *resp, rkl_error *reterr);
