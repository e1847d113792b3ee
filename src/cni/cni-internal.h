/* What the CNI module's files share. */
#pragma once

#include "cni.h"
#include "base/json.h"

struct rkl_cni_config {
        json_object *list; /* {"cniVersion", "name", "plugins": [...], ...} */
        char *source;
        const char *name;    /* in list */
        const char *version; /* a static string */
        char *json, *types;
        bool disable_check;
};

/* Whether the supported version v is min or later. */
bool rkl_cni__version_at_least(const char *v, const char *min);

/* Runs one plugin: command ("ADD", "CHECK", "DEL") with conf on its stdin. On success,
 * ret_out (may be NULL) gets what it wrote on stdout. A failure's message names the plugin
 * and the command and says why: its CNI error's msg, details and code, or its exit status
 * and the end of its stderr, or the deadline. */
int rkl_cni__plugin_run(const rkl_cni_exec *x, const rkl_cni_runtime *rt, const char *command,
                        const char *type, json_object *conf, char **ret_out, rkl_error *reterr);
