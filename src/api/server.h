/* The CRI gRPC server on grpc's C core: a unix socket, completion-queue threads, every
 * RuntimeService and ImageService method registered. */
#pragma once

#include "api.h"

typedef struct rkl_api_server rkl_api_server;

/* Creates the server and binds the socket (mode 0660). Nothing is served before _start. */
int rkl_api_server_new(const rkl_api_config *cfg, rkl_cache *cache, rkl_reconciler *reconciler,
                       rkl_api_server **ret, rkl_error *reterr);
/* Starts the completion-queue threads. */
int rkl_api_server_start(rkl_api_server *s, rkl_error *reterr);
/* Stops accepting calls, lets in-flight calls finish for up to grace_ms, cancels the rest,
 * joins the threads. The socket file is removed. */
void rkl_api_server_shutdown(rkl_api_server *s, int grace_ms);
rkl_api_server *rkl_api_server_free(rkl_api_server *s);

RKL_DEFINE_CLEANUP(rkl_api_server *, rkl_api_server_free)
