/* Orphans: pods, apps, units and state directories that carry rktlet's marks but that no
 * record wants any more (a removal while rktlet was down, a crash between two steps). */
#include "orphans.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include "reconciler-internal.h"
#include "actions.h"
#include "app-cgroup.h"
#include "backoff.h"
#include "network.h"
#include "observing.h"
#include "pods.h"
#include "unit.h"
#include "base/alloc.h"
#include "base/fileio.h"
#include "base/hashmap.h"
#include "base/log.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "rkt/command.h"
#include "rkt/poddir.h"
#include "store/store.h"
#include "base/banned.h"

struct rkl_orphans {
        rkl_hashmap *rm_owed; /* uuid -> its copy: pods whose next app add waits for an rm */
        /* Key of a leftover's action (a pod's uuid, an app's container ID): its failures, and
         * when it is tried again. */
        rkl_backoff *retries;
        int64_t failures_look_ns; /* the next rescan for withdrawn sandboxes' leftovers */
};

rkl_orphans *rkl_orphans_new(void)
{
        rkl_orphans *o = rkl_xnew0(rkl_orphans, 1);
        o->rm_owed = rkl_hashmap_new();
        o->retries = rkl_backoff_new();
        return o;
}

rkl_orphans *rkl_orphans_free(rkl_orphans *o)
{
        if (!o)
                return NULL;
        rkl_hashmap_free_values(o->rm_owed, free);
        rkl_backoff_free(o->retries);
        free(o);
        return NULL;
}

/* Whether the leftover's step under key waits for its next try (a pass is woken then). */
static bool retry_waits(rkl_reconciler *r, const char *key, int64_t now)
{
        int64_t next;
        if (!rkl_backoff_waits(r->orphans->retries, key, now, &next))
                return false;
        rkl_reconciler__wake_at(r, next);
        return true;
}

/* A leftover's action ended. A failure puts its next try off by the backoff (it would come
 * at every pass otherwise) and is warned of at the 1st, 2nd, 4th, 8th... of a row; going_down:
 * it is the pod's going down, no news. A success forgets the failures. */
void rkl_orphans_result(rkl_reconciler *r, const action *a, bool going_down)
{
        if (a->result >= 0) {
                rkl_backoff_forget(r->orphans->retries, a->key);
                return;
        }
        const rkl_backoff_entry *t =
            rkl_backoff_failed(r->orphans->retries, a->key, rkl_reconciler__now(r));
        rkl_reconciler__wake_at(r, t->next_ns);
        double again_s = (double)(t->next_ns - rkl_reconciler__now(r)) / NSEC_PER_SEC;
        if (going_down)
                rkl_log_debug("leftover pod %s: %s: %s (the pod is going down)", a->uuid,
                              rkl_action_name(a->kind), a->error);
        else if ((t->attempts & (t->attempts - 1)) == 0)
                rkl_log_warning("leftover pod %s: %s: %s (failed %u times in a row; again in "
                                "%.1f s)",
                                a->uuid, rkl_action_name(a->kind), a->error, t->attempts, again_s);
        else
                rkl_log_debug("leftover pod %s: %s: %s (failed %u times in a row)", a->uuid,
                              rkl_action_name(a->kind), a->error, t->attempts);
}

/* The container ID of an app of rktlet's in p's manifest that no record wants any more
 * (its container was removed), else NULL. */
static const char *leftover_app(rkl_reconciler *r, const rkl_poddir_app *app)
{
        const char *cid = rkl_kvs_get(&app->user_annotations, RKL_MARK_CONTAINER_ID);
        if (!app->in_manifest || !cid || !rkl_id_is_valid(cid))
                return NULL;
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *v =
            rkl_cache_container_get(r->cache, cid);
        return v ? NULL : cid;
}

/* Every app rktlet adds is one rm owed once its container is removed, and rkt runs one app
 * command at a time in a pod. A pass steps the containers before it reaps, so under churn
 * (containers made and removed all the time in one pod) an add would always come first,
 * and removed apps would pile up in the pod, each with its rootfs, until the load stopped.
 * So an add made while the pod holds leftover apps is a removal owed: the next add there
 * waits for one of them to go. Starts never wait (a restarted container is added and
 * started before the old one goes), and a removal that keeps failing slows the pod's adds
 * to one between two attempts, never stops them. */
bool rkl_orphans_rm_due(rkl_reconciler *r, const rkl_poddir_pod *p)
{
        if (!p || !rkl_hashmap_get(r->orphans->rm_owed, p->uuid))
                return false;
        for (size_t i = 0; i < p->n_apps; i++)
                if (p->apps[i].state != RKL_POD_APP_RUNNING && leftover_app(r, &p->apps[i]))
                        return true;
        return false;
}

void rkl_orphans_add_submitted(rkl_reconciler *r, const rkl_poddir_pod *p)
{
        if (!p || rkl_hashmap_get(r->orphans->rm_owed, p->uuid))
                return;
        for (size_t i = 0; i < p->n_apps; i++)
                if (p->apps[i].state != RKL_POD_APP_RUNNING && leftover_app(r, &p->apps[i])) {
                        char *key = rkl_xstrdup(p->uuid);
                        rkl_hashmap_put(r->orphans->rm_owed, key, key);
                        return;
                }
}

void rkl_orphans_rm_forget(rkl_reconciler *r, const char *uuid)
{
        free(rkl_hashmap_remove(r->orphans->rm_owed, uuid));
}

void rkl_orphans_reap_apps(rkl_reconciler *r, const rkl_poddir_pod *p, int64_t now)
{
        bool owed = false;
        for (size_t i = 0; i < p->n_apps; i++) {
                const rkl_poddir_app *app = &p->apps[i];
                const char *cid = leftover_app(r, app);
                if (!cid)
                        continue;
                owed = owed || app->state != RKL_POD_APP_RUNNING;
                if (!rkl_action_can_start(r, cid) || retry_waits(r, cid, now))
                        continue;
                action *a;
                if (app->state == RKL_POD_APP_RUNNING) {
                        a = rkl_action_new(r, ACT_APP_STOP, cid, p->uuid, app->name);
                        a->deadline_ns = now + (int64_t)r->stop_grace_usec * (int64_t)NSEC_PER_USEC;
                        a->supervisor = (pid_t)p->ppid;
                } else if (!rkl_action_app_busy(r, p->uuid)) {
                        /* Other apps of the same image keep their layers: rkt's app rm takes
                         * only this app's (packaging/rkt/app-rm-shared-image.patch, which
                         * rktlet's rkt carries: docs/rkt.md, 'Quirks'). */
                        a = rkl_action_new(r, ACT_APP_RM, cid, p->uuid, app->name);
                        a->supervisor = (pid_t)p->ppid;
                        rkl_orphans_rm_forget(r, p->uuid);
                } else {
                        continue;
                }
                a->orphan = true;
                rkl_action_submit(r, a);
        }
        if (!owed)
                rkl_orphans_rm_forget(r, p->uuid);
}

void rkl_orphans_reap_pods(rkl_reconciler *r, int64_t now)
{
        size_t i = 0;
        const rkl_poddir_pod *p;
        /* A leftover whose failures were not tried again long after their time has gone. */
        rkl_backoff_drop_stale(r->orphans->retries, now, 10 * 60 * (int64_t)NSEC_PER_SEC);
        while (rkl_observing_iterate(r, &i, &p)) {
                const char *id = rkl_kvs_get(&p->user_annotations, RKL_MARK_SANDBOX_ID);
                if (retry_waits(r, p->uuid, now))
                        continue;
                if (!id && p->state == RKL_POD_STATE_ABORTED_PREPARE &&
                    rkl_action_can_start(r, p->uuid) &&
                    !rkl_action_pod_in_flight(r, p->uuid, ACT_ANY)) {
                        /* A creation that died while rkt prepared its pod, before the pod's
                         * manifest (and rktlet's mark in it) was written: a sandbox's attempt
                         * killed at its ready timeout, say. Nobody can claim it; `rkt gc`
                         * would take it too. */
                        action *a = rkl_action_new(r, ACT_POD_RM, p->uuid, p->uuid, NULL);
                        a->orphan = true;
                        rkl_log_info("removing pod %s, whose preparation was cut short", p->uuid);
                        rkl_action_submit(r, a);
                        continue;
                }
                if (!id || !rkl_id_is_valid(id) || !rkl_action_can_start(r, p->uuid))
                        continue;
                /* Its sandbox's own stop or rm may still run, after the record went (a
                 * RemovePodSandbox right after StopPodSandbox): a second rkt rm would race
                 * it, and fail. */
                if (rkl_action_pod_in_flight(r, p->uuid, ACT_ANY))
                        continue;
                _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *pv = rkl_cache_pod_get(r->cache, id);
                if (pv && streq_ptr(pv->rec->rkt_uuid, p->uuid))
                        continue; /* wanted */
                if (pv && rkl_observing_pod_adoptable(pv->rec, p))
                        continue; /* alive and about to be adopted */
                if (p->state == RKL_POD_STATE_PREPARING || p->state == RKL_POD_STATE_EMBRYO)
                        continue; /* still being made: wait for it to settle */
                action *a;
                if (p->state == RKL_POD_STATE_RUNNING) {
                        a = rkl_action_new(r, ACT_POD_STOP, p->uuid, p->uuid, NULL);
                        a->force = true;
                        if (!pv && RKL_OPS(r, unit_connected)) {
                                /* Its unit goes with it. */
                                _cleanup_free_ char *unit = rkl_unit_name_for_sandbox(id);
                                rkl_reconciler__unit_stop(r, unit);
                        }
                } else {
                        a = rkl_action_new(r, ACT_POD_RM, p->uuid, p->uuid, NULL);
                        a->unit_name = rkl_unit_cgroup_for_sandbox(id);
                        if (!pv) {
                                _cleanup_free_ char *dir = rkl_pods_state_path(r, id, NULL);
                                int k = rkl_rm_rf_at(AT_FDCWD, dir);
                                if (k < 0) /* tried again by the state dirs' sweep */
                                        rkl_log_warning("cannot remove %s: %s", dir, strerror(-k));
                        }
                }
                a->orphan = true;
                rkl_log_info("removing leftover pod %s of sandbox %.12s", p->uuid, id);
                rkl_action_submit(r, a);
        }
}

/* Whether a pod rkt has (or is removing) carries the sandbox's mark. */
static bool marked_pod_left(rkl_reconciler *r, const char *id)
{
        size_t i = 0;
        const rkl_poddir_pod *p;
        while (rkl_observing_iterate(r, &i, &p))
                if (streq_ptr(rkl_kvs_get(&p->user_annotations, RKL_MARK_SANDBOX_ID), id))
                        return true;
        return false;
}

/* State directories (the uuid file, the sandbox's log) of sandboxes no record wants and no
 * pod of rktlet's still carries: a sandbox stopped (its pod removed) and then removed leaves
 * no pod for the orphan pass to find, so its directory goes here, at the next rescan. */
void rkl_orphans_reap_state_dirs(rkl_reconciler *r)
{
        _cleanup_free_ char *top = rkl_pods_state_path(r, "", NULL);
        _cleanup_closedir_ DIR *d = opendir(top);
        struct dirent *de;
        while (d && (de = readdir(d))) {
                if (!rkl_id_is_valid(de->d_name))
                        continue;
                _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *pv =
                    rkl_cache_pod_get(r->cache, de->d_name);
                if (pv)
                        continue;
                if (marked_pod_left(r, de->d_name))
                        continue;
                /* What the sandbox's unit left in the hierarchies systemd does not manage
                 * (rkt's stage1 leaves its cpuset, freezer and cpuacct cgroups) goes with the
                 * rm of its pod; a pod gone another way (its directory removed by hand) never
                 * had one. So it goes here, and the state directory, which brings this look
                 * back at every rescan, only once nothing of it is left (a unit still stopping
                 * holds its cgroups). */
                _cleanup_free_ char *cg = rkl_unit_cgroup_for_sandbox(de->d_name);
                rkl_app_cgroup_unit_remove(cg);
                if (rkl_app_cgroup_unit_left(cg))
                        continue;
                _cleanup_free_ char *dir = rkl_pods_state_path(r, de->d_name, NULL);
                int k = rkl_rm_rf_at(AT_FDCWD, dir);
                if (k < 0)
                        rkl_log_warning("cannot remove %s: %s", dir, strerror(-k));
        }
}

/* Whether anything of a sandbox without a record is left: its network, a pod of its
 * attempts, its unit's cgroups, its state directory. */
static bool sandbox_left(rkl_reconciler *r, const char *id)
{
        _cleanup_free_ char *dir = rkl_pods_state_path(r, id, NULL);
        _cleanup_free_ char *cg = rkl_unit_cgroup_for_sandbox(id);
        return rkl_network_held(r, id) || marked_pod_left(r, id) || rkl_app_cgroup_unit_left(cg) ||
               access(dir, F_OK) == 0;
}

void rkl_orphans_failures_sweep(rkl_reconciler *r)
{
        int64_t now = rkl_reconciler__now(r);
        _cleanup_strv_free_ char **ids = rkl_cache_failure_ids(r->cache, rkl_realtime_ns());
        bool left = false;
        RKL_STRV_FOREACH (id, ids) {
                if (sandbox_left(r, *id)) {
                        left = true;
                        continue;
                }
                rkl_error err = RKL_ERROR_INIT;
                int k = rkl_store_pod_failure_forget(r->store, *id, &err);
                if (k < 0)
                        rkl_log_warning("sandbox %.12s: cannot forget its failure: %s", *id,
                                        err.msg);
                else
                        rkl_log_info("sandbox %.12s: undone", *id);
        }
        if (!left)
                return;
        if (now >= r->orphans->failures_look_ns) {
                r->rescan = true; /* the state directories go at a rescan */
                r->orphans->failures_look_ns = now + (int64_t)NSEC_PER_SEC;
        }
        rkl_reconciler__wake_at(r, r->orphans->failures_look_ns);
}

void rkl_orphans_failures_look_now(rkl_reconciler *r)
{
        r->orphans->failures_look_ns = 0;
}

/* Units of sandboxes no record wants (deleted while rktlet was down, or between a delete
 * and its clean-up). Stopping one takes its pod down; the pod's directory is an orphan the
 * pass removes next. */
void rkl_orphans_reap_units(rkl_reconciler *r)
{
        _cleanup_strv_free_ char **units = NULL;
        if (!RKL_OPS(r, unit_connected) ||
            RKL_OPS(r, unit_list, "rktlet-*.service", &units, NULL) < 0)
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
                rkl_reconciler__unit_stop(r, *u);
        }
}
