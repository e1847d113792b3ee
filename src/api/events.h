/* GetContainerEvents: the store's container events (store/events.h), streamed to each
 * subscriber as CRI's ContainerEventResponse. */
#pragma once

#include "api.h"
#include "api.pb-c.h"
#include "store/cache.h"

int rkl_api_get_container_events(rkl_api_ctx *ctx, const Runtime__V1__GetEventsRequest *req,
                                 Runtime__V1__ContainerEventResponse *resp, rkl_error *reterr);

typedef struct rkl_event rkl_event;
/* The event as a ContainerEventResponse: the sandbox's status and its containers' as
 * PodSandboxStatus and ContainerStatus answer them. Encoded once per event, by the first
 * subscriber that sends it. */
const rkl_blob *rkl_api_event_wire(rkl_event *ev);
