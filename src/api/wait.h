/* --wait: a mutating call answers once the reconciler has carried it out, not once it is
 * recorded (docs/design.md, 'The async contract'). kubelet reads a sandbox's IP right after
 * RunPodSandbox, and gives it to the pod's containers: with the answer at once, the IP is
 * not known yet. The reply waits on the API's wait pool, watching the cache, which the
 * reconciler fills with what it observes; other calls are answered meanwhile. */
#pragma once

#include "api.h"

typedef enum rkl_api_wait_for {
        RKL_API_WAIT_POD_READY,         /* running in rkt, with its IP */
        RKL_API_WAIT_POD_STOPPED,       /* stopped, and none of its containers running */
        RKL_API_WAIT_CONTAINER_STARTED, /* running or exited; a start that failed for good
                                         * is the call's error */
        RKL_API_WAIT_CONTAINER_STOPPED, /* not running */
        _RKL_API_WAIT_MAX,
} rkl_api_wait_for;

/* How long a call waits at most, beyond stop_timeout_usec for a stop (its kill deadline):
 * past it the call fails with DEADLINE_EXCEEDED, and rktlet goes on carrying it out. */
#define RKL_API_WAIT_MAX_USEC (240 * USEC_PER_SEC)

/* Called by a handler whose change is committed, with its response filled: 0 when the call
 * is to answer now (--wait is off, or the wait pool is full), else RKL_API_DEFERRED: the
 * reply goes out once id has reached what, or with the error that stopped it. */
int rkl_api_wait(rkl_api_ctx *ctx, rkl_api_wait_for what, const char *id,
                 uint64_t stop_timeout_usec);
