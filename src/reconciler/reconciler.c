/* The reconcile loop: the thread, its event sources (kicks, finished actions, timers; the
 * watcher's is observing.c's), and the pass that walks every sandbox and container in the
 * cache and hands each to its step (pods.c, containers.c, orphans.c, network.c, limits.c),
 * the probe (probe.c) before it when one was asked for, the stats' refresh after.
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
#include "actions.h"
#include "app-cgroup.h"
#include "containers.h"
#include "limits.h"
#include "network.h"
#include "observing.h"
#include "orphans.h"
#include "pods.h"
#include "probe.h"
#include "base/alloc.h"
#include "base/log.h"
#include "base/time-util.h"
#include "base/workpool.h"
#include "rkt/poddir.h"
#include "rkt/rkt.h"
#include "stats/stats.h"
#include "store/store.h"
#include "base/banned.h"

int64_t rkl_reconciler__now(rkl_reconciler *r)
{
        return RKL_OPS(r, now_ns);
}

void rkl_reconciler__wake_at(rkl_reconciler *r, int64_t t)
{
        if (r->wake_at_ns == 0 || t < r->wake_at_ns)
                r->wake_at_ns = t;
}

void rkl_reconciler__write_failed(const char *kind, const char *id, const char *what, int k,
                                  const rkl_error *err)
{
        if (k < 0 && k != -ENOENT)
                rkl_log_error("%s %.12s: cannot record %s: %s", kind, id, what, err->msg);
}

void rkl_reconciler__unit_stop(rkl_reconciler *r, const char *unit)
{
        rkl_error err = RKL_ERROR_INIT;
        if (!RKL_OPS(r, unit_connected))
                return;
        int k = RKL_OPS(r, unit_stop, unit, &err);
        if (k < 0 && k != -ENOENT)
                rkl_log_warning("cannot stop %s: %s", unit, err.msg);
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

/* ---- Stats ---- */

/* Hands the stats collector what runs now. */
static void stats_refresh(rkl_reconciler *r)
{
        rkl_pod_view **pods;
        size_t n_pods, k = 0, cap = 16;
        rkl_stats_target *t;

        if (!r->stats)
                return;
        t = rkl_xnew0(rkl_stats_target, cap);
        rkl_cache_pod_list(r->cache, NULL, &pods, &n_pods);
        for (size_t i = 0; i < n_pods; i++) {
                const rkl_pod_record *rec = pods[i]->rec;
                const rkl_poddir_pod *p =
                    rec->rkt_uuid ? rkl_observing_pod(r, rec->rkt_uuid) : NULL;
                if (!p || !p->ppid || p->state != RKL_POD_STATE_RUNNING ||
                    rec->observed.phase != RKL_POD_PHASE_RUNNING)
                        continue;
                rkl_view_filter f = {.sandbox_id = rec->id};
                rkl_container_view **containers;
                size_t n;
                rkl_cache_container_list(r->cache, &f, &containers, &n);
                if (k + n + 1 > cap) {
                        cap = 2 * (k + n + 1);
                        t = rkl_xrealloc(t, cap * sizeof(*t));
                }
                for (size_t j = 0; j < n; j++) {
                        const rkl_container_record *c = containers[j]->rec;
                        if (c->observed.phase != RKL_CONTAINER_PHASE_RUNNING)
                                continue;
                        rkl_stats_target *x = &t[k++];
                        *x = (rkl_stats_target){.supervisor = (pid_t)p->ppid};
                        memcpy(x->id, c->id, sizeof(x->id));
                        memcpy(x->sandbox_id, rec->id, sizeof(x->sandbox_id));
                        x->app = rkl_xstrdup(c->app_name);
                        x->overlay_dir =
                            rkl_xasprintf("%s/run/%s/overlay", r->pods_dir, rec->rkt_uuid);
                }
                rkl_container_views_unref(containers, n);
                rkl_stats_target *x = &t[k++];
                *x = (rkl_stats_target){.supervisor = (pid_t)p->ppid, .is_pod = true};
                memcpy(x->id, rec->id, sizeof(x->id));
                memcpy(x->sandbox_id, rec->id, sizeof(x->sandbox_id));
        }
        rkl_pod_views_unref(pods, n_pods);
        rkl_stats_refresh(r->stats, t, k);
}

int rkl_reconciler_stats_dirs(pid_t supervisor, const char *app, rkl_stats_dirs *ret)
{
        return rkl_app_cgroup_stats_dirs(supervisor, app, ret);
}

/* ---- The pass ---- */

/* What the store's connections asked for, and what they committed, shown in the cache. */
static void store_upkeep(rkl_reconciler *r)
{
        rkl_error err = RKL_ERROR_INIT;
        if (atomic_exchange(&r->checkpoint_asked, false) &&
            rkl_db_checkpoint(rkl_store_db(r->store), &err) < 0)
                rkl_log_warning("store checkpoint: %s", err.msg);
        rkl_error_clear(&err);
        if (rkl_store_republish(r->store, &err) < 0)
                rkl_log_warning("cannot show committed changes in the cache yet: %s", err.msg);
}

/* A sandbox's step, by its desired and observed state; a running one's containers after
 * it. */
static void step_sandbox(rkl_reconciler *r, const rkl_pod_record *rec, int64_t now)
{
        const rkl_poddir_pod *p = rec->rkt_uuid ? rkl_observing_pod(r, rec->rkt_uuid) : NULL;

        if (rkl_action_in_flight(r, rec->id))
                return;
        if (rec->book.next_retry_ns > now) {
                rkl_reconciler__wake_at(r, rec->book.next_retry_ns);
                return;
        }
        if (rec->desired == RKL_POD_DESIRED_STOPPED) {
                if (rec->observed.phase != RKL_POD_PHASE_STOPPED || rec->rkt_uuid)
                        rkl_pods_step_stopping(r, rec, p);
                return;
        }
        if (rec->observed.phase == RKL_POD_PHASE_PENDING) {
                rkl_pods_step_pending(r, rec, p, now);
                return;
        }
        if (rec->observed.phase != RKL_POD_PHASE_RUNNING || !p ||
            p->state != RKL_POD_STATE_RUNNING || !p->supervisor_ready)
                return;

        rkl_network_step_running(r, rec, p);
        rkl_limits_pod_sync(r, rec);
        rkl_view_filter f = {.sandbox_id = rec->id};
        rkl_container_view **containers;
        size_t n;
        rkl_cache_container_list(r->cache, &f, &containers, &n);
        for (size_t j = 0; j < n; j++)
                rkl_containers_step(r, rec, p, containers[j]->rec, now);
        rkl_container_views_unref(containers, n);
        rkl_orphans_reap_apps(r, p, now);
}

static void pass(rkl_reconciler *r)
{
        int64_t now = rkl_reconciler__now(r);
        rkl_pod_view **pods;
        size_t n_pods;

        r->wake_at_ns = 0;
        atomic_store(&r->kick_since_usec, 0);
        atomic_fetch_add(&r->n_passes, 1);
        rkl_probe_run_if_asked(r);
        if (!r->store || r->store_refused)
                return;
        store_upkeep(r);
        if (r->rescan) {
                rkl_observing_rescan(r);
                rkl_orphans_reap_units(r);
                rkl_orphans_reap_state_dirs(r);
                rkl_observing_steps_sweep(r);
                rkl_pods_looks_sweep(r);
        } else
                rkl_observing_recheck(r);

        rkl_cache_pod_list(r->cache, NULL, &pods, &n_pods);
        for (size_t i = 0; i < n_pods; i++)
                step_sandbox(r, pods[i]->rec, now);
        rkl_pod_views_unref(pods, n_pods);
        rkl_network_reap(r, now);
        rkl_orphans_reap_pods(r, now);
        rkl_orphans_failures_sweep(r);
        rkl_containers_sync_logs(r);
        /* What just started gets its first sample now, not at the next interval: kubelet
         * and critest ask for its stats right after the start. */
        if (r->stats_new) {
                r->stats_new = false;
                stats_refresh(r);
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

static int on_probe_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        rkl_reconciler *r = userdata;
        rkl_probe_tick(r);
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
        stats_refresh(r);
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

static int on_done(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        rkl_reconciler *r = userdata;
        rkl_action_apply_done(r);
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
                k = sd_event_add_io(r->event, NULL, rkl_action_done_fd(r), EPOLLIN, on_done, r);
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
        rkl_network_start(r);
        rkl_probe_run(r);
        rkl_probe_list_images(r);
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
                (void)rkl_observing_watch(r);

        r->rescan = true;
        schedule_pass(r);

        k = sd_event_loop(r->event);
        if (k < 0)
                rkl_log_error_errno(k, "reconciler event loop failed: %m");

        /* Let actions under way finish, then apply nothing more: the next start resumes. */
        r->pool = rkl_workpool_free(r->pool);
        rkl_action_drop_done(r);
        r->pass_source = sd_event_source_unref(r->pass_source);
        r->wake_source = sd_event_source_unref(r->wake_source);
        rkl_observing_unwatch(r);
        rkl_network_stop(r->net);
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
        r->kick_fd = r->quit_fd = -EBADF;
        pthread_mutex_init(&r->lock, NULL);
        pthread_cond_init(&r->cond, NULL);
        r->probe = rkl_probe_new();
        r->actions = rkl_action_queue_new();
        r->observing = rkl_observing_new();
        r->pods = rkl_pods_new();
        r->containers = rkl_containers_new();
        r->limits = rkl_limits_new();
        r->orphans = rkl_orphans_new();
        r->net = rkl_network_new(&r->cfg);
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
        if (r->kick_fd < 0 || r->quit_fd < 0)
                return rkl_error_set(reterr, -errno, "eventfd: %s", strerror(errno));
        if ((k = rkl_action_done_fd(r)) < 0) /* made with the queue: its -errno */
                return rkl_error_set(reterr, k, "eventfd: %s", strerror(-k));
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
                rkl_network_start(r);
                rkl_probe_run(r);
        }
        rkl_action_apply_done(r);
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
            .in_flight = rkl_action_count(r),
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

rkl_reconciler *rkl_reconciler_free(rkl_reconciler *r)
{
        if (!r)
                return NULL;
        rkl_reconciler_stop(r);
        r->pool = rkl_workpool_free(r->pool);
        /* Results no pass applied (the thread applies or frees its own before it ends; a
         * test's passes may leave some). */
        r->actions = rkl_action_queue_free(r->actions);
        r->observing = rkl_observing_free(r->observing);
        r->pods = rkl_pods_free(r->pods);
        r->containers = rkl_containers_free(r->containers);
        r->orphans = rkl_orphans_free(r->orphans);
        r->net = rkl_network_free(r->net);
        r->limits = rkl_limits_free(r->limits);
        r->probe = rkl_probe_free(r->probe);
        rkl_rkt_free(r->rkt);
        rkl_store_free(r->store);
        safe_close(r->kick_fd);
        safe_close(r->quit_fd);
        pthread_mutex_destroy(&r->lock);
        pthread_cond_destroy(&r->cond);
        free(r->pods_dir);
        free(r);
        return NULL;
}
