/* The stats RPCs, served from the stats cache's current snapshot joined with the status
 * cache's views (filters as List's), and UpdateContainerResources. */
#pragma once

#include "api.h"
#include "api.pb-c.h"

int rkl_api_container_stats(rkl_api_ctx *ctx, const Runtime__V1__ContainerStatsRequest *req,
                            Runtime__V1__ContainerStatsResponse *resp, rkl_error *reterr);
int rkl_api_list_container_stats(rkl_api_ctx *ctx,
                                 const Runtime__V1__ListContainerStatsRequest *req,
                                 Runtime__V1__ListContainerStatsResponse *resp, rkl_error *reterr);
int rkl_api_pod_sandbox_stats(rkl_api_ctx *ctx, const Runtime__V1__PodSandboxStatsRequest *req,
                              Runtime__V1__PodSandboxStatsResponse *resp, rkl_error *reterr);
int rkl_api_list_pod_sandbox_stats(rkl_api_ctx *ctx,
                                   const Runtime__V1__ListPodSandboxStatsRequest *req,
                                   Runtime__V1__ListPodSandboxStatsResponse *resp,
                                   rkl_error *reterr);
int rkl_api_update_pod_sandbox_resources(rkl_api_ctx *ctx,
                                         const Runtime__V1__UpdatePodSandboxResourcesRequest *req,
                                         Runtime__V1__UpdatePodSandboxResourcesResponse *resp,
                                         rkl_error *reterr);
int rkl_api_update_container_resources(rkl_api_ctx *ctx,
                                       const Runtime__V1__UpdateContainerResourcesRequest *req,
                                       Runtime__V1__UpdateContainerResourcesResponse *resp,
                                       rkl_error *reterr);
/* The two stats lists in pages (page.h), made as ListContainerStats and
 * ListPodSandboxStats make theirs. */
int rkl_api_stream_container_stats(rkl_api_ctx *ctx,
                                   const Runtime__V1__StreamContainerStatsRequest *req,
                                   Runtime__V1__StreamContainerStatsResponse *resp,
                                   rkl_error *reterr);
int rkl_api_stream_pod_sandbox_stats(rkl_api_ctx *ctx,
                                     const Runtime__V1__StreamPodSandboxStatsRequest *req,
                                     Runtime__V1__StreamPodSandboxStatsResponse *resp,
                                     rkl_error *reterr);
