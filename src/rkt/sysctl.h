/* A pod's namespaced sysctls (net.*, kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "base/model.h"

/* The daemon's hidden helper command (main.c runs rkl_rkt_sysctl_main() for it). */
#define RKL_SYSCTL_COMMAND "__sysctl-in"

/* Whether the kernel keeps key per network or IPC namespace, so that a pod may set it. */
bool rkl_rkt_sysctl_is_namespaced(const char *key);

/* Sets them in the namespaces of the pod whose nspawn has PID nspawn_pid (kernel.hostname,
 * which users may not set, in its UTS namespace); idempotent. */
int rkl_rkt_pod_sysctls(uint32_t nspawn_pid, const rkl_kvs *sysctls, rkl_error *reterr);

/* The helper: argv = {RKL_SYSCTL_COMMAND, <pid>, key=value...}; exit status 0 when all set. */
int rkl_rkt_sysctl_main(int argc, char *argv[]);
