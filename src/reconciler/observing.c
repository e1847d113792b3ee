/* What the machine looks like: rkt's pod directories read when the watcher says a pod
 * changed and on a periodic rescan, turned into observations (observe.c's rules) and
 * recorded through the store when they change; adoption of a pod whose UUID was not
 * recorded yet. */
#include "observing.h"

#include <fcntl.h>
#include <signal.h>

#include "reconciler-internal.h"
#include "app-cgroup.h"
#include "containers.h"
#include "limits.h"
#include "network.h"
#include "observe.h"
#include "orphans.h"
#include "pods.h"
#include "base/alloc.h"
#include "base/cgroup.h"
#include "base/crash.h"
#include "base/fileio.h"
#include "base/hashmap.h"
#include "base/log.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "rkt/command.h"
#include "rkt/poddir.h"
#include "rkt/watch.h"
#include "stats/oom.h"
#include "store/store.h"
#include "base/banned.h"

struct rkl_observing {
        rkl_poddir_watch *watch; /* NULL: none (no rkt, no store, or it failed) */
        int pods_dirfd;          /* opened at the first look at a pod */
        rkl_hashmap *seen;       /* uuid -> rkl_poddir_pod*: each pod as last read */
        char **recheck;          /* pods to read again at the next pass: what inotify cannot see */
        /* Object ID -> step_marks*: the timeline of each start under way, ahead of the store
         * ('Timelines' below). */
        rkl_hashmap *steps;
        rkl_oom_log *oom_log; /* the kernel's OOM kills; NULL when /dev/kmsg cannot be read */
};

static void seen_free(void *v)
{
        rkl_poddir_pod_done(v);
        free(v);
}

rkl_observing *rkl_observing_new(void)
{
        rkl_observing *o = rkl_xnew0(rkl_observing, 1);
        o->pods_dirfd = -EBADF;
        o->seen = rkl_hashmap_new();
        o->steps = rkl_hashmap_new();
        int k = rkl_oom_log_open(NULL, &o->oom_log);
        if (k < 0)
                rkl_log_warning("cannot read the kernel's log (/dev/kmsg: %s): an OOM-killed "
                                "app whose cgroup is gone will read as a plain SIGKILL",
                                strerror(-k));
        return o;
}

rkl_observing *rkl_observing_free(rkl_observing *o)
{
        if (!o)
                return NULL;
        rkl_poddir_watch_free(o->watch);
        safe_close(o->pods_dirfd);
        rkl_hashmap_free_values(o->seen, seen_free);
        rkl_strv_free(o->recheck);
        rkl_hashmap_free_values(o->steps, free);
        rkl_oom_log_free(o->oom_log);
        free(o);
        return NULL;
}

/* ---- Timelines ----
 *
 * The steps of each start under way are kept here, ahead of the store, and go into the
 * object's row with the next observation the reconciler writes anyway (a sandbox's address,
 * its phase; a container's app as rkt created it, its phase): a start costs no commit more
 * than before. The last step (running) is itself such a write, so a finished start's
 * timeline is all in the store. An entry lives from the first step to the end of the start
 * (the object running, failed or gone); after a restart of the daemon it starts from what
 * the store holds. */

typedef struct step_marks {
        char id[RKL_ID_LEN + 1];
        rkl_timeline t;
} step_marks;

static step_marks *marks_of(rkl_reconciler *r, const char *id, const rkl_timeline *stored)
{
        step_marks *m = rkl_hashmap_get(r->observing->steps, id);
        if (!m) {
                m = rkl_xnew0(step_marks, 1);
                (void)snprintf(m->id, sizeof(m->id), "%s", id);
                m->t = *stored;
                rkl_hashmap_put(r->observing->steps, m->id, m);
        }
        return m;
}

static void marks_forget(rkl_reconciler *r, const char *id)
{
        free(rkl_hashmap_remove(r->observing->steps, id));
}

/* again: the step begins anew, with those after it up to last; else it counts once. now: the
 * reconciler's clock. */
static void step_set(rkl_timeline *t, size_t step, size_t last, int64_t accepted_ns, bool again,
                     int64_t now)
{
        if (!again && t->usec[step] > 0)
                return;
        int64_t usec = (now - accepted_ns) / (int64_t)NSEC_PER_USEC;
        t->usec[step] = usec > 0 ? usec : 1; /* 0 is "not reached" */
        for (size_t i = step + 1; again && i <= last; i++)
                t->usec[i] = 0;
}

void rkl_observing_pod_step(rkl_reconciler *r, const rkl_pod_record *rec, rkl_pod_step step)
{
        /* A step seen after the start was written out would wait for a write that never
         * comes: only a new attempt's first step begins anew. */
        if (rec->observed.phase != RKL_POD_PHASE_PENDING && step != RKL_POD_STEP_UNIT_STARTED)
                return;
        step_marks *m = marks_of(r, rec->id, &rec->observed.timeline);
        /* A new attempt starts its timeline over; the network's and stage1's steps do not
         * follow each other in a fixed order, so nothing else clears a step. */
        step_set(&m->t, step, _RKL_POD_STEP_MAX - 1, rec->book.accepted_ns,
                 step == RKL_POD_STEP_UNIT_STARTED, rkl_reconciler__now(r));
}

void rkl_observing_container_step(rkl_reconciler *r, const rkl_container_record *rec,
                                  rkl_container_step step)
{
        /* rkt's app start often returns after the app was seen running (and written out):
         * that start_done is left out rather than kept for a write that never comes. */
        if (rec->observed.phase != RKL_CONTAINER_PHASE_CREATED &&
            step != RKL_CONTAINER_STEP_ADD_BEGUN && step != RKL_CONTAINER_STEP_START_BEGUN)
                return;
        step_marks *m = marks_of(r, rec->id, &rec->observed.timeline);
        step_set(&m->t, step, _RKL_CONTAINER_STEP_MAX - 1, rec->book.accepted_ns,
                 step == RKL_CONTAINER_STEP_ADD_BEGUN || step == RKL_CONTAINER_STEP_START_BEGUN,
                 rkl_reconciler__now(r));
}

/* Marks of an object the store no longer has. */
static bool marks_gone(const void *v, void *userdata)
{
        const step_marks *m = v;
        rkl_reconciler *r = userdata;
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *p = rkl_cache_pod_get(r->cache, m->id);
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *c =
            p ? NULL : rkl_cache_container_get(r->cache, m->id);
        return !p && !c;
}

void rkl_observing_steps_sweep(rkl_reconciler *r)
{
        rkl_hashmap_remove_if(r->observing->steps, marks_gone, r, free);
}

int64_t rkl_observing_pod_step_ns(rkl_reconciler *r, const rkl_pod_record *rec, rkl_pod_step step)
{
        const step_marks *m = rkl_hashmap_get(r->observing->steps, rec->id);
        const rkl_timeline *t = m ? &m->t : &rec->observed.timeline;
        return t->usec[step] > 0 ? rec->book.accepted_ns + t->usec[step] * (int64_t)NSEC_PER_USEC
                                 : 0;
}

/* "running after 2.31 s (unit_started 12 ms, ...)" for the line that ends a start, and the
 * timeline's JSON for its journal field. */
static void timeline_text(const rkl_timeline *t, bool pod, char *buf, size_t size)
{
        size_t n = 0, steps = pod ? _RKL_POD_STEP_MAX : _RKL_CONTAINER_STEP_MAX;
        const char *sep = " (";
        buf[0] = 0;
        for (size_t i = 0; i < steps && n < size; i++) {
                if (t->usec[i] <= 0)
                        continue;
                const char *name = pod ? rkl_pod_step_to_string((rkl_pod_step)i)
                                       : rkl_container_step_to_string((rkl_container_step)i);
                int k = snprintf(buf + n, size - n, "%s%s %.0f%s", sep, name,
                                 (double)t->usec[i] / USEC_PER_MSEC, n ? "" : " ms");
                n += k > 0 ? (size_t)k : 0;
                sep = ", ";
        }
        if (n > 0 && n + 2 < size) {
                buf[n++] = ')';
                buf[n] = 0;
        }
}

static void log_start_done(const rkl_log_object *obj, const char *kind, const char *id,
                           const char *from, const char *to, const rkl_timeline *t, bool pod,
                           int64_t last_usec)
{
        char steps[512];
        _cleanup_free_ char *json = rkl_db_timeline_json(t, pod);
        rkl_log_object o = *obj;
        o.timeline = json;
        timeline_text(t, pod, steps, sizeof(steps));
        rkl_log_object_info(&o, "%s %.12s: %s -> %s after %.2f s%s", kind, id, from, to,
                            (double)last_usec / USEC_PER_SEC, steps);
}

void rkl_observing_set_pod(rkl_reconciler *r, const rkl_pod_record *rec, const rkl_pod_observed *o)
{
        rkl_error err = RKL_ERROR_INIT;
        if (rkl_pod_observed_equal(o, &rec->observed))
                return;
        bool started =
            o->phase == RKL_POD_PHASE_RUNNING && rec->observed.phase == RKL_POD_PHASE_PENDING;
        if (started) {
                rkl_observing_pod_step(r, rec, RKL_POD_STEP_RUNNING);
                int k = rec->unit_name
                            ? rkl_app_cgroup_cpuset_join(rec->spec.cgroup_parent, rec->unit_name)
                            : 0;
                if (k < 0)
                        rkl_log_object_warning(POD_OBJECT(rec),
                                               "sandbox %.12s: cannot place it in its slice's "
                                               "cpuset cgroup: %s",
                                               rec->id, strerror(-k));
        }
        if (o->phase == RKL_POD_PHASE_RUNNING && rec->observed.phase != RKL_POD_PHASE_RUNNING)
                r->stats_new = true;
        if (o->phase != RKL_POD_PHASE_PENDING)
                rkl_pods_boot_look_forget(r, rec->rkt_uuid);
        rkl_pod_observed w = *o; /* borrows o's strings */
        const step_marks *m = rkl_hashmap_get(r->observing->steps, rec->id);
        if (m)
                w.timeline = m->t;
        if (started)
                log_start_done(POD_OBJECT(rec), "sandbox", rec->id, "pending", "running",
                               &w.timeline, true, w.timeline.usec[RKL_POD_STEP_RUNNING]);
        else if (o->phase != rec->observed.phase)
                rkl_log_object_info(POD_OBJECT(rec), "sandbox %.12s: %s -> %s", rec->id,
                                    rkl_pod_phase_to_string(rec->observed.phase),
                                    rkl_pod_phase_to_string(o->phase));
        int k = rkl_store_pod_set_observed(r->store, rec->id, &w, &err);
        rkl_reconciler__write_failed("sandbox", rec->id, "observation", k, &err);
        if (k >= 0 && o->phase != RKL_POD_PHASE_PENDING)
                marks_forget(r, rec->id); /* the start is over: its steps are in the store */
}

void rkl_observing_set_container(rkl_reconciler *r, const rkl_container_record *rec,
                                 const rkl_container_observed *o)
{
        rkl_error err = RKL_ERROR_INIT;
        bool started = o->phase == RKL_CONTAINER_PHASE_RUNNING &&
                       rec->observed.phase != RKL_CONTAINER_PHASE_RUNNING;
        if (started)
                rkl_observing_container_step(r, rec, RKL_CONTAINER_STEP_RUNNING);
        rkl_container_observed w = *o; /* borrows o's strings */
        const step_marks *m = rkl_hashmap_get(r->observing->steps, rec->id);
        if (m)
                w.timeline = m->t;
        if (started)
                log_start_done(CONTAINER_OBJECT(rec), "container", rec->id,
                               rkl_container_phase_to_string(rec->observed.phase), "running",
                               &w.timeline, false, w.timeline.usec[RKL_CONTAINER_STEP_RUNNING]);
        int k = rkl_store_container_set_observed(r->store, rec->id, &w, &err);
        rkl_reconciler__write_failed("container", rec->id, "observation", k, &err);
        if (k >= 0 &&
            (o->phase == RKL_CONTAINER_PHASE_RUNNING || o->phase == RKL_CONTAINER_PHASE_EXITED))
                marks_forget(r, rec->id);
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
         * (a later pass once turned OOMKilled/137 back into a bare exit 9). */
        if (rec->observed.phase == RKL_CONTAINER_PHASE_EXITED &&
            streq_ptr(rec->observed.reason, "OOMKilled"))
                return true;
        if (r && rkl_limits_app_memory_dir(r, rec->id))
                memory = rkl_xstrdup(rkl_limits_app_memory_dir(r, rec->id));
        else if (RKL_OPS(r, app_cgroups, (pid_t)p->ppid, rec->app_name, &procs, &memory) < 0 ||
                 !memory)
                return false;
        if (rkl_app_cgroup_oom_kills(memory, &kills) == 0 && kills > 0)
                return true;
        /* The cgroup may be gone before this first look (on cgroup2 it is the app unit's own,
         * which the pod's systemd removes once the main process is gone): the kernel's log
         * still has the kill. */
        const char *rel = rkl_app_cgroup_relative(memory);
        if (!r || !r->observing->oom_log || !rel)
                return false;
        rkl_oom_log_refresh(r->observing->oom_log);
        return rkl_oom_log_has(r->observing->oom_log, rel);
}

/* Is the app's process there yet? (see rkl_app_proc) */
rkl_app_proc rkl_observing_app_process(rkl_reconciler *r, const rkl_container_record *rec,
                                       const rkl_poddir_pod *p, pid_t *ret_pid)
{
        const rkl_poddir_app *a = p ? rkl_poddir_pod_find_app(p, rec->app_name) : NULL;
        _cleanup_free_ char *procs = NULL, *memory = NULL;

        *ret_pid = 0;
        if (!a || a->state != RKL_POD_APP_RUNNING || !p->ppid)
                return RKL_APP_PROC_UNKNOWN;
        int k = RKL_OPS(r, app_cgroups, (pid_t)p->ppid, rec->app_name, &procs, &memory);
        if (k >= 0)
                k = rkl_app_cgroup_first_pid(procs, ret_pid);
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
                k = rkl_app_cgroup_memory_adopt(procs, memory);
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

static void log_phase_change(rkl_reconciler *r, const rkl_container_record *c,
                             const rkl_container_observed *co)
{
        /* An exit says how long after rkt recorded it: the log's hold (exit_held). */
        char after[64] = "";
        if (co->phase == RKL_CONTAINER_PHASE_EXITED && co->finished_ns)
                (void)snprintf(after, sizeof(after), " (%.1f ms after rkt's record)",
                               (double)(rkl_reconciler__now(r) - co->finished_ns) / NSEC_PER_MSEC);
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

        if (p && rkl_observe_pod_removed(rec, p))
                p = NULL;
        if (p && rec->observed.phase == RKL_POD_PHASE_PENDING) {
                if (p->netns)
                        rkl_observing_pod_step(r, rec, RKL_POD_STEP_NETNS_SEEN);
                if (p->state == RKL_POD_STATE_RUNNING && p->supervisor_ready)
                        rkl_observing_pod_step(r, rec, RKL_POD_STEP_STAGE1_READY);
        }
        rkl_observe_pod(rec, p, rkl_network_ready(r, rec), rkl_reconciler__now(r), &o, &dead);
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
        rkl_observing_set_pod(r, rec, &o);
        rkl_pod_observed_done(&o);

        rkl_view_filter f = {.sandbox_id = rec->id};
        rkl_container_view **containers;
        size_t n;
        rkl_cache_container_list(r->cache, &f, &containers, &n);
        for (size_t i = 0; i < n; i++) {
                const rkl_container_record *c = containers[i]->rec;
                rkl_container_observed co;

                pid_t pid;
                rkl_app_proc proc = rkl_observing_app_process(r, c, p, &pid);
                if (proc == RKL_APP_PROC_NONE) {
                        /* The process is on its way; joining a cgroup touches no file the
                         * watcher sees, so read the pod again shortly. */
                        rkl_strv_push(&r->observing->recheck, p->uuid);
                        rkl_reconciler__wake_at(r, rkl_reconciler__now(r) + RECHECK_NS);
                }
                if (proc == RKL_APP_PROC_SEEN)
                        rkl_limits_sync(r, c, p);
                rkl_observe_container(c, rec, p, proc, pid, container_oom_killed(r, c, p),
                                      rkl_reconciler__now(r), &co);
                if (rkl_containers_exit_held(r, rec, p, c, &co)) {
                        /* What it saw before stands a little longer; nothing tells of the
                         * writer's end or the follower's, so look again shortly. */
                        rkl_strv_push(&r->observing->recheck, p->uuid);
                        rkl_reconciler__wake_at(r, rkl_reconciler__now(r) + RECHECK_NS);
                        rkl_container_observed_done(&co);
                        continue;
                }
                rkl_containers_log_writer_look(r, p, c, &co);
                if (!rkl_container_observed_equal(&co, &c->observed)) {
                        if (co.phase == RKL_CONTAINER_PHASE_RUNNING &&
                            c->observed.phase != RKL_CONTAINER_PHASE_RUNNING)
                                r->stats_new = true;
                        else if (co.phase != c->observed.phase)
                                log_phase_change(r, c, &co); /* a start's end says more */
                        rkl_observing_set_container(r, c, &co);
                }
                rkl_container_observed_done(&co);
        }
        rkl_container_views_unref(containers, n);
}

/* ---- Observing pod directories ---- */

static int pods_dirfd(rkl_reconciler *r)
{
        rkl_observing *o = r->observing;
        if (o->pods_dirfd < 0)
                o->pods_dirfd = open(r->pods_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return o->pods_dirfd;
}

int rkl_observing_pods_fd(rkl_reconciler *r)
{
        return r->observing->pods_dirfd;
}

const rkl_poddir_pod *rkl_observing_pod(rkl_reconciler *r, const char *uuid)
{
        return rkl_hashmap_get(r->observing->seen, uuid);
}

bool rkl_observing_iterate(rkl_reconciler *r, size_t *i, const rkl_poddir_pod **ret)
{
        void *v;
        if (!rkl_hashmap_iterate(r->observing->seen, i, NULL, &v))
                return false;
        *ret = v;
        return true;
}

static void seen_set(rkl_reconciler *r, const char *uuid, rkl_poddir_pod *p)
{
        rkl_poddir_pod *old = rkl_hashmap_remove(r->observing->seen, uuid);
        if (old) {
                rkl_poddir_pod_done(old);
                free(old);
        }
        if (p)
                rkl_hashmap_put(r->observing->seen, p->uuid, p);
        if (!p || p->state != RKL_POD_STATE_RUNNING)
                rkl_orphans_rm_forget(r, uuid);
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
int64_t rkl_observing_attempt_start_ns(const rkl_pod_record *rec)
{
        return rec->book.next_retry_ns > rec->book.accepted_ns ? rec->book.next_retry_ns
                                                               : rec->book.accepted_ns;
}

/* A live pod marked for a sandbox being created, whose UUID is not recorded yet, is that
 * creation's (the daemon crashed, or the uuid file was not read yet), unless it was made
 * before the current attempt began: an earlier attempt's pod on its way down, which must
 * not count against the new attempt, nor live on in a sandbox that failed for good. */
bool rkl_observing_pod_adoptable(const rkl_pod_record *rec, const rkl_poddir_pod *p)
{
        return !rec->rkt_uuid && rec->desired == RKL_POD_DESIRED_READY &&
               rec->observed.phase == RKL_POD_PHASE_PENDING &&
               !rkl_pod_state_is_after_run(p->state) &&
               (p->created_ns == 0 || p->created_ns >= rkl_observing_attempt_start_ns(rec));
}

void rkl_observing_read(rkl_reconciler *r, const char *uuid)
{
        rkl_error err = RKL_ERROR_INIT;
        rkl_poddir_pod *p = rkl_xnew0(rkl_poddir_pod, 1);
        int fd = pods_dirfd(r);
        int k = fd < 0 ? -ENOENT : RKL_OPS(r, pod_read, uuid, p, &err);

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
        if (r->observing->watch && rkl_poddir_watch_pod(r->observing->watch, uuid, &err) < 0)
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
        if (rkl_observing_pod_adoptable(v->rec, p)) {
                /* Adopt: the pod lives, its UUID was not recorded yet (a crash, or the uuid
                 * file not read yet). A dead one is a failed attempt's leftover. */
                rkl_crash_point("uuid-unrecorded");
                k = rkl_store_pod_set_rkt_uuid(r->store, id, uuid, &err);
                if (k < 0) {
                        rkl_reconciler__write_failed("sandbox", id, "its rkt pod", k, &err);
                        return;
                }
                rkl_log_info("sandbox %.12s: rkt pod %s", id, uuid);
                rkl_observing_pod_step(r, v->rec, RKL_POD_STEP_POD_SEEN);
                rkl_pod_view_unref(v);
                v = rkl_cache_pod_get(r->cache, id);
                if (!v)
                        return;
        }
        if (streq_ptr(v->rec->rkt_uuid, uuid))
                persist_observation(r, v->rec, p);
}

void rkl_observing_rescan(rkl_reconciler *r)
{
        rkl_observing *o = r->observing;
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_strv_free_ char **uuids = NULL;
        int fd = pods_dirfd(r);

        r->rescan = false;
        o->recheck = rkl_strv_free(o->recheck); /* all of them are read now */
        if (fd < 0 || RKL_OPS(r, pod_list, &uuids, &err) < 0)
                uuids = rkl_xnew0(char *, 1);
        /* Pods gone since the last look. */
        _cleanup_strv_free_ char **gone = NULL;
        size_t i = 0;
        const char *key;
        while (rkl_hashmap_iterate(r->observing->seen, &i, &key, NULL)) {
                bool found = false;
                RKL_STRV_FOREACH (u, uuids)
                        found |= streq(*u, key);
                if (!found)
                        rkl_strv_push(&gone, key);
        }
        RKL_STRV_FOREACH (u, gone)
                rkl_observing_read(r, *u);
        RKL_STRV_FOREACH (u, uuids)
                rkl_observing_read(r, *u);
        /* Records whose pod vanished while nobody looked. */
        rkl_pod_view **pods;
        size_t n;
        rkl_cache_pod_list(r->cache, NULL, &pods, &n);
        for (size_t j = 0; j < n; j++)
                if (pods[j]->rec->rkt_uuid &&
                    !rkl_hashmap_get(r->observing->seen, pods[j]->rec->rkt_uuid))
                        persist_observation(r, pods[j]->rec, NULL);
        rkl_pod_views_unref(pods, n);
}

void rkl_observing_recheck(rkl_reconciler *r)
{
        _cleanup_strv_free_ char **l = TAKE_PTR(r->observing->recheck);
        RKL_STRV_FOREACH (u, l)
                rkl_observing_read(r, *u);
}

static int on_watch(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        rkl_reconciler *r = userdata;
        _cleanup_strv_free_ char **uuids = NULL;
        bool lost = false;

        if (rkl_poddir_watch_drain(r->observing->watch, &uuids, &lost, NULL) < 0)
                lost = true;
        if (lost)
                r->rescan = true;
        else
                RKL_STRV_FOREACH (u, uuids)
                        rkl_observing_read(r, *u);
        rkl_reconciler__schedule_pass(r);
        return 0;
}

int rkl_observing_watch(rkl_reconciler *r)
{
        rkl_observing *o = r->observing;
        rkl_error err = RKL_ERROR_INIT;
        int k = rkl_mkdir_p(r->cfg.rkt_data_dir, 0755);
        if (k < 0)
                return rkl_log_warning_errno(k, "cannot create '%s': %m", r->cfg.rkt_data_dir);
        k = rkl_poddir_watch_new(r->pods_dir, &o->watch, &err);
        if (k < 0)
                return rkl_log_warning_errno(k, "cannot watch '%s': %s", r->pods_dir, err.msg);
        return sd_event_add_io(r->event, NULL, rkl_poddir_watch_fd(o->watch), EPOLLIN, on_watch, r);
}

void rkl_observing_unwatch(rkl_reconciler *r)
{
        r->observing->watch = rkl_poddir_watch_free(r->observing->watch);
}
