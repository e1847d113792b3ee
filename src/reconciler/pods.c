/* Sandboxes: starting a pod's unit (`rkt app sandbox` under systemd), waiting for it to be
 * ready, counting failed creations, and stopping and removing a pod no longer wanted. */
#include "pods.h"

#include <fcntl.h>
#include <unistd.h>

#include "reconciler-internal.h"
#include "actions.h"
#include "app-cgroup.h"
#include "backoff.h"
#include "containers.h"
#include "limits.h"
#include "network.h"
#include "observing.h"
#include "orphans.h"
#include "probe.h"
#include "unit.h"
#include "base/alloc.h"
#include "base/crash.h"
#include "base/fileio.h"
#include "base/hashmap.h"
#include "base/log.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "rkt/action.h"
#include "rkt/poddir.h"
#include "rkt/rkt.h"
#include "store/cache.h"
#include "store/store.h"
#include "base/banned.h"

/* Failed creations before a sandbox fails for good. */
#define MAX_ATTEMPTS 5
/* How often a pending sandbox is looked at again. */
#define PENDING_POLL_USEC (50 * USEC_PER_MSEC)
/* How often a start waiting for an earlier attempt's unit to go asks after it. */
#define OLD_UNIT_POLL_NS (200 * (int64_t)NSEC_PER_MSEC)
/* How often a sandbox whose rkt pod has not appeared yet has its unit asked after: the first
 * time that long after its start, then as often. */
#define UNIT_LOOK_NS (1 * (int64_t)NSEC_PER_SEC)
/* A pending pod not ready this long after its start has its boot looked at, and again as
 * often. */
#define BOOT_LOOK_AFTER_NS (5 * (int64_t)NSEC_PER_SEC)

struct rkl_pods {
        rkl_hashmap *boot_looks; /* uuid -> boot_look*: pending pods whose boot was checked */
        rkl_hashmap *unit_looks; /* sandbox ID -> unit_look*: when its unit is next asked after */
        /* rktlet's units as the manager last listed them (unit_states_refresh()): name -> its
         * state in unit_active, both owned by unit_names; when. */
        rkl_hashmap *unit_states;
        char **unit_names;
        int *unit_active;
        int64_t unit_states_ns;
};

static void unit_states_clear(rkl_pods *p)
{
        p->unit_states = rkl_hashmap_free(p->unit_states);
        p->unit_names = rkl_strv_free(p->unit_names);
        p->unit_active = mfree(p->unit_active);
        p->unit_states_ns = 0;
}

rkl_pods *rkl_pods_new(void)
{
        rkl_pods *p = rkl_xnew0(rkl_pods, 1);
        p->boot_looks = rkl_hashmap_new();
        p->unit_looks = rkl_hashmap_new();
        return p;
}

rkl_pods *rkl_pods_free(rkl_pods *p)
{
        if (!p)
                return NULL;
        rkl_hashmap_free_values(p->boot_looks, free);
        rkl_hashmap_free_values(p->unit_looks, free);
        unit_states_clear(p);
        free(p);
        return NULL;
}

/* A failed attempt: shown in Status and the database, retried after a backoff. */
void rkl_pods_failed_attempt(rkl_reconciler *r, const rkl_pod_record *rec, const char *msg)
{
        rkl_error err = RKL_ERROR_INIT;
        int64_t next = rkl_reconciler__now(r) + rkl_backoff_ns(rec->book.attempts);
        int n = rkl_store_pod_record_error(r->store, rec->id, msg, next, &err);
        rkl_reconciler__wake_at(r, next); /* retry then, not at the next resync */
        rkl_log_object_warning(POD_OBJECT(rec), "sandbox %.12s: %s (attempt %d)", rec->id, msg,
                               n < 0 ? 0 : n);
        rkl_reconciler__write_failed("sandbox", rec->id, "its failure", n, &err);
}

char *rkl_pods_state_path(rkl_reconciler *r, const char *id, const char *name)
{
        return rkl_xasprintf("%s/pods/%s%s%s", r->cfg.state_dir, id, name ? "/" : "",
                             name ? name : "");
}

/* The -errno a sandbox's failure for good is recorded with, which its waiting RunPodSandbox
 * answers with (docs/architecture.md, 'Error codes'): a shortage its words name, a request
 * rkt cannot run (-EINVAL, as the call site says), else what may pass (-EAGAIN: rkt's or a
 * plugin's failure, a timeout, a network not ready yet). */
static int failure_code(int code, const char *msg)
{
        int shortage = rkl_error_shortage_of(msg);
        if (shortage < 0)
                return shortage;
        switch (code) {
        case -ENOSPC:
        case -EDQUOT:
        case -EMFILE:
        case -ENFILE:
        case -ENOMEM:
        case -EINVAL:
                return code;
        default:
                return -EAGAIN;
        }
}

/* With --wait the sandbox's RunPodSandbox is waiting for it and fails with it, giving the
 * client no ID: nothing of it may stay. Its row goes in the commit that records the failure
 * (store.h), so that across a crash it is never listed again and its name is free for the
 * client's next attempt; what rkt, systemd and CNI still hold of it is undone as for a
 * removed sandbox (the orphan pass, the network's reaper), and then the failure, which the
 * waiting call answers with, is forgotten (rkl_orphans_failures_sweep()). */
static void withdraw(rkl_reconciler *r, const rkl_pod_record *rec, int code, const char *msg)
{
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_free_ char *who = rkl_xasprintf("%s/%s (attempt %u)", rec->spec.namespace,
                                                 rec->spec.name, rec->spec.attempt);
        rkl_pod_failure f = {
            .code = code,
            .message = (char *)msg,
            .sandbox = who,
            .failed_ns = rkl_reconciler__now(r),
        };
        memcpy(f.sandbox_id, rec->id, sizeof(f.sandbox_id));
        if (rec->unit_name)
                rkl_reconciler__unit_stop(r, rec->unit_name);
        rkl_log_object_warning(POD_OBJECT(rec),
                               "sandbox %.12s failed for good after %u attempts, undoing it: %s",
                               rec->id, rec->book.attempts + 1, msg);
        int k = rkl_store_pod_withdraw(r->store, &f, &err);
        if (k != -ENOENT)
                rkl_reconciler__write_failed("sandbox", rec->id, "its failure", k, &err);
        rkl_crash_point("sandbox-withdrawn");
        rkl_orphans_failures_look_now(r); /* at what is left of it */
}

/* A failed creation attempt: retried with backoff, and the last of MAX_ATTEMPTS leaves the
 * sandbox failed for good: NOTREADY, reason CreateFailed, for kubelet to act on; with --wait,
 * withdrawn. code: the -errno of the failure, as far as the call site knows it. */
static void creation_attempt_failed(rkl_reconciler *r, const rkl_pod_record *rec, int code,
                                    const char *msg)
{
        if (rec->book.attempts + 1 >= MAX_ATTEMPTS && r->cfg.wait) {
                withdraw(r, rec, failure_code(code, msg), msg);
                return;
        }
        if (rec->book.attempts + 1 >= MAX_ATTEMPTS) {
                rkl_pod_observed o;
                rkl_pod_observed_copy(&o, &rec->observed);
                o.phase = RKL_POD_PHASE_FAILED;
                free(o.reason);
                free(o.message);
                o.reason = rkl_xstrdup("CreateFailed");
                o.message = rkl_xstrdup(msg);
                rkl_observing_set_pod(r, rec, &o);
                rkl_pod_observed_done(&o);
        }
        rkl_pods_failed_attempt(r, rec, msg);
}

/* A failed attempt's unit has the name the next attempt's takes (derived from the sandbox ID,
 * which adoption, the orphan pass, stats and `rktlet check` rely on), and a pod slow to go
 * down keeps it loaded after the stop: a start meanwhile would find it (UnitExists) and
 * take it for its own, and its end for one more failed attempt. So a start waits until the
 * manager has collected it. Asking the manager rather than memory holds across a crash of
 * the daemon. True while the old unit is there; an answer that cannot be had lets the start
 * go on, which then fails on its own if the unit is there. */
static bool old_unit_left(rkl_reconciler *r, const rkl_pod_record *rec, const char *unit)
{
        rkl_error err = RKL_ERROR_INIT;
        rkl_unit_state st;
        if (RKL_OPS(r, unit_state, unit, &st, &err) < 0) {
                rkl_log_debug("sandbox %.12s: cannot look at %s: %s", rec->id, unit, err.msg);
                return false;
        }
        if (st.active == RKL_UNIT_GONE)
                return false;
        /* Nobody may have asked yet (the daemon died between the failure and its undo). */
        if (st.active == RKL_UNIT_ACTIVE || st.active == RKL_UNIT_ACTIVATING)
                rkl_reconciler__unit_stop(r, unit);
        rkl_log_debug("sandbox %.12s: waiting for %s of an earlier attempt to go (%s)", rec->id,
                      unit, rkl_unit_active_to_string(st.active));
        rkl_reconciler__wake_at(r, rkl_reconciler__now(r) + OLD_UNIT_POLL_NS);
        return true;
}

/* ---- A sandbox's start: its steps, in order; each false (or < 0) when the start stops
 * there, its failure counted where it is the attempt's ---- */

/* Whether the start can go on now: the manager is reachable, no stage1 is being imported,
 * and no earlier attempt's unit is left. */
static bool start_ready(rkl_reconciler *r, const rkl_pod_record *rec, const char *unit)
{
        if (!RKL_OPS(r, unit_connected)) {
                rkl_reconciler__wake_at(r, rkl_reconciler__now(r) + (int64_t)NSEC_PER_SEC);
                return false; /* no systemd yet: the probe reconnects */
        }
        if (rkl_probe_stage1_importing(r))
                return false; /* the import's end kicks a pass */
        return !old_unit_left(r, rec, unit);
}

/* The slice the unit goes in: kubelet's cgroup_parent, which must name one (NULL: the
 * manager's default). */
static int start_slice(rkl_reconciler *r, const rkl_pod_record *rec, char **ret_slice)
{
        _cleanup_free_ char *slice = NULL;
        if (rec->spec.cgroup_parent &&
            rkl_unit_slice_from_cgroup_parent(rec->spec.cgroup_parent, &slice) < 0) {
                creation_attempt_failed(r, rec, -EINVAL,
                                        "cgroup_parent is not a systemd slice: run kubelet "
                                        "with --cgroup-driver=systemd");
                return -EINVAL;
        }
        *ret_slice = TAKE_PTR(slice);
        return 0;
}

/* The sandbox's state directory, as this attempt starts it: its logs directory there, and
 * neither a previous attempt's uuid file (which would name its dead pod; absent is the usual
 * case) nor its output (the error quoted from its tail is this attempt's). */
static int start_state_dir(rkl_reconciler *r, const rkl_pod_record *rec)
{
        _cleanup_free_ char *logs = rkl_pods_state_path(r, rec->id, "logs");
        _cleanup_free_ char *uuid_file = rkl_pods_state_path(r, rec->id, "uuid");
        _cleanup_free_ char *log = rkl_pods_state_path(r, rec->id, "sandbox.log");
        rkl_error err = RKL_ERROR_INIT;
        int k = rkl_mkdir_p(logs, 0700);
        if (k < 0) {
                rkl_error_set(&err, k, "cannot create '%s': %s", logs, strerror(-k));
                creation_attempt_failed(r, rec, k, err.msg);
                return k;
        }
        if (unlink(uuid_file) < 0 && errno != ENOENT)
                rkl_log_warning("cannot remove %s: %m", uuid_file);
        if (unlink(log) < 0 && errno != ENOENT)
                rkl_log_warning("cannot remove %s: %m", log);
        return 0;
}

/* `rkt app sandbox`'s command line and environment, for the unit to run. */
static int start_command(rkl_reconciler *r, const rkl_pod_record *rec, char ***ret_argv,
                         char ***ret_env)
{
        _cleanup_free_ char *logs = rkl_pods_state_path(r, rec->id, "logs");
        _cleanup_free_ char *uuid_file = rkl_pods_state_path(r, rec->id, "uuid");
        rkl_error err = RKL_ERROR_INIT;
        char hostname[256] = "";
        if (gethostname(hostname, sizeof(hostname) - 1) < 0)
                hostname[0] = 0; /* the pod then gets rkt's default hostname */
        rkl_rkt_sandbox_opts o = {
            .sandbox_id = rec->id,
            .uuid_file = uuid_file,
            .log_dir = logs,
            .net = r->cfg.net,
            .stage1_name = r->cfg.stage1_name,
            .node_hostname = hostname,
        };
        int k = rkl_rkt_sandbox_command(r->rkt, &rec->spec, &o, ret_argv, ret_env, &err);
        if (k < 0)
                creation_attempt_failed(r, rec, k, err.msg);
        return k;
}

/* Records the unit before it is started: after a crash the name says a unit may exist, and
 * the derived name makes a second start fail rather than duplicate. */
static int start_record_unit(rkl_reconciler *r, const rkl_pod_record *rec, const char *unit)
{
        rkl_error err = RKL_ERROR_INIT;
        int k = 0;
        if (!streq_ptr(rec->unit_name, unit) &&
            (k = rkl_store_pod_set_unit_name(r->store, rec->id, unit, &err)) < 0)
                rkl_reconciler__write_failed("sandbox", rec->id, "its unit", k, &err);
        return k < 0 ? k : 0;
}

/* StartTransientUnit. A unit there already is this one: its name was recorded first. */
static int start_unit(rkl_reconciler *r, const rkl_pod_record *rec, const char *unit,
                      const char *slice, char **argv, char **env)
{
        _cleanup_free_ char *log = rkl_pods_state_path(r, rec->id, "sandbox.log");
        _cleanup_free_ char *desc =
            rkl_xasprintf("rktlet sandbox %s/%s", rec->spec.namespace, rec->spec.name);
        rkl_unit_spec spec = {
            .name = unit,
            .description = desc,
            .argv = argv,
            .env = env,
            .slice = slice,
            .log_path = log,
        };
        rkl_error err = RKL_ERROR_INIT;
        rkl_crash_point("unit-named");
        int k = RKL_OPS(r, unit_start, &spec, 10 * USEC_PER_SEC, &err);
        if (k < 0 && k != -EEXIST) {
                /* No unit came of it: the next attempt starts from the top, and this one
                 * is not counted again when the unit is found missing. */
                rkl_error e2 = RKL_ERROR_INIT;
                int q = rkl_store_pod_set_unit_name(r->store, rec->id, NULL, &e2);
                rkl_reconciler__write_failed("sandbox", rec->id, "that its unit is gone", q, &e2);
                creation_attempt_failed(r, rec, k, err.msg);
                return k;
        }
        rkl_crash_point("unit-started");
        return 0;
}

/* The unit runs: its cpuset cgroup, its limits and its timeline from here, its first look
 * later. */
static void start_done(rkl_reconciler *r, const rkl_pod_record *rec, const char *unit)
{
        /* Before RunPodSandbox answers, and again once the pod runs (observing.c): what its
         * first processes fork follows them. */
        int k = rkl_app_cgroup_cpuset_join(rec->spec.cgroup_parent, unit);
        if (k < 0)
                rkl_log_object_warning(POD_OBJECT(rec),
                                       "sandbox %.12s: cannot place it in its slice's cpuset "
                                       "cgroup: %s",
                                       rec->id, strerror(-k));
        rkl_limits_pod_forget(r, rec->id); /* a new unit has none of them yet */
        rkl_observing_pod_step(r, rec, RKL_POD_STEP_UNIT_STARTED);
        free(rkl_hashmap_remove(r->pods->unit_looks, rec->id)); /* its first look later */
        rkl_log_object_info(POD_OBJECT(rec), "sandbox %.12s: started %s", rec->id, unit);
        rkl_reconciler__wake_at(r, rkl_reconciler__now(r) +
                                       (int64_t)PENDING_POLL_USEC * (int64_t)NSEC_PER_USEC);
}

static void start_sandbox(rkl_reconciler *r, const rkl_pod_record *rec)
{
        _cleanup_free_ char *unit = rkl_unit_name_for_sandbox(rec->id);
        _cleanup_free_ char *slice = NULL;
        _cleanup_strv_free_ char **argv = NULL, **env = NULL;

        if (!start_ready(r, rec, unit) || start_slice(r, rec, &slice) < 0 ||
            start_state_dir(r, rec) < 0 || start_command(r, rec, &argv, &env) < 0 ||
            start_record_unit(r, rec, unit) < 0 || start_unit(r, rec, unit, slice, argv, env) < 0)
                return;
        start_done(r, rec, unit);
}

/* The last lines of the sandbox's own output: why it failed, in rkt's words. */
static char *sandbox_log_tail(rkl_reconciler *r, const char *id)
{
        _cleanup_free_ char *path = rkl_pods_state_path(r, id, "sandbox.log");
        _cleanup_free_ char *text = NULL;
        size_t n;
        if (rkl_read_file_at(AT_FDCWD, path, 1 << 20, &text, &n) < 0 || n == 0)
                return rkl_xstrdup("no output");
        char tail[320];
        rkl_rkt_output_tail(text, tail, sizeof(tail));
        /* systemd's words when the pod's own systemd cannot start; on a node the usual cause
         * is the inotify instance limit, shared by every process of the user (each pod's
         * systemd holds up to three). */
        if (strstr(tail, "Failed to allocate manager object"))
                return rkl_xasprintf("%s (the pod's systemd could not start: is "
                                     "fs.inotify.max_user_instances too low? see "
                                     "docs/operators.md)",
                                     tail);
        return rkl_xstrdup(*tail ? tail : "no output");
}

/* Undoes a failed creation so that the next attempt starts clean, and counts it. msg is
 * the whole reason, code its -errno as far as known. */
static void creation_undo(rkl_reconciler *r, const rkl_pod_record *rec, int code, const char *msg)
{
        rkl_error err = RKL_ERROR_INIT;

        if (rec->unit_name) {
                rkl_reconciler__unit_stop(r, rec->unit_name);
                int k = rkl_store_pod_set_unit_name(r->store, rec->id, NULL, &err);
                rkl_reconciler__write_failed("sandbox", rec->id, "that its unit is gone", k, &err);
        }
        if (rec->rkt_uuid) {
                rkl_pods_boot_look_forget(r, rec->rkt_uuid);
                /* The dead pod is removed by the orphan pass once it is no longer ours. */
                rkl_error_clear(&err);
                int k = rkl_store_pod_set_rkt_uuid(r->store, rec->id, NULL, &err);
                rkl_reconciler__write_failed("sandbox", rec->id, "that its pod is gone", k, &err);
        }
        creation_attempt_failed(r, rec, code, msg);
}

/* A creation that failed in rkt: why, and the end of the sandbox's own output. */
static void creation_failed(rkl_reconciler *r, const rkl_pod_record *rec, const char *why)
{
        _cleanup_free_ char *tail = sandbox_log_tail(r, rec->id);
        _cleanup_free_ char *msg = rkl_xasprintf("%s: %s", why, tail);
        creation_undo(r, rec, -EAGAIN, msg);
}

void rkl_pods_network_failed(rkl_reconciler *r, const rkl_pod_record *rec, const char *msg)
{
        /* The node's network, not the client's request: what may pass, or a shortage (its
         * words: host-local's spent range). */
        _cleanup_free_ char *m = rkl_xasprintf("network: %s", msg);
        creation_undo(r, rec, -EAGAIN, m);
}

/* A pod whose systemd dropped its boot (rkt/boot.h) would wait out the ready timeout, and
 * its replacement would boot from scratch; a start of default.target makes it ready in a
 * second. A pod that is only slow still has jobs, and is left alone. */
typedef struct boot_look {
        char uuid[RKL_POD_UUID_LEN + 1];
        int64_t at_ns; /* realtime: when it was looked at last */
} boot_look;

static void look_at_boot(rkl_reconciler *r, const rkl_pod_record *rec, const rkl_poddir_pod *p,
                         int64_t now)
{
        boot_look *b = rkl_hashmap_get(r->pods->boot_looks, p->uuid);
        if (b && now - b->at_ns < BOOT_LOOK_AFTER_NS)
                return;
        if (!b) {
                b = rkl_xnew0(boot_look, 1);
                (void)snprintf(b->uuid, sizeof(b->uuid), "%s", p->uuid);
                rkl_hashmap_put(r->pods->boot_looks, b->uuid, b);
        }
        b->at_ns = now;
        action *a = rkl_action_new(r, ACT_POD_BOOT, rec->id, p->uuid, NULL);
        a->is_pod = true;
        a->pod_pid = p->ppid;
        rkl_action_submit(r, a);
}

void rkl_pods_boot_look_forget(rkl_reconciler *r, const char *uuid)
{
        if (uuid)
                free(rkl_hashmap_remove(r->pods->boot_looks, uuid));
}

/* Whether the unit of a sandbox still without its pod has gone or failed: the sandbox exited
 * before its pod appeared. A sandbox's unit was asked after with four calls to the system
 * manager at every pass, and the manager is busiest when many pods start: 110 sandboxes
 * starting together held the reconciler for 16 s before any of their pods was seen
 * (docs/performance.md). Now each sandbox is looked at UNIT_LOOK_NS after its start and as
 * often after (rkt names its pod within 0.1 s of the start: this is for the rare failure),
 * in one list of every rktlet unit that all sandboxes share, taken at most twice in that
 * time, and never before the sandbox's unit was started (it would be missing from it). */
typedef struct unit_look {
        char id[RKL_ID_LEN + 1];
        int64_t since_ns, next_ns;
} unit_look;

static int unit_states_refresh(rkl_reconciler *r, int64_t now, rkl_error *reterr)
{
        _cleanup_strv_free_ char **names = NULL;
        rkl_unit_active *active = NULL;
        int k = RKL_OPS(r, unit_list_active, "rktlet-*.service", &names, &active, reterr);
        if (k < 0)
                return k;
        rkl_pods *s = r->pods;
        unit_states_clear(s);
        s->unit_states = rkl_hashmap_new();
        s->unit_active = rkl_xnew0(int, rkl_strv_length(names) + 1);
        for (size_t i = 0; names[i]; i++) {
                s->unit_active[i] = (int)active[i];
                rkl_hashmap_put(s->unit_states, names[i], &s->unit_active[i]);
        }
        free(active);
        s->unit_names = TAKE_PTR(names);
        s->unit_states_ns = now;
        return 0;
}

/* The sandbox's unit is gone or failed, by the list; false when it is not time to look or
 * the list cannot be had. */
static bool unit_gone(rkl_reconciler *r, const rkl_pod_record *rec, int64_t now)
{
        rkl_error err = RKL_ERROR_INIT;
        unit_look *u = rkl_hashmap_get(r->pods->unit_looks, rec->id);
        if (!u) {
                u = rkl_xnew0(unit_look, 1);
                (void)snprintf(u->id, sizeof(u->id), "%s", rec->id);
                u->since_ns = now;
                u->next_ns = now + UNIT_LOOK_NS;
                rkl_hashmap_put(r->pods->unit_looks, u->id, u);
        }
        if (now < u->next_ns) {
                rkl_reconciler__wake_at(r, u->next_ns);
                return false;
        }
        u->next_ns = now + UNIT_LOOK_NS;
        rkl_reconciler__wake_at(r, u->next_ns);
        if ((r->pods->unit_states_ns <= u->since_ns ||
             now - r->pods->unit_states_ns > UNIT_LOOK_NS / 2) &&
            unit_states_refresh(r, now, &err) < 0) {
                rkl_log_debug("sandbox %.12s: cannot list units: %s", rec->id, err.msg);
                return false;
        }
        const int *a = rkl_hashmap_get(r->pods->unit_states, rec->unit_name);
        return !a || *a == RKL_UNIT_FAILED || *a == RKL_UNIT_GONE;
}

/* A look no longer needed: its sandbox is gone, has its pod, or is no longer pending. */
static bool unit_look_done(const void *v, void *userdata)
{
        const unit_look *u = v;
        rkl_reconciler *r = userdata;
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *p = rkl_cache_pod_get(r->cache, u->id);
        return !p || p->rec->rkt_uuid || p->rec->observed.phase != RKL_POD_PHASE_PENDING;
}

void rkl_pods_looks_sweep(rkl_reconciler *r)
{
        rkl_hashmap_remove_if(r->pods->unit_looks, unit_look_done, r, free);
}

void rkl_pods_step_pending(rkl_reconciler *r, const rkl_pod_record *rec, const rkl_poddir_pod *p,
                           int64_t now)
{
        int64_t timeout = (int64_t)r->cfg.sandbox_ready_timeout_usec * (int64_t)NSEC_PER_USEC;
        /* A retry gets the whole timeout too, not what its predecessors left of it, nor what
         * the wait for its predecessor's unit took. */
        int64_t since = rkl_observing_attempt_start_ns(rec);
        int64_t unit_started = rkl_observing_pod_step_ns(r, rec, RKL_POD_STEP_UNIT_STARTED);
        if (unit_started > since)
                since = unit_started;

        if (!rec->unit_name && !rec->rkt_uuid) {
                const char *why = rkl_network_unavailable(r, rec);
                if (why) {
                        /* Not worth booting a pod that could get no network. */
                        _cleanup_free_ char *msg = rkl_xasprintf("network: %s", why);
                        creation_attempt_failed(r, rec, -EAGAIN, msg);
                        return;
                }
                start_sandbox(r, rec);
                return;
        }
        if (!rec->rkt_uuid) {
                _cleanup_free_ char *path = rkl_pods_state_path(r, rec->id, "uuid");
                _cleanup_free_ char *uuid = NULL;
                if (rkl_read_file_at(AT_FDCWD, path, 256, &uuid, NULL) == 0) {
                        uuid[strcspn(uuid, "\n")] = 0;
                        if (rkl_pod_uuid_is_valid(uuid))
                                rkl_observing_read(r, uuid); /* adopts it if it lives */
                }
                /* The sandbox is the unit's main process: no unit, no pod. */
                if (RKL_OPS(r, unit_connected) && unit_gone(r, rec, now)) {
                        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v =
                            rkl_cache_pod_get(r->cache, rec->id);
                        if (!v || !v->rec->rkt_uuid)
                                creation_failed(r, rec,
                                                "the sandbox exited before its pod was "
                                                "ready");
                        return;
                }
        } else if (p && rkl_pod_state_is_after_run(p->state)) {
                creation_failed(r, rec, "the pod exited before it was ready");
                return;
        }
        if (now - since > timeout && rec->book.next_retry_ns <= now) {
                creation_failed(r, rec, "the sandbox did not become ready in time");
                return;
        }
        if (rkl_network_step_pending(r, rec, p))
                return;
        if (p && p->state == RKL_POD_STATE_RUNNING && !p->supervisor_ready && p->ppid &&
            p->started_ns && now - p->started_ns > BOOT_LOOK_AFTER_NS &&
            rkl_action_can_start(r, rec->id))
                look_at_boot(r, rec, p, now);
        rkl_reconciler__wake_at(r, now + (int64_t)PENDING_POLL_USEC * (int64_t)NSEC_PER_USEC);
}

/* Whether a container of the sandbox rec has an exit rkt recorded in p that the reconciler
 * still holds for its log (rkl_containers_exit_held): rkt's rm would take the exit along. */
static bool exit_held_in(rkl_reconciler *r, const rkl_pod_record *rec, const rkl_poddir_pod *p)
{
        rkl_view_filter f = {.sandbox_id = rec->id};
        rkl_container_view **v;
        size_t n;
        bool held = false;
        rkl_cache_container_list(r->cache, &f, &v, &n);
        for (size_t i = 0; i < n && !held; i++) {
                const rkl_container_record *c = v[i]->rec;
                const rkl_poddir_app *a = rkl_poddir_pod_find_app(p, c->app_name);
                held = a && a->state == RKL_POD_APP_EXITED &&
                       c->observed.phase == RKL_CONTAINER_PHASE_RUNNING &&
                       rkl_reconciler__now(r) - a->finished_ns < EXIT_HOLD_NS;
        }
        rkl_container_views_unref(v, n);
        return held;
}

void rkl_pods_step_stopping(rkl_reconciler *r, const rkl_pod_record *rec, const rkl_poddir_pod *p)
{
        rkl_error err = RKL_ERROR_INIT;

        if (!rec->rkt_uuid) {
                /* Never got as far as a pod: stop whatever unit there is, and it is done. */
                if (rec->unit_name && RKL_OPS(r, unit_connected)) {
                        int k = RKL_OPS(r, unit_stop, rec->unit_name, &err);
                        if (k < 0 && k != -ENOENT) {
                                rkl_pods_failed_attempt(r, rec, err.msg);
                                return;
                        }
                }
                rkl_pod_observed o;
                rkl_pod_observed_copy(&o, &rec->observed);
                if (o.phase != RKL_POD_PHASE_FAILED)
                        o.phase = RKL_POD_PHASE_STOPPED;
                rkl_observing_set_pod(r, rec, &o);
                rkl_pod_observed_done(&o);
                return;
        }
        if (!rkl_action_can_start(r, rec->id))
                return;
        action *a;
        if (p && p->state == RKL_POD_STATE_RUNNING) {
                a = rkl_action_new(r, ACT_POD_STOP, rec->id, rec->rkt_uuid, NULL);
        } else {
                /* Exited (its last statuses were read when it did): its CNI network is
                 * released first (network.c), in the namespace rm takes along; then rm
                 * frees what rkt holds. */
                if (rkl_network_holds_pod(r, rec))
                        return;
                if (p && exit_held_in(r, rec, p)) {
                        /* Its exit is written within EXIT_HOLD_NS; the pod goes after. */
                        rkl_reconciler__wake_at(r, rkl_reconciler__now(r) + RECHECK_NS);
                        return;
                }
                a = rkl_action_new(r, ACT_POD_RM, rec->id, rec->rkt_uuid, NULL);
                a->unit_name = rkl_unit_cgroup_for_sandbox(rec->id);
        }
        a->is_pod = true;
        rkl_action_submit(r, a);
}
