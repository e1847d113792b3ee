/* The reconcile loop: the thread, its event sources (kicks, the watcher, finished actions,
 * timers), the probe of rkt and systemd, and the pass that walks every sandbox and container
 * in the cache and hands each to its step (pods.c, containers.c, orphans.c).
 *
 * One pass: for every sandbox and container in the cache (the in-memory mirror of the
 * store), compare desired with observed state and start what closes the difference. What
 * the machine looks like comes from rkt's pod directories (observing.c); actions run on a
 * worker pool (actions.c). Every action is safe to repeat: the unit name is derived from the
 * sandbox ID, rkt identity is recorded before it is relied on, and "already there" or
 * "already gone" answers count as success. */
#include "reconciler.h"

#include <assert.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "reconciler-internal.h"
#include "images/images.h"
#include "unit.h"
#include "base/alloc.h"
#include "base/fileio.h"
#include "base/hashmap.h"
#include "base/log.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "base/workpool.h"
#include "rkt/poddir.h"
#include "rkt/rkt.h"
#include "rkt/watch.h"
#include "store/store.h"
#include "base/banned.h"

int64_t rkl_reconciler__now(rkl_reconciler *r)
{
        return RKL_OPS(r, now_ns);
}

int64_t rkl_reconciler__backoff_ns(uint32_t attempts)
{
        int64_t d = BACKOFF_BASE_NS;
        for (uint32_t i = 0; i < attempts && d < BACKOFF_MAX_NS; i++)
                d *= 2;
        return d < BACKOFF_MAX_NS ? d : BACKOFF_MAX_NS;
}

void rkl_reconciler__wake_at(rkl_reconciler *r, int64_t t)
{
        if (r->wake_at_ns == 0 || t < r->wake_at_ns)
                r->wake_at_ns = t;
}

step_retry *rkl_reconciler__retry_failed(rkl_reconciler *r, rkl_hashmap *m, const char *key)
{
        step_retry *t = rkl_hashmap_get(m, key);
        if (!t) {
                t = rkl_xnew0(step_retry, 1);
                (void)snprintf(t->key, sizeof(t->key), "%s", key);
                rkl_hashmap_put(m, t->key, t);
        }
        t->attempts++;
        t->next_ns = rkl_reconciler__now(r) + rkl_reconciler__backoff_ns(t->attempts);
        rkl_reconciler__wake_at(r, t->next_ns);
        return t;
}

bool rkl_reconciler__retry_waits(rkl_reconciler *r, const rkl_hashmap *m, const char *key,
                                 int64_t now)
{
        const step_retry *t = rkl_hashmap_get(m, key);
        if (!t || t->next_ns <= now)
                return false;
        rkl_reconciler__wake_at(r, t->next_ns);
        return true;
}

static void schedule_pass(rkl_reconciler *r)
{
        if (r->pass_source)
                (void)sd_event_source_set_enabled(r->pass_source, SD_EVENT_ONESHOT);
}

void rkl_reconciler__schedule_pass(rkl_reconciler *r)
{
        schedule_pass(r);
}

/* ---- Probing rkt and systemd for Status ---- */

typedef struct stage1_import {
        rkl_reconciler *r;
        char *path;
} stage1_import;

static void import_stage1_run(void *userdata)
{
        stage1_import *job = userdata;
        rkl_reconciler *r = job->r;
        rkl_error err = RKL_ERROR_INIT;
        uint64_t t0 = rkl_now_usec(CLOCK_MONOTONIC);
        if (rkl_images_import(r->images, job->path, NULL, &err) < 0) {
                rkl_log_warning("%s: each pod's rkt imports it then, pods of a first batch in "
                                "parallel",
                                err.msg);
                atomic_store(&r->stage1_import_failed, true);
        } else
                rkl_log_info("imported stage1 from '%s' into rkt's store in %.1f s", job->path,
                             (double)(rkl_now_usec(CLOCK_MONOTONIC) - t0) / USEC_PER_SEC);
        atomic_store(&r->stage1_importing, false);
        (void)atomic_exchange(&r->probe_asked, true);
        rkl_reconciler_kick(r);
        free(job->path);
        free(job);
}

/* rkt imports a stage1 its store lacks from the file with every pod it prepares, until one
 * import has ended: a first batch of 30 pods on a new node spent 20 s of both cores hashing
 * the same 47 MB, each pod past a 20 s ready timeout. One import ahead, the pods waiting
 * for it, costs the batch about 2 s. */
static void import_stage1(rkl_reconciler *r, const rkl_rkt_build *b)
{
        if (!b->stage1_path || atomic_load(&r->stage1_import_failed) ||
            atomic_exchange(&r->stage1_importing, true))
                return;
        rkl_log_info("rkt's store has no stage1 '%s': importing '%s' before any pod starts",
                     b->stage1_name, b->stage1_path);
        stage1_import *job = rkl_xnew0(stage1_import, 1);
        job->r = r;
        job->path = rkl_xstrdup(b->stage1_path);
        rkl_workpool_submit(r->pool, import_stage1_run, job);
}

/* The stage1 rkt's store holds under the name b records: rkt runs that one, not the file;
 * when it holds none, the file is imported. Known once the image cache has been listed (a
 * listing asks for a probe when it ends). */
static int probe_stage1(rkl_reconciler *r, const rkl_rkt_build *b, rkl_error *reterr)
{
        rkl_image **l = NULL;
        size_t n = 0;
        int k = 0;
        bool held = false;

        if (!b->stage1_name || !r->images || !rkl_images_wait_listed(r->images, 0) ||
            rkl_images_list(r->images, NULL, &l, &n, NULL) < 0)
                return 0;
        for (size_t i = 0; i < n && k >= 0; i++) {
                held = held || streq_ptr(l[i]->name, b->stage1_name);
                k = rkl_rkt_build_check_stage1(b, l[i]->name, l[i]->id, reterr);
        }
        rkl_image_array_free(l, n);
        if (!held)
                import_stage1(r, b);
        return k;
}

/* Whether the rkt that said it is version, and the stage1 pods run, carry the fixes rktlet
 * relies on: rkt's build record beside it lists them (rkt/build.h). Told at start and by
 * every probe, so that an unpatched rkt shows in Status before it loses a log line. */
static void probe_patches(rkl_reconciler *r, rkl_health *h, const char *version)
{
        rkl_error err = RKL_ERROR_INIT;
        rkl_rkt_build b = {0};

        if (rkl_rkt_build_verify(r->cfg.rkt_path, version, rkl_rkt_patches_wanted,
                                 rkl_rkt_n_patches_wanted, &r->rkt_memo, &b, &err) < 0) {
                h->rkt_patches = rkl_xstrdup(err.msg);
                return;
        }
        _cleanup_free_ char *summary = rkl_rkt_build_summary(&b);
        if (r->cfg.stage1_name && !streq_ptr(r->cfg.stage1_name, b.stage1_name)) {
                /* The operator's choice, of which the record knows nothing. */
                h->rkt_patched = true;
                h->rkt_patches = rkl_xasprintf("%s; stage1 '%s' (--stage1-name) not checked",
                                               summary, r->cfg.stage1_name);
        } else if (probe_stage1(r, &b, &err) < 0)
                h->rkt_patches = rkl_xstrdup(err.msg);
        else {
                h->rkt_patched = true;
                h->rkt_patches = b.stage1_name ? rkl_xasprintf("%s; stage1 %s %s", summary,
                                                               b.stage1_name, b.stage1_id)
                                               : TAKE_PTR(summary);
        }
        rkl_rkt_build_done(&b);
}

static void probe_rkt(rkl_reconciler *r, rkl_health *h)
{
        rkl_error err = RKL_ERROR_INIT;
        rkl_rkt_version v = {0};

        if (!r->rkt) {
                h->rkt_detail = rkl_xstrdup("no rkt binary: not found in PATH; set --rkt-path");
                return;
        }
        if (RKL_OPS(r, rkt_version, &v, &err) < 0) {
                h->rkt_detail = rkl_xstrdup(err.msg);
                return;
        }
        h->rkt_ok = true;
        probe_patches(r, h, v.version);
        h->rkt_version = TAKE_PTR(v.version);
        h->rkt_detail = TAKE_PTR(v.text);
        rkl_rkt_version_done(&v);
}

static void probe_systemd(rkl_reconciler *r, rkl_health *h)
{
        rkl_error err = RKL_ERROR_INIT;
        char *version = NULL;

        if (RKL_OPS(r, unit_probe, &version, &err) < 0) {
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
        rkl_reconciler__net_health(r, &h);
        h.probed_ns = rkl_realtime_ns();

        rkl_cache_get_health(r->cache, &old);
        if (old.probed_ns == 0 || old.rkt_ok != h.rkt_ok || old.systemd_ok != h.systemd_ok ||
            old.rkt_patched != h.rkt_patched) {
                if (h.rkt_ok && h.rkt_patched)
                        rkl_log_info("rkt %s is usable, with %s", h.rkt_version, h.rkt_patches);
                else if (h.rkt_ok)
                        rkl_log_warning("rkt %s runs but lacks rktlet's fixes: %s", h.rkt_version,
                                        h.rkt_patches);
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

/* ---- The pass ---- */

static void pass(rkl_reconciler *r)
{
        int64_t now = rkl_reconciler__now(r);
        rkl_pod_view **pods;
        size_t n_pods;

        r->wake_at_ns = 0;
        atomic_store(&r->kick_since_usec, 0);
        atomic_fetch_add(&r->n_passes, 1);
        if (atomic_exchange(&r->probe_asked, false))
                probe(r);
        if (!r->store || r->store_refused)
                return;
        if (atomic_exchange(&r->checkpoint_asked, false)) {
                rkl_error err = RKL_ERROR_INIT;
                if (rkl_db_checkpoint(rkl_store_db(r->store), &err) < 0)
                        rkl_log_warning("store checkpoint: %s", err.msg);
        }
        {
                rkl_error err = RKL_ERROR_INIT;
                if (rkl_store_republish(r->store, &err) < 0)
                        rkl_log_warning("cannot show committed changes in the cache yet: %s",
                                        err.msg);
        }
        if (r->rescan) {
                r->recheck = rkl_strv_free(r->recheck);
                rkl_reconciler__rescan(r);
                rkl_reconciler__reap_orphan_units(r);
                rkl_reconciler__reap_orphan_state_dirs(r);
                rkl_reconciler__steps_sweep(r);
                rkl_reconciler__unit_looks_sweep(r);
        } else if (r->recheck) {
                _cleanup_strv_free_ char **l = TAKE_PTR(r->recheck);
                RKL_STRV_FOREACH (u, l)
                        rkl_reconciler__observe_uuid(r, *u);
        }

        rkl_cache_pod_list(r->cache, NULL, &pods, &n_pods);
        for (size_t i = 0; i < n_pods; i++) {
                const rkl_pod_record *rec = pods[i]->rec;
                const rkl_poddir_pod *p =
                    rec->rkt_uuid ? rkl_hashmap_get(r->seen, rec->rkt_uuid) : NULL;

                if (rkl_hashmap_get(r->in_flight, rec->id))
                        continue;
                if (rec->book.next_retry_ns > now) {
                        rkl_reconciler__wake_at(r, rec->book.next_retry_ns);
                        continue;
                }
                if (rec->desired == RKL_POD_DESIRED_STOPPED) {
                        if (rec->observed.phase != RKL_POD_PHASE_STOPPED || rec->rkt_uuid)
                                rkl_reconciler__step_stopping(r, rec, p);
                        continue;
                }
                if (rec->observed.phase == RKL_POD_PHASE_PENDING) {
                        rkl_reconciler__step_pending(r, rec, p, now);
                        continue;
                }
                if (rec->observed.phase != RKL_POD_PHASE_RUNNING || !p ||
                    p->state != RKL_POD_STATE_RUNNING || !p->supervisor_ready)
                        continue;

                rkl_reconciler__net_step_running(r, rec, p);
                rkl_reconciler__pod_limits_sync(r, rec);
                rkl_view_filter f = {.sandbox_id = rec->id};
                rkl_container_view **containers;
                size_t n;
                rkl_cache_container_list(r->cache, &f, &containers, &n);
                for (size_t j = 0; j < n; j++)
                        rkl_reconciler__step_container(r, rec, p, containers[j]->rec, now);
                rkl_container_views_unref(containers, n);
                rkl_reconciler__reap_orphan_apps(r, p, now);
        }
        rkl_pod_views_unref(pods, n_pods);
        rkl_reconciler__net_reap(r, now);
        rkl_reconciler__reap_orphan_pods(r, now);
        rkl_reconciler__failures_sweep(r);
        rkl_reconciler__sync_logs(r);
        /* What just started gets its first sample now, not at the next interval: kubelet
         * and critest ask for its stats right after the start. */
        if (r->stats_new) {
                r->stats_new = false;
                rkl_reconciler__stats_refresh(r);
        }
}

/* ---- Event sources ---- */

static int on_pass(sd_event_source *s, void *userdata)
{
        rkl_reconciler *r = userdata;
        pass(r);
        if (r->wake_at_ns) {
                int64_t delta = r->wake_at_ns - rkl_reconciler__now(r);
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

/* A time source is disabled once it fired (sd-event's default): set it again. These calls
 * fail only for a source that is not a timer (here: never), so their results are dropped,
 * as in schedule_pass() and on_pass(). */
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
        if (rkl_images_refresh(r->images, &err) < 0) {
                rkl_log_warning("%s, continuing with the images known so far", err.msg);
                /* without rkt there is nothing to try again */
                atomic_store(&r->images_unlisted, r->rkt != NULL);
        } else if (!atomic_exchange(&r->probe_asked, true))
                rkl_reconciler_kick(r);
        atomic_store(&r->images_listing, false);
}

static void list_images(rkl_reconciler *r)
{
        if (!r->images || atomic_exchange(&r->images_listing, true))
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
        rearm(s, r->resync_interval_usec);
        schedule_pass(r);
        return 0;
}

static int on_stats_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        rkl_reconciler *r = userdata;
        rkl_reconciler__stats_refresh(r);
        rearm(s, r->cfg.stats_interval_usec);
        return 0;
}

static int on_kick(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        uint64_t v;
        (void)!read(fd, &v, sizeof(v));
        schedule_pass(userdata);
        return 0;
}

/* The results of the actions finished since the last call, applied. */
static void apply_done(rkl_reconciler *r)
{
        uint64_t v;
        (void)!read(r->done_fd, &v, sizeof(v));
        pthread_mutex_lock(&r->lock);
        action *list = TAKE_PTR(r->done);
        pthread_mutex_unlock(&r->lock);
        while (list) {
                action *next = list->next;
                rkl_reconciler__apply_result(r, list);
                list = next;
        }
}

static int on_done(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        rkl_reconciler *r = userdata;
        apply_done(r);
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
                        rkl_reconciler__observe_uuid(r, *u);
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
                                      now + r->resync_interval_usec, USEC_PER_SEC, on_resync_timer,
                                      r);
        /* The first refresh shortly after the start, then every stats interval. */
        if (k >= 0 && r->stats)
                k = sd_event_add_time(r->event, NULL, CLOCK_MONOTONIC, now + 100 * USEC_PER_MSEC,
                                      USEC_PER_MSEC, on_stats_timer, r);
        if (k >= 0)
                k = sd_event_add_time(r->event, &r->wake_source, CLOCK_MONOTONIC, now,
                                      USEC_PER_MSEC, on_wake, r);
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
        rkl_reconciler__net_start(r);
        probe(r);
        list_images(r);
        /* Nothing is acted on before the store has passed its check: the cache was loaded
         * from it, and reaping what no record wants must not follow a damaged file. */
        if (r->store) {
                rkl_error err = RKL_ERROR_INIT;
                if (rkl_db_wait_writable(rkl_store_db(r->store), &err) < 0) {
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
                rkl_reconciler__action_free(list);
                list = next;
        }
        r->pass_source = sd_event_source_unref(r->pass_source);
        r->wake_source = sd_event_source_unref(r->wake_source);
        r->watch = rkl_poddir_watch_free(r->watch);
        rkl_reconciler__net_stop(r);
        r->bus = sd_bus_flush_close_unref(r->bus);
        r->event = sd_event_unref(r->event);
        return NULL;
}

int rkl_reconciler_new(const rkl_reconciler_config *cfg, rkl_cache *cache, rkl_reconciler **ret,
                       rkl_error *reterr)
{
        _cleanup_(rkl_reconciler_freep) rkl_reconciler *r = rkl_xnew0(rkl_reconciler, 1);
        int k;

        r->cfg = *cfg->config;
        r->images = cfg->images;
        r->logs = cfg->logs;
        r->stats = cfg->stats;
        r->resync_interval_usec = cfg->resync_interval_usec;
        r->stop_grace_usec = cfg->stop_grace_usec;
        rkl_config_fill_defaults(&r->cfg);
        if (!r->resync_interval_usec)
                r->resync_interval_usec = 10 * USEC_PER_SEC;
        if (!r->stop_grace_usec)
                r->stop_grace_usec = 10 * USEC_PER_SEC;
        r->cache = cache;
        r->ops = cfg->ops ? cfg->ops : &rkl_reconciler_real_ops;
        r->ops_userdata = cfg->ops ? cfg->ops_userdata : r;
        r->kick_fd = r->quit_fd = r->done_fd = r->pods_dirfd = -EBADF;
        pthread_mutex_init(&r->lock, NULL);
        pthread_cond_init(&r->cond, NULL);
        r->seen = rkl_hashmap_new();
        r->in_flight = rkl_hashmap_new();
        r->undo = rkl_hashmap_new();
        r->limits = rkl_hashmap_new();
        r->pod_limits = rkl_hashmap_new();
        r->rm_owed = rkl_hashmap_new();
        r->orphan_retries = rkl_hashmap_new();
        r->boot_looks = rkl_hashmap_new();
        r->unit_looks = rkl_hashmap_new();
        r->steps = rkl_hashmap_new();
        rkl_reconciler__net_new(r);
        k = rkl_oom_log_open(NULL, &r->oom_log);
        if (k < 0)
                rkl_log_warning("cannot read the kernel's log (/dev/kmsg: %s): an OOM-killed "
                                "app whose cgroup is gone will read as a plain SIGKILL",
                                strerror(-k));
        r->pods_dir = rkl_xasprintf("%s/pods", r->cfg.rkt_data_dir ? r->cfg.rkt_data_dir : "/");

        if (cfg->db_path) {
                rkl_db *db = NULL;
                k = rkl_db_open(cfg->db_path, cfg->store_opts, &db, reterr);
                if (k < 0)
                        return k;
                r->store = rkl_store_new(db, cache);
        }
        if (r->cfg.rkt_path) {
                rkl_rkt_config rc = {.rkt_path = r->cfg.rkt_path, .data_dir = r->cfg.rkt_data_dir};
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
        /* rkt's commands and CNI's plugins each have max_actions slots. */
        r->pool = rkl_workpool_new(2 * r->cfg.max_actions, "rkt");
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

void rkl_reconciler_run_pass(rkl_reconciler *r, bool rescan, int64_t *ret_wake_at_ns)
{
        assert(!r->running);
        if (atomic_load(&r->n_passes) == 0) {
                /* As the thread does before its first pass. */
                rkl_reconciler__net_start(r);
                probe(r);
        }
        apply_done(r);
        if (rescan)
                r->rescan = true;
        pass(r);
        if (ret_wake_at_ns)
                *ret_wake_at_ns = r->wake_at_ns;
}

void rkl_reconciler_checkpoint_wanted(void *userdata)
{
        rkl_reconciler *r = userdata;
        atomic_store(&r->checkpoint_asked, true);
        rkl_reconciler_kick(r);
}

void rkl_reconciler_kick(rkl_reconciler *r)
{
        uint64_t one = 1, none = 0;
        if (!r)
                return;
        (void)atomic_compare_exchange_strong(&r->kick_since_usec, &none,
                                             rkl_now_usec(CLOCK_MONOTONIC));
        (void)!write(r->kick_fd, &one, sizeof(one));
}

void rkl_reconciler_get_stats(rkl_reconciler *r, rkl_reconciler_stats *ret)
{
        uint64_t since = atomic_load(&r->kick_since_usec), now = rkl_now_usec(CLOCK_MONOTONIC);
        *ret = (rkl_reconciler_stats){
            .lag_usec = since && now > since ? now - since : 0,
            .in_flight = atomic_load(&r->in_flight_seen),
            .passes = atomic_load(&r->n_passes),
        };
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

static void seen_free(void *v)
{
        rkl_poddir_pod_done(v);
        free(v);
}

rkl_reconciler *rkl_reconciler_free(rkl_reconciler *r)
{
        if (!r)
                return NULL;
        rkl_reconciler_stop(r);
        r->pool = rkl_workpool_free(r->pool);
        /* Results no pass applied (the thread applies or frees its own before it ends; a
         * test's passes may leave some). */
        while (r->done) {
                action *next = r->done->next;
                rkl_reconciler__action_free(r->done);
                r->done = next;
        }
        rkl_hashmap_free_values(r->seen, seen_free);
        rkl_hashmap_free(r->in_flight);
        rkl_hashmap_free_values(r->undo, free);
        rkl_hashmap_free_values(r->rm_owed, free);
        rkl_hashmap_free_values(r->orphan_retries, free);
        rkl_hashmap_free_values(r->boot_looks, free);
        rkl_hashmap_free_values(r->unit_looks, free);
        rkl_reconciler__unit_states_free(r);
        rkl_reconciler__steps_free(r);
        rkl_reconciler__net_free(r);
        rkl_reconciler__limits_free_all(r);
        rkl_oom_log_free(r->oom_log);
        rkl_strv_free(r->recheck);
        rkl_rkt_free(r->rkt);
        rkl_store_free(r->store);
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
