/* systemd over sd-bus. The bus is thread-affine: only the reconciler thread uses it. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

typedef struct sd_bus sd_bus;

/* address: NULL or "system" for the system bus; otherwise a D-Bus address such as
 * "unix:path=/run/user/0/systemd/private" (a direct connection to a service manager, with
 * no bus daemon and no Hello). */
int rkl_unit_connect(const char *address, sd_bus **ret, rkl_error *reterr);
/* The manager's Version property; a cheap liveness probe. */
int rkl_unit_manager_version(sd_bus *bus, char **ret, rkl_error *reterr);
/* Asks the manager for JobRemoved and PropertiesChanged signals. */
int rkl_unit_subscribe(sd_bus *bus, rkl_error *reterr);

/* The unit name for a sandbox ID: "rktlet-<id>.service". */
char *rkl_unit_name_for_sandbox(const char *sandbox_id);
/* Where the system manager puts that unit's cgroup (transient units go to system.slice):
 * "system.slice/rktlet-<id>.service". */
char *rkl_unit_cgroup_for_sandbox(const char *sandbox_id);
/* A systemd slice name from a CRI cgroup_parent as kubelet's systemd driver writes it
 * ("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod<uid>.slice" gives
 * "kubepods-besteffort-pod<uid>.slice"). -EINVAL unless it ends in a valid ".slice". */
int rkl_unit_slice_from_cgroup_parent(const char *cgroup_parent, char **ret);

typedef struct rkl_unit_spec {
        const char *name;        /* "rktlet-<id>.service" */
        const char *description; /* shown by systemctl status */
        char *const *argv;       /* ExecStart, argv[0] absolute */
        char *const *env;        /* "K=V" strings, or NULL */
        const char *slice;       /* NULL: the manager's default */
        const char *log_path;    /* stdout and stderr appended here, or NULL (journal) */
        uint64_t stop_timeout_usec;
} rkl_unit_spec;

/* StartTransientUnit (Type=exec, KillMode=mixed, CollectMode=inactive-or-failed), then
 * waits up to timeout for its job: 0 when the process was started, -EEXIST when a unit of
 * that name already exists, -EIO when the job failed (the program could not be run). */
int rkl_unit_start(sd_bus *bus, const rkl_unit_spec *spec, uint64_t timeout_usec,
                   rkl_error *reterr);
/* StopUnit in "replace" mode, without waiting for the job. -ENOENT when no such unit is
 * loaded (already stopped and collected). */
int rkl_unit_stop(sd_bus *bus, const char *name, rkl_error *reterr);
/* A unit's limits; 0 leaves one as it is. */
typedef struct rkl_unit_limits {
        uint64_t cpu_shares;     /* cgroup v1's shares (base/model.h's bounds): CPUShares= */
        uint64_t cpu_quota_usec; /* per period: CPUQuota= */
        uint64_t cpu_period_usec;
        uint64_t memory_bytes; /* MemoryLimit= (v1) and MemoryMax= (v2) */
} rkl_unit_limits;

/* SetUnitProperties (runtime): systemd writes them into whichever hierarchies its cgroup is
 * in, and keeps them through its own reloads, which a write to cgroupfs would not survive. */
int rkl_unit_set_limits(sd_bus *bus, const char *name, const rkl_unit_limits *l, rkl_error *reterr);
/* Sends a signal to the unit's processes (who: "main" or "all"). */
int rkl_unit_kill(sd_bus *bus, const char *name, const char *who, int sig, rkl_error *reterr);

/* Names of the loaded units matching a glob pattern ("rktlet-*.service"). */
int rkl_unit_list(sd_bus *bus, const char *pattern, char ***ret, rkl_error *reterr);
/* The sandbox ID in a unit name from rkl_unit_name_for_sandbox(), or NULL. */
char *rkl_unit_sandbox_id(const char *unit);

typedef enum rkl_unit_active {
        RKL_UNIT_INACTIVE,
        RKL_UNIT_ACTIVATING,
        RKL_UNIT_ACTIVE,
        RKL_UNIT_DEACTIVATING,
        RKL_UNIT_FAILED,
        RKL_UNIT_GONE, /* not loaded: never started, or stopped and collected */
        _RKL_UNIT_ACTIVE_MAX,
} rkl_unit_active;

typedef struct rkl_unit_state {
        rkl_unit_active active;
        pid_t main_pid;  /* 0 when none */
        char result[32]; /* "success", "exit-code", "signal", ... */
} rkl_unit_state;

int rkl_unit_get_state(sd_bus *bus, const char *name, rkl_unit_state *ret, rkl_error *reterr);
/* The loaded units matching a glob pattern with their active states, in one call:
 * *ret_names (NULL-terminated) and *ret_active side by side. A unit not listed is
 * RKL_UNIT_GONE. */
int rkl_unit_list_active(sd_bus *bus, const char *pattern, char ***ret_names,
                         rkl_unit_active **ret_active, rkl_error *reterr);
const char *rkl_unit_active_to_string(rkl_unit_active a);
