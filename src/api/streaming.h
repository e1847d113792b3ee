/* Exec, Attach and PortForward at the API's edge: the request checked against the cached
 * state, and a URL from the streaming server (src/stream/). Nothing waits on rkt. */
#pragma once

#include "api.h"
#include "api.pb-c.h"

int rkl_api_exec(rkl_api_ctx *ctx, const Runtime__V1__ExecRequest *req,
                 Runtime__V1__ExecResponse *resp, rkl_error *reterr);
int rkl_api_attach(rkl_api_ctx *ctx, const Runtime__V1__AttachRequest *req,
                   Runtime__V1__AttachResponse *resp, rkl_error *reterr);
int rkl_api_port_forward(rkl_api_ctx *ctx, const Runtime__V1__PortForwardRequest *req,
                         Runtime__V1__PortForwardResponse *resp, rkl_error *reterr);
