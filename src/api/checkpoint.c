#include "checkpoint.h"

#include "base/banned.h"

/* kubelet's ContainerCheckpoint (and KEP-5823's pod checkpoints) take UNIMPLEMENTED as "the
 * runtime cannot": the message says why, for the operator who asked. */
#define NO_CRIU "rkt 1.30 has no checkpoint and restore (no CRIU integration): rktlet cannot %s"

int rkl_api_checkpoint_container(rkl_api_ctx *ctx,
                                 const Runtime__V1__CheckpointContainerRequest *req,
                                 Runtime__V1__CheckpointContainerResponse *resp, rkl_error *reterr)
{
        return rkl_error_set(reterr, -EOPNOTSUPP,
                             "runtime.v1.RuntimeService/CheckpointContainer: " NO_CRIU,
                             "checkpoint a container");
}

int rkl_api_checkpoint_pod(rkl_api_ctx *ctx, const Runtime__V1__CheckpointPodRequest *req,
                           Runtime__V1__CheckpointPodResponse *resp, rkl_error *reterr)
{
        return rkl_error_set(reterr, -EOPNOTSUPP,
                             "runtime.v1.RuntimeService/CheckpointPod: " NO_CRIU,
                             "checkpoint a pod");
}

int rkl_api_restore_pod(rkl_api_ctx *ctx, const Runtime__V1__RestorePodRequest *req,
                        Runtime__V1__RestorePodResponse *resp, rkl_error *reterr)
{
        return rkl_error_set(reterr, -EOPNOTSUPP, "runtime.v1.RuntimeService/RestorePod: " NO_CRIU,
                             "restore a pod");
}
