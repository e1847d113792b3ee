#include "page.h"

#include "pb.h"
#include "base/alloc.h"
#include "base/banned.h"

typedef struct pager {
        rkl_api_page_list list;
        size_t next;  /* the first item not yet sent */
        size_t pages; /* sent */
} pager;

static int pager_next(void *userdata, unsigned char **ret, size_t *ret_len, rkl_error *reterr)
{
        pager *p = userdata;
        const rkl_api_page_list *l = &p->list;

        if (p->next == l->n && p->pages > 0)
                return RKL_API_STREAM_END;

        _cleanup_(rkl_arena_freep) rkl_arena *a = rkl_arena_new();
        const rkl_blob **items = rkl_arena_newa(const rkl_blob *, a, l->max_items);
        size_t k = 0, bytes = 0;
        while (p->next + k < l->n && k < l->max_items) {
                const rkl_blob *b = l->item(l->userdata, p->next + k, a, reterr);
                if (!b)
                        return reterr->code < 0 ? reterr->code : -EIO;
                size_t e = rkl_api_pb_entry_size(l->field, b->len);
                if (k > 0 && bytes + e > l->max_bytes)
                        break; /* it begins the next page */
                items[k++] = b;
                bytes += e;
        }

        unsigned char *buf = rkl_xmalloc(bytes ? bytes : 1);
        (void)rkl_api_pb_entries_write(l->field, items, k, buf);
        p->next += k;
        p->pages++;
        *ret = buf;
        *ret_len = bytes;
        return RKL_API_STREAM_MESSAGE;
}

static void pager_done(void *userdata)
{
        pager *p = userdata;
        if (p->list.free)
                p->list.free(p->list.userdata);
        free(p);
}

static const rkl_api_stream_ops pager_ops = {.next = pager_next, .done = pager_done};

int rkl_api_page_stream(rkl_api_ctx *ctx, const rkl_api_page_list *list)
{
        pager *p = rkl_xnew0(pager, 1);
        p->list = *list;
        if (!p->list.max_bytes)
                p->list.max_bytes = RKL_API_PAGE_BYTES;
        if (!p->list.max_items)
                p->list.max_items = RKL_API_PAGE_ITEMS;
        return rkl_api_stream(ctx, &pager_ops, p);
}

const rkl_blob *rkl_api_page_pack(rkl_arena *a, const ProtobufCMessage *m)
{
        size_t n = protobuf_c_message_get_packed_size(m);
        rkl_blob *b = rkl_arena_alloc(a, sizeof(*b) + n);
        b->len = protobuf_c_message_pack(m, b->data);
        return b;
}
