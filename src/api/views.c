#include "views.h"

#include <stdatomic.h>

#include "page.h"
#include "pb.h"
#include "base/alloc.h"
#include "base/banned.h"

/* The views a List or Stream took, held until its answer is made. */
typedef struct listing {
        const rkl_api_views_kind *kind;
        union {
                rkl_pod_view **pods;
                rkl_container_view **containers;
        };
        size_t n;
} listing;

static int listing_take(rkl_api_ctx *ctx, const rkl_api_views_kind *k, const rkl_view_filter *f,
                        listing *ret, rkl_error *reterr)
{
        *ret = (listing){.kind = k};
        int r = k->pods ? rkl_cache_pod_list(ctx->cache, f, &ret->pods, &ret->n)
                        : rkl_cache_container_list(ctx->cache, f, &ret->containers, &ret->n);
        if (r < 0)
                return rkl_error_set(reterr, r, "list %s: %s", k->noun, strerror(-r));
        return 0;
}

static void listing_release(listing *l)
{
        if (!l->kind)
                return;
        if (l->kind->pods)
                rkl_pod_views_unref(l->pods, l->n);
        else
                rkl_container_views_unref(l->containers, l->n);
}

/* View i, and its memo slot in *ret_memo. */
static const void *listing_view(const listing *l, size_t i, _Atomic(rkl_blob *) **ret_memo)
{
        if (l->kind->pods) {
                *ret_memo = &l->pods[i]->memo;
                return l->pods[i];
        }
        *ret_memo = &l->containers[i]->memo;
        return l->containers[i];
}

/* The whole item, encoded once per view. */
static const rkl_blob *listing_wire(const listing *l, size_t i)
{
        _Atomic(rkl_blob *) *slot;
        const void *v = listing_view(l, i, &slot);
        const rkl_blob *b = atomic_load(slot);
        if (b)
                return b;
        _cleanup_(rkl_arena_freep) rkl_arena *a = rkl_arena_new();
        return rkl_api_pb_wire(slot, l->kind->item(a, v, 0));
}

/* An item trimmed to fit a List's answer: made for that answer only. */
static const rkl_blob *listing_trimmed(void *userdata, size_t i, unsigned level, rkl_arena *a)
{
        const listing *l = userdata;
        _Atomic(rkl_blob *) *slot;
        const void *v = listing_view(l, i, &slot);
        return rkl_api_pb_blob(a, l->kind->item(a, v, level));
}

int rkl_api_views_list(rkl_api_ctx *ctx, const rkl_api_views_kind *k, const rkl_view_filter *f,
                       rkl_error *reterr)
{
        _cleanup_(listing_release) listing l = {0};
        int r = listing_take(ctx, k, f, &l, reterr);
        if (r < 0)
                return r;
        const rkl_blob **items = rkl_arena_newa(const rkl_blob *, ctx->arena, l.n);
        for (size_t i = 0; i < l.n; i++)
                items[i] = listing_wire(&l, i);
        return rkl_api_pb_raw_repeated_fit(ctx, k->list_field, items, l.n, listing_trimmed, &l,
                                           k->method, k->noun, k->last_warned, reterr);
}

static const rkl_blob *listing_page_item(void *userdata, size_t i, rkl_arena *a, rkl_error *reterr)
{
        return listing_wire(userdata, i);
}

static void listing_free(void *userdata)
{
        listing_release(userdata);
        free(userdata);
}

int rkl_api_views_stream(rkl_api_ctx *ctx, const rkl_api_views_kind *k, const rkl_view_filter *f,
                         rkl_error *reterr)
{
        listing *l = rkl_xnew0(listing, 1);
        int r = listing_take(ctx, k, f, l, reterr);
        if (r < 0) {
                listing_free(l);
                return r;
        }
        rkl_api_page_list pages = {.field = k->stream_field,
                                   .n = l->n,
                                   .item = listing_page_item,
                                   .userdata = l,
                                   .free = listing_free};
        return rkl_api_page_stream(ctx, &pages);
}
