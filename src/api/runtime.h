/* RuntimeService handlers. Each has the rkl_api_handler shape with concrete types. */
#pragma once

#include "api.h"
#include "api.pb-c.h"

int rkl_api_version(rkl_api_ctx *ctx, const Runtime__V1__VersionRequest *req,
                    Runtime__V1__VersionResponse *resp, rkl_error *reterr);
int rkl_api_status(rkl_api_ctx *ctx, const Runtime__V1__StatusRequest *req,
                   Runtime__V1__StatusResponse *resp, rkl_error *reterr);
int rkl_api_runtime_config(rkl_api_ctx *ctx, const Runtime__V1__RuntimeConfigRequest *req,
                           Runtime__V1__RuntimeConfigResponse *resp, rkl_error *reterr);
