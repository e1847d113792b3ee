/* A CRI client on grpc's core C API: blocking unary calls, and a pipeline that keeps N calls
 * in flight on one channel and one completion queue. Requests go in packed, so that the
 * timed part is the RPC itself (send, server, receive), not the client's protobuf work. */
#pragma once

#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "stats.h"
#include "base/macro.h"

typedef struct rkb_client rkb_client;

/* A packed request, reusable for any number of calls. */
typedef struct rkb_request rkb_request;

/* What one call brought back. The response is unpacked only when asked for. */
typedef struct rkb_reply {
        int status; /* grpc_status_code; 0 = OK */
        char *details;
        uint64_t took_ns; /* start of the batch to its completion */
        ProtobufCMessage *resp;
} rkb_reply;

int rkb_client_new(const char *endpoint, rkb_client **ret);
/* A client on c's channel with a completion queue of its own, for another thread: calls from
 * several threads share one connection, as kubelet's do. Free it before c. */
rkb_client *rkb_client_new_sharing(rkb_client *c);
rkb_client *rkb_client_free(rkb_client *c);

/* method is the full path, e.g. "/runtime.v1.RuntimeService/Version". */
rkb_request *rkb_request_new(const char *method, const ProtobufCMessage *msg);
rkb_request *rkb_request_free(rkb_request *r);

/* One unary call; resp_desc NULL skips unpacking. Returns 0 when the call completed (look at
 * reply->status), -errno when it could not be started. */
int rkb_client_call(rkb_client *c, const rkb_request *req,
                    const ProtobufCMessageDescriptor *resp_desc, uint64_t timeout_usec,
                    rkb_reply *reply);
void rkb_reply_release(rkb_reply *reply);

typedef struct rkb_pipeline_result {
        uint64_t calls, errors, elapsed_ns;
        int first_error; /* grpc status of the first failed call */
} rkb_pipeline_result;

/* Keeps `inflight` calls of req outstanding for duration_usec; every completion is recorded in
 * lat. Returns -errno when a call could not be started. */
int rkb_client_pipeline(rkb_client *c, const rkb_request *req, unsigned inflight,
                        uint64_t duration_usec, rkb_samples *lat, rkb_pipeline_result *ret);

RKL_DEFINE_CLEANUP(rkb_request *, rkb_request_free)
