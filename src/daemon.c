#include "daemon.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "api/server.h"
#include "base/alloc.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/time-util.h"
#include "state/cache.h"
#include "state/state.h"
#include "images/images.h"
#include "logs/logs.h"
#include "stats/stats.h"
#include "reconciler/reconciler.h"
#include "state/store.h"
#include "base/banned.h"

#define SHUTDOWN_GRACE_MS 5000

struct rkl_daemon {
        rkl_daemon_config cfg;
        char *db_path;
        rkl_store_options store_opts;
        rkl_api_config api_cfg;
        rkl_cache *cache;
        rkl_images *images;
        rkl_logs *logs;
        rkl_stats *stats;
        rkl_reconciler *reconciler;
        rkl_api_server *server;
        rkl_store_gate *gate; /* writes wait for the check of the file */
        pthread_t check_thread;
        bool checking;
        atomic_bool failed;
        /* Startup phases, monotonic usec, logged once serving: where a slow start went. */
        uint64_t t_begin, t_store, t_cache, t_new;
};

static double ms_between(uint64_t a, uint64_t b)
{
        return (double)(b - a) / 1000.0;
}

/* PRAGMA quick_check reads the whole file: as long as loading the cache. It runs here,
 * on a connection of its own, while the daemon serves reads from the cache; writes wait
 * for it at the store's gate, and a damaged file stops the daemon before anything wrote to
 * it. */
static void *check_main(void *userdata)
{
        rkl_daemon *d = userdata;
        _cleanup_(rkl_store_closep) rkl_store *s = NULL;
        rkl_error err = RKL_ERROR_INIT;
        rkl_store_options o = d->store_opts;

        /* Second to serving: it only holds back writes, which are rare right after a
         * start, and the first answers need the two cores. */
        (void)setpriority(PRIO_PROCESS, (id_t)gettid(), 10);
        o.write_gate = NULL; /* it only reads */
        int r = rkl_store_open(d->db_path, &o, &s, &err);
        if (r >= 0)
                r = rkl_store_quick_check(s, &err);
        rkl_store_gate_open(d->gate, r, &err);
        if (r < 0) {
                rkl_log_error("%s", err.msg);
                atomic_store(&d->failed, true);
                (void)kill(getpid(), SIGTERM); /* main's signalfd: a normal shutdown */
        }
        return NULL;
}

int rkl_daemon_new(const rkl_daemon_config *cfg, rkl_daemon **ret, rkl_error *reterr)
{
        _cleanup_(rkl_daemon_freep) rkl_daemon *d = rkl_xnew0(rkl_daemon, 1);
        int r;

        d->cfg = *cfg;
        d->t_begin = rkl_now_usec(CLOCK_MONOTONIC);
        r = rkl_mkdir_p(cfg->state_dir, 0700);
        if (r < 0)
                return rkl_error_set(reterr, r, "cannot create state dir '%s': %s", cfg->state_dir,
                                     strerror(-r));

        /* Open, check and migrate the database before anything writes to it: a file that
         * is corrupt or newer than this binary stops the daemon here, untouched. */
        d->db_path = rkl_xasprintf("%s/%s", cfg->state_dir, RKL_STORE_FILE_NAME);
        d->gate = rkl_store_gate_new();
        d->store_opts = (rkl_store_options){
            .sync_full = cfg->sync_full, .defer_check = true, .write_gate = d->gate};
        rkl_store *store = NULL;
        r = rkl_store_open(d->db_path, &d->store_opts, &store, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "cannot open '%s'", d->db_path);
        /* Every later connection (one per thread) skips the look at the file done here. */
        d->store_opts.skip_check = true;
        d->t_store = rkl_now_usec(CLOCK_MONOTONIC);

        /* Every record becomes a view in the cache, so that List and Status answer right
         * after a restart, before the reconciler has looked at the machine. */
        d->cache = rkl_cache_new();
        {
                _cleanup_(rkl_state_freep) rkl_state *loader = rkl_state_new(store, d->cache);
                size_t n_pods, n_containers;
                r = rkl_state_load(loader, &n_pods, &n_containers, reterr);
                if (r < 0)
                        return r;
                rkl_log_info("loaded %zu sandboxes and %zu containers from the store", n_pods,
                             n_containers);
        }
        d->t_cache = rkl_now_usec(CLOCK_MONOTONIC);
        rkl_images_config ic = {
            .rkt_path = cfg->rkt_path,
            .rkt_data_dir = cfg->rkt_data_dir,
            .state_dir = cfg->state_dir,
            .mirrors = cfg->registry_mirrors,
            /* image list, cat-manifest and rm are rkt commands too (pulls have their own) */
            .command_timeout_usec = cfg->rkt_timeout_usec,
        };
        r = rkl_images_new(&ic, &d->images, reterr);
        if (r < 0)
                return r;
        r = rkl_logs_new(&d->logs, reterr);
        if (r < 0)
                return r;
        {
                /* cgroup v1 (legacy or hybrid) or v2, once: what the stats read and where the
                 * limits go follow it. */
                _cleanup_close_ int root =
                    open("/sys/fs/cgroup", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                rkl_stats_config sc = {
                    .mode = root >= 0 ? rkl_cgroup_mode_detect(root) : RKL_CGROUP_V2,
                    .resolve = rkl_reconciler_stats_dirs,
                };
                r = rkl_stats_new(&sc, &d->stats, reterr);
                if (r < 0)
                        return r;
                rkl_log_info("cgroup %s, stats every %.0f s", rkl_cgroup_mode_to_string(sc.mode),
                             (double)(cfg->stats_interval_usec ? cfg->stats_interval_usec
                                                               : 10 * USEC_PER_SEC) /
                                 USEC_PER_SEC);
        }
        rkl_reconciler_config rc = {
            .db_path = d->db_path, /* the thread opens its own connection */
            .store_opts = &d->store_opts,
            .state_dir = cfg->state_dir,
            .images = d->images,
            .logs = d->logs,
            .stats = d->stats,
            .stats_interval_usec = cfg->stats_interval_usec,
            .rkt_path = cfg->rkt_path,
            .rkt_data_dir = cfg->rkt_data_dir,
            .systemd_bus = cfg->systemd_bus,
            .net = cfg->net,
            .stage1_name = cfg->stage1_name,
            .max_actions = cfg->max_actions,
            .probe_interval_usec = cfg->probe_interval_usec,
            .sandbox_ready_timeout_usec = cfg->sandbox_ready_timeout_usec,
            .rkt_timeout_usec = cfg->rkt_timeout_usec,
        };
        r = rkl_reconciler_new(&rc, d->cache, &d->reconciler, reterr);
        if (r < 0)
                return r;

        d->api_cfg = (rkl_api_config){
            .listen_path = cfg->listen_path,
            .version = RKL_VERSION,
            .rkt_path = cfg->rkt_path,
            .rkt_data_dir = cfg->rkt_data_dir,
            .state_dir = cfg->state_dir,
            .db_path = d->db_path, /* each API thread opens its own connection */
            .store_opts = &d->store_opts,
            .systemd_bus = cfg->systemd_bus,
            .n_threads = cfg->api_threads,
            .socket_gid = cfg->socket_gid,
            .images = d->images,
            .logs = d->logs,
            .stats = d->stats,
        };
        /* Binds the socket now, so that an unusable path fails before anything starts. */
        r = rkl_api_server_new(&d->api_cfg, d->cache, d->reconciler, &d->server, reterr);
        if (r < 0)
                return r;
        d->t_new = rkl_now_usec(CLOCK_MONOTONIC);

        *ret = TAKE_PTR(d);
        return 0;
}

int rkl_daemon_start(rkl_daemon *d, rkl_error *reterr)
{
        int k = pthread_create(&d->check_thread, NULL, check_main, d);
        if (k != 0)
                return rkl_error_set(reterr, -k, "cannot start the store check: %s", strerror(k));
        (void)pthread_setname_np(d->check_thread, "store-check");
        d->checking = true;
        /* The reconciler probes the machine and lists images while the server answers:
         * Status, Version and image reads wait for that first look on their own. */
        int r = rkl_reconciler_start(d->reconciler, reterr);
        if (r < 0)
                return r;
        r = rkl_api_server_start(d->server, reterr);
        if (r < 0)
                return r;
        uint64_t t_end = rkl_now_usec(CLOCK_MONOTONIC);
        rkl_log_info("serving %.1f ms after start: store %.1f, cache %.1f, server setup %.1f, "
                     "threads %.1f",
                     ms_between(d->t_begin, t_end), ms_between(d->t_begin, d->t_store),
                     ms_between(d->t_store, d->t_cache), ms_between(d->t_cache, d->t_new),
                     ms_between(d->t_new, t_end));
        return 0;
}

void rkl_daemon_stop(rkl_daemon *d)
{
        rkl_api_server_shutdown(d->server, SHUTDOWN_GRACE_MS);
        rkl_reconciler_stop(d->reconciler);
        if (d->checking) {
                (void)pthread_join(d->check_thread, NULL);
                d->checking = false;
        }
}

bool rkl_daemon_failed(rkl_daemon *d)
{
        return atomic_load(&d->failed);
}

rkl_daemon *rkl_daemon_free(rkl_daemon *d)
{
        if (!d)
                return NULL;
        /* The server first: its handlers read the cache the reconciler writes; then the
         * reconciler, whose thread lists images. */
        d->server = rkl_api_server_free(d->server);
        d->reconciler = rkl_reconciler_free(d->reconciler);
        d->logs = rkl_logs_free(d->logs);
        d->stats = rkl_stats_free(d->stats);
        d->images = rkl_images_free(d->images);
        d->cache = rkl_cache_free(d->cache);
        if (d->checking)
                (void)pthread_join(d->check_thread, NULL);
        d->gate = rkl_store_gate_free(d->gate);
        free(d->db_path);
        free(d);
        return NULL;
}
