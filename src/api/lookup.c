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

/* A lookup's outcome, r: the cache resolver's, or -EINVAL when nothing was given. */
static int looked_up(rkl_api_ctx *ctx, int r, const char *field, const char *kind,
                     const char *given, rkl_error *reterr)
{
        if (r == -EINVAL)
                return rkl_error_set(reterr, -EINVAL, "%s: required", field);
        if (r == -ENOTUNIQ)
                return rkl_error_set(reterr, r, "%s ID prefix '%s' is ambiguous: use more digits",
                                     kind, rkl_api_echo(ctx, given));
        if (r < 0)
                return rkl_error_set(reterr, -ENOENT, "%s '%s' not found", kind,
                                     rkl_api_echo(ctx, given));
        return 0;
}

int rkl_api_pod_lookup(rkl_api_ctx *ctx, const char *field, const char *given, rkl_pod_view **ret,
                       rkl_error *reterr)
{
        int r = isempty(given) ? -EINVAL : rkl_cache_pod_resolve(ctx->cache, given, ret);
        return looked_up(ctx, r, field, "sandbox", given, reterr);
}

int rkl_api_container_lookup(rkl_api_ctx *ctx, const char *field, const char *given,
                             rkl_container_view **ret, rkl_error *reterr)
{
        int r = isempty(given) ? -EINVAL : rkl_cache_container_resolve(ctx->cache, given, ret);
        return looked_up(ctx, r, field, "container", given, reterr);
}

/* A resolver's outcome: the ID of the view found (r, found), or given itself when the cache
 * does not know it but it is a well-formed full ID. */
static int resolved(int r, const char *given, const char *found, char ret[static RKL_ID_LEN + 1],
                    rkl_error *reterr)
{
        if (r == -ENOENT && rkl_id_is_valid(given)) {
                rkl_error_clear(reterr);
                found = given;
        } else if (r < 0)
                return r;
        memcpy(ret, found, RKL_ID_LEN + 1);
        return 0;
}

int rkl_api_pod_resolve(rkl_api_ctx *ctx, const char *field, const char *given,
                        char ret[static RKL_ID_LEN + 1], rkl_error *reterr)
{
        _cleanup_(rkl_pod_view_unrefp) rkl_pod_view *v = NULL;
        int r = rkl_api_pod_lookup(ctx, field, given, &v, reterr);
        return resolved(r, given, v ? v->rec->id : NULL, ret, reterr);
}

int rkl_api_container_resolve(rkl_api_ctx *ctx, const char *field, const char *given,
                              char ret[static RKL_ID_LEN + 1], rkl_error *reterr)
{
        _cleanup_(rkl_container_view_unrefp) rkl_container_view *v = NULL;
        int r = rkl_api_container_lookup(ctx, field, given, &v, reterr);
        return resolved(r, given, v ? v->rec->id : NULL, ret, reterr);
}

int rkl_api_unless_gone(int r, rkl_error *reterr)
{
        if (r == -ENOENT) {
                rkl_error_clear(reterr);
                return 0;
        }
        return r < 0 ? r : 1;
}

void rkl_api_kick(rkl_api_ctx *ctx)
{
        /* Committed, not yet answered: the caller will retry, and must find it done. */
        rkl_crash_point("api-committed");
        if (ctx->reconciler)
                rkl_reconciler_kick(ctx->reconciler);
}
