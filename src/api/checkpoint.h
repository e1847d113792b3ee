/* CheckpointContainer, CheckpointPod and RestorePod: rkt 1.30 has no checkpoint and restore
 * (no CRIU integration), so each answers UNIMPLEMENTED saying so, rather than the bare "not
 * implemented" of a method rktlet has no handler for. */
#pragma once

#include "api.h"
#include "api.pb-c.h"

int rkl_api_checkpoint_container(rkl_api_ctx *ctx,
                                 const Runtime__V1__CheckpointContainerRequest *req,
                                 Runtime__V1__CheckpointContainerResponse *resp, rkl_error *reterr);
int rkl_api_checkpoint_pod(rkl_api_ctx *ctx, const Runtime__V1__CheckpointPodRequest *req,
                           Runtime__V1__CheckpointPodResponse *resp, rkl_error *reterr);
int rkl_api_restore_pod(rkl_api_ctx *ctx, const Runtime__V1__RestorePodRequest *req,
                        Runtime__V1__RestorePodResponse *resp, rkl_error *reterr);
