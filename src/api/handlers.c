/* Which CRI methods rktlet implements. A method missing here answers UNIMPLEMENTED naming
 * itself, which is what kubelet's fallbacks expect (never UNKNOWN). */
#include "api.h"
#include "runtime.h"

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

static const handler_entry handlers[] = {
    {"RuntimeService", "Version", rkl_api_version_thunk},
    {"RuntimeService", "Status", rkl_api_status_thunk},
    {"RuntimeService", "RuntimeConfig", rkl_api_runtime_config_thunk},
};

rkl_api_handler rkl_api_handler_lookup(const char *service, const char *method)
{
        for (size_t i = 0; i < ELEMENTSOF(handlers); i++)
                if (streq(handlers[i].service, service) && streq(handlers[i].method, method))
                        return handlers[i].handler;
        return NULL;
}
