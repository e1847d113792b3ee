/* ExecSync at the API's edge: the request checked, the container's state, and the command
 * run on the exec pool (src/exec/ does the work). */
#pragma once

#include "api.h"
#include "lookup.h"
#include "api.pb-c.h"

/* Bytes of stdout and stderr together in a reply: kubelet takes messages of 16 MiB at most
 * (each stream is captured up to 16 MiB, as CRI says; when both are that big, they share). */
#define RKL_API_EXEC_REPLY_MAX ((16 << 20) - (64 << 10))

int rkl_api_exec_sync(rkl_api_ctx *ctx, const Runtime__V1__ExecSyncRequest *req,
                      Runtime__V1__ExecSyncResponse *resp, rkl_error *reterr);
/* How much of out_len and err_len bytes a reply keeps: each at most half of max when both
 * want more, and what one does not use goes to the other. */
void rkl_api_exec_fit(size_t out_len, size_t err_len, size_t max, size_t *ret_out, size_t *ret_err);
/* A command line from a request: one or more arguments, bounded. -EINVAL, -E2BIG. */
int rkl_api_cmd_check(size_t n_cmd, char *const *cmd, rkl_error *reterr);
/* The cached view of a container that runs (its main process known), by ID or prefix:
 * -EBADFD when it does not, and the lookup's errors. */
int rkl_api_container_running(rkl_api_ctx *ctx, const char *given, rkl_container_view **ret,
                              rkl_error *reterr);
