/* The reconciler's one seam: every way it reaches rkt, the system manager, rkt's pod
 * directories, apps' cgroups, CNI's plugins, the clock and its worker pool goes through this
 * table. The
 * daemon uses rkl_reconciler_real_ops (ops.c: rkt/, unit.c over sd-bus, rkt/poddir.h, cni/,
 * CLOCK_REALTIME, the worker pool); a test passes its doubles in rkl_reconciler_config.ops and
 * drives the passes itself (rkl_reconciler_run_pass()), with no process, no bus and no real time.
 *
 * Each verb has the contract of the function it stands for (named in its comment), with
 * userdata first (rkl_reconciler_config.ops_userdata; the real table's is the reconciler).
 * The rkt and CNI verbs and pod_read run on the worker pool as well as on the reconciler
 * thread; the rest on the reconciler thread only. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "unit.h"
#include "base/error.h"
#include "cni/cni.h"
#include "rkt/command.h"
#include "rkt/poddir.h"
#include "rkt/rkt.h"

typedef struct rkl_reconciler_ops {
        /* ---- rkt's verbs (rkt/action.h, rkt/boot.h) ---- */
        int (*app_add)(void *userdata, const char *uuid, const rkl_container_spec *spec,
                       const rkl_rkt_app_opts *o, uint64_t timeout_usec, rkl_error *reterr);
        /* supervisor: the pod's (its nspawn), so that the real one can place the app's first
         * process in cgroups of its own (rkl_app_cgroup_lend); 0 when unknown. */
        int (*app_start)(void *userdata, const char *uuid, const char *app, pid_t supervisor,
                         uint64_t timeout_usec, rkl_error *reterr);
        int (*app_stop)(void *userdata, const char *uuid, const char *app, uint64_t timeout_usec,
                        rkl_error *reterr);
        int (*app_rm)(void *userdata, const char *uuid, const char *app, uint64_t timeout_usec,
                      rkl_error *reterr);
        int (*pod_stop)(void *userdata, const char *uuid, bool force, uint64_t timeout_usec,
                        rkl_error *reterr);
        int (*pod_rm)(void *userdata, const char *uuid, uint64_t timeout_usec, rkl_error *reterr);
        int (*pod_restart_boot)(void *userdata, uint32_t nspawn_pid, rkl_error *reterr);
        /* `rkt version` (rkt/rkt.h), for the probe. */
        int (*rkt_version)(void *userdata, rkl_rkt_version *ret, rkl_error *reterr);

        /* ---- rkt's pod directories (rkt/poddir.h), under the pods directory, which the
         * callers have found open (observing.c's rkl_observing_pods_fd()) ---- */
        int (*pod_read)(void *userdata, const char *uuid, rkl_poddir_pod *ret, rkl_error *reterr);
        int (*pod_list)(void *userdata, char ***ret_uuids, rkl_error *reterr);
        /* Where an app's cgroups are, from its pod's supervisor (cgroup.h:
         * rkl_app_cgroup_paths()): what is read and written there (its processes, limits, OOM
         * kills) is plain files under those directories. */
        int (*app_cgroups)(void *userdata, pid_t supervisor, const char *app, char **ret_procs_dir,
                           char **ret_memory_dir);

        /* ---- CNI's plugins (cni/cni.h), x: the reconciler's plugin directories and
         * timeout ---- */
        int (*cni_add)(void *userdata, const rkl_cni_config *c, const rkl_cni_exec *x,
                       const rkl_cni_runtime *rt, char **ret_result, rkl_error *reterr);
        int (*cni_check)(void *userdata, const rkl_cni_config *c, const rkl_cni_exec *x,
                         const rkl_cni_runtime *rt, const char *result, rkl_error *reterr);
        int (*cni_del)(void *userdata, const rkl_cni_config *c, const rkl_cni_exec *x,
                       const rkl_cni_runtime *rt, const char *result, rkl_error *reterr);

        /* ---- The system manager (unit.h) ---- */
        /* The probe: connects when not connected (and asks for the manager's signals), then
         * asks the manager's version (rkl_unit_manager_version()); a failure there drops the
         * connection, so that the next probe connects again. */
        int (*unit_probe)(void *userdata, char **ret_version, rkl_error *reterr);
        /* Whether there is a connection to it now (the probe makes and drops it). */
        bool (*unit_connected)(void *userdata);
        int (*unit_start)(void *userdata, const rkl_unit_spec *spec, uint64_t timeout_usec,
                          rkl_error *reterr);
        int (*unit_stop)(void *userdata, const char *name, rkl_error *reterr);
        /* One unit's state (rkl_unit_get_state()): RKL_UNIT_GONE when not loaded. */
        int (*unit_state)(void *userdata, const char *name, rkl_unit_state *ret, rkl_error *reterr);
        int (*unit_list)(void *userdata, const char *pattern, char ***ret, rkl_error *reterr);
        int (*unit_list_active)(void *userdata, const char *pattern, char ***ret_names,
                                rkl_unit_active **ret_active, rkl_error *reterr);
        int (*unit_set_limits)(void *userdata, const char *name, const rkl_unit_limits *l,
                               rkl_error *reterr);

        /* ---- Time and threads ---- */
        /* CLOCK_REALTIME in ns (rkl_realtime_ns()): every time the reconciler compares,
         * records or waits for. */
        int64_t (*now_ns)(void *userdata);
        /* A worker's wait between two looks at a pod going down (usleep()). */
        void (*sleep_usec)(void *userdata, uint64_t usec);
        /* Runs fn(arg) on a worker (rkl_workpool_submit() on the reconciler's pool). */
        void (*submit)(void *userdata, void (*fn)(void *arg), void *arg);
} rkl_reconciler_ops;

/* The daemon's: rkt, systemd over sd-bus, the pod directories, the real clock and the
 * reconciler's worker pool. */
extern const rkl_reconciler_ops rkl_reconciler_real_ops;
