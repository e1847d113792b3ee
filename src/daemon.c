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
#include "base/config.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/time-util.h"
#include "store/cache.h"
#include "store/store.h"
#include "images/images.h"
#include "logs/logs.h"
#include "stats/stats.h"
#include "reconciler/reconciler.h"
#include "store/db.h"
#include "metrics/metrics.h"
#include "stream/stream.h"
#include "base/banned.h"

#define SHUTDOWN_GRACE_MS 5000

struct rkl_daemon {
        const rkl_config *cfg; /* the caller's */
        char *db_path;
        rkl_db_options store_opts;
        rkl_api_config api_cfg;
        rkl_cache *cache;
        rkl_images *images;
        rkl_logs *logs;
        rkl_stats *stats;
        rkl_reconciler *reconciler;
        rkl_api_server *server;
        rkl_metrics_server *metrics; /* NULL: no --metrics-address */
        rkl_stream_server *stream;
        rkl_db_gate *gate; /* writes wait for the check of the file */
        pthread_t check_thread;
        bool checking;
        atomic_bool failed;
        /* Startup phases, monotonic usec, logged once serving: where a slow start went. */
        uint64_t t_begin, t_store, t_cache, t_new;
};

/* Scrape time: objects by state, counted on views copied out of the cache (its lock is held
 * only to take references), and the reconciler's atomics. */
typedef struct census {
        size_t pods[_RKL_POD_PHASE_MAX], containers[_RKL_CONTAINER_PHASE_MAX];
        size_t n_pods, n_containers, pods_unconverged, containers_unconverged;
} census;

static bool pod_converged(const rkl_pod_record *p)
{
        if (p->desired == RKL_POD_DESIRED_READY)
                return p->observed.phase == RKL_POD_PHASE_RUNNING;
        return p->observed.phase == RKL_POD_PHASE_STOPPED ||
               p->observed.phase == RKL_POD_PHASE_FAILED;
}

static bool container_converged(const rkl_container_record *c)
{
        switch (c->desired) {
        case RKL_CONTAINER_DESIRED_CREATED:
                return c->observed.phase == RKL_CONTAINER_PHASE_CREATED;
        case RKL_CONTAINER_DESIRED_RUNNING:
                return c->observed.phase == RKL_CONTAINER_PHASE_RUNNING ||
                       c->observed.phase == RKL_CONTAINER_PHASE_EXITED;
        default:
                return c->observed.phase == RKL_CONTAINER_PHASE_EXITED ||
                       c->observed.phase == RKL_CONTAINER_PHASE_CREATED;
        }
}

static void census_take(rkl_daemon *d, census *ret)
{
        rkl_pod_view **pods;
        rkl_container_view **containers;
        size_t n_pods, n_containers;

        *ret = (census){0};
        rkl_cache_pod_list(d->cache, NULL, &pods, &n_pods);
        for (size_t i = 0; i < n_pods; i++) {
                const rkl_pod_record *p = pods[i]->rec;
                if (p->observed.phase >= 0 && p->observed.phase < _RKL_POD_PHASE_MAX)
                        ret->pods[p->observed.phase]++;
                ret->pods_unconverged += !pod_converged(p);
        }
        rkl_pod_views_unref(pods, n_pods);
        rkl_cache_container_list(d->cache, NULL, &containers, &n_containers);
        for (size_t i = 0; i < n_containers; i++) {
                const rkl_container_record *c = containers[i]->rec;
                if (c->observed.phase >= 0 && c->observed.phase < _RKL_CONTAINER_PHASE_MAX)
                        ret->containers[c->observed.phase]++;
                ret->containers_unconverged += !container_converged(c);
        }
        rkl_container_views_unref(containers, n_containers);
        ret->n_pods = n_pods;
        ret->n_containers = n_containers;
}

static void collect(rkl_metrics_buf *b, void *userdata)
{
        rkl_daemon *d = userdata;
        census c;
        rkl_reconciler_stats st;

        census_take(d, &c);
        rkl_reconciler_get_stats(d->reconciler, &st);
        rkl_metrics_gauge_header(b, "rktlet_pods", "pod sandboxes by observed phase");
        for (int p = 0; p < _RKL_POD_PHASE_MAX; p++)
                rkl_metrics_gauge_value(b, "rktlet_pods", "phase",
                                        rkl_pod_phase_to_string((rkl_pod_phase)p),
                                        (double)c.pods[p]);
        rkl_metrics_gauge_header(b, "rktlet_containers", "containers by observed phase");
        for (int p = 0; p < _RKL_CONTAINER_PHASE_MAX; p++)
                rkl_metrics_gauge_value(b, "rktlet_containers", "phase",
                                        rkl_container_phase_to_string((rkl_container_phase)p),
                                        (double)c.containers[p]);
        rkl_metrics_gauge_header(b, "rktlet_cache_objects",
                                 "records held in the status cache, by kind");
        rkl_metrics_gauge_value(b, "rktlet_cache_objects", "kind", "sandbox", (double)c.n_pods);
        rkl_metrics_gauge_value(b, "rktlet_cache_objects", "kind", "container",
                                (double)c.n_containers);
        rkl_metrics_gauge_header(b, "rktlet_reconcile_queue_depth",
                                 "objects whose observed state is not yet the desired one");
        rkl_metrics_gauge_value(b, "rktlet_reconcile_queue_depth", "kind", "sandbox",
                                (double)c.pods_unconverged);
        rkl_metrics_gauge_value(b, "rktlet_reconcile_queue_depth", "kind", "container",
                                (double)c.containers_unconverged);
        rkl_metrics_gauge_header(b, "rktlet_reconcile_lag_seconds",
                                 "age of the oldest change no reconcile pass has started on");
        rkl_metrics_gauge_value(b, "rktlet_reconcile_lag_seconds", NULL, NULL,
                                (double)st.lag_usec / USEC_PER_SEC);
        rkl_metrics_gauge_header(b, "rktlet_reconcile_actions_in_flight",
                                 "rkt actions the reconciler runs now");
        rkl_metrics_gauge_value(b, "rktlet_reconcile_actions_in_flight", NULL, NULL,
                                (double)st.in_flight);
        rkl_metrics_gauge_header(b, "rktlet_reconcile_passes", "reconcile passes since start");
        rkl_metrics_gauge_value(b, "rktlet_reconcile_passes", NULL, NULL, (double)st.passes);
}

void rkl_daemon_get_status(rkl_daemon *d, rkl_daemon_status *ret)
{
        census c;
        rkl_reconciler_stats st;

        census_take(d, &c);
        rkl_reconciler_get_stats(d->reconciler, &st);
        *ret = (rkl_daemon_status){
            .pods = c.n_pods,
            .pods_running = c.pods[RKL_POD_PHASE_RUNNING],
            .containers = c.n_containers,
            .containers_running = c.containers[RKL_CONTAINER_PHASE_RUNNING],
            .reconcile_lag_usec = st.lag_usec,
        };
}

static double ms_between(uint64_t a, uint64_t b)
{
        return (double)(b - a) / USEC_PER_MSEC;
}

/* PRAGMA quick_check reads the whole file: as long as loading the cache. It runs here,
 * on a connection of its own, while the daemon serves reads from the cache; writes wait
 * for it at the store's gate, and a damaged file stops the daemon before anything wrote to
 * it. */
static void *check_main(void *userdata)
{
        rkl_daemon *d = userdata;
        _cleanup_(rkl_db_closep) rkl_db *s = NULL;
        rkl_error err = RKL_ERROR_INIT;
        rkl_db_options o = d->store_opts;

        /* Second to serving: it only holds back writes, which are rare right after a
         * start, and the first answers need the two cores. */
        (void)setpriority(PRIO_PROCESS, (id_t)gettid(), 10);
        o.write_gate = NULL; /* it only reads */
        int r = rkl_db_open(d->db_path, &o, &s, &err);
        if (r >= 0)
                r = rkl_db_quick_check(s, &err);
        rkl_db_gate_open(d->gate, r, &err);
        if (r < 0) {
                rkl_log_error("%s", err.msg);
                atomic_store(&d->failed, true);
                (void)kill(getpid(), SIGTERM); /* main's signalfd: a normal shutdown */
        }
        return NULL;
}

/* Opens, checks and migrates the database before anything writes to it: a file that is
 * corrupt or newer than this binary stops the daemon here, untouched. The connection comes
 * back in *ret for the cache's load. */
static int open_store(rkl_daemon *d, rkl_db **ret, rkl_error *reterr)
{
        const char *state_dir = d->cfg->state_dir;
        int r = rkl_mkdir_p(state_dir, 0700);
        if (r < 0)
                return rkl_error_set(reterr, r, "cannot create state dir '%s': %s", state_dir,
                                     strerror(-r));
        d->db_path = rkl_xasprintf("%s/%s", state_dir, RKL_DB_FILE_NAME);
        d->gate = rkl_db_gate_new();
        d->store_opts = (rkl_db_options){
            .sync_full = d->cfg->sync_full, .defer_check = true, .write_gate = d->gate};
        r = rkl_db_open(d->db_path, &d->store_opts, ret, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "cannot open '%s'", d->db_path);
        /* Every later connection (one per thread) skips the look at the file done here. */
        d->store_opts.skip_check = true;
        return 0;
}

/* Every record becomes a view in the cache, so that List and Status answer right after a
 * restart, before the reconciler has looked at the machine. Takes db over. */
static int load_cache(rkl_daemon *d, rkl_db *db, rkl_error *reterr)
{
        _cleanup_(rkl_store_freep) rkl_store *loader = rkl_store_new(db, d->cache);
        size_t n_pods, n_containers;
        int r = rkl_store_load(loader, &n_pods, &n_containers, reterr);
        if (r < 0)
                return r;
        rkl_log_info("loaded %zu sandboxes and %zu containers from the store", n_pods,
                     n_containers);
        return 0;
}

static int new_images(rkl_daemon *d, rkl_error *reterr)
{
        rkl_images_config ic = {
            .rkt_path = d->cfg->rkt_path,
            .rkt_data_dir = d->cfg->rkt_data_dir,
            .state_dir = d->cfg->state_dir,
            .mirrors = d->cfg->registry_mirrors,
            /* image list, cat-manifest and rm are rkt commands too (pulls have their own) */
            .command_timeout_usec = d->cfg->rkt_timeout_usec,
        };
        return rkl_images_new(&ic, &d->images, reterr);
}

static int new_stats(rkl_daemon *d, rkl_error *reterr)
{
        /* cgroup v1 (legacy or hybrid) or v2, once: what the stats read and where the limits
         * go follow it. */
        _cleanup_close_ int root = open("/sys/fs/cgroup", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        rkl_stats_config sc = {
            .mode = root >= 0 ? rkl_stats_cgroup_mode_detect(root) : RKL_STATS_CGROUP_V2,
            .resolve = rkl_reconciler_stats_dirs,
        };
        int r = rkl_stats_new(&sc, &d->stats, reterr);
        if (r < 0)
                return r;
        uint64_t interval = d->cfg->stats_interval_usec;
        rkl_log_info("cgroup %s, stats every %.0f s", rkl_stats_cgroup_mode_to_string(sc.mode),
                     (double)(interval ? interval : RKL_CONFIG_DEFAULT_STATS_INTERVAL_USEC) /
                         USEC_PER_SEC);
        return 0;
}

static int new_reconciler(rkl_daemon *d, rkl_error *reterr)
{
        rkl_reconciler_config rc = {
            .config = d->cfg,
            .db_path = d->db_path, /* the thread opens its own connection */
            .store_opts = &d->store_opts,
            .images = d->images,
            .logs = d->logs,
            .stats = d->stats,
        };
        return rkl_reconciler_new(&rc, d->cache, &d->reconciler, reterr);
}

/* The streaming server before the API server, whose Exec URLs name its address. */
static int new_stream(rkl_daemon *d, rkl_error *reterr)
{
        rkl_stream_config sc = {
            .address = d->cfg->stream_address,
            .netns = d->cfg->stream_netns,
            .token_ttl_usec = d->cfg->stream_token_ttl_usec,
        };
        int r = rkl_stream_server_new(&sc, &d->stream, reterr);
        if (r < 0)
                return r;
        rkl_log_info("streaming on http://%s", rkl_stream_server_address(d->stream));
        return 0;
}

/* Binds the socket now, so that an unusable path fails before anything starts. */
static int new_api_server(rkl_daemon *d, rkl_error *reterr)
{
        d->api_cfg = (rkl_api_config){
            .config = d->cfg,
            .version = RKL_VERSION,
            .db_path = d->db_path, /* each API thread opens its own connection */
            .store_opts = &d->store_opts,
            .images = d->images,
            .logs = d->logs,
            .stats = d->stats,
            .stream = d->stream,
        };
        return rkl_api_server_new(&d->api_cfg, d->cache, d->reconciler, &d->server, reterr);
}

/* Listening before the CRI socket answers: a port in use fails here too, and a client that
 * sees the socket sees the metrics. */
static int new_metrics(rkl_daemon *d, rkl_error *reterr)
{
        const char *address = d->cfg->metrics_address;
        if (!address)
                return 0;
        rkl_metrics_set_collector(collect, d);
        int r = rkl_metrics_server_new(address, &d->metrics, reterr);
        if (r < 0)
                return r;
        rkl_log_info("metrics on http://%s/metrics", address);
        return 0;
}

static int new_logs(rkl_daemon *d, rkl_error *reterr)
{
        return rkl_logs_new(RKL_STRV(d->cfg->state_dir, d->cfg->rkt_data_dir), &d->logs, reterr);
}

/* The parts after the cache, in order: each may use those before it. */
static int (*const parts[])(rkl_daemon *d, rkl_error *reterr) = {
    new_images, new_logs, new_stats, new_reconciler, new_stream, new_api_server, new_metrics,
};

int rkl_daemon_new(const rkl_config *cfg, rkl_daemon **ret, rkl_error *reterr)
{
        _cleanup_(rkl_daemon_freep) rkl_daemon *d = rkl_xnew0(rkl_daemon, 1);
        rkl_db *db = NULL;
        int r;

        d->cfg = cfg;
        d->t_begin = rkl_now_usec(CLOCK_MONOTONIC);
        r = open_store(d, &db, reterr);
        if (r < 0)
                return r;
        d->t_store = rkl_now_usec(CLOCK_MONOTONIC);
        d->cache = rkl_cache_new();
        r = load_cache(d, db, reterr);
        if (r < 0)
                return r;
        d->t_cache = rkl_now_usec(CLOCK_MONOTONIC);
        for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
                r = parts[i](d, reterr);
                if (r < 0)
                        return r;
        }
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
        d->metrics = rkl_metrics_server_free(d->metrics);
        rkl_metrics_set_collector(NULL, NULL);
        rkl_api_server_shutdown(d->server, SHUTDOWN_GRACE_MS);
        /* Sessions end with their commands killed: nothing started by a client outlives
         * the daemon. */
        d->stream = rkl_stream_server_free(d->stream);
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
        d->metrics = rkl_metrics_server_free(d->metrics);
        rkl_metrics_set_collector(NULL, NULL);
        d->server = rkl_api_server_free(d->server);
        d->stream = rkl_stream_server_free(d->stream);
        d->reconciler = rkl_reconciler_free(d->reconciler);
        d->logs = rkl_logs_free(d->logs);
        d->stats = rkl_stats_free(d->stats);
        d->images = rkl_images_free(d->images);
        d->cache = rkl_cache_free(d->cache);
        if (d->checking)
                (void)pthread_join(d->check_thread, NULL);
        d->gate = rkl_db_gate_free(d->gate);
        free(d->db_path);
        free(d);
        return NULL;
}
