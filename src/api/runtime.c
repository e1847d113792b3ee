#include "runtime.h"

#include <json-c/json.h>

#include "base/config.h"
#include "base/utf8.h"
#include "store/cache.h"
#include "base/banned.h"

#define CRI_API_VERSION "v1"
/* VersionResponse.version is the version of the kubelet runtime API (containerd and
 * CRI-O answer "0.1.0"). */
#define KUBELET_API_VERSION "0.1.0"

static char *outstr(rkl_arena *a, const char *s)
{
        return rkl_utf8_sanitize(rkl_arena_strdup(a, s ? s : ""));
}

static void wait_probed(void *cache)
{
        (void)rkl_cache_wait_health(cache, RKL_API_FIRST_LOOK_USEC);
}

/* Right after a start, the first probe of rkt and systemd may not have finished: what
 * Status says waits for it (any other call is answered meanwhile). */
static bool wait_for_probe(rkl_api_ctx *ctx)
{
        return !ctx->late && !rkl_cache_health_known(ctx->cache);
}

int rkl_api_version(rkl_api_ctx *ctx, const Runtime__V1__VersionRequest *req,
                    Runtime__V1__VersionResponse *resp, rkl_error *reterr)
{
        rkl_health h = {0};

        /* No wait for the first probe: kubelet asks Version to see that the runtime is up
         * and speaks v1. Until rkt has been probed its version is left out, as it is while
         * rkt is unusable. */
        rkl_cache_get_health(ctx->cache, &h);
        resp->version = (char *)KUBELET_API_VERSION;
        resp->runtime_name = (char *)"rktlet";
        resp->runtime_api_version = (char *)CRI_API_VERSION;
        /* rkt's version rides along as semver build metadata, e.g. "0.1.0+rkt.1.30.0". */
        if (h.rkt_ok && h.rkt_version)
                resp->runtime_version =
                    outstr(ctx->arena, rkl_arena_printf(ctx->arena, "%s+rkt.%s", ctx->cfg->version,
                                                        h.rkt_version));
        else
                resp->runtime_version = outstr(ctx->arena, ctx->cfg->version);
        rkl_health_done(&h);
        return 0;
}

static Runtime__V1__RuntimeCondition *condition(rkl_arena *a, const char *type, bool ok,
                                                const char *reason, const char *message)
{
        Runtime__V1__RuntimeCondition *c = rkl_arena_newa(Runtime__V1__RuntimeCondition, a, 1);
        runtime__v1__runtime_condition__init(c);
        c->type = (char *)type;
        c->status = ok;
        if (!ok) {
                c->reason = outstr(a, reason);
                c->message = outstr(a, message);
        }
        return c;
}

static void info_add(rkl_arena *a, Runtime__V1__StatusResponse *resp, const char *key,
                     json_object *value)
{
        Runtime__V1__StatusResponse__InfoEntry *e =
            rkl_arena_newa(Runtime__V1__StatusResponse__InfoEntry, a, 1);
        runtime__v1__status_response__info_entry__init(e);
        e->key = (char *)key;
        e->value = outstr(a, json_object_to_json_string_ext(
                                 value, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(value);
        resp->info[resp->n_info++] = e;
}

static json_object *json_str(const char *s)
{
        return s ? json_object_new_string(s) : NULL;
}

int rkl_api_status(rkl_api_ctx *ctx, const Runtime__V1__StatusRequest *req,
                   Runtime__V1__StatusResponse *resp, rkl_error *reterr)
{
        rkl_arena *a = ctx->arena;
        rkl_health h = {0};
        const char *reason = NULL, *message = NULL;

        if (wait_for_probe(ctx))
                return rkl_api_defer_until(ctx, RKL_API_POOL_SLOW, wait_probed, ctx->cache);
        rkl_cache_get_health(ctx->cache, &h);
        if (h.probed_ns == 0) {
                reason = "NotProbedYet";
                message = "rkt and systemd have not been probed yet since rktlet started";
        } else if (!h.rkt_ok) {
                reason = "RktUnavailable";
                message = h.rkt_detail;
        } else if (!h.rkt_patched) {
                /* It would run pods, then lose log lines or break volumes: say so now. */
                reason = "RktUnpatched";
                message = h.rkt_patches;
        } else if (!h.systemd_ok) {
                reason = "SystemdUnreachable";
                message = h.systemd_detail;
        }

        Runtime__V1__RuntimeStatus *st = rkl_arena_newa(Runtime__V1__RuntimeStatus, a, 1);
        runtime__v1__runtime_status__init(st);
        st->conditions = rkl_arena_newa(Runtime__V1__RuntimeCondition *, a, 2);
        st->conditions[st->n_conditions++] = condition(
            a, "RuntimeReady", h.rkt_ok && h.rkt_patched && h.systemd_ok, reason, message);
        /* With CNI: ready once the configuration directory holds a usable network; with
         * rkt's own networking (--net): as ready as rkt is. */
        st->conditions[st->n_conditions++] =
            h.probed_ns == 0 ? condition(a, "NetworkReady", false, reason, message)
                             : condition(a, "NetworkReady", h.net_ok, h.net_reason, h.net_detail);
        resp->status = st;

        if (req->verbose) {
                json_object *o;
                resp->info = rkl_arena_newa(Runtime__V1__StatusResponse__InfoEntry *, a, 4);

                o = json_object_new_object();
                json_object_object_add(o, "listen", json_str(ctx->cfg->config->listen_path));
                json_object_object_add(o, "stateDir", json_str(ctx->cfg->config->state_dir));
                json_object_object_add(o, "rktPath", json_str(ctx->cfg->config->rkt_path));
                json_object_object_add(o, "rktDataDir", json_str(ctx->cfg->config->rkt_data_dir));
                json_object_object_add(o, "systemdBus",
                                       json_str(ctx->cfg->config->systemd_bus
                                                    ? ctx->cfg->config->systemd_bus
                                                    : "system"));
                json_object_object_add(o, "version", json_str(ctx->cfg->version));
                info_add(a, resp, "config", o);

                o = json_object_new_object();
                json_object_object_add(o, "usable", json_object_new_boolean(h.rkt_ok));
                json_object_object_add(o, "version", json_str(h.rkt_version));
                json_object_object_add(o, "detail", json_str(h.rkt_detail));
                json_object_object_add(o, "patched", json_object_new_boolean(h.rkt_patched));
                json_object_object_add(o, "patches", json_str(h.rkt_patches));
                json_object_object_add(o, "probedAt", json_object_new_int64(h.probed_ns));
                info_add(a, resp, "rkt", o);

                o = json_object_new_object();
                json_object_object_add(o, "reachable", json_object_new_boolean(h.systemd_ok));
                json_object_object_add(o, "version", json_str(h.systemd_version));
                json_object_object_add(o, "detail", json_str(h.systemd_detail));
                info_add(a, resp, "systemd", o);

                o = json_object_new_object();
                json_object_object_add(o, "ready", json_object_new_boolean(h.net_ok));
                json_object_object_add(o, "config", json_str(h.net_config));
                json_object_object_add(o, "detail", json_str(h.net_detail));
                info_add(a, resp, "network", o);
        }
        rkl_health_done(&h);
        return 0;
}

int rkl_api_runtime_config(rkl_api_ctx *ctx, const Runtime__V1__RuntimeConfigRequest *req,
                           Runtime__V1__RuntimeConfigResponse *resp, rkl_error *reterr)
{
        /* Pods run in transient systemd units placed in kubelet's slices: the systemd
         * cgroup driver is the only one rktlet supports (KEP-4033). */
        Runtime__V1__LinuxRuntimeConfiguration *l =
            rkl_arena_newa(Runtime__V1__LinuxRuntimeConfiguration, ctx->arena, 1);
        runtime__v1__linux_runtime_configuration__init(l);
        l->cgroup_driver = RUNTIME__V1__CGROUP_DRIVER__SYSTEMD;
        resp->linux = l;
        return 0;
}
