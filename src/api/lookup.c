#include "lookup.h"

#include "base/crash.h"
#include "base/utf8.h"
#include "store/cache.h"
#include "reconciler/reconciler.h"
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

int rkl_api_container_lookup(rkl_api_ctx *ctx, const char *field, const char *given,
                             rkl_container_view **ret, rkl_error *reterr)
{
        rkl_container_view *v = NULL;
        if (isempty(given))
                return rkl_error_set(reterr, -EINVAL, "%s: required", field);
        int r = rkl_cache_container_resolve(ctx->cache, given, &v);
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

int rkl_api_container_resolve(rkl_api_ctx *ctx, const char *field, const char *given,
                              char ret[static RKL_ID_LEN + 1], rkl_error *reterr)
{
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *v = NULL;
        int r = rkl_api_container_lookup(ctx, field, given, &v, reterr);
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

void rkl_api_kick(rkl_api_ctx *ctx)
{
        /* Committed, not yet answered: the caller will retry, and must find it done. */
        rkl_crash_point("api-committed");
        if (ctx->reconciler)
                rkl_reconciler_kick(ctx->reconciler);
}
