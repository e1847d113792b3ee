#include "unit.h"

#include <systemd/sd-bus.h>

#include "base/alloc.h"
#include "base/model.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "base/banned.h"

#define SD_DEST    "org.freedesktop.systemd1"
#define SD_PATH    "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"
#define SD_UNIT    "org.freedesktop.systemd1.Unit"
#define SD_SERVICE "org.freedesktop.systemd1.Service"

/* The sd-bus error name says more than its errno mapping: keep both. */
static int bus_error(rkl_error *reterr, int r, const sd_bus_error *e, const char *what)
{
        if (e && sd_bus_error_is_set(e))
                return rkl_error_set(reterr, r, "%s: %s (%s)", what,
                                     e->message ? e->message : strerror(-r), e->name);
        return rkl_error_set(reterr, r, "%s: %s", what, strerror(-r));
}

int rkl_unit_connect(const char *address, sd_bus **ret, rkl_error *reterr)
{
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        if (isempty(address) || streq(address, "system")) {
                r = sd_bus_open_system(&bus);
                if (r < 0)
                        return rkl_error_set(reterr, r, "cannot connect to the system bus: %s",
                                             strerror(-r));
                *ret = TAKE_PTR(bus);
                return 0;
        }

        r = sd_bus_new(&bus);
        if (r < 0)
                return rkl_error_set(reterr, r, "sd_bus_new: %s", strerror(-r));
        r = sd_bus_set_address(bus, address);
        if (r < 0)
                return rkl_error_set(reterr, r, "bad bus address '%s': %s", address, strerror(-r));
        r = sd_bus_start(bus);
        if (r < 0)
                return rkl_error_set(reterr, r, "cannot connect to '%s': %s", address,
                                     strerror(-r));
        *ret = TAKE_PTR(bus);
        return 0;
}

int rkl_unit_manager_version(sd_bus *bus, char **ret, rkl_error *reterr)
{
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        char *v = NULL;
        int r = sd_bus_get_property_string(bus, SD_DEST, SD_PATH, SD_MANAGER, "Version", &e, &v);
        if (r < 0)
                return bus_error(reterr, r, &e, "systemd Version");
        *ret = v;
        return 0;
}

int rkl_unit_subscribe(sd_bus *bus, rkl_error *reterr)
{
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        int r = sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "Subscribe", &e, NULL, "");
        if (r < 0)
                return bus_error(reterr, r, &e, "Subscribe");
        return 0;
}

char *rkl_unit_name_for_sandbox(const char *sandbox_id)
{
        return rkl_xasprintf("rktlet-%s.service", sandbox_id);
}

char *rkl_unit_cgroup_for_sandbox(const char *sandbox_id)
{
        _cleanup_free_ char *unit = rkl_unit_name_for_sandbox(sandbox_id);
        return rkl_xasprintf("system.slice/%s", unit);
}

char *rkl_unit_sandbox_id(const char *unit)
{
        size_t n = strlen(unit);
        if (n != strlen("rktlet-") + RKL_ID_LEN + strlen(".service") ||
            strncmp(unit, "rktlet-", 7) != 0 || !streq(unit + n - 8, ".service"))
                return NULL;
        char *id = rkl_xstrndup(unit + 7, RKL_ID_LEN);
        if (!rkl_id_is_valid(id))
                id = mfree(id);
        return id;
}

static rkl_unit_active active_from_string(const char *active);

int rkl_unit_list_active(sd_bus *bus, const char *pattern, char ***ret_names,
                         rkl_unit_active **ret_active, rkl_error *reterr)
{
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ rkl_unit_active *active = NULL;
        size_t n = 0;
        const char *name, *state;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, SD_DEST, SD_PATH, SD_MANAGER,
                                           "ListUnitsByPatterns");
        if (r >= 0)
                r = sd_bus_message_append_strv(m, NULL); /* any state */
        if (r >= 0)
                r = sd_bus_message_append_strv(m, (char **)RKL_STRV(pattern));
        if (r >= 0)
                r = sd_bus_call(bus, m, 0, &e, &reply);
        if (r < 0)
                return bus_error(reterr, r, &e, "ListUnitsByPatterns");
        r = sd_bus_message_enter_container(reply, 'a', "(ssssssouso)");
        while (r > 0) {
                r = sd_bus_message_read(reply, "(ssssssouso)", &name, NULL, NULL, &state, NULL,
                                        NULL, NULL, NULL, NULL, NULL);
                if (r > 0) {
                        rkl_strv_push(&names, name);
                        active = rkl_xrealloc(active, (n + 1) * sizeof(*active));
                        active[n++] = active_from_string(state);
                }
        }
        if (r < 0)
                return rkl_error_set(reterr, r, "ListUnitsByPatterns reply: %s", strerror(-r));
        *ret_names = names ? TAKE_PTR(names) : rkl_xnew0(char *, 1);
        if (ret_active)
                *ret_active = active ? TAKE_PTR(active) : rkl_xnew0(rkl_unit_active, 1);
        return 0;
}

int rkl_unit_list(sd_bus *bus, const char *pattern, char ***ret, rkl_error *reterr)
{
        return rkl_unit_list_active(bus, pattern, ret, NULL, reterr);
}

static bool slice_name_is_valid(const char *s)
{
        size_t n = strlen(s);
        if (n <= strlen(".slice") || n > 255 || !streq(s + n - strlen(".slice"), ".slice"))
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                      (*p >= '0' && *p <= '9') || strchr(":-_.\\", *p)))
                        return false;
        return s[0] != '-' && s[0] != '.';
}

int rkl_unit_slice_from_cgroup_parent(const char *cgroup_parent, char **ret)
{
        const char *base = strrchr(cgroup_parent, '/');
        base = base ? base + 1 : cgroup_parent;
        if (!slice_name_is_valid(base))
                return -EINVAL;
        *ret = rkl_xstrdup(base);
        return 0;
}

static int append_exec_start(sd_bus_message *m, char *const *argv)
{
        int r = sd_bus_message_open_container(m, 'r', "sv");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", "ExecStart");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'v', "a(sasb)");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(sasb)");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'r', "sasb");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", argv[0]);
        if (r >= 0)
                r = sd_bus_message_append_strv(m, (char **)argv);
        if (r >= 0)
                r = sd_bus_message_append(m, "b", 0);
        for (int i = 0; i < 4 && r >= 0; i++)
                r = sd_bus_message_close_container(m);
        return r;
}

static int append_strv_property(sd_bus_message *m, const char *name, char *const *l)
{
        int r = sd_bus_message_open_container(m, 'r', "sv");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", name);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'v', "as");
        if (r >= 0)
                r = sd_bus_message_append_strv(m, (char **)l);
        for (int i = 0; i < 2 && r >= 0; i++)
                r = sd_bus_message_close_container(m);
        return r;
}

static int build_properties(sd_bus_message *m, const rkl_unit_spec *spec)
{
        int r;

        r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r < 0)
                return r;
        r = sd_bus_message_append(
            m, "(sv)(sv)(sv)(sv)(sv)(sv)(sv)", "Description", "s",
            spec->description ? spec->description : spec->name, "Type", "s", "exec",
            /* SIGTERM to the supervisor, which stops the pod; SIGKILL for the rest. */
            "KillMode", "s", "mixed", "SendSIGKILL", "b", 1,
            /* Failed sandboxes must not pile up as units. */
            "CollectMode", "s", "inactive-or-failed", "WorkingDirectory", "s", "/",
            "TimeoutStopUSec", "t",
            spec->stop_timeout_usec ? spec->stop_timeout_usec : 30 * USEC_PER_SEC);
        if (r < 0)
                return r;
        if (spec->slice) {
                r = sd_bus_message_append(m, "(sv)", "Slice", "s", spec->slice);
                if (r < 0)
                        return r;
        }
        if (spec->log_path) {
                r = sd_bus_message_append(m, "(sv)(sv)", "StandardOutputFileToAppend", "s",
                                          spec->log_path, "StandardErrorFileToAppend", "s",
                                          spec->log_path);
                if (r < 0)
                        return r;
        }
        if (spec->env) {
                r = append_strv_property(m, "Environment", spec->env);
                if (r < 0)
                        return r;
        }
        r = append_exec_start(m, spec->argv);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(m);
}

typedef struct job_wait {
        const char *job;
        char *result;
} job_wait;

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        job_wait *w = userdata;
        const char *path, *unit, *result;
        uint32_t id;

        if (sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) < 0)
                return 0;
        if (w->job && streq(path, w->job) && !w->result)
                w->result = rkl_xstrdup(result);
        return 0;
}

int rkl_unit_start(sd_bus *bus, const rkl_unit_spec *spec, uint64_t timeout_usec, rkl_error *reterr)
{
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;
        job_wait w = {0};
        int r;

        assert(spec->argv && spec->argv[0] && spec->argv[0][0] == '/');

        /* Watch for the job before starting it, or its end could be missed. */
        r = sd_bus_match_signal(bus, &slot, NULL, SD_PATH, SD_MANAGER, "JobRemoved", on_job_removed,
                                &w);
        if (r < 0)
                return rkl_error_set(reterr, r, "cannot watch jobs: %s", strerror(-r));

        r = sd_bus_message_new_method_call(bus, &m, SD_DEST, SD_PATH, SD_MANAGER,
                                           "StartTransientUnit");
        if (r >= 0)
                r = sd_bus_message_append(m, "ss", spec->name, "fail");
        if (r >= 0)
                r = build_properties(m, spec);
        if (r >= 0)
                r = sd_bus_message_append(m, "a(sa(sv))", 0);
        if (r < 0)
                return rkl_error_set(reterr, r, "cannot build StartTransientUnit: %s",
                                     strerror(-r));

        r = sd_bus_call(bus, m, 0, &e, &reply);
        if (r < 0) {
                if (sd_bus_error_has_name(&e, "org.freedesktop.systemd1.UnitExists"))
                        r = -EEXIST;
                return bus_error(reterr, r, &e, spec->name);
        }
        const char *job;
        r = sd_bus_message_read(reply, "o", &job);
        if (r < 0)
                return rkl_error_set(reterr, r, "StartTransientUnit reply: %s", strerror(-r));
        w.job = job;

        uint64_t deadline = rkl_now_usec(CLOCK_MONOTONIC) + timeout_usec;
        while (!w.result) {
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return rkl_error_set(reterr, r, "bus: %s", strerror(-r));
                if (r > 0)
                        continue;
                uint64_t now = rkl_now_usec(CLOCK_MONOTONIC);
                if (now >= deadline)
                        return rkl_error_set(reterr, -ETIMEDOUT,
                                             "%s: its start job did not finish in time",
                                             spec->name);
                r = sd_bus_wait(bus, deadline - now);
                if (r < 0)
                        return rkl_error_set(reterr, r, "bus: %s", strerror(-r));
        }
        _cleanup_free_ char *result = w.result;
        if (!streq(result, "done"))
                return rkl_error_set(reterr, -EIO, "%s: start job %s", spec->name, result);
        return 0;
}

static bool is_no_such_unit(const sd_bus_error *e)
{
        return sd_bus_error_has_names(e, "org.freedesktop.systemd1.NoSuchUnit",
                                      "org.freedesktop.systemd1.LoadFailed");
}

int rkl_unit_stop(sd_bus *bus, const char *name, rkl_error *reterr)
{
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        int r = sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "StopUnit", &e, NULL, "ss",
                                   name, "replace");
        if (r < 0)
                return bus_error(reterr, is_no_such_unit(&e) ? -ENOENT : r, &e, name);
        return 0;
}

static int append_u64(sd_bus_message *m, const char *name, uint64_t v)
{
        return sd_bus_message_append(m, "(sv)", name, "t", v);
}

int rkl_unit_set_limits(sd_bus *bus, const char *name, const rkl_unit_limits *l, rkl_error *reterr)
{
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r = sd_bus_message_new_method_call(bus, &m, SD_DEST, SD_PATH, SD_MANAGER,
                                               "SetUnitProperties");
        if (r >= 0)
                r = sd_bus_message_append(m, "sb", name, 1);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(sv)");
        /* Shares only: systemd writes them as cpu.shares on v1 and turns them into a weight
         * on v2, while a CPUWeight= beside them would win on v1 too, scaled. */
        if (r >= 0 && l->cpu_shares)
                r = append_u64(m, "CPUShares", l->cpu_shares);
        if (r >= 0 && l->cpu_quota_usec && l->cpu_period_usec) {
                r = append_u64(m, "CPUQuotaPeriodUSec", l->cpu_period_usec);
                if (r >= 0)
                        r = append_u64(m, "CPUQuotaPerSecUSec",
                                       l->cpu_quota_usec * USEC_PER_SEC / l->cpu_period_usec);
        }
        if (r >= 0 && l->memory_bytes) {
                r = append_u64(m, "MemoryLimit", l->memory_bytes);
                if (r >= 0)
                        r = append_u64(m, "MemoryMax", l->memory_bytes);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r < 0)
                return rkl_error_set(reterr, r, "cannot build SetUnitProperties: %s", strerror(-r));
        r = sd_bus_call(bus, m, 0, &e, NULL);
        if (r < 0)
                return bus_error(reterr, is_no_such_unit(&e) ? -ENOENT : r, &e, name);
        return 0;
}

int rkl_unit_kill(sd_bus *bus, const char *name, const char *who, int sig, rkl_error *reterr)
{
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        int r = sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "KillUnit", &e, NULL, "ssi",
                                   name, who, sig);
        if (r < 0)
                return bus_error(reterr, is_no_such_unit(&e) ? -ENOENT : r, &e, name);
        return 0;
}

static const char *const active_names[_RKL_UNIT_ACTIVE_MAX] = {
    [RKL_UNIT_INACTIVE] = "inactive", [RKL_UNIT_ACTIVATING] = "activating",
    [RKL_UNIT_ACTIVE] = "active",     [RKL_UNIT_DEACTIVATING] = "deactivating",
    [RKL_UNIT_FAILED] = "failed",     [RKL_UNIT_GONE] = "gone",
};

static rkl_unit_active active_from_string(const char *active)
{
        for (int i = 0; i < _RKL_UNIT_ACTIVE_MAX; i++)
                if (streq(active, active_names[i]))
                        return (rkl_unit_active)i;
        return streq(active, "reloading") ? RKL_UNIT_ACTIVE : RKL_UNIT_INACTIVE;
}

const char *rkl_unit_active_to_string(rkl_unit_active a)
{
        return a >= 0 && a < _RKL_UNIT_ACTIVE_MAX ? active_names[a] : NULL;
}

int rkl_unit_get_state(sd_bus *bus, const char *name, rkl_unit_state *ret, rkl_error *reterr)
{
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *active = NULL, *result = NULL;
        const char *path;
        uint32_t pid = 0;
        int r;

        /* GetUnit only finds loaded units; LoadUnit would load a stub for any name. */
        r = sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "GetUnit", &e, &reply, "s", name);
        if (r < 0) {
                if (is_no_such_unit(&e)) {
                        *ret = (rkl_unit_state){.active = RKL_UNIT_GONE};
                        return 0;
                }
                return bus_error(reterr, r, &e, name);
        }
        r = sd_bus_message_read(reply, "o", &path);
        if (r < 0)
                return rkl_error_set(reterr, r, "GetUnit reply: %s", strerror(-r));

        r = sd_bus_get_property_string(bus, SD_DEST, path, SD_UNIT, "ActiveState", &e, &active);
        if (r >= 0)
                r = sd_bus_get_property_trivial(bus, SD_DEST, path, SD_SERVICE, "MainPID", &e, 'u',
                                                &pid);
        if (r >= 0)
                r = sd_bus_get_property_string(bus, SD_DEST, path, SD_SERVICE, "Result", &e,
                                               &result);
        if (r < 0) {
                /* Collected between the two calls. */
                if (sd_bus_error_has_name(&e, "org.freedesktop.DBus.Error.UnknownObject")) {
                        *ret = (rkl_unit_state){.active = RKL_UNIT_GONE};
                        return 0;
                }
                return bus_error(reterr, r, &e, name);
        }

        rkl_unit_state st = {.active = active_from_string(active), .main_pid = (pid_t)pid};
        (void)snprintf(st.result, sizeof(st.result), "%s", result);
        *ret = st;
        return 0;
}
