#include "config.h"

#include <stdlib.h>

#include "alloc.h"
#include "strv.h"
#include "banned.h"

void rkl_config_init(rkl_config *c)
{
        *c = (rkl_config){
            .listen_path = rkl_xstrdup(RKL_CONFIG_DEFAULT_LISTEN_PATH),
            .socket_gid = (gid_t)-1,
            .state_dir = rkl_xstrdup(RKL_CONFIG_DEFAULT_STATE_DIR),
            .rkt_data_dir = rkl_xstrdup(RKL_CONFIG_DEFAULT_RKT_DATA_DIR),
            .cni_conf_dir = rkl_xstrdup(RKL_CONFIG_DEFAULT_CNI_CONF_DIR),
            .stream_address = rkl_xstrdup(RKL_CONFIG_DEFAULT_STREAM_ADDRESS),
        };
        rkl_config_fill_defaults(c);
}

#define DEFAULT(field, value)                                                                      \
        do {                                                                                       \
                if (!c->field)                                                                     \
                        c->field = (value);                                                        \
        } while (0)

void rkl_config_fill_defaults(rkl_config *c)
{
        DEFAULT(api_threads, RKL_CONFIG_DEFAULT_API_THREADS);
        DEFAULT(max_actions, RKL_CONFIG_DEFAULT_MAX_ACTIONS);
        DEFAULT(cni_timeout_usec, RKL_CONFIG_DEFAULT_CNI_TIMEOUT_USEC);
        DEFAULT(probe_interval_usec, RKL_CONFIG_DEFAULT_PROBE_INTERVAL_USEC);
        DEFAULT(stats_interval_usec, RKL_CONFIG_DEFAULT_STATS_INTERVAL_USEC);
        DEFAULT(sandbox_ready_timeout_usec, RKL_CONFIG_DEFAULT_SANDBOX_READY_TIMEOUT_USEC);
        DEFAULT(rkt_timeout_usec, RKL_CONFIG_DEFAULT_RKT_TIMEOUT_USEC);
}

void rkl_config_done(rkl_config *c)
{
        free(c->listen_path);
        free(c->state_dir);
        free(c->rkt_path);
        free(c->rkt_data_dir);
        free(c->systemd_bus);
        free(c->net);
        free(c->cni_conf_dir);
        rkl_strv_free(c->cni_bin_dirs);
        free(c->stage1_name);
        rkl_strv_free(c->registry_mirrors);
        free(c->metrics_address);
        free(c->stream_address);
        free(c->stream_netns);
        *c = (rkl_config){0};
}
