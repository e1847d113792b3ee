/* The real table of operations (ops.h): rkt's verbs, the pod directories under the
 * reconciler's pods directory, CNI's plugins, the system manager over its bus, CLOCK_REALTIME and
 * its worker pool. userdata is the reconciler. */
#include "ops.h"

#include <unistd.h>

#include "app-cgroup.h"
#include "reconciler-internal.h"
#include "observing.h"
#include "base/log.h"
#include "base/time-util.h"
#include "base/workpool.h"
#include "rkt/action.h"
#include "rkt/boot.h"
#include "rkt/poddir.h"
#include "base/banned.h"

static int real_app_add(void *userdata, const char *uuid, const rkl_container_spec *spec,
                        const rkl_rkt_app_opts *o, uint64_t timeout_usec, rkl_error *reterr)
{
        rkl_reconciler *r = userdata;
        return rkl_rkt_app_add(r->rkt, uuid, spec, o, timeout_usec, reterr);
}

static int real_app_start(void *userdata, const char *uuid, const char *app, pid_t supervisor,
                          uint64_t timeout_usec, rkl_error *reterr)
{
        rkl_reconciler *r = userdata;
        rkl_app_cgroup_loan *loan = NULL;
        int k = supervisor ? rkl_app_cgroup_lend(supervisor, app, &loan) : 0;
        if (k < 0)
                rkl_log_debug("app %s: its first process starts in its pod's cgroups (%s): "
                              "what it charges before it is seen is the pod's",
                              app, strerror(-k));
        k = rkl_rkt_app_start(r->rkt, uuid, app, timeout_usec, reterr);
        rkl_app_cgroup_loan_end(loan, k >= 0);
        return k;
}

static int real_app_stop(void *userdata, const char *uuid, const char *app, uint64_t timeout_usec,
                         rkl_error *reterr)
{
        rkl_reconciler *r = userdata;
        return rkl_rkt_app_stop(r->rkt, uuid, app, timeout_usec, reterr);
}

static int real_app_rm(void *userdata, const char *uuid, const char *app, uint64_t timeout_usec,
                       rkl_error *reterr)
{
        rkl_reconciler *r = userdata;
        return rkl_rkt_app_rm(r->rkt, uuid, app, timeout_usec, reterr);
}

static int real_pod_stop(void *userdata, const char *uuid, bool force, uint64_t timeout_usec,
                         rkl_error *reterr)
{
        rkl_reconciler *r = userdata;
        return rkl_rkt_pod_stop(r->rkt, uuid, force, timeout_usec, reterr);
}

static int real_pod_rm(void *userdata, const char *uuid, uint64_t timeout_usec, rkl_error *reterr)
{
        rkl_reconciler *r = userdata;
        return rkl_rkt_pod_rm(r->rkt, uuid, timeout_usec, reterr);
}

static int real_pod_restart_boot(void *userdata, uint32_t nspawn_pid, rkl_error *reterr)
{
        return rkl_rkt_pod_restart_boot(nspawn_pid, reterr);
}

static int real_rkt_version(void *userdata, rkl_rkt_version *ret, rkl_error *reterr)
{
        rkl_reconciler *r = userdata;
        return rkl_rkt_version_get(r->rkt, ret, reterr);
}

static int real_pod_read(void *userdata, const char *uuid, rkl_poddir_pod *ret, rkl_error *reterr)
{
        rkl_reconciler *r = userdata;
        return rkl_poddir_read(rkl_observing_pods_fd(r), uuid, ret, reterr);
}

static int real_pod_list(void *userdata, char ***ret_uuids, rkl_error *reterr)
{
        rkl_reconciler *r = userdata;
        return rkl_poddir_list(rkl_observing_pods_fd(r), ret_uuids, reterr);
}

static int real_app_cgroups(void *userdata, pid_t supervisor, const char *app, char **ret_procs_dir,
                            char **ret_memory_dir)
{
        return rkl_app_cgroup_paths(supervisor, app, ret_procs_dir, ret_memory_dir);
}

static int real_cni_add(void *userdata, const rkl_cni_config *c, const rkl_cni_exec *x,
                        const rkl_cni_runtime *rt, char **ret_result, rkl_error *reterr)
{
        return rkl_cni_add(c, x, rt, ret_result, reterr);
}

static int real_cni_check(void *userdata, const rkl_cni_config *c, const rkl_cni_exec *x,
                          const rkl_cni_runtime *rt, const char *result, rkl_error *reterr)
{
        return rkl_cni_check(c, x, rt, result, reterr);
}

static int real_cni_del(void *userdata, const rkl_cni_config *c, const rkl_cni_exec *x,
                        const rkl_cni_runtime *rt, const char *result, rkl_error *reterr)
{
        return rkl_cni_del(c, x, rt, result, reterr);
}

static int real_unit_probe(void *userdata, char **ret_version, rkl_error *reterr)
{
        rkl_reconciler *r = userdata;
        if (!r->bus) {
                int k = rkl_unit_connect(r->cfg.systemd_bus, &r->bus, reterr);
                if (k < 0)
                        return k;
                /* Without the signals, the pass's timers still see units come and go. */
                rkl_error err = RKL_ERROR_INIT;
                if (rkl_unit_subscribe(r->bus, &err) < 0)
                        rkl_log_debug("no unit signals from systemd: %s", err.msg);
        }
        int k = rkl_unit_manager_version(r->bus, ret_version, reterr);
        if (k < 0)
                /* Reconnect on the next probe: the manager may have restarted. */
                r->bus = sd_bus_flush_close_unref(r->bus);
        return k;
}

static bool real_unit_connected(void *userdata)
{
        rkl_reconciler *r = userdata;
        return r->bus != NULL;
}

static int real_unit_start(void *userdata, const rkl_unit_spec *spec, uint64_t timeout_usec,
                           rkl_error *reterr)
{
        rkl_reconciler *r = userdata;
        return rkl_unit_start(r->bus, spec, timeout_usec, reterr);
}

static int real_unit_stop(void *userdata, const char *name, rkl_error *reterr)
{
        rkl_reconciler *r = userdata;
        return rkl_unit_stop(r->bus, name, reterr);
}

static int real_unit_state(void *userdata, const char *name, rkl_unit_state *ret, rkl_error *reterr)
{
        rkl_reconciler *r = userdata;
        return rkl_unit_get_state(r->bus, name, ret, reterr);
}

static int real_unit_list(void *userdata, const char *pattern, char ***ret, rkl_error *reterr)
{
        rkl_reconciler *r = userdata;
        return rkl_unit_list(r->bus, pattern, ret, reterr);
}

static int real_unit_list_active(void *userdata, const char *pattern, char ***ret_names,
                                 rkl_unit_active **ret_active, rkl_error *reterr)
{
        rkl_reconciler *r = userdata;
        return rkl_unit_list_active(r->bus, pattern, ret_names, ret_active, reterr);
}

static int real_unit_set_limits(void *userdata, const char *name, const rkl_unit_limits *l,
                                rkl_error *reterr)
{
        rkl_reconciler *r = userdata;
        return rkl_unit_set_limits(r->bus, name, l, reterr);
}

static int64_t real_now_ns(void *userdata)
{
        return rkl_realtime_ns();
}

static void real_sleep_usec(void *userdata, uint64_t usec)
{
        usleep((useconds_t)usec);
}

static void real_submit(void *userdata, void (*fn)(void *arg), void *arg)
{
        rkl_reconciler *r = userdata;
        rkl_workpool_submit(r->pool, fn, arg);
}

const rkl_reconciler_ops rkl_reconciler_real_ops = {
    .app_add = real_app_add,
    .app_start = real_app_start,
    .app_stop = real_app_stop,
    .app_rm = real_app_rm,
    .pod_stop = real_pod_stop,
    .pod_rm = real_pod_rm,
    .pod_restart_boot = real_pod_restart_boot,
    .rkt_version = real_rkt_version,
    .pod_read = real_pod_read,
    .pod_list = real_pod_list,
    .app_cgroups = real_app_cgroups,
    .cni_add = real_cni_add,
    .cni_check = real_cni_check,
    .cni_del = real_cni_del,
    .unit_probe = real_unit_probe,
    .unit_connected = real_unit_connected,
    .unit_start = real_unit_start,
    .unit_stop = real_unit_stop,
    .unit_list = real_unit_list,
    .unit_state = real_unit_state,
    .unit_list_active = real_unit_list_active,
    .unit_set_limits = real_unit_set_limits,
    .now_ns = real_now_ns,
    .sleep_usec = real_sleep_usec,
    .submit = real_submit,
};
