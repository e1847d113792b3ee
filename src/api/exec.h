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
/* The container's seccomp filter for a command run in it (rkl_rkt_exec_seccomp()), in a;
 * NULL: none. ExecSync and Exec alike. */
char *rkl_api_exec_seccomp(rkl_arena *a, const rkl_container_spec *spec);
/* A command line from a request: one or more arguments, bounded. -EINVAL, -E2BIG. */
int rkl_api_cmd_check(size_t n_cmd, char *const *cmd, rkl_error *reterr);
/* The cached view of a container that runs (its main process known), by ID or prefix, or
 * of a container whose start was accepted and whose app does not run yet (*ret_starting):
 * kubelet runs a postStart hook, critest an exec, right after StartContainer answers,
 * before rkt has started the app. -EBADFD when it neither runs nor starts, and the lookup's
 * errors. */
int rkl_api_container_running_or_starting(rkl_api_ctx *ctx, const char *given,
                                          rkl_container_view **ret, bool *ret_starting,
                                          rkl_error *reterr);
/* Waits for such a container to run (the cache polled every 20 ms), at most timeout_usec
 * (0: 120 s) from accepted_usec (CLOCK_MONOTONIC): 0 with its process in *ret_pid; -ENOENT
 * when it is gone, -EBADFD when it will not run or (without a timeout) did not in time,
 * -ETIMEDOUT past the timeout, -ECANCELED when the call was. */
int rkl_api_container_wait_running(rkl_cache *cache, rkl_api_call *call, const char *id,
                                   uint64_t accepted_usec, uint64_t timeout_usec, pid_t *ret_pid,
                                   rkl_error *reterr);
