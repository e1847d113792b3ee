/* ListPodSandbox and ListContainers, and their streaming twins StreamPodSandboxes and
 * StreamContainers, written once: each takes references to the cached views its filter
 * selects and answers with one item per view, encoded once per view (kept in its memo
 * slot), the List trimmed to fit a client (pb.h), the Stream in pages (page.h). What differs
 * between sandboxes and containers is a kind. */
#pragma once

#include "api.h"
#include "store/cache.h"

typedef struct rkl_api_views_kind {
        bool pods;          /* sandboxes (rkl_pod_view), else containers (rkl_container_view) */
        const char *method; /* the List, for its warnings: "ListContainers" */
        const char *noun;   /* "containers", for messages */
        uint32_t list_field, stream_field; /* the list's field in the List's and the Stream's
                                            * responses */
        /* The view as an item, at a trim level (pb.h; 0: whole), in a; its strings may point
         * into the view, which is held while the item is packed. */
        const ProtobufCMessage *(*item)(rkl_arena *a, const void *view, unsigned level);
        _Atomic uint64_t *last_warned; /* the List's warnings about trimmed answers (pb.h) */
} rkl_api_views_kind;

/* The List: one message whose only field is the list. */
int rkl_api_views_list(rkl_api_ctx *ctx, const rkl_api_views_kind *k, const rkl_view_filter *f,
                       rkl_error *reterr);
/* The Stream: the list as the List takes it, now, sent in pages (returns
 * RKL_API_STREAMING). */
int rkl_api_views_stream(rkl_api_ctx *ctx, const rkl_api_views_kind *k, const rkl_view_filter *f,
                         rkl_error *reterr);
