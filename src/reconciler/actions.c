/* Actions (actions.h): rkt commands run on the worker pool (the only code here that runs
 * off the reconciler thread is run_action()), at most one per object and --max-actions at
 * once, their results handed back through a queue and applied on the reconciler thread. */
#include "actions.h"

#include <signal.h>
#include <stdatomic.h>
#include <sys/eventfd.h>

#include "reconciler-internal.h"
#include "app-cgroup.h"
#include "containers.h"
#include "limits.h"
#include "network.h"
#include "observing.h"
#include "orphans.h"
#include "pods.h"
#include "unit.h"
#include "base/alloc.h"
#include "base/cgroup.h"
#include "base/crash.h"
#include "base/hashmap.h"
#include "base/log.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "base/workpool.h"
#include "rkt/action.h"
#include "rkt/boot.h"
#include "rkt/poddir.h"
#include "rkt/rkt.h"
#include "store/cache.h"
#include "store/store.h"
#include "base/banned.h"

struct rkl_action_queue {
        rkl_hashmap *in_flight;   /* object ID -> action* */
        unsigned n_in_flight;     /* rkt's commands (and the boot check) */
        unsigned n_net_in_flight; /* CNI plugin runs: slots of their own */
        atomic_uint count;        /* a copy of both, for rkl_action_count() */
        /* The workers': finished actions, under lock, and the eventfd they write then
         * (-errno when it could not be made). */
        pthread_mutex_t lock;
        action *done;
        int done_fd;
};

/* Forced crash points (base/crash.h): the rkt command ran, its result is not recorded. */
static const char *const act_crash_points[] = {
    [ACT_APP_ADD] = "after-app-add",     [ACT_APP_START] = "after-app-start",
    [ACT_APP_STOP] = "after-app-stop",   [ACT_APP_RM] = "after-app-rm",
    [ACT_POD_STOP] = "after-pod-stop",   [ACT_POD_RM] = "after-pod-rm",
    [ACT_POD_BOOT] = "after-pod-boot",   [ACT_NET_ADD] = "after-net-add",
    [ACT_NET_CHECK] = "after-net-check", [ACT_NET_DEL] = "after-net-del",
};

static const char *const act_names[] = {
    [ACT_APP_ADD] = "app add",     [ACT_APP_START] = "app start", [ACT_APP_STOP] = "app stop",
    [ACT_APP_RM] = "app rm",       [ACT_POD_STOP] = "stop",       [ACT_POD_RM] = "rm",
    [ACT_POD_BOOT] = "boot check", [ACT_NET_ADD] = "network ADD", [ACT_NET_CHECK] = "network CHECK",
    [ACT_NET_DEL] = "network DEL",
};

void rkl_action_free(action *a)
{
        if (!a)
                return;
        free(a->app);
        free(a->unit_name);
        rkl_container_view_unref(a->container);
        free(a->image);
        free(a->log_file);
        rkl_strv_free(a->entrypoint);
        rkl_kvs_done(&a->sysctls);
        free(a->pod_hostname);
        rkl_pod_network_free(a->net);
        free(a->net_result);
        free(a);
}

static void action_list_free(action *list)
{
        while (list) {
                action *next = list->next;
                rkl_action_free(list);
                list = next;
        }
}

rkl_action_queue *rkl_action_queue_new(void)
{
        rkl_action_queue *q = rkl_xnew0(rkl_action_queue, 1);
        q->in_flight = rkl_hashmap_new();
        pthread_mutex_init(&q->lock, NULL);
        q->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (q->done_fd < 0)
                q->done_fd = -errno;
        return q;
}

rkl_action_queue *rkl_action_queue_free(rkl_action_queue *q)
{
        if (!q)
                return NULL;
        action_list_free(q->done);
        rkl_hashmap_free(q->in_flight);
        pthread_mutex_destroy(&q->lock);
        safe_close(q->done_fd);
        free(q);
        return NULL;
}

int rkl_action_done_fd(rkl_reconciler *r)
{
        return r->actions->done_fd;
}

unsigned rkl_action_count(rkl_reconciler *r)
{
        return atomic_load(&r->actions->count);
}

const char *rkl_action_name(act_kind kind)
{
        return act_names[kind];
}

/* rkt's words for a failure, kept for apply_result(). */
static int failed(action *a, int k, const rkl_error *err)
{
        if (k < 0)
                (void)snprintf(a->error, sizeof(a->error), "%s", err->msg); /* cut: fine */
        return k;
}

/* Waits until the pod is no longer running; false when it still is at the deadline. */
static bool wait_pod_exit(action *a, int64_t deadline_ns)
{
        if (rkl_observing_pods_fd(a->r) < 0)
                return true;
        for (;;) {
                rkl_poddir_pod p = {0};
                int k = RKL_OPS(a->r, pod_read, a->uuid, &p, NULL);
                bool running = k >= 0 && p.state == RKL_POD_STATE_RUNNING;
                rkl_poddir_pod_done(&p);
                if (!running)
                        return true;
                if (rkl_reconciler__now(a->r) >= deadline_ns)
                        return false;
                RKL_OPS(a->r, sleep_usec, 50 * USEC_PER_MSEC);
        }
}

static int run_app_stop(action *a)
{
        int64_t now = rkl_reconciler__now(a->r);
        int k = 0;

        if (a->deadline_ns > now) {
                /* rkt's own stop waits for systemd's 90 s: cut it at our deadline. */
                uint64_t t = (uint64_t)(a->deadline_ns - now) / NSEC_PER_USEC;
                rkl_error err = RKL_ERROR_INIT;
                k = failed(a,
                           RKL_OPS(a->r, app_stop, a->uuid, a->app,
                                   t > USEC_PER_SEC ? t : USEC_PER_SEC, &err),
                           &err);
                if (k == -EALREADY || k == -ENOENT)
                        return 0;
                if (k != -ETIMEDOUT)
                        return k;
        }
        /* The deadline passed: SIGKILL everything in the app's cgroup. */
        _cleanup_free_ char *procs = NULL, *memory = NULL;
        if (a->supervisor &&
            RKL_OPS(a->r, app_cgroups, a->supervisor, a->app, &procs, &memory) == 0) {
                int n = rkl_cgroup_kill(procs, SIGKILL);
                rkl_log_debug("app %s: stop deadline passed, SIGKILLed %d processes", a->app, n);
        }
        a->error[0] = 0;
        return 0;
}

/* What counts is that the pod is down: rkt's stop fails when the pod is already on its way
 * down ("cannot get child processes ...: process does not have children"), which is no
 * failure of ours. rkt's error is kept for when the pod really stays up. */
static int run_pod_stop(action *a)
{
        int64_t grace = (int64_t)a->r->stop_grace_usec * (int64_t)NSEC_PER_USEC;
        rkl_error err = RKL_ERROR_INIT;
        int k;

        if (!a->force) {
                /* Its outcome is whether the pod goes down in the grace; its error stays
                 * in a->error for when it does not. */
                (void)failed(a, RKL_OPS(a->r, pod_stop, a->uuid, false, a->timeout_usec, &err),
                             &err);
                if (wait_pod_exit(a, rkl_reconciler__now(a->r) + grace))
                        goto down;
                rkl_error_clear(&err);
        }
        k = failed(a, RKL_OPS(a->r, pod_stop, a->uuid, true, a->timeout_usec, &err), &err);
        if (wait_pod_exit(a, rkl_reconciler__now(a->r) + 10 * (int64_t)NSEC_PER_SEC))
                goto down;
        if (k >= 0 || k == -EALREADY || k == -ENOENT) {
                (void)snprintf(a->error, sizeof(a->error), "pod %s did not exit after SIGKILL",
                               a->uuid);
                return -ETIMEDOUT;
        }
        return k;
down:
        a->error[0] = 0;
        return 0;
}

static int run_app_rm(action *a)
{
        /* Found before the rm, which takes the app's unit and so its cgroup along. */
        _cleanup_free_ char *procs = NULL, *memory = NULL;
        if (a->supervisor && RKL_OPS(a->r, app_cgroups, a->supervisor, a->app, &procs, &memory) < 0)
                procs = NULL; /* no cgroup found: nothing of it to release after the rm */
        rkl_error err = RKL_ERROR_INIT;
        int k = failed(a, RKL_OPS(a->r, app_rm, a->uuid, a->app, a->timeout_usec, &err), &err);
        if (k == -ENOENT)
                k = 0; /* gone already is what rm wanted */
        if (k >= 0 && procs) {
                rkl_app_cgroup_cpu_release(procs, memory);
                int q = rkl_app_cgroup_memory_release(procs, memory);
                if (q < 0)
                        rkl_log_warning("app %s: cannot remove its memory cgroup %s: %s", a->app,
                                        memory, strerror(-q));
        }
        return k;
}

static int run_app_add(action *a)
{
        const rkl_container_record *c = a->container->rec;
        rkl_rkt_app_opts o = {
            .container_id = c->id,
            .app_name = c->app_name,
            .image = a->image,
            .image_entrypoint = a->entrypoint,
            .log_file = a->log_file,
            .pod_sysctls = &a->sysctls,
            .pod_hostname = a->pod_hostname,
            .pod_pid = a->pod_pid,
            .hosts_file = a->node_hosts ? "/etc/hosts" : NULL,
        };
        rkl_error err = RKL_ERROR_INIT;
        return failed(a, RKL_OPS(a->r, app_add, a->uuid, &c->spec, &o, a->timeout_usec, &err),
                      &err);
}

/* Whether rkt still has a directory for the pod, in any state. */
/* After rm said "no such pod": is its directory still there? Then, when what kept rkt from
 * loading it was an empty net-info.json, that file is removed and *ret_retry set. */
static bool pod_dir_left(action *a, bool *ret_retry)
{
        *ret_retry = false;
        if (rkl_observing_pods_fd(a->r) < 0)
                return false;
        _cleanup_(rkl_poddir_pod_done) rkl_poddir_pod p = {0};
        if (RKL_OPS(a->r, pod_read, a->uuid, &p, NULL) < 0)
                return false;
        int k = rkl_poddir_drop_empty_netinfo(rkl_observing_pods_fd(a->r), &p);
        if (k > 0)
                rkl_log_warning("pod %s: rkt cannot load it, its net-info.json being empty (its "
                                "network setup was cut short): removed that file for rkt rm",
                                a->uuid);
        else if (k < 0)
                rkl_log_warning("pod %s: cannot remove its empty net-info.json: %s", a->uuid,
                                strerror(-k));
        *ret_retry = k > 0;
        return true;
}

static void run_action(void *userdata)
{
        action *a = userdata;
        rkl_error err = RKL_ERROR_INIT;
        int k;

        switch (a->kind) {
        case ACT_APP_STOP:
                k = run_app_stop(a);
                break;
        case ACT_POD_STOP:
                k = run_pod_stop(a);
                break;
        case ACT_APP_RM:
                k = run_app_rm(a);
                break;
        case ACT_APP_ADD:
                k = run_app_add(a);
                break;
        case ACT_APP_START:
                k = failed(
                    a,
                    RKL_OPS(a->r, app_start, a->uuid, a->app, a->supervisor, a->timeout_usec, &err),
                    &err);
                break;
        case ACT_POD_BOOT:
                k = failed(a, RKL_OPS(a->r, pod_restart_boot, a->pod_pid, &err), &err);
                break;
        case ACT_NET_ADD:
        case ACT_NET_CHECK:
        case ACT_NET_DEL:
                k = rkl_network_run(a);
                break;
        case ACT_POD_RM:
        default: {
                bool retry;
                k = failed(a, RKL_OPS(a->r, pod_rm, a->uuid, a->timeout_usec, &err), &err);
                if (k == -ENOENT && pod_dir_left(a, &retry)) {
                        /* Seen in 200-cycle chaos runs on real rkt: rm said "cannot get pod:
                         * EOF" at every retry while the directory stayed (an empty
                         * net-info.json, dropped above). Otherwise taken as gone, as before
                         * (a pod being deleted says the same), with rkt's words kept. */
                        if (retry) {
                                rkl_error_clear(&err);
                                a->error[0] = 0;
                                k = failed(a, RKL_OPS(a->r, pod_rm, a->uuid, a->timeout_usec, &err),
                                           &err);
                        } else
                                rkl_log_info("pod %s: rkt rm says there is no such pod, but "
                                             "its directory is still there: %s",
                                             a->uuid, a->error);
                }
                if (k == -ENOENT)
                        k = 0; /* gone already is what rm wanted */
                break;
        }
        }
        a->result = k;

        rkl_action_queue *q = a->r->actions;
        pthread_mutex_lock(&q->lock);
        a->next = q->done;
        q->done = a;
        pthread_mutex_unlock(&q->lock);
        uint64_t one = 1;
        (void)!write(q->done_fd, &one, sizeof(one));
}

bool rkl_action_in_flight(rkl_reconciler *r, const char *key)
{
        return rkl_hashmap_get(r->actions->in_flight, key) != NULL;
}

bool rkl_action_pod_in_flight(rkl_reconciler *r, const char *uuid, unsigned kinds)
{
        size_t i = 0;
        void *v;
        while (rkl_hashmap_iterate(r->actions->in_flight, &i, NULL, &v)) {
                const action *a = v;
                if ((kinds & ACT_MASK(a->kind)) && streq(a->uuid, uuid))
                        return true;
        }
        return false;
}

bool rkl_action_app_busy(rkl_reconciler *r, const char *uuid)
{
        return rkl_action_pod_in_flight(
            r, uuid, ACT_MASK(ACT_APP_ADD) | ACT_MASK(ACT_APP_START) | ACT_MASK(ACT_APP_RM));
}

bool rkl_action_can_start(rkl_reconciler *r, const char *key)
{
        return r->rkt && r->actions->n_in_flight < r->cfg.max_actions &&
               !rkl_action_in_flight(r, key);
}

bool rkl_action_can_start_net(rkl_reconciler *r, const char *key)
{
        return r->rkt && r->actions->n_net_in_flight < r->cfg.max_actions &&
               !rkl_action_in_flight(r, key);
}

static bool is_net(act_kind kind)
{
        return kind == ACT_NET_ADD || kind == ACT_NET_CHECK || kind == ACT_NET_DEL;
}

action *rkl_action_new(rkl_reconciler *r, act_kind kind, const char *key, const char *uuid,
                       const char *app)
{
        action *a = rkl_xnew0(action, 1);
        a->r = r;
        a->kind = kind;
        /* Both fit: keys are IDs, uuids rkt's (checked where they were read). */
        (void)snprintf(a->key, sizeof(a->key), "%s", key);
        (void)snprintf(a->uuid, sizeof(a->uuid), "%s", uuid);
        a->app = rkl_xstrdup(app);
        a->timeout_usec = r->cfg.rkt_timeout_usec;
        return a;
}

void rkl_action_submit(rkl_reconciler *r, action *a)
{
        /* Keyed by a sandbox ID, a container ID, or a leftover pod's uuid (orphans.c). */
        bool pod_level = a->kind == ACT_POD_STOP || a->kind == ACT_POD_RM;
        rkl_log_debug("%s %.12s: %s",
                      a->is_pod   ? "sandbox"
                      : pod_level ? "leftover pod"
                                  : "container",
                      a->key, rkl_action_name(a->kind));
        rkl_action_queue *q = r->actions;
        rkl_hashmap_put(q->in_flight, a->key, a);
        if (is_net(a->kind))
                q->n_net_in_flight++;
        else
                q->n_in_flight++;
        atomic_store(&q->count, q->n_in_flight + q->n_net_in_flight);
        RKL_OPS(r, submit, run_action, a);
}

/* Whether the pod is gone or no longer takes app commands, as its directory says now. */
static bool pod_going_down(rkl_reconciler *r, const char *uuid)
{
        if (rkl_observing_pods_fd(r) < 0)
                return false;
        rkl_poddir_pod p = {0};
        int k = RKL_OPS(r, pod_read, uuid, &p, NULL);
        bool going = k < 0 || p.state != RKL_POD_STATE_RUNNING || !p.supervisor_ready;
        rkl_poddir_pod_done(&p);
        return going;
}

/* Whether a successful action ends the failures counted on a container: the step that
 * reaches what is wanted, not an undo or a step on the way, or the count would never reach
 * MAX_ATTEMPTS when the last step keeps failing. */
static bool reaches_goal(act_kind kind, const rkl_container_record *c)
{
        if (kind == ACT_APP_ADD)
                return c->desired != RKL_CONTAINER_DESIRED_RUNNING;
        return kind == ACT_APP_START || kind == ACT_APP_STOP;
}

/* rkt stopped the pod neither with its stop nor with --force after the grace (both hung, and
 * were killed at --rkt-timeout, or rkt failed): the pod's unit is stopped instead, which
 * takes the pod down all the same (SIGTERM to the supervisor, SIGKILL to all that is left
 * after the unit's stop timeout). The failure is counted as ever, and the stop tried again
 * after the backoff finds the pod exited and goes on to rm. */
static void pod_stop_failed(rkl_reconciler *r, const rkl_pod_record *rec, const action *a)
{
        _cleanup_free_ char *unit =
            rec->unit_name ? rkl_xstrdup(rec->unit_name) : rkl_unit_name_for_sandbox(rec->id);
        rkl_log_object_warning(POD_OBJECT(rec),
                               "sandbox %.12s: rkt cannot stop pod %s (%s): stopping its unit %s",
                               rec->id, a->uuid, a->error, unit);
        rkl_reconciler__unit_stop(r, unit);
        _cleanup_free_ char *msg = rkl_xasprintf("%s; stopping its unit %s", a->error, unit);
        rkl_pods_failed_attempt(r, rec, msg);
}

/* ---- The result of a finished action, back on the reconciler thread, in steps ---- */

/* The action no longer runs: its key and its slot are free. */
static void out_of_flight(rkl_reconciler *r, const action *a)
{
        rkl_action_queue *q = r->actions;
        rkl_hashmap_remove(q->in_flight, a->key);
        if (is_net(a->kind))
                q->n_net_in_flight--;
        else
                q->n_in_flight--;
        atomic_store(&q->count, q->n_in_flight + q->n_net_in_flight);
}

/* Nothing to record: the pod's readiness is observed as ever. */
static void boot_result(const action *a)
{
        if (a->result >= 0)
                rkl_log_info("sandbox %.12s: pod %s had dropped its boot (its systemd idle, "
                             "default.target inactive): started it again",
                             a->key, a->uuid);
        else if (a->result != -EAGAIN && a->result != -ESRCH)
                rkl_log_debug("sandbox %.12s: cannot check the boot of pod %s: %s", a->key, a->uuid,
                              a->error);
}

/* A sandbox's stop or rm: a failure counted, a success ends the failures counted. */
static void sandbox_result(rkl_reconciler *r, const action *a)
{
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = rkl_cache_pod_get(r->cache, a->key);
        rkl_error err = RKL_ERROR_INIT;
        if (!v)
                return;
        if (a->result < 0 && a->kind == ACT_POD_STOP)
                pod_stop_failed(r, v->rec, a);
        else if (a->result < 0)
                rkl_pods_failed_attempt(r, v->rec, a->error);
        else if (v->rec->book.attempts > 0 || v->rec->book.last_error) {
                int k = rkl_store_pod_clear_error(r->store, a->key, &err);
                rkl_reconciler__write_failed("sandbox", a->key, "its success", k, &err);
        }
}

/* A container's app verb: the undo it owes, its timeline, its failure or its success. */
static void container_result(rkl_reconciler *r, const action *a)
{
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *v =
            rkl_cache_container_get(r->cache, a->key);
        rkl_error err = RKL_ERROR_INIT;
        if (a->result < 0 && (a->kind == ACT_APP_ADD || a->kind == ACT_APP_START))
                rkl_containers_undo_mark(r, a->key);
        else if (a->result >= 0 && (a->kind == ACT_APP_ADD || a->kind == ACT_APP_RM))
                rkl_containers_undo_clear(r, a->key);
        if (!v)
                return;
        if (a->result >= 0 && a->kind == ACT_APP_ADD)
                rkl_observing_container_step(r, v->rec, RKL_CONTAINER_STEP_ADD_DONE);
        else if (a->result >= 0 && a->kind == ACT_APP_START)
                rkl_observing_container_step(r, v->rec, RKL_CONTAINER_STEP_START_DONE);
        if (a->result < 0) {
                rkl_containers_failed_attempt(r, v->rec, a->error);
        } else if ((v->rec->book.attempts > 0 || v->rec->book.last_error) &&
                   reaches_goal(a->kind, v->rec)) {
                int k = rkl_store_container_clear_error(r->store, a->key, &err);
                rkl_reconciler__write_failed("container", a->key, "its success", k, &err);
        }
}

/* A pod rm'd: what its unit left in the hierarchies, its limits, and for a sandbox's own pod
 * (its network gone with it) the last statuses it had, without its addresses. */
static void pod_removed(rkl_reconciler *r, const action *a)
{
        if (a->unit_name)
                rkl_app_cgroup_unit_remove(a->unit_name);
        rkl_limits_pod_forget(r, a->key);
        if (a->orphan)
                return;
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = rkl_cache_pod_get(r->cache, a->key);
        if (!v)
                return;
        rkl_error err = RKL_ERROR_INIT;
        rkl_pod_observed o;
        rkl_pod_observed_copy(&o, &v->rec->observed);
        if (o.phase != RKL_POD_PHASE_FAILED)
                o.phase = RKL_POD_PHASE_STOPPED;
        o.ip = mfree(o.ip);
        o.additional_ips = rkl_strv_free(o.additional_ips);
        rkl_observing_set_pod(r, v->rec, &o);
        rkl_pod_observed_done(&o);
        int k = rkl_store_pod_set_rkt_uuid(r->store, a->key, NULL, &err);
        rkl_reconciler__write_failed("sandbox", a->key, "its pod's removal", k, &err);
}

static void apply_result(rkl_reconciler *r, action *a)
{
        rkl_crash_point(act_crash_points[a->kind]);
        out_of_flight(r, a);
        if (is_net(a->kind))
                rkl_network_apply(r, a);
        else if (a->kind == ACT_POD_BOOT)
                boot_result(a);
        else if (a->orphan)
                /* An app's rm or stop fails while its pod goes down ("supervisor is not
                 * ready", the pod file gone): the pod's own removal takes it along. */
                rkl_orphans_result(r, a,
                                   a->result < 0 &&
                                       (a->kind == ACT_APP_RM || a->kind == ACT_APP_STOP) &&
                                       pod_going_down(r, a->uuid));
        else if (a->is_pod)
                sandbox_result(r, a);
        else
                container_result(r, a);
        if (a->kind == ACT_POD_RM && a->result >= 0)
                pod_removed(r, a);
        if (a->uuid[0])
                rkl_observing_read(r, a->uuid);
        rkl_action_free(a);
}

void rkl_action_apply_done(rkl_reconciler *r)
{
        rkl_action_queue *q = r->actions;
        uint64_t v;
        (void)!read(q->done_fd, &v, sizeof(v));
        pthread_mutex_lock(&q->lock);
        action *list = TAKE_PTR(q->done);
        pthread_mutex_unlock(&q->lock);
        while (list) {
                action *next = list->next;
                apply_result(r, list);
                list = next;
        }
}

void rkl_action_drop_done(rkl_reconciler *r)
{
        action_list_free(TAKE_PTR(r->actions->done));
}
