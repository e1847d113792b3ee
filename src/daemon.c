#include "daemon.h"

#include <sys/stat.h>

#include "api/server.h"
#include "base/alloc.h"
#include "base/fileio.h"
#include "base/log.h"
#include "reconciler/cache.h"
#include "reconciler/reconciler.h"
#include "base/banned.h"

#define SHUTDOWN_GRACE_MS 5000

struct rkl_daemon {
        rkl_daemon_config cfg;
        rkl_api_config api_cfg;
        rkl_cache *cache;
        rkl_reconciler *reconciler;
        rkl_api_server *server;
};

int rkl_daemon_new(const rkl_daemon_config *cfg, rkl_daemon **ret, rkl_error *reterr)
{
        _cleanup_(rkl_daemon_freep) rkl_daemon *d = rkl_xnew0(rkl_daemon, 1);
        int r;

        d->cfg = *cfg;
        r = rkl_mkdir_p(cfg->state_dir, 0700);
        if (r < 0)
                return rkl_error_set(reterr, r, "cannot create state dir '%s': %s", cfg->state_dir,
                                     strerror(-r));

        d->cache = rkl_cache_new();
        rkl_reconciler_config rc = {
            .rkt_path = cfg->rkt_path,
            .rkt_data_dir = cfg->rkt_data_dir,
            .systemd_bus = cfg->systemd_bus,
            .probe_interval_usec = cfg->probe_interval_usec,
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
            .systemd_bus = cfg->systemd_bus,
            .n_threads = cfg->api_threads,
            .socket_gid = cfg->socket_gid,
        };
        /* Binds the socket now, so that an unusable path fails before anything starts. */
        r = rkl_api_server_new(&d->api_cfg, d->cache, &d->server, reterr);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(d);
        return 0;
}

int rkl_daemon_start(rkl_daemon *d, rkl_error *reterr)
{
        int r = rkl_reconciler_start(d->reconciler, reterr);
        if (r < 0)
                return r;
        return rkl_api_server_start(d->server, reterr);
}

void rkl_daemon_stop(rkl_daemon *d)
{
        rkl_api_server_shutdown(d->server, SHUTDOWN_GRACE_MS);
        rkl_reconciler_stop(d->reconciler);
}

rkl_daemon *rkl_daemon_free(rkl_daemon *d)
{
        if (!d)
                return NULL;
        /* The server first: its handlers read the cache the reconciler writes. */
        d->server = rkl_api_server_free(d->server);
        d->reconciler = rkl_reconciler_free(d->reconciler);
        d->cache = rkl_cache_free(d->cache);
        free(d);
        return NULL;
}
