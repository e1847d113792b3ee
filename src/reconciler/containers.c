/* Containers: the step from a container's desired state to rkt's app add, start, stop and
 * rm, the undo of a half-made app, and the failures that make a container never run. */
#include "containers.h"

#include <unistd.h>

#include "reconciler-internal.h"
#include "actions.h"
#include "app-cgroup.h"
#include "backoff.h"
#include "images/images.h"
#include "limits.h"
#include "observe.h"
#include "observing.h"
#include "orphans.h"
#include "base/alloc.h"
#include "base/hashmap.h"
#include "base/log.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "logs/logs.h"
#include "rkt/command.h"
#include "rkt/poddir.h"
#include "store/store.h"
#include "base/banned.h"

/* Adds and starts, ~2 min of backoff, before a container fails for good. */
#define CONTAINER_MAX_ATTEMPTS 8
/* containerd's exit code for a container that could not start. */
#define START_ERROR_EXIT 128

struct rkl_containers {
        /* Container ID -> its own copy: the last add or start failed and may have left a
         * half-made app that no start can run, to rm before the next start. */
        rkl_hashmap *undo;
        uint64_t logs_told; /* what the log follower was last told (rkl_containers_sync_logs) */
};

rkl_containers *rkl_containers_new(void)
{
        rkl_containers *c = rkl_xnew0(rkl_containers, 1);
        c->undo = rkl_hashmap_new();
        return c;
}

rkl_containers *rkl_containers_free(rkl_containers *c)
{
        if (!c)
                return NULL;
        rkl_hashmap_free_values(c->undo, free);
        free(c);
        return NULL;
}

void rkl_containers_undo_mark(rkl_reconciler *r, const char *id)
{
        if (!rkl_hashmap_get(r->containers->undo, id)) {
                char *key = rkl_xstrdup(id);
                rkl_hashmap_put(r->containers->undo, key, key);
        }
}

void rkl_containers_undo_clear(rkl_reconciler *r, const char *id)
{
        free(rkl_hashmap_remove(r->containers->undo, id));
}

/* The container will never run (it failed for good, or was stopped before its start was
 * carried out): EXITED with code, reason and message (taken), recorded and published. What
 * rkt shows of its app no longer changes that (rkl_container_never_ran()). */
static void container_never_runs(rkl_reconciler *r, const rkl_container_record *rec, int exit_code,
                                 const char *reason, char *message)
{
        rkl_container_observed o;
        rkl_container_observed_copy(&o, &rec->observed);
        o.phase = RKL_CONTAINER_PHASE_EXITED;
        o.pid = 0;
        o.has_exit_code = true;
        o.exit_code = exit_code;
        o.finished_ns = rkl_reconciler__now(r);
        free(o.reason);
        free(o.message);
        o.reason = rkl_xstrdup(reason);
        o.message = message;
        rkl_containers_undo_clear(r, rec->id); /* no start follows; removal takes what is left */
        rkl_observing_set_container(r, rec, &o);
        rkl_container_observed_done(&o);
}

void rkl_containers_failed_attempt(rkl_reconciler *r, const rkl_container_record *rec,
                                   const char *msg)
{
        rkl_error err = RKL_ERROR_INIT;
        int64_t now = rkl_reconciler__now(r);
        int64_t next = now + rkl_backoff_ns(rec->book.attempts);
        int n = rkl_store_container_record_error(r->store, rec->id, msg, next, &err);
        rkl_reconciler__write_failed("container", rec->id, "its failure", n, &err);
        if (n >= CONTAINER_MAX_ATTEMPTS) {
                char *m = rkl_xasprintf("%s (gave up after %d attempts)", msg, n);
                rkl_log_object_warning(CONTAINER_OBJECT(rec), "container %.12s: %s", rec->id, m);
                container_never_runs(r, rec, START_ERROR_EXIT, RKL_CONTAINER_START_ERROR, m);
                return;
        }
        rkl_log_object_warning(CONTAINER_OBJECT(rec), "container %.12s: %s (attempt %d of %d)",
                               rec->id, msg, n < 0 ? 0 : n, CONTAINER_MAX_ATTEMPTS);
        rkl_reconciler__wake_at(r, next);
}

/* ---- The step: one function per transition ----
 *
 * Each takes container c of the running sandbox pod, whose pod p runs and is ready, a step
 * from what is observed (the record's phase, and st: its app's state in p) towards what is
 * desired, with the action that does it, or NULL when none can start now. */

typedef enum transition {
        T_NONE,
        T_ADD,         /* no app yet: rkt's app add */
        T_START,       /* an app made, not started: app start (or the undo of a half-made one) */
        T_START_AGAIN, /* a start that failed after rkt marked the app started */
        T_STOP,        /* a running app no longer wanted: app stop */
} transition;

static transition transition_of(const rkl_container_record *c, rkl_pod_app_state st)
{
        bool created = c->observed.phase == RKL_CONTAINER_PHASE_CREATED;
        switch (c->desired) {
        case RKL_CONTAINER_DESIRED_STOPPED:
                return st == RKL_POD_APP_RUNNING ? T_STOP : T_NONE;
        case RKL_CONTAINER_DESIRED_RUNNING:
                if (st == RKL_POD_APP_UNKNOWN && created)
                        return T_ADD;
                if (st == RKL_POD_APP_CREATED)
                        return T_START;
                if (st == RKL_POD_APP_RUNNING && created && c->book.last_error)
                        return T_START_AGAIN;
                return T_NONE;
        default: /* created, not asked to run yet */
                return st == RKL_POD_APP_UNKNOWN && created ? T_ADD : T_NONE;
        }
}

/* Stopped before its start was carried out (a stop right after a start, or during its app
 * add): no start follows, so it is over (such containers once stayed CREATED for good).
 * RemoveContainer takes the app along. */
static bool stopped_before_start(const rkl_container_record *c, rkl_pod_app_state st)
{
        return c->desired == RKL_CONTAINER_DESIRED_STOPPED &&
               c->observed.phase == RKL_CONTAINER_PHASE_CREATED &&
               (st == RKL_POD_APP_UNKNOWN || st == RKL_POD_APP_CREATED);
}

/* The image rkt is to add c's app from: its ID, so that what rkt records (and
 * ContainerStatus reports) is the ID PullImage returned (a reference pulled by hand is found
 * by one more look at rkt's store); and for args without a command the image's own
 * entrypoint, which they run with (Kubernetes' rule; rkt would put them after the image's
 * first word). A failure counts as the attempt's. */
static int app_image(rkl_reconciler *r, const rkl_container_record *c, char **ret_image,
                     char ***ret_entrypoint)
{
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_free_ char *image = NULL;
        int k;
        if (!isempty(c->observed.image_ref))
                image = rkl_xstrdup(c->observed.image_ref); /* pinned at create */
        else if ((k = rkl_images_resolve_refresh(r->images, c->spec.image, &image, &err)) < 0) {
                rkl_containers_failed_attempt(r, c, err.msg);
                return k;
        }
        _cleanup_strv_free_ char **entrypoint = NULL;
        if (!c->spec.command && c->spec.args) {
                _cleanup_(rkl_image_freep) rkl_image *img = NULL;
                if ((k = rkl_images_status(r->images, image, &img, &err)) < 0) {
                        rkl_containers_failed_attempt(r, c, err.msg);
                        return k;
                }
                entrypoint = rkl_strv_copy(img->entrypoint);
        }
        *ret_image = TAKE_PTR(image);
        *ret_entrypoint = TAKE_PTR(entrypoint);
        return 0;
}

static action *add_app(rkl_reconciler *r, const rkl_pod_record *pod, const rkl_poddir_pod *p,
                       const rkl_container_record *c)
{
        if (!rkl_action_can_start(r, c->id) || rkl_action_app_busy(r, pod->rkt_uuid) ||
            rkl_orphans_rm_due(r, p))
                return NULL;
        _cleanup_free_ char *image = NULL;
        _cleanup_strv_free_ char **entrypoint = NULL;
        if (app_image(r, c, &image, &entrypoint) < 0)
                return NULL;
        action *a = rkl_action_new(r, ACT_APP_ADD, c->id, pod->rkt_uuid, c->app_name);
        a->container = rkl_cache_container_get(r->cache, c->id);
        if (!a->container) { /* removed meanwhile: the next pass removes the rest */
                rkl_action_free(a);
                return NULL;
        }
        a->entrypoint = TAKE_PTR(entrypoint);
        a->image = TAKE_PTR(image);
        a->log_file = rkl_xasprintf("%s.log", c->app_name);
        rkl_observing_container_step(r, c, RKL_CONTAINER_STEP_ADD_BEGUN);
        rkl_kvs_copy(&a->sysctls, &pod->spec.sysctls);
        a->pod_hostname = pod->spec.hostname ? rkl_xstrdup(pod->spec.hostname) : NULL;
        a->pod_pid = p ? p->ppid : 0;
        a->node_hosts = pod->spec.host_network;
        rkl_orphans_add_submitted(r, p);
        return a;
}

static action *start_app(rkl_reconciler *r, const rkl_pod_record *pod, const rkl_poddir_pod *p,
                         const rkl_container_record *c)
{
        if (!rkl_action_can_start(r, c->id) || rkl_action_app_busy(r, pod->rkt_uuid))
                return NULL;
        if (rkl_hashmap_get(r->containers->undo, c->id)) {
                /* After a failed add or start rkt may hold a half-made app that no start can
                 * run (docs/rkt.md, 'Quirks'): undo it; a fresh add follows. Once per failure:
                 * the add that follows starts clean. */
                action *a = rkl_action_new(r, ACT_APP_RM, c->id, pod->rkt_uuid, c->app_name);
                a->supervisor = (pid_t)p->ppid;
                return a;
        }
        action *a = rkl_action_new(r, ACT_APP_START, c->id, pod->rkt_uuid, c->app_name);
        a->supervisor = (pid_t)p->ppid;
        rkl_observing_container_step(r, c, RKL_CONTAINER_STEP_START_BEGUN);
        return a;
}

/* The last start failed after rkt wrote <app>-started (it was killed, or timed out): if no
 * process came of it, start again. rkt's app start clears that state first, as it does to
 * restart an exited app. */
static action *start_again(rkl_reconciler *r, const rkl_pod_record *pod, const rkl_poddir_pod *p,
                           const rkl_container_record *c)
{
        pid_t pid;
        if (rkl_observing_app_process(r, c, p, &pid) != RKL_APP_PROC_NONE ||
            !rkl_action_can_start(r, c->id) || rkl_action_app_busy(r, pod->rkt_uuid))
                return NULL;
        action *a = rkl_action_new(r, ACT_APP_START, c->id, pod->rkt_uuid, c->app_name);
        a->supervisor = (pid_t)p->ppid;
        rkl_observing_container_step(r, c, RKL_CONTAINER_STEP_START_BEGUN);
        return a;
}

/* By StopContainer's deadline (kept in the store), else after the grace. */
static action *stop_app(rkl_reconciler *r, const rkl_pod_record *pod, const rkl_poddir_pod *p,
                        const rkl_container_record *c, int64_t now)
{
        if (!rkl_action_can_start(r, c->id))
                return NULL;
        action *a = rkl_action_new(r, ACT_APP_STOP, c->id, pod->rkt_uuid, c->app_name);
        a->deadline_ns = c->stop_deadline_ns
                             ? c->stop_deadline_ns
                             : now + (int64_t)r->stop_grace_usec * (int64_t)NSEC_PER_USEC;
        a->supervisor = (pid_t)p->ppid;
        a->timeout_usec = 0;
        return a;
}

/* The limits of a running app are kept applied, and forgotten once it exited. */
static void limits_step(rkl_reconciler *r, const rkl_container_record *c, const rkl_poddir_pod *p,
                        rkl_pod_app_state st)
{
        if (c->observed.phase == RKL_CONTAINER_PHASE_RUNNING && st == RKL_POD_APP_RUNNING)
                rkl_limits_sync(r, c, p);
        else if (c->observed.phase == RKL_CONTAINER_PHASE_EXITED)
                rkl_limits_forget(r, c->id);
}

void rkl_containers_step(rkl_reconciler *r, const rkl_pod_record *pod, const rkl_poddir_pod *p,
                         const rkl_container_record *c, int64_t now)
{
        const rkl_poddir_app *app = rkl_poddir_pod_find_app(p, c->app_name);
        rkl_pod_app_state st = app ? app->state : RKL_POD_APP_UNKNOWN;
        action *a = NULL;

        if (rkl_action_in_flight(r, c->id) || rkl_container_never_ran(&c->observed))
                return;
        limits_step(r, c, p, st);
        if (stopped_before_start(c, st)) {
                rkl_log_object_info(CONTAINER_OBJECT(c),
                                    "container %.12s: stopped before it started", c->id);
                container_never_runs(r, c, 0, RKL_CONTAINER_NOT_STARTED,
                                     rkl_xstrdup("stopped before it started"));
                return;
        }
        if (c->book.next_retry_ns > now) {
                rkl_reconciler__wake_at(r, c->book.next_retry_ns);
                return;
        }
        switch (transition_of(c, st)) {
        case T_ADD:
                a = add_app(r, pod, p, c);
                break;
        case T_START:
                a = start_app(r, pod, p, c);
                break;
        case T_START_AGAIN:
                a = start_again(r, pod, p, c);
                break;
        case T_STOP:
                a = stop_app(r, pod, p, c, now);
                break;
        case T_NONE:
                break;
        }
        if (a)
                rkl_action_submit(r, a);
}

/* Containers whose app ran: rkt's output file exists, or will. */
static bool has_output(const rkl_container_record *c)
{
        return (c->observed.phase == RKL_CONTAINER_PHASE_RUNNING ||
                c->observed.phase == RKL_CONTAINER_PHASE_EXITED) &&
               !rkl_container_never_ran(&c->observed);
}

/* What the follower needs of c (free with log_target_done). */
static rkl_logs_target log_target(rkl_reconciler *r, const rkl_container_record *c,
                                  const char *log_directory)
{
        return (rkl_logs_target){
            .container_id = c->id,
            .source = rkl_logs_source_path(r->cfg.state_dir, c->sandbox_id, c->app_name),
            .progress = rkl_logs_progress_path(r->cfg.state_dir, c->sandbox_id, c->app_name),
            .log_directory = rkl_xstrdup(log_directory),
            .log_path = c->spec.log_path,
            .exited = c->observed.phase == RKL_CONTAINER_PHASE_EXITED,
        };
}

static void log_target_done(rkl_logs_target *t)
{
        free((char *)t->source);
        free((char *)t->progress);
        free((char *)t->log_directory);
}

/* Is rkt's writer of the app's output (iottymux, in the app's iomux@ unit) still to come
 * or still there? It writes the app's last lines after the exit (and without
 * packaging/rkt/stream-drain.patch starts only after the app); its file exists from its
 * start on, and its cgroup goes with it. */
static bool log_writer_pending(rkl_reconciler *r, const rkl_poddir_pod *p,
                               const rkl_container_record *c)
{
        _cleanup_free_ char *source =
            rkl_logs_source_path(r->cfg.state_dir, c->sandbox_id, c->app_name);
        if (access(source, F_OK) < 0)
                return true;
        /* An instance of a template unit sits in the template's own slice. */
        _cleanup_free_ char *unit = rkl_xasprintf("system-iomux.slice/iomux@%s", c->app_name);
        _cleanup_free_ char *procs = NULL, *memory = NULL;
        pid_t pid = 0;
        if (!p || !p->ppid || RKL_OPS(r, app_cgroups, (pid_t)p->ppid, unit, &procs, &memory) < 0)
                return false; /* the pod or the unit's cgroup is gone */
        return rkl_app_cgroup_first_pid(procs, &pid) == 0 && pid > 0;
}

void rkl_containers_log_writer_look(rkl_reconciler *r, const rkl_poddir_pod *p,
                                    const rkl_container_record *c, const rkl_container_observed *co)
{
        /* Seen running before, and now: iottymux starts before the app and goes after it. */
        if (!r->logs || !p || !p->ppid || c->spec.tty ||
            c->observed.phase != RKL_CONTAINER_PHASE_RUNNING ||
            co->phase != RKL_CONTAINER_PHASE_RUNNING)
                return;
        /* stage1 makes the app's iottymux directory (its env file, its sockets) at the add;
         * a pod without one has no iottymux to lose (the simulator). */
        _cleanup_free_ char *dir = rkl_xasprintf("%s/run/%s/stage1/rootfs/rkt/iottymux/%s",
                                                 r->pods_dir, p->uuid, c->app_name);
        if (access(dir, F_OK) < 0)
                return;
        _cleanup_free_ char *unit = rkl_xasprintf("system-iomux.slice/iomux@%s", c->app_name);
        _cleanup_free_ char *procs = NULL, *memory = NULL;
        pid_t pid = 0;
        int k = RKL_OPS(r, app_cgroups, (pid_t)p->ppid, unit, &procs, &memory);
        /* -ENXIO: the pod runs and its unit's cgroup is gone (-ENOENT: the pod is gone). */
        if (k != -ENXIO && (k != 0 || rkl_app_cgroup_first_pid(procs, &pid) < 0 || pid != 0))
                return;
        /* iottymux ends after its app (at the end of the app's output, or stopped after it):
         * gone with an app whose exit rkt has not recorded yet is no news. Asked after the
         * writer, the app's process still there means the writer went first. */
        pid_t app_pid;
        if (rkl_observing_app_process(r, c, p, &app_pid) == RKL_APP_PROC_SEEN)
                (void)rkl_logs_writer_gone(r->logs, c->id);
}

bool rkl_containers_exit_held(rkl_reconciler *r, const rkl_pod_record *pod, const rkl_poddir_pod *p,
                              const rkl_container_record *c, const rkl_container_observed *co)
{
        /* A TTY's output goes to no log; an exit long past (the daemon was down) has had
         * its writer's time. */
        if (!r->logs || !p || co->phase != RKL_CONTAINER_PHASE_EXITED ||
            c->observed.phase == RKL_CONTAINER_PHASE_EXITED || rkl_container_never_ran(co) ||
            c->spec.tty || isempty(pod->spec.log_directory) || isempty(c->spec.log_path) ||
            !co->finished_ns || rkl_reconciler__now(r) - co->finished_ns >= EXIT_HOLD_NS)
                return false;
        if (log_writer_pending(r, p, c))
                return true;
        if (rkl_logs_finished(r->logs, c->id))
                return false;
        rkl_logs_target t = log_target(r, c, pod->spec.log_directory);
        t.exited = true;
        rkl_logs_finish(r->logs, &t);
        log_target_done(&t);
        return true;
}

void rkl_containers_sync_logs(rkl_reconciler *r)
{
        rkl_container_view **v;
        size_t n;
        if (!r->logs)
                return;
        rkl_cache_container_list(r->cache, NULL, &v, &n);
        /* Views are immutable and versioned: the same versions, the same answer. */
        uint64_t told = n;
        for (size_t i = 0; i < n; i++)
                told = told * 1000003 + v[i]->rec->book.version;
        if (told == r->containers->logs_told) {
                rkl_container_views_unref(v, n);
                return;
        }
        r->containers->logs_told = told;

        rkl_logs_target *t = rkl_xnew0(rkl_logs_target, n ? n : 1);
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
                const rkl_container_record *c = v[i]->rec;
                if (!has_output(c))
                        continue;
                _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *pod =
                    rkl_cache_pod_get(r->cache, c->sandbox_id);
                t[k++] = log_target(r, c, pod ? pod->rec->spec.log_directory : NULL);
        }
        rkl_logs_sync(r->logs, t, k);
        for (size_t i = 0; i < k; i++)
                log_target_done(&t[i]);
        free(t);
        rkl_container_views_unref(v, n);
}
