/* What every lifecycle handler does around its one write (store.h): find the object the
 * client named in the cache, and once the write has committed, wake the reconciler. */
#pragma once

#include "api.h"
#include "base/model.h"

typedef struct rkl_pod_view rkl_pod_view;
typedef struct rkl_container_view rkl_container_view;

/* The cached view of the object named by full ID or unique prefix (given, from the request
 * field named field): -EINVAL when empty, -ENOENT when nothing matches, -ENOTUNIQ when the
 * prefix is ambiguous. Reads only the cache. */
int rkl_api_pod_lookup(rkl_api_ctx *ctx, const char *field, const char *given, rkl_pod_view **ret,
                       rkl_error *reterr);
int rkl_api_container_lookup(rkl_api_ctx *ctx, const char *field, const char *given,
                             rkl_container_view **ret, rkl_error *reterr);

/* The full ID for a write. Like the lookups, except that a well-formed full ID the cache
 * does not know is returned as is, so that the store has the last word. */
int rkl_api_pod_resolve(rkl_api_ctx *ctx, const char *field, const char *given,
                        char ret[static RKL_ID_LEN + 1], rkl_error *reterr);
int rkl_api_container_resolve(rkl_api_ctx *ctx, const char *field, const char *given,
                              char ret[static RKL_ID_LEN + 1], rkl_error *reterr);

/* For the calls CRI lets succeed on an object that is gone (stops and removals): r, the
 * result of a resolve or a write, as 1 when it succeeded, 0 with reterr cleared for
 * -ENOENT, and as it is otherwise. */
int rkl_api_unless_gone(int r, rkl_error *reterr);

/* Wakes the reconciler (if there is one: unit tests run without). */
void rkl_api_kick(rkl_api_ctx *ctx);

/* A client string fit for an error message: bounded, valid UTF-8, in the arena. */
const char *rkl_api_echo(rkl_api_ctx *ctx, const char *given);
