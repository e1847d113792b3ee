#include "publish.h"

#include "base/crash.h"
#include "base/log.h"
#include "base/utf8.h"
#include "state/cache.h"
#include "reconciler/reconciler.h"
#include "state/store.h"
#include "base/banned.h"

const char *rkl_api_echo(rkl_api_ctx *ctx, const char *given)
{
        /* An ID is 64 bytes: more is noise that could only bloat the message. */
        return rkl_utf8_sanitize(rkl_arena_strndup(ctx->arena, given ? given : "", 80));
}

static int lookup_failed(rkl_api_ctx *ctx, int r, const char *kind, const char *given,
                         rkl_error *reterr)
{
        if (r == -ENOTUNIQ)
                return rkl_error_set(reterr, r, "%s ID prefix '%s' is ambiguous: use more digits",
                                     kind, rkl_api_echo(ctx, given));
        return rkl_error_set(reterr, -ENOENT, "%s '%s' not found", kind, rkl_api_echo(ctx, given));
}

int rkl_api_pod_lookup(rkl_api_ctx *ctx, const char *field, const char *given, rkl_pod_view **ret,
                       rkl_error *reterr)
{
        rkl_pod_view *v = NULL;
        if (isempty(given))
                return rkl_error_set(reterr, -EINVAL, "%s: required", field);
        int r = rkl_cache_pod_resolve(ctx->cache, given, &v);
        if (r < 0)
                return lookup_failed(ctx, r, "sandbox", given, reterr);
        *ret = v;
        return 0;
}

int rkl_api_ctr_lookup(rkl_api_ctx *ctx, const char *field, const char *given, rkl_ctr_view **ret,
                       rkl_error *reterr)
{
        rkl_ctr_view *v = NULL;
        if (isempty(given))
                return rkl_error_set(reterr, -EINVAL, "%s: required", field);
        int r = rkl_cache_ctr_resolve(ctx->cache, given, &v);
        if (r < 0)
                return lookup_failed(ctx, r, "container", given, reterr);
        *ret = v;
        return 0;
}

int rkl_api_pod_resolve(rkl_api_ctx *ctx, const char *field, const char *given,
                        char ret[static RKL_ID_LEN + 1], rkl_error *reterr)
{
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = NULL;
        int r = rkl_api_pod_lookup(ctx, field, given, &v, reterr);
        if (r == -ENOENT && rkl_id_is_valid(given)) {
                rkl_error_clear(reterr);
                memcpy(ret, given, RKL_ID_LEN + 1);
                return 0;
        }
        if (r < 0)
                return r;
        memcpy(ret, v->rec->id, RKL_ID_LEN + 1);
        return 0;
}

int rkl_api_ctr_resolve(rkl_api_ctx *ctx, const char *field, const char *given,
                        char ret[static RKL_ID_LEN + 1], rkl_error *reterr)
{
        _cleanup_(rkl_ctr_view_unrefp) rkl_ctr_view *v = NULL;
        int r = rkl_api_ctr_lookup(ctx, field, given, &v, reterr);
        if (r == -ENOENT && rkl_id_is_valid(given)) {
                rkl_error_clear(reterr);
                memcpy(ret, given, RKL_ID_LEN + 1);
                return 0;
        }
        if (r < 0)
                return r;
        memcpy(ret, v->rec->id, RKL_ID_LEN + 1);
        return 0;
}

void rkl_api_publish_pod(rkl_api_ctx *ctx, const char *pod_id)
{
        rkl_error err = RKL_ERROR_INIT;
        int r = rkl_cache_publish_pod(ctx->cache, ctx->store, pod_id, &err);
        if (r == -ENOENT)
                rkl_api_forget_pod(ctx, pod_id); /* removed by another call meanwhile */
        else if (r < 0)
                rkl_log_warning("sandbox %s: cannot cache the committed change, ignoring: %s",
                                pod_id, err.msg);
}

void rkl_api_publish_pod_ctrs(rkl_api_ctx *ctx, const char *pod_id)
{
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *pod = rkl_cache_pod_get(ctx->cache, pod_id);
        const char *log_directory = pod ? pod->rec->spec.log_directory : NULL;
        rkl_error err = RKL_ERROR_INIT;
        const rkl_container_filter f = {.sandbox_id = pod_id};
        rkl_container_record **recs = NULL;
        size_t n = 0;

        int r = rkl_store_container_list(ctx->store, &f, &recs, &n, &err);
        if (r < 0) {
                rkl_log_warning("sandbox %s: cannot cache its containers' change, ignoring: %s",
                                pod_id, err.msg);
                return;
        }
        for (size_t i = 0; i < n; i++)
                rkl_cache_ctr_put(ctx->cache, rkl_ctr_view_new(TAKE_PTR(recs[i]), log_directory));
        rkl_container_record_array_free(recs, n);
}

static int publish_ctr(rkl_api_ctx *ctx, const char *ctr_id)
{
        rkl_error err = RKL_ERROR_INIT;
        int r = rkl_cache_publish_ctr(ctx->cache, ctx->store, ctr_id, &err);
        if (r == -ENOENT)
                rkl_api_forget_ctr(ctx, ctr_id); /* removed by another call meanwhile */
        else if (r < 0)
                rkl_log_warning("container %s: cannot cache the committed change, ignoring: %s",
                                ctr_id, err.msg);
        return r;
}

/* After a container's put: if its sandbox is being removed, RemovePodSandbox may have
 * listed the sandbox's containers before the put, and could not tombstone this one. Then
 * ask the store again. */
static void recheck_sandbox(rkl_api_ctx *ctx, const char *ctr_id, const char *sandbox_id)
{
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *pod =
            rkl_cache_pod_get(ctx->cache, sandbox_id);
        if (!pod)
                (void)publish_ctr(ctx, ctr_id);
}

void rkl_api_publish_ctr(rkl_api_ctx *ctx, const char *ctr_id)
{
        if (publish_ctr(ctx, ctr_id) < 0)
                return;
        _cleanup_(rkl_ctr_view_unrefp) rkl_ctr_view *v = rkl_cache_ctr_get(ctx->cache, ctr_id);
        if (v)
                recheck_sandbox(ctx, ctr_id, v->rec->sandbox_id);
}

void rkl_api_publish_ctr_record(rkl_api_ctx *ctx, rkl_container_record *rec)
{
        char id[RKL_ID_LEN + 1], sandbox_id[RKL_ID_LEN + 1];
        memcpy(id, rec->id, sizeof(id));
        memcpy(sandbox_id, rec->sandbox_id, sizeof(sandbox_id));
        {
                _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *pod =
                    rkl_cache_pod_get(ctx->cache, sandbox_id);
                rkl_cache_ctr_put(ctx->cache,
                                  rkl_ctr_view_new(rec, pod ? pod->rec->spec.log_directory : NULL));
        }
        recheck_sandbox(ctx, id, sandbox_id);
}

void rkl_api_publish_pod_record(rkl_api_ctx *ctx, rkl_pod_record *rec)
{
        rkl_cache_pod_put(ctx->cache, rkl_pod_view_new(rec));
}

void rkl_api_forget_pod(rkl_api_ctx *ctx, const char *pod_id)
{
        rkl_cache_publish_pod_deleted(ctx->cache, ctx->store, pod_id);
}

void rkl_api_forget_ctr(rkl_api_ctx *ctx, const char *ctr_id)
{
        rkl_cache_publish_ctr_deleted(ctx->cache, ctx->store, ctr_id);
}

void rkl_api_kick(rkl_api_ctx *ctx)
{
        /* Committed, not yet answered: the caller will retry, and must find it done. */
        rkl_crash_point("api-committed");
        if (ctx->reconciler)
                rkl_reconciler_kick(ctx->reconciler);
}
