/* What every lifecycle handler does around its one store transaction: find the object the
 * client named, and once the transaction has committed, show the new record in the cache
 * (so that the next List or Status call sees it) and wake the reconciler. */
#pragma once

#include "api.h"
#include "base/model.h"

typedef struct rkl_pod_view rkl_pod_view;
typedef struct rkl_ctr_view rkl_ctr_view;
typedef struct rkl_pod_record rkl_pod_record;
typedef struct rkl_container_record rkl_container_record;

/* The cached view of the object named by full ID or unique prefix (given, from the request
 * field named field): -EINVAL when empty, -ENOENT when nothing matches, -ENOTUNIQ when the
 * prefix is ambiguous. Reads only the cache. */
int rkl_api_pod_lookup(rkl_api_ctx *ctx, const char *field, const char *given, rkl_pod_view **ret,
                       rkl_error *reterr);
int rkl_api_ctr_lookup(rkl_api_ctx *ctx, const char *field, const char *given, rkl_ctr_view **ret,
                       rkl_error *reterr);

/* The full ID for a write. Like the lookups, except that a well-formed full ID the cache
 * does not know is returned as is, so that the store has the last word. */
int rkl_api_pod_resolve(rkl_api_ctx *ctx, const char *field, const char *given,
                        char ret[static RKL_ID_LEN + 1], rkl_error *reterr);
int rkl_api_ctr_resolve(rkl_api_ctx *ctx, const char *field, const char *given,
                        char ret[static RKL_ID_LEN + 1], rkl_error *reterr);

/* After a commit: re-read the object from the store and put its new view in the cache (an
 * object deleted meanwhile is tombstoned). A failure here cannot undo the commit, so it is
 * logged, not returned: the reconciler's next pass republishes. */
void rkl_api_publish_pod(rkl_api_ctx *ctx, const char *pod_id);
/* All the sandbox's containers (after StopPodSandbox). */
void rkl_api_publish_pod_ctrs(rkl_api_ctx *ctx, const char *pod_id);
void rkl_api_publish_ctr(rkl_api_ctx *ctx, const char *ctr_id);
/* The same with the record the write handed back (rkl_store_*(..., &rec, ...)): taken over,
 * nothing is read again. */
void rkl_api_publish_pod_record(rkl_api_ctx *ctx, rkl_pod_record *rec);
void rkl_api_publish_ctr_record(rkl_api_ctx *ctx, rkl_container_record *rec);

/* After a delete: tombstones at the store's generation, so that a put racing from another
 * thread with an older record cannot bring the object back. A sandbox takes its
 * containers with it. */
void rkl_api_forget_pod(rkl_api_ctx *ctx, const char *pod_id);
void rkl_api_forget_ctr(rkl_api_ctx *ctx, const char *ctr_id);

/* Wakes the reconciler (if there is one: unit tests run without). */
void rkl_api_kick(rkl_api_ctx *ctx);

/* A client string fit for an error message: bounded, valid UTF-8, in the arena. */
const char *rkl_api_echo(rkl_api_ctx *ctx, const char *given);
