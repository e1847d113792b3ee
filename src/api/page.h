/* The streaming lists (StreamPodSandboxes, StreamContainers, StreamContainerStats,
 * StreamPodSandboxStats, StreamImages: kubelet's CRIListStreaming): a list answered as a
 * server stream of pages, each its own message made only of the list's repeated field, so
 * that a list of any length fits what a client takes (16 MiB a message for kubelet). The
 * list is taken whole when the call arrives, as the unary List takes it; its items are
 * encoded page by page, as each page is sent. */
#pragma once

#include "api.h"
#include "store/cache.h"

/* A page ends before the item that would take it past RKL_API_PAGE_BYTES, or at
 * RKL_API_PAGE_ITEMS items; an item larger than a page goes alone. An empty list is one
 * empty page, so that a client always gets an answer. */
#define RKL_API_PAGE_BYTES (1024 * 1024)
#define RKL_API_PAGE_ITEMS 512

/* Item i of the list, encoded as a message of the item's type: in a (the page's arena,
 * freed once the page is encoded), or kept elsewhere for longer (a view's memo). NULL with
 * reterr set: the stream ends with that error. */
typedef const rkl_blob *(*rkl_api_page_item_fn)(void *userdata, size_t i, rkl_arena *a,
                                                rkl_error *reterr);

typedef struct rkl_api_page_list {
        uint32_t field; /* the number of the repeated field in the stream's response */
        size_t n;       /* items */
        rkl_api_page_item_fn item;
        void *userdata;
        void (*free)(void *userdata); /* when the stream ends (may be NULL) */
        size_t max_bytes, max_items;  /* 0: RKL_API_PAGE_BYTES, RKL_API_PAGE_ITEMS */
} rkl_api_page_list;

/* Answers the call with the list in pages (api.h, rkl_api_stream()): returns
 * RKL_API_STREAMING. The list's userdata is the stream's from now on. */
int rkl_api_page_stream(rkl_api_ctx *ctx, const rkl_api_page_list *list);

/* m packed into a blob in a: an item made for one page. */
const rkl_blob *rkl_api_page_pack(rkl_arena *a, const ProtobufCMessage *m);
