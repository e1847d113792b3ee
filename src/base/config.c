#include "config.h"

#include <stdlib.h>

#include "strv.h"
#include "banned.h"

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
