/* The reconcile loop. Everything here runs on the reconciler thread except run_action(),
 * which runs rkt commands on the worker pool and hands its result back through a queue.
 *
 * One pass: for every sandbox and container in the cache (the in-memory mirror of the
 * store), compare desired with observed state and start what closes the difference. What
 * the machine looks like comes from rkt's pod directories (rkt/poddir.h), re-read when the
 * watcher says a pod changed and on a periodic rescan; it is written to the store and the
 * cache when it changes. Every action is safe to repeat: the unit name is derived from the
 * sandbox ID, rkt identity is recorded before it is relied on, and "already there" or
 * "already gone" answers count as success. */
#include "reconciler.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "state/cache.h"
#include "cgroup.h"
#include "images/images.h"
#include "observe.h"
#include "unit.h"
#include "base/alloc.h"
#include "base/crash.h"
#include "base/fileio.h"
#include "base/hashmap.h"
#include "base/log.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "base/workpool.h"
#include "rkt/command.h"
#include "rkt/poddir.h"
#include "rkt/rkt.h"
#include "rkt/watch.h"
#include "state/store.h"
#include "base/banned.h"

#define MAX_ATTEMPTS                                                                               \
        5                   /* failed sandbox creations or container adds/starts before the        \
                             * object fails for good */
#define CTR_MAX_ATTEMPTS  8 /* adds/starts, ~2 min of backoff, before a container fails for good */
#define START_ERROR_EXIT  128 /* containerd's exit code for a container that could not start */
#define BACKOFF_BASE_NS   (500 * (int64_t)1000000)
#define BACKOFF_MAX_NS    (60 * (int64_t)NSEC_PER_SEC)
#define PENDING_POLL_USEC (50 * USEC_PER_MSEC)

typedef enum act_kind {
        ACT_APP_ADD,
        ACT_APP_START,
        ACT_APP_STOP,
        ACT_APP_RM,
        ACT_POD_STOP, /* rkt stop, wait for the pod to exit, --force after the grace */
        ACT_POD_RM,   /* rkt rm: frees the pod's network */
} act_kind;

/* Forced crash points (base/crash.h): the rkt command ran, its result is not recorded. */
static const char *const act_crash_points[] = {
    [ACT_APP_ADD] = "after-app-add",   [ACT_APP_START] = "after-app-start",
    [ACT_APP_STOP] = "after-app-stop", [ACT_APP_RM] = "after-app-rm",
    [ACT_POD_STOP] = "after-pod-stop", [ACT_POD_RM] = "after-pod-rm",
};

static const char *const act_names[] = {
    [ACT_APP_ADD] = "app add", [ACT_APP_START] = "app start", [ACT_APP_STOP] = "app stop",
    [ACT_APP_RM] = "app rm",   [ACT_POD_STOP] = "stop",       [ACT_POD_RM] = "rm",
};

typedef struct action {
        struct action *next;
        rkl_reconciler *r;
        act_kind kind;
        char key[RKL_ID_LEN + 1]; /* the object in flight: a container or sandbox ID */
        bool is_pod;
        bool orphan; /* no record: nothing to write back */
        char uuid[RKL_POD_UUID_LEN + 1];
        char *app;
        char *unit_name; /* ACT_POD_RM: "system.slice/<unit>", whose leftover cgroups go */
        char **args;
        uint64_t timeout_usec;
        int64_t deadline_ns; /* ACT_APP_STOP: SIGKILL then */
        pid_t supervisor;    /* ACT_APP_STOP, ACT_APP_RM: where the app's cgroup is */
        bool force;          /* ACT_POD_STOP: SIGKILL at once */
        int result;
        char error[512];
} action;

struct rkl_reconciler {
        rkl_reconciler_config cfg;
        char *pods_dir;
        rkl_cache *cache;
        rkl_rkt *rkt;
        int kick_fd, quit_fd, done_fd;
        pthread_t thread;
        bool running;

        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool started;
        int thread_error;
        atomic_bool images_unlisted;  /* the last image list failed: again at the next probe */
        atomic_bool images_listing;   /* one is on the pool now */
        bool store_refused;           /* the store failed its check at start: act on nothing */
        atomic_bool checkpoint_asked; /* by the API's connections: their WAL grew */
        action *done;                 /* finished actions, under lock */

        rkl_workpool *pool;

        /* Reconciler thread only. */
        rkl_store *store;
        sd_event *event;
        sd_event_source *pass_source, *wake_source;
        sd_bus *bus;
        rkl_poddir_watch *watch;
        int pods_dirfd;
        rkl_hashmap *seen;      /* uuid -> rkl_poddir_pod*: each pod as last read */
        rkl_hashmap *in_flight; /* object ID -> action* */
        unsigned n_in_flight;
        /* Container ID -> its own copy: the last add or start failed and may have left a
         * half-made app that no start can run, to rm before the next start. Memory only: after
         * a crash the first start that fails sets it again, one attempt later. */
        rkl_hashmap *undo;
        int64_t wake_at_ns; /* earliest time a pass must run again; 0: none */
        char **recheck;     /* pods to read again at the next pass: what inotify cannot see */
        bool rescan;
};

static int64_t backoff_ns(uint32_t attempts)
{
        int64_t d = BACKOFF_BASE_NS;
        for (uint32_t i = 0; i < attempts && d < BACKOFF_MAX_NS; i++)
                d *= 2;
        return d < BACKOFF_MAX_NS ? d : BACKOFF_MAX_NS;
}

static void wake_at(rkl_reconciler *r, int64_t t)
{
        if (r->wake_at_ns == 0 || t < r->wake_at_ns)
                r->wake_at_ns = t;
}

static void schedule_pass(rkl_reconciler *r)
{
        if (r->pass_source)
                (void)sd_event_source_set_enabled(r->pass_source, SD_EVENT_ONESHOT);
}

/* ---- Probing rkt and systemd for Status ---- */

static void probe_rkt(rkl_reconciler *r, rkl_health *h)
{
        rkl_error err = RKL_ERROR_INIT;
        rkl_rkt_version v = {0};

        if (!r->rkt) {
                h->rkt_detail = rkl_xstrdup("no rkt binary: not found in PATH; set --rkt-path");
                return;
        }
        if (rkl_rkt_version_get(r->rkt, &v, &err) < 0) {
                h->rkt_detail = rkl_xstrdup(err.msg);
                return;
        }
        h->rkt_ok = true;
        h->rkt_version = TAKE_PTR(v.version);
        h->rkt_detail = TAKE_PTR(v.text);
        rkl_rkt_version_done(&v);
}

static void probe_systemd(rkl_reconciler *r, rkl_health *h)
{
        rkl_error err = RKL_ERROR_INIT;
        char *version = NULL;

        if (!r->bus) {
                if (rkl_unit_connect(r->cfg.systemd_bus, &r->bus, &err) < 0) {
                        h->systemd_detail = rkl_xstrdup(err.msg);
                        return;
                }
                (void)rkl_unit_subscribe(r->bus, NULL);
        }
        if (rkl_unit_manager_version(r->bus, &version, &err) < 0) {
                /* Reconnect on the next probe: the manager may have restarted. */
                r->bus = sd_bus_flush_close_unref(r->bus);
                h->systemd_detail = rkl_xstrdup(err.msg);
                return;
        }
        h->systemd_ok = true;
        h->systemd_version = version;
}

static void probe(rkl_reconciler *r)
{
        rkl_health h = {0}, old = {0};

        probe_rkt(r, &h);
        probe_systemd(r, &h);
        h.probed_at = rkl_realtime_nsec();

        rkl_cache_get_health(r->cache, &old);
        if (old.probed_at == 0 || old.rkt_ok != h.rkt_ok || old.systemd_ok != h.systemd_ok) {
                if (h.rkt_ok)
                        rkl_log_info("rkt %s is usable", h.rkt_version);
                else
                        rkl_log_warning("rkt is not usable: %s", h.rkt_detail);
                if (h.systemd_ok)
                        rkl_log_info("systemd %s is reachable", h.systemd_version);
                else
                        rkl_log_warning("systemd is not reachable: %s", h.systemd_detail);
        }
        rkl_cache_set_health(r->cache, &h);
        rkl_health_done(&h);
        rkl_health_done(&old);
}

/* ---- Writing observations and errors back ---- */

static void publish_pod(rkl_reconciler *r, const char *id)
{
        rkl_error err = RKL_ERROR_INIT;
        if (rkl_cache_publish_pod(r->cache, r->store, id, &err) < 0 && err.code != -ENOENT)
                rkl_log_warning("cannot refresh sandbox %.12s: %s", id, err.msg);
}

static void publish_ctr(rkl_reconciler *r, const char *id)
{
        rkl_error err = RKL_ERROR_INIT;
        if (rkl_cache_publish_ctr(r->cache, r->store, id, &err) < 0 && err.code != -ENOENT)
                rkl_log_warning("cannot refresh container %.12s: %s", id, err.msg);
}

/* A failed attempt: shown in Status and the database, retried after a backoff. */
static void pod_failed_attempt(rkl_reconciler *r, const rkl_pod_record *rec, const char *msg)
{
        rkl_error err = RKL_ERROR_INIT;
        int64_t next = rkl_realtime_nsec() + backoff_ns(rec->book.attempts);
        int n = rkl_store_pod_record_error(r->store, rec->id, msg, next, &err);
        wake_at(r, next); /* retry then, not at the next resync */
        rkl_log_warning("sandbox %.12s: %s (attempt %d)", rec->id, msg, n < 0 ? 0 : n);
        if (n < 0)
                rkl_log_error("sandbox %.12s: cannot record error: %s", rec->id, err.msg);
        publish_pod(r, rec->id);
}

/* Whether a successful action ends the failures counted on a container: the step that
 * reaches what is wanted, not an undo or a step on the way, or the count would never reach
 * MAX_ATTEMPTS when the last step keeps failing. */
static bool reaches_goal(act_kind kind, const rkl_container_record *c)
{
        if (kind == ACT_APP_ADD)
                return c->desired != RKL_CTR_DESIRED_RUNNING;
        return kind == ACT_APP_START || kind == ACT_APP_STOP;
}

static void undo_mark(rkl_reconciler *r, const char *id)
{
        if (!rkl_hashmap_get(r->undo, id)) {
                char *key = rkl_xstrdup(id);
                rkl_hashmap_put(r->undo, key, key);
        }
}

static void undo_clear(rkl_reconciler *r, const char *id)
{
        free(rkl_hashmap_remove(r->undo, id));
}

/* The container will never run (it failed for good, or was stopped before its start was
 * carried out): EXITED with code, reason and message (taken), recorded and published. What
 * rkt shows of its app no longer changes that (rkl_ctr_never_ran()). */
static void ctr_never_runs(rkl_reconciler *r, const rkl_container_record *rec, int exit_code,
                           const char *reason, char *message)
{
        rkl_error err = RKL_ERROR_INIT;
        rkl_container_observed o;
        rkl_container_observed_copy(&o, &rec->observed);
        o.phase = RKL_CTR_PHASE_EXITED;
        o.pid = 0;
        o.has_exit_code = true;
        o.exit_code = exit_code;
        o.finished_ns = rkl_realtime_nsec();
        free(o.reason);
        free(o.message);
        o.reason = rkl_xstrdup(reason);
        o.message = message;
        undo_clear(r, rec->id); /* no start follows; removal takes what is left */
        if (rkl_store_container_set_observed(r->store, rec->id, &o, &err) < 0)
                rkl_log_error("container %.12s: cannot record observation: %s", rec->id, err.msg);
        rkl_container_observed_done(&o);
        publish_ctr(r, rec->id);
}

/* A failed add or start: retried with backoff, and after MAX_ATTEMPTS the container fails
 * for good, EXITED with containerd's StartError and 128, so that kubelet sees it and acts
 * (its restart policy) instead of waiting on a container that never runs. */
static void ctr_failed_attempt(rkl_reconciler *r, const rkl_container_record *rec, const char *msg)
{
        rkl_error err = RKL_ERROR_INIT;
        int64_t now = rkl_realtime_nsec();
        int64_t next = now + backoff_ns(rec->book.attempts);
        int n = rkl_store_container_record_error(r->store, rec->id, msg, next, &err);
        if (n < 0)
                rkl_log_error("container %.12s: cannot record its failure: %s", rec->id, err.msg);
        if (n >= CTR_MAX_ATTEMPTS) {
                char *m = rkl_xasprintf("%s (gave up after %d attempts)", msg, n);
                rkl_log_warning("container %.12s: %s", rec->id, m);
                ctr_never_runs(r, rec, START_ERROR_EXIT, RKL_CTR_START_ERROR, m);
                return;
        }
        rkl_log_warning("container %.12s: %s (attempt %d of %d)", rec->id, msg, n < 0 ? 0 : n,
                        CTR_MAX_ATTEMPTS);
        wake_at(r, next);
        publish_ctr(r, rec->id);
}

static void pod_set_observed(rkl_reconciler *r, const rkl_pod_record *rec,
                             const rkl_pod_observed *o)
{
        rkl_error err = RKL_ERROR_INIT;
        if (rkl_pod_observed_equal(o, &rec->observed))
                return;
        if (o->phase != rec->observed.phase)
                rkl_log_info("sandbox %.12s: %s -> %s", rec->id,
                             rkl_pod_phase_to_string(rec->observed.phase),
                             rkl_pod_phase_to_string(o->phase));
        if (rkl_store_pod_set_observed(r->store, rec->id, o, &err) < 0)
                rkl_log_error("sandbox %.12s: cannot record observation: %s", rec->id, err.msg);
        publish_pod(r, rec->id);
}

static bool ctr_oom_killed(const rkl_container_record *rec, const rkl_poddir_pod *p)
{
        const rkl_poddir_app *a = p ? rkl_poddir_pod_find_app(p, rec->app_name) : NULL;
        _cleanup_free_ char *procs = NULL, *memory = NULL;
        unsigned kills = 0;

        /* Only a SIGKILLed app can have been OOM-killed; ask its memory cgroup. */
        if (!a || a->state != RKL_POD_APP_EXITED || !a->exit_known || a->exit_code != SIGKILL ||
            !p->ppid)
                return false;
        if (rkl_cgroup_app_paths((pid_t)p->ppid, rec->app_name, &procs, &memory) < 0 || !memory)
                return false;
        return rkl_cgroup_oom_kills(memory, &kills) == 0 && kills > 0;
}

/* Is the app's process there yet? (see rkl_app_proc) */
static rkl_app_proc app_process(const rkl_container_record *rec, const rkl_poddir_pod *p,
                                pid_t *ret_pid)
{
        const rkl_poddir_app *a = p ? rkl_poddir_pod_find_app(p, rec->app_name) : NULL;
        _cleanup_free_ char *procs = NULL, *memory = NULL;

        *ret_pid = 0;
        if (!a || a->state != RKL_POD_APP_RUNNING || !p->ppid)
                return RKL_APP_PROC_UNKNOWN;
        int k = rkl_cgroup_app_paths((pid_t)p->ppid, rec->app_name, &procs, &memory);
        if (k >= 0)
                k = rkl_cgroup_first_pid(procs, ret_pid);
        /* No cgroup under a live supervisor: no process ever joined it (a start that failed
         * after rkt wrote <app>-started, or one still on its way). */
        if ((k == -ENXIO || k == -ENOENT) && kill((pid_t)p->ppid, 0) == 0)
                return RKL_APP_PROC_NONE;
        if (k < 0)
                return RKL_APP_PROC_UNKNOWN;
        if (*ret_pid <= 0)
                return RKL_APP_PROC_NONE;
        /* The first sight of its process: give the app a memory cgroup of its own, so that
         * its OOM kills are its own (idempotent; after a restart it moves nothing). */
        if (rec->observed.phase != RKL_CTR_PHASE_RUNNING) {
                k = rkl_cgroup_memory_adopt(procs, memory);
                if (k < 0)
                        rkl_log_warning("container %.12s: cannot give it a memory cgroup (%s): "
                                        "an OOM kill will read as a plain SIGKILL",
                                        rec->id, strerror(-k));
        }
        return RKL_APP_PROC_SEEN;
}

/* Brings the store and cache in line with pod p (NULL: its directory is gone). */
static void persist_observation(rkl_reconciler *r, const rkl_pod_record *rec,
                                const rkl_poddir_pod *p)
{
        rkl_pod_observed o;
        bool dead;

        rkl_observe_pod(rec, p, rkl_realtime_nsec(), &o, &dead);
        pod_set_observed(r, rec, &o);
        rkl_pod_observed_done(&o);

        rkl_view_filter f = {.sandbox_id = rec->id};
        rkl_ctr_view **ctrs;
        size_t n;
        rkl_cache_ctr_list(r->cache, &f, &ctrs, &n);
        for (size_t i = 0; i < n; i++) {
                const rkl_container_record *c = ctrs[i]->rec;
                rkl_container_observed co;
                rkl_error err = RKL_ERROR_INIT;

                pid_t pid;
                rkl_app_proc proc = app_process(c, p, &pid);
                if (proc == RKL_APP_PROC_NONE) {
                        /* The process is on its way; joining a cgroup touches no file the
                         * watcher sees, so read the pod again shortly. */
                        rkl_strv_push(&r->recheck, p->uuid);
                        wake_at(r, rkl_realtime_nsec() + 20 * (int64_t)1000000);
                }
                rkl_observe_container(c, rec, p, proc, pid, ctr_oom_killed(c, p), &co);
                if (!rkl_container_observed_equal(&co, &c->observed)) {
                        if (co.phase != c->observed.phase)
                                rkl_log_info("container %.12s: %s -> %s", c->id,
                                             rkl_ctr_phase_to_string(c->observed.phase),
                                             rkl_ctr_phase_to_string(co.phase));
                        if (rkl_store_container_set_observed(r->store, c->id, &co, &err) < 0)
                                rkl_log_error("container %.12s: cannot record observation: %s",
                                              c->id, err.msg);
                        publish_ctr(r, c->id);
                }
                rkl_container_observed_done(&co);
        }
        rkl_ctr_views_unref(ctrs, n);
}

/* ---- Observing pod directories ---- */

static int pods_dirfd(rkl_reconciler *r)
{
        if (r->pods_dirfd < 0)
                r->pods_dirfd = open(r->pods_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return r->pods_dirfd;
}

static void seen_set(rkl_reconciler *r, const char *uuid, rkl_poddir_pod *p)
{
        rkl_poddir_pod *old = rkl_hashmap_remove(r->seen, uuid);
        if (old) {
                rkl_poddir_pod_done(old);
                free(old);
        }
        if (p)
                rkl_hashmap_put(r->seen, p->uuid, p);
}

/* The sandbox whose record names uuid, or NULL. */
static rkl_pod_view *pod_by_uuid(rkl_reconciler *r, const char *uuid)
{
        rkl_pod_view **pods;
        size_t n;
        rkl_pod_view *found = NULL;
        rkl_cache_pod_list(r->cache, NULL, &pods, &n);
        for (size_t i = 0; i < n && !found; i++)
                if (streq_ptr(pods[i]->rec->rkt_uuid, uuid))
                        found = rkl_pod_view_ref(pods[i]);
        rkl_pod_views_unref(pods, n);
        return found;
}

/* When the current creation attempt of a sandbox began: a retry starts once the backoff of
 * the last failure ran out. */
static int64_t attempt_start_ns(const rkl_pod_record *rec)
{
        return rec->book.next_retry_ns > rec->book.accepted_ns ? rec->book.next_retry_ns
                                                               : rec->book.accepted_ns;
}

/* A live pod marked for a sandbox being created, whose UUID is not recorded yet, is that
 * creation's (the daemon crashed, or the uuid file was not read yet), unless it was made
 * before the current attempt began: an earlier attempt's pod on its way down, which must
 * not count against the new attempt, nor live on in a sandbox that failed for good. */
static bool pod_adoptable(const rkl_pod_record *rec, const rkl_poddir_pod *p)
{
        return !rec->rkt_uuid && rec->desired == RKL_POD_DESIRED_READY &&
               rec->observed.phase == RKL_POD_PHASE_PENDING &&
               !rkl_pod_state_is_after_run(p->state) &&
               (p->created_ns == 0 || p->created_ns >= attempt_start_ns(rec));
}

static void observe_uuid(rkl_reconciler *r, const char *uuid)
{
        rkl_error err = RKL_ERROR_INIT;
        rkl_poddir_pod *p = rkl_xnew0(rkl_poddir_pod, 1);
        int fd = pods_dirfd(r);
        int k = fd < 0 ? -ENOENT : rkl_poddir_read(fd, uuid, p, &err);

        if (k < 0) {
                free(p);
                if (k != -ENOENT) {
                        rkl_log_debug("pod %s: %s", uuid, err.msg);
                        return;
                }
                seen_set(r, uuid, NULL);
                _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = pod_by_uuid(r, uuid);
                if (v)
                        persist_observation(r, v->rec, NULL);
                return;
        }
        if (r->watch)
                (void)rkl_poddir_watch_pod(r->watch, uuid, NULL);
        seen_set(r, uuid, p);

        /* Only pods rktlet made carry its mark; the rest are none of our business. */
        const char *id = rkl_kvs_get(&p->user_annotations, RKL_MARK_SANDBOX_ID);
        if (!id || !rkl_id_is_valid(id))
                return;
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = rkl_cache_pod_get(r->cache, id);
        if (!v)
                return; /* an orphan: the pass removes it */
        if (pod_adoptable(v->rec, p)) {
                /* Adopt: the pod lives, its UUID was not recorded yet (a crash, or the uuid
                 * file not read yet). A dead one is a failed attempt's leftover. */
                rkl_crash_point("uuid-unrecorded");
                if (rkl_store_pod_set_rkt_uuid(r->store, id, uuid, &err) < 0) {
                        rkl_log_error("sandbox %.12s: cannot record pod %s: %s", id, uuid, err.msg);
                        return;
                }
                rkl_log_info("sandbox %.12s: rkt pod %s", id, uuid);
                publish_pod(r, id);
                rkl_pod_view_unref(v);
                v = rkl_cache_pod_get(r->cache, id);
                if (!v)
                        return;
        }
        if (streq_ptr(v->rec->rkt_uuid, uuid))
                persist_observation(r, v->rec, p);
}

static void rescan(rkl_reconciler *r)
{
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_strv_free_ char **uuids = NULL;
        int fd = pods_dirfd(r);

        r->rescan = false;
        if (fd < 0 || rkl_poddir_list(fd, &uuids, &err) < 0)
                uuids = rkl_xnew0(char *, 1);
        /* Pods gone since the last look. */
        _cleanup_strv_free_ char **gone = NULL;
        size_t i = 0;
        const char *key;
        while (rkl_hashmap_iterate(r->seen, &i, &key, NULL)) {
                bool found = false;
                RKL_STRV_FOREACH (u, uuids)
                        found |= streq(*u, key);
                if (!found)
                        rkl_strv_push(&gone, key);
        }
        RKL_STRV_FOREACH (u, gone)
                observe_uuid(r, *u);
        RKL_STRV_FOREACH (u, uuids)
                observe_uuid(r, *u);
        /* Records whose pod vanished while nobody looked. */
        rkl_pod_view **pods;
        size_t n;
        rkl_cache_pod_list(r->cache, NULL, &pods, &n);
        for (size_t j = 0; j < n; j++)
                if (pods[j]->rec->rkt_uuid && !rkl_hashmap_get(r->seen, pods[j]->rec->rkt_uuid))
                        persist_observation(r, pods[j]->rec, NULL);
        rkl_pod_views_unref(pods, n);
}

/* ---- Actions on the worker pool ---- */

/* Where the system manager puts a sandbox's unit (transient units go to system.slice). */
static char *unit_cgroup_path(const char *sandbox_id)
{
        _cleanup_free_ char *unit = rkl_unit_name_for_sandbox(sandbox_id);
        return rkl_xasprintf("system.slice/%s", unit);
}

static void action_free(action *a)
{
        if (!a)
                return;
        free(a->app);
        free(a->unit_name);
        rkl_strv_free(a->args);
        free(a);
}

static int rkt_run(action *a, char *const *args, uint64_t timeout_usec)
{
        rkl_error err = RKL_ERROR_INIT;
        int k = rkl_rkt_exec(a->r->rkt, args, timeout_usec, NULL, &err);
        if (k < 0)
                (void)snprintf(a->error, sizeof(a->error), "%s", err.msg);
        return k;
}

/* Waits until the pod is no longer running; false when it still is at the deadline. */
static bool wait_pod_exit(action *a, int64_t deadline_ns)
{
        if (a->r->pods_dirfd < 0)
                return true;
        for (;;) {
                rkl_poddir_pod p = {0};
                int k = rkl_poddir_read(a->r->pods_dirfd, a->uuid, &p, NULL);
                bool running = k >= 0 && p.state == RKL_POD_STATE_RUNNING;
                rkl_poddir_pod_done(&p);
                if (!running)
                        return true;
                if (rkl_realtime_nsec() >= deadline_ns)
                        return false;
                usleep(50 * 1000);
        }
}

static int run_app_stop(action *a)
{
        int64_t now = rkl_realtime_nsec();
        int k = 0;

        if (a->deadline_ns > now) {
                /* rkt's own stop waits for systemd's 90 s: cut it at our deadline. */
                uint64_t t = (uint64_t)(a->deadline_ns - now) / NSEC_PER_USEC;
                k = rkt_run(a, a->args, t > USEC_PER_SEC ? t : USEC_PER_SEC);
                if (k == -EALREADY || k == -ENOENT)
                        return 0;
                if (k != -ETIMEDOUT)
                        return k;
        }
        /* The deadline passed: SIGKILL everything in the app's cgroup. */
        _cleanup_free_ char *procs = NULL, *memory = NULL;
        if (a->supervisor && rkl_cgroup_app_paths(a->supervisor, a->app, &procs, &memory) == 0) {
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
        int64_t grace = (int64_t)a->r->cfg.stop_grace_usec * (int64_t)NSEC_PER_USEC;
        int k;

        if (!a->force) {
                (void)rkt_run(a, RKL_STRV("stop", a->uuid), a->timeout_usec);
                if (wait_pod_exit(a, rkl_realtime_nsec() + grace))
                        goto down;
        }
        k = rkt_run(a, RKL_STRV("stop", "--force=true", a->uuid), a->timeout_usec);
        if (wait_pod_exit(a, rkl_realtime_nsec() + 10 * (int64_t)NSEC_PER_SEC))
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
        if (a->supervisor)
                (void)rkl_cgroup_app_paths(a->supervisor, a->app, &procs, &memory);
        int k = rkt_run(a, a->args, a->timeout_usec);
        if (k == -ENOENT)
                k = 0; /* gone already is what rm wanted */
        if (k >= 0 && procs) {
                int q = rkl_cgroup_memory_release(procs, memory);
                if (q < 0)
                        rkl_log_warning("app %s: cannot remove its memory cgroup %s: %s", a->app,
                                        memory, strerror(-q));
        }
        return k;
}

static void run_action(void *userdata)
{
        action *a = userdata;
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
        default:
                k = rkt_run(a, a->args, a->timeout_usec);
                /* Gone already is what rm wanted. */
                if (a->kind == ACT_POD_RM && k == -ENOENT)
                        k = 0;
                break;
        }
        a->result = k;

        rkl_reconciler *r = a->r;
        pthread_mutex_lock(&r->lock);
        a->next = r->done;
        r->done = a;
        pthread_mutex_unlock(&r->lock);
        uint64_t one = 1;
        (void)!write(r->done_fd, &one, sizeof(one));
}

/* `rkt app VERB UUID --app=NAME` */
static char **app_args(const char *verb, const char *uuid, const char *app)
{
        char **l = NULL;
        rkl_strv_push(&l, "app");
        rkl_strv_push(&l, verb);
        rkl_strv_push(&l, uuid);
        rkl_strv_consume(&l, rkl_xasprintf("--app=%s", app));
        return l;
}

static bool can_start(rkl_reconciler *r, const char *key)
{
        return r->rkt && r->n_in_flight < r->cfg.max_actions && !rkl_hashmap_get(r->in_flight, key);
}

static action *action_new(rkl_reconciler *r, act_kind kind, const char *key, const char *uuid)
{
        action *a = rkl_xnew0(action, 1);
        a->r = r;
        a->kind = kind;
        (void)snprintf(a->key, sizeof(a->key), "%s", key);
        (void)snprintf(a->uuid, sizeof(a->uuid), "%s", uuid);
        a->timeout_usec = r->cfg.rkt_timeout_usec;
        return a;
}

static void submit(rkl_reconciler *r, action *a)
{
        rkl_log_debug("%s %.12s: %s", a->is_pod ? "sandbox" : "container", a->key,
                      act_names[a->kind]);
        rkl_hashmap_put(r->in_flight, a->key, a);
        r->n_in_flight++;
        rkl_workpool_submit(r->pool, run_action, a);
}

/* Whether the pod is gone or no longer takes app commands, as its directory says now. */
static bool pod_going_down(rkl_reconciler *r, const char *uuid)
{
        if (r->pods_dirfd < 0)
                return false;
        rkl_poddir_pod p = {0};
        int k = rkl_poddir_read(r->pods_dirfd, uuid, &p, NULL);
        bool going = k < 0 || p.state != RKL_POD_STATE_RUNNING || !p.supervisor_ready;
        rkl_poddir_pod_done(&p);
        return going;
}

/* The result of a finished action, back on the reconciler thread. */
static void apply_result(rkl_reconciler *r, action *a)
{
        rkl_error err = RKL_ERROR_INIT;

        rkl_crash_point(act_crash_points[a->kind]);

        rkl_hashmap_remove(r->in_flight, a->key);
        r->n_in_flight--;

        if (a->orphan) {
                /* An app's rm or stop fails while its pod goes down ("supervisor is not
                 * ready", the pod file gone): the pod's own removal takes it along. */
                if (a->result < 0 && (a->kind == ACT_APP_RM || a->kind == ACT_APP_STOP) &&
                    pod_going_down(r, a->uuid))
                        rkl_log_debug("leftover pod %s: %s: %s (the pod is going down)", a->uuid,
                                      act_names[a->kind], a->error);
                else if (a->result < 0)
                        rkl_log_warning("leftover pod %s: %s: %s", a->uuid, act_names[a->kind],
                                        a->error);
        } else if (a->is_pod) {
                _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v =
                    rkl_cache_pod_get(r->cache, a->key);
                if (v && a->result < 0) {
                        pod_failed_attempt(r, v->rec, a->error);
                } else if (v) {
                        if (v->rec->book.attempts > 0 || v->rec->book.last_error) {
                                (void)rkl_store_pod_clear_error(r->store, a->key, &err);
                                publish_pod(r, a->key);
                        }
                }
        } else {
                _cleanup_(rkl_ctr_view_unrefp) rkl_ctr_view *v =
                    rkl_cache_ctr_get(r->cache, a->key);
                if (a->result < 0 && (a->kind == ACT_APP_ADD || a->kind == ACT_APP_START))
                        undo_mark(r, a->key);
                else if (a->result >= 0 && (a->kind == ACT_APP_ADD || a->kind == ACT_APP_RM))
                        undo_clear(r, a->key);
                if (v && a->result < 0) {
                        ctr_failed_attempt(r, v->rec, a->error);
                } else if (v && (v->rec->book.attempts > 0 || v->rec->book.last_error) &&
                           reaches_goal(a->kind, v->rec)) {
                        (void)rkl_store_container_clear_error(r->store, a->key, &err);
                        publish_ctr(r, a->key);
                }
        }

        if (a->kind == ACT_POD_RM && a->result >= 0 && a->unit_name)
                rkl_cgroup_unit_remove(a->unit_name);
        if (a->kind == ACT_POD_RM && a->result >= 0 && !a->orphan) {
                /* The pod and its network are gone; its last statuses are in the store. */
                _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v =
                    rkl_cache_pod_get(r->cache, a->key);
                if (v) {
                        rkl_pod_observed o;
                        rkl_pod_observed_copy(&o, &v->rec->observed);
                        if (o.phase != RKL_POD_PHASE_FAILED)
                                o.phase = RKL_POD_PHASE_STOPPED;
                        o.ip = mfree(o.ip);
                        pod_set_observed(r, v->rec, &o);
                        rkl_pod_observed_done(&o);
                        (void)rkl_store_pod_set_rkt_uuid(r->store, a->key, NULL, &err);
                        publish_pod(r, a->key);
                }
        }
        if (a->uuid[0])
                observe_uuid(r, a->uuid);
        action_free(a);
}

/* ---- Sandboxes ---- */

static char *pod_state_path(rkl_reconciler *r, const char *id, const char *name)
{
        return rkl_xasprintf("%s/pods/%s%s%s", r->cfg.state_dir, id, name ? "/" : "",
                             name ? name : "");
}

/* A failed creation attempt: retried with backoff, and the last of MAX_ATTEMPTS leaves the
 * sandbox failed for good (NOTREADY, reason CreateFailed), for kubelet to act on. */
static void creation_attempt_failed(rkl_reconciler *r, const rkl_pod_record *rec, const char *msg)
{
        if (rec->book.attempts + 1 >= MAX_ATTEMPTS) {
                rkl_pod_observed o;
                rkl_pod_observed_copy(&o, &rec->observed);
                o.phase = RKL_POD_PHASE_FAILED;
                free(o.reason);
                free(o.message);
                o.reason = rkl_xstrdup("CreateFailed");
                o.message = rkl_xstrdup(msg);
                pod_set_observed(r, rec, &o);
                rkl_pod_observed_done(&o);
        }
        pod_failed_attempt(r, rec, msg);
}

static void start_sandbox(rkl_reconciler *r, const rkl_pod_record *rec)
{
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_free_ char *logs = pod_state_path(r, rec->id, "logs");
        _cleanup_free_ char *uuid_file = pod_state_path(r, rec->id, "uuid");
        _cleanup_free_ char *log = pod_state_path(r, rec->id, "sandbox.log");
        _cleanup_free_ char *unit = rkl_unit_name_for_sandbox(rec->id);
        _cleanup_free_ char *slice = NULL;
        _cleanup_strv_free_ char **args = NULL, **argv = NULL, **env = NULL;
        const char *insecure = NULL;
        char hostname[256] = "";
        int k;

        if (!r->bus) {
                wake_at(r, rkl_realtime_nsec() + (int64_t)NSEC_PER_SEC);
                return; /* no systemd yet: the probe reconnects */
        }
        if (rec->spec.cgroup_parent &&
            rkl_unit_slice_from_cgroup_parent(rec->spec.cgroup_parent, &slice) < 0) {
                creation_attempt_failed(r, rec,
                                        "cgroup_parent is not a systemd slice: run kubelet "
                                        "with --cgroup-driver=systemd");
                return;
        }
        if ((k = rkl_mkdir_p(logs, 0700)) < 0) {
                rkl_error_set(&err, k, "cannot create '%s': %s", logs, strerror(-k));
                creation_attempt_failed(r, rec, err.msg);
                return;
        }
        (void)unlink(uuid_file);
        (void)gethostname(hostname, sizeof(hostname) - 1);

        rkl_rkt_sandbox_opts o = {
            .sandbox_id = rec->id,
            .uuid_file = uuid_file,
            .log_dir = logs,
            .net = r->cfg.net,
            .stage1_name = r->cfg.stage1_name,
            .node_hostname = hostname,
        };
        if (rkl_rkt_sandbox_args(&rec->spec, &o, &args, &insecure, &err) < 0) {
                creation_attempt_failed(r, rec, err.msg);
                return;
        }
        argv = rkl_rkt_argv(r->rkt, args, insecure);
        env = rkl_rkt_unit_env(r->rkt);

        /* Record the unit before starting it: after a crash the name says a unit may
         * exist, and the derived name makes a second start fail rather than duplicate. */
        if (!streq_ptr(rec->unit_name, unit) &&
            rkl_store_pod_set_unit_name(r->store, rec->id, unit, &err) < 0) {
                rkl_log_error("sandbox %.12s: %s", rec->id, err.msg);
                return;
        }
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
        rkl_crash_point("unit-named");
        k = rkl_unit_start(r->bus, &spec, 10 * USEC_PER_SEC, &err);
        if (k < 0 && k != -EEXIST) {
                /* No unit came of it: the next attempt starts from the top, and this one
                 * is not counted again when the unit is found missing. */
                rkl_error e2 = RKL_ERROR_INIT;
                if (rkl_store_pod_set_unit_name(r->store, rec->id, NULL, &e2) < 0)
                        rkl_log_error("sandbox %.12s: %s", rec->id, e2.msg);
                creation_attempt_failed(r, rec, err.msg);
                return;
        }
        rkl_crash_point("unit-started");
        rkl_log_info("sandbox %.12s: started %s", rec->id, unit);
        publish_pod(r, rec->id);
        wake_at(r, rkl_realtime_nsec() + (int64_t)PENDING_POLL_USEC * (int64_t)NSEC_PER_USEC);
}

/* The last lines of the sandbox's own output: why it failed, in rkt's words. */
static char *sandbox_log_tail(rkl_reconciler *r, const char *id)
{
        _cleanup_free_ char *path = pod_state_path(r, id, "sandbox.log");
        _cleanup_free_ char *text = NULL;
        size_t n;
        if (rkl_read_file_at(AT_FDCWD, path, 1 << 20, &text, &n) < 0 || n == 0)
                return rkl_xstrdup("no output");
        char tail[320];
        rkl_rkt_output_tail(text, tail, sizeof(tail));
        /* systemd's words when the pod's own systemd cannot start; on a node the usual cause
         * is the inotify instance limit, shared by every process of the user (each pod's
         * systemd and journald hold about three). */
        if (strstr(tail, "Failed to allocate manager object"))
                return rkl_xasprintf("%s (the pod's systemd could not start: is "
                                     "fs.inotify.max_user_instances too low? see "
                                     "docs/operators.md)",
                                     tail);
        return rkl_xstrdup(*tail ? tail : "no output");
}

/* Undoes a failed creation so that the next attempt starts clean, and counts it. */
static void creation_failed(rkl_reconciler *r, const rkl_pod_record *rec, const char *why)
{
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_free_ char *tail = sandbox_log_tail(r, rec->id);
        _cleanup_free_ char *msg = rkl_xasprintf("%s: %s", why, tail);

        if (rec->unit_name) {
                if (r->bus)
                        (void)rkl_unit_stop(r->bus, rec->unit_name, NULL);
                (void)rkl_store_pod_set_unit_name(r->store, rec->id, NULL, &err);
        }
        if (rec->rkt_uuid) {
                /* The dead pod is removed by the orphan pass once it is no longer ours. */
                (void)rkl_store_pod_set_rkt_uuid(r->store, rec->id, NULL, &err);
        }
        creation_attempt_failed(r, rec, msg);
}

static void step_pending(rkl_reconciler *r, const rkl_pod_record *rec, const rkl_poddir_pod *p,
                         int64_t now)
{
        rkl_error err = RKL_ERROR_INIT;
        int64_t timeout = (int64_t)r->cfg.sandbox_ready_timeout_usec * (int64_t)NSEC_PER_USEC;
        /* A retry gets the whole timeout too, not what its predecessors left of it. */
        int64_t since = attempt_start_ns(rec);

        if (!rec->unit_name && !rec->rkt_uuid) {
                start_sandbox(r, rec);
                return;
        }
        if (!rec->rkt_uuid) {
                _cleanup_free_ char *path = pod_state_path(r, rec->id, "uuid");
                _cleanup_free_ char *uuid = NULL;
                if (rkl_read_file_at(AT_FDCWD, path, 256, &uuid, NULL) == 0) {
                        uuid[strcspn(uuid, "\n")] = 0;
                        if (rkl_pod_uuid_is_valid(uuid))
                                observe_uuid(r, uuid); /* adopts it if it lives */
                }
                /* The sandbox is the unit's main process: no unit, no pod. */
                rkl_unit_state st = {0};
                if (r->bus && rkl_unit_get_state(r->bus, rec->unit_name, &st, &err) == 0 &&
                    (st.active == RKL_UNIT_GONE || st.active == RKL_UNIT_FAILED)) {
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
        wake_at(r, now + (int64_t)PENDING_POLL_USEC * (int64_t)NSEC_PER_USEC);
}

static void step_stopping(rkl_reconciler *r, const rkl_pod_record *rec, const rkl_poddir_pod *p)
{
        rkl_error err = RKL_ERROR_INIT;

        if (!rec->rkt_uuid) {
                /* Never got as far as a pod: stop whatever unit there is, and it is done. */
                if (rec->unit_name && r->bus) {
                        int k = rkl_unit_stop(r->bus, rec->unit_name, &err);
                        if (k < 0 && k != -ENOENT) {
                                pod_failed_attempt(r, rec, err.msg);
                                return;
                        }
                }
                rkl_pod_observed o;
                rkl_pod_observed_copy(&o, &rec->observed);
                if (o.phase != RKL_POD_PHASE_FAILED)
                        o.phase = RKL_POD_PHASE_STOPPED;
                pod_set_observed(r, rec, &o);
                rkl_pod_observed_done(&o);
                return;
        }
        if (!can_start(r, rec->id))
                return;
        action *a;
        if (p && p->state == RKL_POD_STATE_RUNNING) {
                a = action_new(r, ACT_POD_STOP, rec->id, rec->rkt_uuid);
        } else {
                /* Exited (its last statuses were read when it did): free its network. */
                a = action_new(r, ACT_POD_RM, rec->id, rec->rkt_uuid);
                a->unit_name = unit_cgroup_path(rec->id);
                a->args = rkl_strv_copy(RKL_STRV("rm", rec->rkt_uuid));
        }
        a->is_pod = true;
        submit(r, a);
}

/* ---- Containers ---- */

/* rkt's app rm deletes the overlay of the app's image, which an app being added or started
 * in the same pod may be using (reference/rkt.md, B.1): such actions never overlap. */
static bool pod_has_action(rkl_reconciler *r, const char *uuid, act_kind k1, act_kind k2)
{
        size_t i = 0;
        void *v;
        while (rkl_hashmap_iterate(r->in_flight, &i, NULL, &v)) {
                const action *a = v;
                if ((a->kind == k1 || a->kind == k2) && streq(a->uuid, uuid))
                        return true;
        }
        return false;
}

/* rkt's app add, start and rm each rewrite the pod's manifest and reload the pod's systemd;
 * two at once in one pod make one fail with a bare "exit status 254" (seen on rkt 1.30 with
 * two containers created together). One at a time per pod; app stop may overlap them. */
static bool pod_app_busy(rkl_reconciler *r, const char *uuid)
{
        return pod_has_action(r, uuid, ACT_APP_ADD, ACT_APP_START) ||
               pod_has_action(r, uuid, ACT_APP_RM, ACT_APP_RM);
}

static void step_container(rkl_reconciler *r, const rkl_pod_record *pod, const rkl_poddir_pod *p,
                           const rkl_container_record *c, int64_t now)
{
        rkl_error err = RKL_ERROR_INIT;
        const rkl_poddir_app *app = rkl_poddir_pod_find_app(p, c->app_name);
        rkl_pod_app_state st = app ? app->state : RKL_POD_APP_UNKNOWN;
        action *a = NULL;

        if (rkl_hashmap_get(r->in_flight, c->id) || rkl_ctr_never_ran(&c->observed))
                return;
        if (c->desired == RKL_CTR_DESIRED_STOPPED && c->observed.phase == RKL_CTR_PHASE_CREATED &&
            (st == RKL_POD_APP_UNKNOWN || st == RKL_POD_APP_CREATED)) {
                /* Stopped before its start was carried out (a stop right after a start, or
                 * during its app add): no start follows, so it is over (issue 19, defect 4:
                 * such containers stayed CREATED). RemoveContainer takes the app along. */
                rkl_log_info("container %.12s: stopped before it started", c->id);
                ctr_never_runs(r, c, 0, RKL_CTR_NOT_STARTED,
                               rkl_xstrdup("stopped before it started"));
                return;
        }
        if (c->book.next_retry_ns > now) {
                wake_at(r, c->book.next_retry_ns);
                return;
        }
        if (c->desired != RKL_CTR_DESIRED_STOPPED && st == RKL_POD_APP_UNKNOWN &&
            c->observed.phase == RKL_CTR_PHASE_CREATED) {
                if (!can_start(r, c->id) || pod_app_busy(r, pod->rkt_uuid))
                        return;
                _cleanup_free_ char *log_file = rkl_xasprintf("%s.log", c->app_name);
                /* rkt gets the image ID, so that what it records (and ContainerStatus
                 * reports) is the ID PullImage returned. A reference pulled by hand is
                 * found by one more look at rkt's store. */
                _cleanup_free_ char *image = NULL;
                if (!isempty(c->observed.image_ref))
                        image = rkl_xstrdup(c->observed.image_ref); /* pinned at create */
                else if (rkl_images_resolve_refresh(r->cfg.images, c->spec.image, &image, &err) <
                         0) {
                        ctr_failed_attempt(r, c, err.msg);
                        return;
                }
                rkl_rkt_app_opts o = {
                    .container_id = c->id,
                    .app_name = c->app_name,
                    .image = image,
                    .log_file = log_file,
                };
                char **args = NULL;
                if (rkl_rkt_app_add_args(pod->rkt_uuid, &c->spec, &o, &args, &err) < 0) {
                        ctr_failed_attempt(r, c, err.msg);
                        return;
                }
                a = action_new(r, ACT_APP_ADD, c->id, pod->rkt_uuid);
                a->args = args;
        } else if (c->desired == RKL_CTR_DESIRED_RUNNING && st == RKL_POD_APP_CREATED) {
                if (!can_start(r, c->id) || pod_app_busy(r, pod->rkt_uuid))
                        return;
                if (rkl_hashmap_get(r->undo, c->id)) {
                        /* After a failed add or start rkt may hold a half-made app that no
                         * start can run (reference/rkt.md, B.1): undo it; a fresh add follows.
                         * Once per failure: the add that follows starts clean. */
                        a = action_new(r, ACT_APP_RM, c->id, pod->rkt_uuid);
                        a->args = app_args("rm", pod->rkt_uuid, c->app_name);
                        a->supervisor = (pid_t)p->ppid;
                        a->app = rkl_xstrdup(c->app_name);
                } else {
                        a = action_new(r, ACT_APP_START, c->id, pod->rkt_uuid);
                        a->args = app_args("start", pod->rkt_uuid, c->app_name);
                }
        } else if (c->desired == RKL_CTR_DESIRED_RUNNING && st == RKL_POD_APP_RUNNING &&
                   c->observed.phase == RKL_CTR_PHASE_CREATED && c->book.last_error) {
                /* The last start failed after rkt wrote <app>-started (it was killed, or timed
                 * out): if no process came of it, start again. rkt's app start clears that
                 * state first, as it does to restart an exited app. */
                pid_t pid;
                if (app_process(c, p, &pid) != RKL_APP_PROC_NONE || !can_start(r, c->id) ||
                    pod_app_busy(r, pod->rkt_uuid))
                        return;
                a = action_new(r, ACT_APP_START, c->id, pod->rkt_uuid);
                a->args = app_args("start", pod->rkt_uuid, c->app_name);
        } else if (c->desired == RKL_CTR_DESIRED_STOPPED && st == RKL_POD_APP_RUNNING) {
                if (!can_start(r, c->id))
                        return;
                a = action_new(r, ACT_APP_STOP, c->id, pod->rkt_uuid);
                a->args = app_args("stop", pod->rkt_uuid, c->app_name);
                a->deadline_ns = c->stop_deadline_ns ? c->stop_deadline_ns
                                                     : now + (int64_t)r->cfg.stop_grace_usec * 1000;
                a->supervisor = (pid_t)p->ppid;
                a->app = rkl_xstrdup(c->app_name);
                a->timeout_usec = 0;
        }
        if (a)
                submit(r, a);
}

/* ---- Orphans: pods and apps rktlet made that no record wants any more ---- */

static bool image_shared_with_live_app(const rkl_poddir_pod *p, const rkl_poddir_app *a)
{
        for (size_t i = 0; i < p->n_apps; i++)
                if (&p->apps[i] != a && a->image_id &&
                    streq_ptr(p->apps[i].image_id, a->image_id) &&
                    p->apps[i].state != RKL_POD_APP_EXITED)
                        return true;
        return false;
}

static void reap_orphan_apps(rkl_reconciler *r, const rkl_poddir_pod *p, int64_t now)
{
        for (size_t i = 0; i < p->n_apps; i++) {
                const rkl_poddir_app *app = &p->apps[i];
                const char *cid = rkl_kvs_get(&app->user_annotations, RKL_MARK_CONTAINER_ID);
                if (!app->in_manifest || !cid || !rkl_id_is_valid(cid) || !can_start(r, cid))
                        continue;
                _cleanup_(rkl_ctr_view_unrefp) rkl_ctr_view *v = rkl_cache_ctr_get(r->cache, cid);
                if (v)
                        continue;
                action *a;
                if (app->state == RKL_POD_APP_RUNNING) {
                        a = action_new(r, ACT_APP_STOP, cid, p->uuid);
                        a->args = app_args("stop", p->uuid, app->name);
                        a->deadline_ns = now + (int64_t)r->cfg.stop_grace_usec * 1000;
                        a->supervisor = (pid_t)p->ppid;
                        a->app = rkl_xstrdup(app->name);
                } else if (!image_shared_with_live_app(p, app) && !pod_app_busy(r, p->uuid)) {
                        /* rkt's app rm deletes the image's overlay, which another app of the
                         * same image still uses (reference/rkt.md, B.1): such apps stay,
                         * stopped, until their pod goes. */
                        a = action_new(r, ACT_APP_RM, cid, p->uuid);
                        a->args = app_args("rm", p->uuid, app->name);
                        a->supervisor = (pid_t)p->ppid;
                        a->app = rkl_xstrdup(app->name);
                } else {
                        continue;
                }
                a->orphan = true;
                submit(r, a);
        }
}

static void reap_orphan_pods(rkl_reconciler *r)
{
        size_t i = 0;
        void *v;
        while (rkl_hashmap_iterate(r->seen, &i, NULL, &v)) {
                const rkl_poddir_pod *p = v;
                const char *id = rkl_kvs_get(&p->user_annotations, RKL_MARK_SANDBOX_ID);
                if (!id || !rkl_id_is_valid(id) || !can_start(r, p->uuid))
                        continue;
                _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *pv = rkl_cache_pod_get(r->cache, id);
                if (pv && streq_ptr(pv->rec->rkt_uuid, p->uuid))
                        continue; /* wanted */
                if (pv && pod_adoptable(pv->rec, p))
                        continue; /* alive and about to be adopted */
                if (p->state == RKL_POD_STATE_PREPARING || p->state == RKL_POD_STATE_EMBRYO)
                        continue; /* still being made: wait for it to settle */
                action *a;
                if (p->state == RKL_POD_STATE_RUNNING) {
                        a = action_new(r, ACT_POD_STOP, p->uuid, p->uuid);
                        a->force = true;
                        if (!pv && r->bus) {
                                /* Its unit goes with it. */
                                _cleanup_free_ char *unit = rkl_unit_name_for_sandbox(id);
                                (void)rkl_unit_stop(r->bus, unit, NULL);
                        }
                } else {
                        a = action_new(r, ACT_POD_RM, p->uuid, p->uuid);
                        a->unit_name = unit_cgroup_path(id);
                        a->args = rkl_strv_copy(RKL_STRV("rm", p->uuid));
                        if (!pv) {
                                _cleanup_free_ char *dir = pod_state_path(r, id, NULL);
                                (void)rkl_rm_rf_at(AT_FDCWD, dir);
                        }
                }
                a->orphan = true;
                rkl_log_info("removing leftover pod %s of sandbox %.12s", p->uuid, id);
                submit(r, a);
        }
}

/* State directories (the uuid file, the sandbox's log) of sandboxes no record wants and no
 * pod of rktlet's still carries: a sandbox stopped (its pod removed) and then removed leaves
 * no pod for the orphan pass to find, so its directory goes here, at the next rescan. */
static void reap_orphan_state_dirs(rkl_reconciler *r)
{
        _cleanup_free_ char *top = pod_state_path(r, "", NULL);
        _cleanup_closedir_ DIR *d = opendir(top);
        struct dirent *de;
        while (d && (de = readdir(d))) {
                if (!rkl_id_is_valid(de->d_name))
                        continue;
                _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *pv =
                    rkl_cache_pod_get(r->cache, de->d_name);
                if (pv)
                        continue;
                bool has_pod = false;
                size_t i = 0;
                void *v;
                while (!has_pod && rkl_hashmap_iterate(r->seen, &i, NULL, &v))
                        has_pod =
                            streq_ptr(rkl_kvs_get(&((const rkl_poddir_pod *)v)->user_annotations,
                                                  RKL_MARK_SANDBOX_ID),
                                      de->d_name);
                if (has_pod)
                        continue;
                _cleanup_free_ char *dir = pod_state_path(r, de->d_name, NULL);
                int k = rkl_rm_rf_at(AT_FDCWD, dir);
                if (k < 0)
                        rkl_log_warning("cannot remove %s: %s", dir, strerror(-k));
        }
}

/* Units of sandboxes no record wants (deleted while rktlet was down, or between a delete
 * and its clean-up). Stopping one takes its pod down; the pod's directory is an orphan the
 * pass removes next. */
static void reap_orphan_units(rkl_reconciler *r)
{
        _cleanup_strv_free_ char **units = NULL;
        if (!r->bus || rkl_unit_list(r->bus, "rktlet-*.service", &units, NULL) < 0)
                return;
        RKL_STRV_FOREACH (u, units) {
                _cleanup_free_ char *id = rkl_unit_sandbox_id(*u);
                if (!id)
                        continue;
                _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = rkl_cache_pod_get(r->cache, id);
                /* A start records its unit's name before starting it: a unit whose record does
                 * not name it is a failed attempt's, or a removed sandbox's. */
                if (v && streq_ptr(v->rec->unit_name, *u))
                        continue;
                rkl_log_info("stopping leftover unit %s", *u);
                (void)rkl_unit_stop(r->bus, *u, NULL);
        }
}

/* ---- The pass ---- */

static void pass(rkl_reconciler *r)
{
        int64_t now = rkl_realtime_nsec();
        rkl_pod_view **pods;
        size_t n_pods;

        r->wake_at_ns = 0;
        if (!r->store || r->store_refused)
                return;
        if (atomic_exchange(&r->checkpoint_asked, false)) {
                rkl_error err = RKL_ERROR_INIT;
                if (rkl_store_checkpoint(r->store, &err) < 0)
                        rkl_log_warning("store checkpoint: %s", err.msg);
        }
        if (r->rescan) {
                r->recheck = rkl_strv_free(r->recheck);
                rescan(r);
                reap_orphan_units(r);
                reap_orphan_state_dirs(r);
        } else if (r->recheck) {
                _cleanup_strv_free_ char **l = TAKE_PTR(r->recheck);
                RKL_STRV_FOREACH (u, l)
                        observe_uuid(r, *u);
        }

        rkl_cache_pod_list(r->cache, NULL, &pods, &n_pods);
        for (size_t i = 0; i < n_pods; i++) {
                const rkl_pod_record *rec = pods[i]->rec;
                const rkl_poddir_pod *p =
                    rec->rkt_uuid ? rkl_hashmap_get(r->seen, rec->rkt_uuid) : NULL;

                if (rkl_hashmap_get(r->in_flight, rec->id))
                        continue;
                if (rec->book.next_retry_ns > now) {
                        wake_at(r, rec->book.next_retry_ns);
                        continue;
                }
                if (rec->desired == RKL_POD_DESIRED_STOPPED) {
                        if (rec->observed.phase != RKL_POD_PHASE_STOPPED || rec->rkt_uuid)
                                step_stopping(r, rec, p);
                        continue;
                }
                if (rec->observed.phase == RKL_POD_PHASE_PENDING) {
                        step_pending(r, rec, p, now);
                        continue;
                }
                if (rec->observed.phase != RKL_POD_PHASE_RUNNING || !p ||
                    p->state != RKL_POD_STATE_RUNNING || !p->supervisor_ready)
                        continue;

                rkl_view_filter f = {.sandbox_id = rec->id};
                rkl_ctr_view **ctrs;
                size_t n;
                rkl_cache_ctr_list(r->cache, &f, &ctrs, &n);
                for (size_t j = 0; j < n; j++)
                        step_container(r, rec, p, ctrs[j]->rec, now);
                rkl_ctr_views_unref(ctrs, n);
                reap_orphan_apps(r, p, now);
        }
        rkl_pod_views_unref(pods, n_pods);
        reap_orphan_pods(r);
}

/* ---- Event sources ---- */

static int on_pass(sd_event_source *s, void *userdata)
{
        rkl_reconciler *r = userdata;
        pass(r);
        if (r->wake_at_ns) {
                int64_t delta = r->wake_at_ns - rkl_realtime_nsec();
                uint64_t usec = delta > 0 ? (uint64_t)delta / NSEC_PER_USEC : 0;
                (void)sd_event_source_set_time(r->wake_source,
                                               rkl_now_usec(CLOCK_MONOTONIC) + usec);
                (void)sd_event_source_set_enabled(r->wake_source, SD_EVENT_ONESHOT);
        }
        return 0;
}

static int on_wake(sd_event_source *s, uint64_t usec, void *userdata)
{
        schedule_pass(userdata);
        return 0;
}

/* A time source is disabled once it fired (sd-event's default): set it again. */
static void rearm(sd_event_source *s, uint64_t interval_usec)
{
        (void)sd_event_source_set_time(s, rkl_now_usec(CLOCK_MONOTONIC) + interval_usec);
        (void)sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

/* The image cache from rkt's store: at the start, and again with every probe until it
 * worked once (pulls and removals keep it current after that). On an action slot: a slow
 * `rkt image list` holds back neither probes nor passes. */
static void list_images_run(void *userdata)
{
        rkl_reconciler *r = userdata;
        rkl_error err = RKL_ERROR_INIT;
        if (rkl_images_refresh(r->cfg.images, &err) < 0) {
                rkl_log_warning("%s, continuing with the images known so far", err.msg);
                /* without rkt there is nothing to try again */
                atomic_store(&r->images_unlisted, r->rkt != NULL);
        }
        atomic_store(&r->images_listing, false);
}

static void list_images(rkl_reconciler *r)
{
        if (!r->cfg.images || atomic_exchange(&r->images_listing, true))
                return;
        atomic_store(&r->images_unlisted, false);
        rkl_workpool_submit(r->pool, list_images_run, r);
}

static int on_probe_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        rkl_reconciler *r = userdata;
        probe(r);
        if (atomic_load(&r->images_unlisted))
                list_images(r);
        rearm(s, r->cfg.probe_interval_usec);
        schedule_pass(r);
        return 0;
}

static int on_resync_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        rkl_reconciler *r = userdata;
        r->rescan = true;
        rearm(s, r->cfg.resync_interval_usec);
        schedule_pass(r);
        return 0;
}

static int on_kick(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        uint64_t v;
        (void)!read(fd, &v, sizeof(v));
        schedule_pass(userdata);
        return 0;
}

static int on_done(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        rkl_reconciler *r = userdata;
        uint64_t v;
        (void)!read(fd, &v, sizeof(v));
        pthread_mutex_lock(&r->lock);
        action *list = TAKE_PTR(r->done);
        pthread_mutex_unlock(&r->lock);
        while (list) {
                action *next = list->next;
                apply_result(r, list);
                list = next;
        }
        schedule_pass(r);
        return 0;
}

static int on_watch(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        rkl_reconciler *r = userdata;
        _cleanup_strv_free_ char **uuids = NULL;
        bool lost = false;

        if (rkl_poddir_watch_drain(r->watch, &uuids, &lost, NULL) < 0)
                lost = true;
        if (lost)
                r->rescan = true;
        else
                RKL_STRV_FOREACH (u, uuids)
                        observe_uuid(r, *u);
        schedule_pass(r);
        return 0;
}

static int on_quit(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

static void started_signal(rkl_reconciler *r, int error)
{
        RKL_GUARD(&r->lock);
        r->started = true;
        r->thread_error = error;
        pthread_cond_broadcast(&r->cond);
}

static int setup_watch(rkl_reconciler *r)
{
        rkl_error err = RKL_ERROR_INIT;
        int k = rkl_mkdir_p(r->cfg.rkt_data_dir, 0755);
        if (k < 0)
                return rkl_log_warning_errno(k, "cannot create '%s': %m", r->cfg.rkt_data_dir);
        k = rkl_poddir_watch_new(r->pods_dir, &r->watch, &err);
        if (k < 0)
                return rkl_log_warning_errno(k, "cannot watch '%s': %s", r->pods_dir, err.msg);
        return sd_event_add_io(r->event, NULL, rkl_poddir_watch_fd(r->watch), EPOLLIN, on_watch, r);
}

static void *reconciler_main(void *userdata)
{
        rkl_reconciler *r = userdata;
        uint64_t now = rkl_now_usec(CLOCK_MONOTONIC);
        int k;

        k = sd_event_new(&r->event);
        if (k >= 0)
                k = sd_event_add_io(r->event, NULL, r->kick_fd, EPOLLIN, on_kick, r);
        if (k >= 0)
                k = sd_event_add_io(r->event, NULL, r->quit_fd, EPOLLIN, on_quit, r);
        if (k >= 0)
                k = sd_event_add_io(r->event, NULL, r->done_fd, EPOLLIN, on_done, r);
        if (k >= 0)
                k = sd_event_add_time(r->event, NULL, CLOCK_MONOTONIC,
                                      now + r->cfg.probe_interval_usec, USEC_PER_SEC,
                                      on_probe_timer, r);
        if (k >= 0)
                k = sd_event_add_time(r->event, NULL, CLOCK_MONOTONIC,
                                      now + r->cfg.resync_interval_usec, USEC_PER_SEC,
                                      on_resync_timer, r);
        if (k >= 0)
                k = sd_event_add_time(r->event, &r->wake_source, CLOCK_MONOTONIC, now, 1000,
                                      on_wake, r);
        if (k >= 0)
                k = sd_event_source_set_enabled(r->wake_source, SD_EVENT_OFF);
        if (k >= 0)
                k = sd_event_add_defer(r->event, &r->pass_source, on_pass, r);
        if (k < 0) {
                started_signal(r, k);
                return NULL;
        }
        /* The daemon serves from here on: List calls answer from the cache loaded from the
         * store, and calls that need the first look at the machine wait for it
         * (rkl_cache_wait_health(), rkl_images_wait_listed()). */
        started_signal(r, 0);
        probe(r);
        list_images(r);
        /* Nothing is acted on before the store has passed its check: the cache was loaded
         * from it, and reaping what no record wants must not follow a damaged file. */
        if (r->store) {
                rkl_error err = RKL_ERROR_INIT;
                if (rkl_store_wait_writable(r->store, &err) < 0) {
                        rkl_log_error("reconciler: not starting: %s", err.msg);
                        r->store_refused = true;
                }
        }

        /* Watch before the first scan, so that nothing falls between the two. */
        if (r->store && r->rkt)
                (void)setup_watch(r);
        r->rescan = true;
        schedule_pass(r);

        k = sd_event_loop(r->event);
        if (k < 0)
                rkl_log_error_errno(k, "reconciler event loop failed: %m");

        /* Let actions under way finish, then apply nothing more: the next start resumes. */
        r->pool = rkl_workpool_free(r->pool);
        action *list = TAKE_PTR(r->done);
        while (list) {
                action *next = list->next;
                action_free(list);
                list = next;
        }
        r->pass_source = sd_event_source_unref(r->pass_source);
        r->wake_source = sd_event_source_unref(r->wake_source);
        r->watch = rkl_poddir_watch_free(r->watch);
        r->bus = sd_bus_flush_close_unref(r->bus);
        r->event = sd_event_unref(r->event);
        return NULL;
}

int rkl_reconciler_new(const rkl_reconciler_config *cfg, rkl_cache *cache, rkl_reconciler **ret,
                       rkl_error *reterr)
{
        _cleanup_(rkl_reconciler_freep) rkl_reconciler *r = rkl_xnew0(rkl_reconciler, 1);
        int k;

        r->cfg = *cfg;
        if (!r->cfg.probe_interval_usec)
                r->cfg.probe_interval_usec = 30 * USEC_PER_SEC;
        if (!r->cfg.resync_interval_usec)
                r->cfg.resync_interval_usec = 10 * USEC_PER_SEC;
        if (!r->cfg.sandbox_ready_timeout_usec)
                r->cfg.sandbox_ready_timeout_usec = 120 * USEC_PER_SEC;
        if (!r->cfg.stop_grace_usec)
                r->cfg.stop_grace_usec = 10 * USEC_PER_SEC;
        if (!r->cfg.rkt_timeout_usec)
                r->cfg.rkt_timeout_usec = 60 * USEC_PER_SEC;
        if (!r->cfg.max_actions)
                r->cfg.max_actions = 4;
        r->cache = cache;
        r->kick_fd = r->quit_fd = r->done_fd = r->pods_dirfd = -EBADF;
        pthread_mutex_init(&r->lock, NULL);
        pthread_cond_init(&r->cond, NULL);
        r->seen = rkl_hashmap_new();
        r->in_flight = rkl_hashmap_new();
        r->undo = rkl_hashmap_new();
        r->pods_dir = rkl_xasprintf("%s/pods", cfg->rkt_data_dir ? cfg->rkt_data_dir : "/");

        if (cfg->db_path) {
                k = rkl_store_open(cfg->db_path, cfg->store_opts, &r->store, reterr);
                if (k < 0)
                        return k;
        }
        if (cfg->rkt_path) {
                rkl_rkt_config rc = {.rkt_path = cfg->rkt_path, .data_dir = cfg->rkt_data_dir};
                k = rkl_rkt_new(&rc, &r->rkt, reterr);
                if (k < 0)
                        return k;
        }
        r->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        r->quit_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        r->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (r->kick_fd < 0 || r->quit_fd < 0 || r->done_fd < 0)
                return rkl_error_set(reterr, -errno, "eventfd: %s", strerror(errno));
        *ret = TAKE_PTR(r);
        return 0;
}

int rkl_reconciler_start(rkl_reconciler *r, rkl_error *reterr)
{
        r->pool = rkl_workpool_new(r->cfg.max_actions, "rkt");
        int k = pthread_create(&r->thread, NULL, reconciler_main, r);
        if (k != 0)
                return rkl_error_set(reterr, -k, "cannot start the reconciler: %s", strerror(k));
        (void)pthread_setname_np(r->thread, "reconciler");
        r->running = true;

        RKL_GUARD(&r->lock);
        while (!r->started)
                pthread_cond_wait(&r->cond, &r->lock);
        if (r->thread_error < 0)
                return rkl_error_set(reterr, r->thread_error, "reconciler: %s",
                                     strerror(-r->thread_error));
        return 0;
}

void rkl_reconciler_checkpoint_wanted(void *userdata)
{
        rkl_reconciler *r = userdata;
        atomic_store(&r->checkpoint_asked, true);
        rkl_reconciler_kick(r);
}

void rkl_reconciler_kick(rkl_reconciler *r)
{
        uint64_t one = 1;
        if (r)
                (void)!write(r->kick_fd, &one, sizeof(one));
}

void rkl_reconciler_stop(rkl_reconciler *r)
{
        if (!r || !r->running)
                return;
        uint64_t one = 1;
        (void)!write(r->quit_fd, &one, sizeof(one));
        pthread_join(r->thread, NULL);
        r->running = false;
}

rkl_reconciler *rkl_reconciler_free(rkl_reconciler *r)
{
        if (!r)
                return NULL;
        rkl_reconciler_stop(r);
        r->pool = rkl_workpool_free(r->pool);
        size_t i = 0;
        void *v;
        while (rkl_hashmap_iterate(r->seen, &i, NULL, &v)) {
                rkl_poddir_pod_done(v);
                free(v);
        }
        rkl_hashmap_free(r->seen);
        rkl_hashmap_free(r->in_flight);
        i = 0;
        while (rkl_hashmap_iterate(r->undo, &i, NULL, &v))
                free(v);
        rkl_hashmap_free(r->undo);
        rkl_strv_free(r->recheck);
        rkl_rkt_free(r->rkt);
        rkl_store_close(r->store);
        safe_close(r->kick_fd);
        safe_close(r->quit_fd);
        safe_close(r->done_fd);
        safe_close(r->pods_dirfd);
        pthread_mutex_destroy(&r->lock);
        pthread_cond_destroy(&r->cond);
        free(r->pods_dir);
        free(r);
        return NULL;
}
