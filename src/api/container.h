/* RuntimeService container handlers. Writes commit one store transaction and return; reads
 * answer from the cache only. */
#pragma once

#include "api.h"
#include "api.pb-c.h"

int rkl_api_create_container(rkl_api_ctx *ctx, const Runtime__V1__CreateContainerRequest *req,
                             Runtime__V1__CreateContainerResponse *resp, rkl_error *reterr);
int rkl_api_start_container(rkl_api_ctx *ctx, const Runtime__V1__StartContainerRequest *req,
                            Runtime__V1__StartContainerResponse *resp, rkl_error *reterr);
int rkl_api_stop_container(rkl_api_ctx *ctx, const Runtime__V1__StopContainerRequest *req,
                           Runtime__V1__StopContainerResponse *resp, rkl_error *reterr);
int rkl_api_remove_container(rkl_api_ctx *ctx, const Runtime__V1__RemoveContainerRequest *req,
                             Runtime__V1__RemoveContainerResponse *resp, rkl_error *reterr);
int rkl_api_list_containers(rkl_api_ctx *ctx, const Runtime__V1__ListContainersRequest *req,
                            Runtime__V1__ListContainersResponse *resp, rkl_error *reterr);
int rkl_api_container_status(rkl_api_ctx *ctx, const Runtime__V1__ContainerStatusRequest *req,
                             Runtime__V1__ContainerStatusResponse *resp, rkl_error *reterr);

typedef struct rkl_container_view rkl_container_view;
/* A container's CRI status as ContainerStatus answers it (without the verbose info), in a. */
Runtime__V1__ContainerStatus *rkl_api_container_status_pb(rkl_arena *a,
                                                          const rkl_container_view *v);
/* ListContainers' answer in pages (page.h). */
int rkl_api_stream_containers(rkl_api_ctx *ctx, const Runtime__V1__StreamContainersRequest *req,
                              Runtime__V1__StreamContainersResponse *resp, rkl_error *reterr);
