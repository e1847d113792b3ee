/* What the machine looks like: rkt's pod directories read when the watcher says a pod
 * changed and on a periodic rescan, turned into observations (observe.c's rules) and
 * recorded through the store when they change; adoption of a pod whose UUID was not
 * recorded yet. */
#include "reconciler-internal.h"

#include <fcntl.h>
#include <signal.h>

#include "cgroup.h"
#include "observe.h"
#include "base/alloc.h"
#include "base/cgroup.h"
#include "base/crash.h"
#include "base/hashmap.h"
#include "base/log.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "rkt/command.h"
#include "rkt/poddir.h"
#include "rkt/watch.h"
#include "store/store.h"
#include "base/banned.h"

/* A write that failed: the object keeps its recorded state, and the next pass, seeing
 * the same difference, tries again. Gone is no failure: its removal ends the work. */
void rkl_reconciler__write_failed(const char *kind, const char *id, const char *what, int k,
                                  const rkl_error *err)
{
        if (k < 0 && k != -ENOENT)
                rkl_log_error("%s %.12s: cannot record %s: %s", kind, id, what, err->msg);
}

void rkl_reconciler__pod_set_observed(rkl_reconciler *r, const rkl_pod_record *rec,
                                      const rkl_pod_observed *o)
{
        rkl_error err = RKL_ERROR_INIT;
        if (rkl_pod_observed_equal(o, &rec->observed))
                return;
        if (o->phase == RKL_POD_PHASE_RUNNING && rec->observed.phase != RKL_POD_PHASE_RUNNING)
                r->stats_new = true;
        if (o->phase != RKL_POD_PHASE_PENDING)
                rkl_reconciler__boot_look_forget(r, rec->rkt_uuid);
        if (o->phase != rec->observed.phase)
                rkl_log_object_info(POD_OBJECT(rec), "sandbox %.12s: %s -> %s", rec->id,
                                    rkl_pod_phase_to_string(rec->observed.phase),
                                    rkl_pod_phase_to_string(o->phase));
        int k = rkl_store_pod_set_observed(r->store, rec->id, o, &err);
        rkl_reconciler__write_failed("sandbox", rec->id, "observation", k, &err);
}

static bool container_oom_killed(rkl_reconciler *r, const rkl_container_record *rec,
                                 const rkl_poddir_pod *p)
{
        const rkl_poddir_app *a = p ? rkl_poddir_pod_find_app(p, rec->app_name) : NULL;
        _cleanup_free_ char *procs = NULL, *memory = NULL;
        unsigned kills = 0;

        /* Only a SIGKILLed app can have been OOM-killed; ask its memory cgroup. */
        if (!a || a->state != RKL_POD_APP_EXITED || !a->exit_known || a->exit_code != SIGKILL ||
            !p->ppid)
                return false;
        /* Every pass observes anew, but what told the kill apart goes: the reconciler forgets
         * the app's cgroup once it saw the exit, and the cgroup itself goes. The verdict stays
         * (issue 17: a later pass turned OOMKilled/137 back into a bare exit 9). */
        if (rec->observed.phase == RKL_CONTAINER_PHASE_EXITED &&
            streq_ptr(rec->observed.reason, "OOMKilled"))
                return true;
        if (r && rkl_reconciler__app_memory_dir(r, rec->id))
                memory = rkl_xstrdup(rkl_reconciler__app_memory_dir(r, rec->id));
        else if (rkl_cgroup_app_paths((pid_t)p->ppid, rec->app_name, &procs, &memory) < 0 ||
                 !memory)
                return false;
        if (rkl_cgroup_oom_kills(memory, &kills) == 0 && kills > 0)
                return true;
        /* The cgroup may be gone before this first look (on cgroup2 it is the app unit's own,
         * which the pod's systemd removes once the main process is gone): the kernel's log
         * still has the kill. */
        const char *rel = rkl_cgroup_relative(memory);
        if (!r || !r->oom_log || !rel)
                return false;
        rkl_oom_log_refresh(r->oom_log);
        return rkl_oom_log_has(r->oom_log, rel);
}

/* Is the app's process there yet? (see rkl_app_proc) */
rkl_app_proc rkl_reconciler__app_process(const rkl_container_record *rec, const rkl_poddir_pod *p,
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
        if (rec->observed.phase != RKL_CONTAINER_PHASE_RUNNING) {
                k = rkl_cgroup_memory_adopt(procs, memory);
                if (k < 0)
                        rkl_log_warning("container %.12s: cannot give it a memory cgroup (%s): "
                                        "an OOM kill will read as a plain SIGKILL",
                                        rec->id, strerror(-k));
                /* Not running before its program does: systemd's child still has the
                 * manager's root and privileges (ExecSync waits for the same). Its memory
                 * cgroup comes first all the same: what the program charges after its exec
                 * must land there (v1 does not move charges with a process). */
                if (rkl_pid_before_exec(*ret_pid, NULL) > 0)
                        return RKL_APP_PROC_NONE;
        }
        return RKL_APP_PROC_SEEN;
}

static void log_phase_change(const rkl_container_record *c, const rkl_container_observed *co)
{
        /* An exit says how long after rkt recorded it: the log's hold (exit_held). */
        char after[64] = "";
        if (co->phase == RKL_CONTAINER_PHASE_EXITED && co->finished_ns)
                (void)snprintf(after, sizeof(after), " (%.1f ms after rkt's record)",
                               (double)(rkl_realtime_nsec() - co->finished_ns) / 1e6);
        rkl_log_object_info(CONTAINER_OBJECT(c), "container %.12s: %s -> %s%s", c->id,
                            rkl_container_phase_to_string(c->observed.phase),
                            rkl_container_phase_to_string(co->phase), after);
}

/* Brings the store and cache in line with pod p (NULL: its directory is gone). */
static void persist_observation(rkl_reconciler *r, const rkl_pod_record *rec,
                                const rkl_poddir_pod *p)
{
        rkl_pod_observed o;
        bool dead;

        rkl_observe_pod(rec, p, rkl_reconciler__net_ready(r, rec), rkl_realtime_nsec(), &o, &dead);
        if (!p && o.phase == RKL_POD_PHASE_FAILED && rec->observed.phase == RKL_POD_PHASE_RUNNING &&
            rec->unit_name) {
                /* Its directory was removed outside rktlet while it ran: rkt no longer knows
                 * the pod, and nothing else would end its unit, whose apps run on. */
                rkl_log_object_warning(POD_OBJECT(rec),
                                       "sandbox %.12s: its rkt pod %s was removed outside "
                                       "rktlet: stopping its unit",
                                       rec->id, rec->rkt_uuid);
                rkl_reconciler__unit_stop(r, rec->unit_name);
        }
        rkl_reconciler__pod_set_observed(r, rec, &o);
        rkl_pod_observed_done(&o);

        rkl_view_filter f = {.sandbox_id = rec->id};
        rkl_container_view **containers;
        size_t n;
        rkl_cache_container_list(r->cache, &f, &containers, &n);
        for (size_t i = 0; i < n; i++) {
                const rkl_container_record *c = containers[i]->rec;
                rkl_container_observed co;
                rkl_error err = RKL_ERROR_INIT;

                pid_t pid;
                rkl_app_proc proc = rkl_reconciler__app_process(c, p, &pid);
                if (proc == RKL_APP_PROC_NONE) {
                        /* The process is on its way; joining a cgroup touches no file the
                         * watcher sees, so read the pod again shortly. */
                        rkl_strv_push(&r->recheck, p->uuid);
                        rkl_reconciler__wake_at(r, rkl_realtime_nsec() + RECHECK_NS);
                }
                if (proc == RKL_APP_PROC_SEEN)
                        rkl_reconciler__limits_sync(r, c, p);
                rkl_observe_container(c, rec, p, proc, pid, container_oom_killed(r, c, p),
                                      rkl_realtime_nsec(), &co);
                if (rkl_reconciler__exit_held(r, rec, p, c, &co)) {
                        /* What it saw before stands a little longer; nothing tells of the
                         * writer's end or the follower's, so look again shortly. */
                        rkl_strv_push(&r->recheck, p->uuid);
                        rkl_reconciler__wake_at(r, rkl_realtime_nsec() + RECHECK_NS);
                        rkl_container_observed_done(&co);
                        continue;
                }
                if (!rkl_container_observed_equal(&co, &c->observed)) {
                        if (co.phase == RKL_CONTAINER_PHASE_RUNNING &&
                            c->observed.phase != RKL_CONTAINER_PHASE_RUNNING)
                                r->stats_new = true;
                        if (co.phase != c->observed.phase)
                                log_phase_change(c, &co);
                        int k = rkl_store_container_set_observed(r->store, c->id, &co, &err);
                        rkl_reconciler__write_failed("container", c->id, "observation", k, &err);
                }
                rkl_container_observed_done(&co);
        }
        rkl_container_views_unref(containers, n);
}

/* ---- Observing pod directories ---- */

int rkl_reconciler__pods_dirfd(rkl_reconciler *r)
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
        if (!p || p->state != RKL_POD_STATE_RUNNING)
                rkl_reconciler__pod_rm_forget(r, uuid);
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
int64_t rkl_reconciler__attempt_start_ns(const rkl_pod_record *rec)
{
        return rec->book.next_retry_ns > rec->book.accepted_ns ? rec->book.next_retry_ns
                                                               : rec->book.accepted_ns;
}

/* A live pod marked for a sandbox being created, whose UUID is not recorded yet, is that
 * creation's (the daemon crashed, or the uuid file was not read yet), unless it was made
 * before the current attempt began: an earlier attempt's pod on its way down, which must
 * not count against the new attempt, nor live on in a sandbox that failed for good. */
bool rkl_reconciler__pod_adoptable(const rkl_pod_record *rec, const rkl_poddir_pod *p)
{
        return !rec->rkt_uuid && rec->desired == RKL_POD_DESIRED_READY &&
               rec->observed.phase == RKL_POD_PHASE_PENDING &&
               !rkl_pod_state_is_after_run(p->state) &&
               (p->created_ns == 0 || p->created_ns >= rkl_reconciler__attempt_start_ns(rec));
}

void rkl_reconciler__observe_uuid(rkl_reconciler *r, const char *uuid)
{
        rkl_error err = RKL_ERROR_INIT;
        rkl_poddir_pod *p = rkl_xnew0(rkl_poddir_pod, 1);
        int fd = rkl_reconciler__pods_dirfd(r);
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
        /* Without the watch the pod is still read at each rescan, only later. */
        if (r->watch && rkl_poddir_watch_pod(r->watch, uuid, &err) < 0)
                rkl_log_debug("pod %s: not watched: %s", uuid, err.msg);
        rkl_error_clear(&err);
        seen_set(r, uuid, p);

        /* Only pods rktlet made carry its mark; the rest are none of our business. */
        const char *id = rkl_kvs_get(&p->user_annotations, RKL_MARK_SANDBOX_ID);
        if (!id || !rkl_id_is_valid(id))
                return;
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = rkl_cache_pod_get(r->cache, id);
        if (!v)
                return; /* an orphan: the pass removes it */
        if (rkl_reconciler__pod_adoptable(v->rec, p)) {
                /* Adopt: the pod lives, its UUID was not recorded yet (a crash, or the uuid
                 * file not read yet). A dead one is a failed attempt's leftover. */
                rkl_crash_point("uuid-unrecorded");
                k = rkl_store_pod_set_rkt_uuid(r->store, id, uuid, &err);
                if (k < 0) {
                        rkl_reconciler__write_failed("sandbox", id, "its rkt pod", k, &err);
                        return;
                }
                rkl_log_info("sandbox %.12s: rkt pod %s", id, uuid);
                rkl_pod_view_unref(v);
                v = rkl_cache_pod_get(r->cache, id);
                if (!v)
                        return;
        }
        if (streq_ptr(v->rec->rkt_uuid, uuid))
                persist_observation(r, v->rec, p);
}

void rkl_reconciler__rescan(rkl_reconciler *r)
{
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_strv_free_ char **uuids = NULL;
        int fd = rkl_reconciler__pods_dirfd(r);

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
                rkl_reconciler__observe_uuid(r, *u);
        RKL_STRV_FOREACH (u, uuids)
                rkl_reconciler__observe_uuid(r, *u);
        /* Records whose pod vanished while nobody looked. */
        rkl_pod_view **pods;
        size_t n;
        rkl_cache_pod_list(r->cache, NULL, &pods, &n);
        for (size_t j = 0; j < n; j++)
                if (pods[j]->rec->rkt_uuid && !rkl_hashmap_get(r->seen, pods[j]->rec->rkt_uuid))
                        persist_observation(r, pods[j]->rec, NULL);
        rkl_pod_views_unref(pods, n);
}
