#include "reconciler.h"

#include <sys/eventfd.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "cache.h"
#include "unit.h"
#include "base/alloc.h"
#include "base/log.h"
#include "base/time-util.h"
#include "rkt/rkt.h"
#include "store/store.h"
#include "base/banned.h"

struct rkl_reconciler {
        rkl_reconciler_config cfg;
        rkl_cache *cache;
        rkl_rkt *rkt;
        int kick_fd, quit_fd;
        pthread_t thread;
        bool running;

        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool first_probe_done;
        int thread_error;

        /* Reconciler thread only. */
        rkl_store *store;
        sd_event *event;
        sd_bus *bus;
};

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

        if (!r->bus && rkl_unit_connect(r->cfg.systemd_bus, &r->bus, &err) < 0) {
                h->systemd_detail = rkl_xstrdup(err.msg);
                return;
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

static int on_probe_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        rkl_reconciler *r = userdata;
        probe(r);
        (void)sd_event_source_set_time(s,
                                       rkl_now_usec(CLOCK_MONOTONIC) + r->cfg.probe_interval_usec);
        return 0;
}

static int on_kick(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        uint64_t v;
        (void)!read(fd, &v, sizeof(v));
        /* Nothing to converge yet: the store and the lifecycle come with their issues. */
        return 0;
}

static int on_quit(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

static void first_probe_signal(rkl_reconciler *r, int error)
{
        RKL_GUARD(&r->lock);
        r->first_probe_done = true;
        r->thread_error = error;
        pthread_cond_broadcast(&r->cond);
}

static void *reconciler_main(void *userdata)
{
        rkl_reconciler *r = userdata;
        int k;

        k = sd_event_new(&r->event);
        if (k >= 0)
                k = sd_event_add_io(r->event, NULL, r->kick_fd, EPOLLIN, on_kick, r);
        if (k >= 0)
                k = sd_event_add_io(r->event, NULL, r->quit_fd, EPOLLIN, on_quit, r);
        if (k >= 0)
                k = sd_event_add_time(r->event, NULL, CLOCK_MONOTONIC,
                                      rkl_now_usec(CLOCK_MONOTONIC) + r->cfg.probe_interval_usec,
                                      USEC_PER_SEC, on_probe_timer, r);
        if (k < 0) {
                first_probe_signal(r, k);
                return NULL;
        }
        probe(r);
        first_probe_signal(r, 0);

        k = sd_event_loop(r->event);
        if (k < 0)
                rkl_log_error_errno(k, "reconciler event loop failed: %m");
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
        r->cache = cache;
        r->kick_fd = r->quit_fd = -EBADF;
        pthread_mutex_init(&r->lock, NULL);
        pthread_cond_init(&r->cond, NULL);

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
        if (r->kick_fd < 0 || r->quit_fd < 0)
                return rkl_error_set(reterr, -errno, "eventfd: %s", strerror(errno));
        *ret = TAKE_PTR(r);
        return 0;
}

int rkl_reconciler_start(rkl_reconciler *r, rkl_error *reterr)
{
        int k = pthread_create(&r->thread, NULL, reconciler_main, r);
        if (k != 0)
                return rkl_error_set(reterr, -k, "cannot start the reconciler: %s", strerror(k));
        r->running = true;

        RKL_GUARD(&r->lock);
        while (!r->first_probe_done)
                pthread_cond_wait(&r->cond, &r->lock);
        if (r->thread_error < 0)
                return rkl_error_set(reterr, r->thread_error, "reconciler: %s",
                                     strerror(-r->thread_error));
        return 0;
}

void rkl_reconciler_kick(rkl_reconciler *r)
{
        uint64_t one = 1;
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
        rkl_rkt_free(r->rkt);
        rkl_store_close(r->store);
        safe_close(r->kick_fd);
        safe_close(r->quit_fd);
        pthread_mutex_destroy(&r->lock);
        pthread_cond_destroy(&r->cond);
        free(r);
        return NULL;
}
