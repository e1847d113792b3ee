/* The streaming lists' pages: bounded in items and bytes, in order, nothing lost or
 * repeated, an empty list one empty page, an item larger than a page alone in its own; and
 * the Stream* handlers over a real store, whose pages put together are the unary List's
 * answer, byte for byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <unistd.h>

#include "store-fixture.h"
#include "store/records.h"
#include "api/api.h"
#include "api/container.h"
#include "api/image.h"
#include "api/page.h"
#include "api/sandbox.h"
#include "api/stats.h"
#include "base/alloc.h"
#include "base/config.h"
#include "base/fileio.h"
#include "images/images.h"
#include "store/store.h"

/* ---- The pager, over items of given sizes ---- */

typedef struct sized {
        const size_t *sizes;
        size_t fail_at; /* SIZE_MAX: never */
        bool freed;
} sized;

/* Item i: a message of sizes[i] bytes (field 1, bytes), its bytes all i % 251. */
static const rkl_blob *sized_item(void *userdata, size_t i, rkl_arena *a, rkl_error *reterr)
{
        sized *s = userdata;
        if (i == s->fail_at) {
                rkl_error_set(reterr, -EIO, "item %zu cannot be made", i);
                return NULL;
        }
        rkl_blob *b = rkl_arena_alloc(a, sizeof(*b) + s->sizes[i]);
        b->len = s->sizes[i];
        memset(b->data, (int)(i % 251), b->len);
        return b;
}

static void sized_free(void *userdata)
{
        ((sized *)userdata)->freed = true;
}

static uint64_t read_varint(const unsigned char **p, const unsigned char *end)
{
        uint64_t v = 0;
        for (int shift = 0; *p < end; shift += 7) {
                unsigned char byte = *(*p)++;
                v |= (uint64_t)(byte & 0x7f) << shift;
                if (!(byte & 0x80))
                        return v;
        }
        fail_msg("truncated varint");
        return 0;
}

/* Checks a page made of entries of field 1 and returns how many; each item's first byte
 * (its index % 251) must follow *next_item. */
static size_t check_page(const unsigned char *buf, size_t len, size_t *next_item,
                         const size_t *sizes)
{
        const unsigned char *p = buf, *end = buf + len;
        size_t n = 0;
        while (p < end) {
                assert_int_equal(read_varint(&p, end), 1 << 3 | 2);
                uint64_t l = read_varint(&p, end);
                assert_true(l <= (uint64_t)(end - p));
                assert_int_equal(l, sizes[*next_item]);
                if (l > 0)
                        assert_int_equal(p[0], *next_item % 251);
                p += l;
                (*next_item)++;
                n++;
        }
        return n;
}

typedef struct pages_seen {
        size_t pages, items, largest_page;
        int end; /* what next() said last */
} pages_seen;

static pages_seen run_pages(const size_t *sizes, size_t n, size_t max_bytes, size_t max_items,
                            size_t fail_at, rkl_error *err)
{
        rkl_api_ctx ctx = {0};
        sized s = {.sizes = sizes, .fail_at = fail_at};
        rkl_api_page_list l = {.field = 1,
                               .n = n,
                               .item = sized_item,
                               .userdata = &s,
                               .free = sized_free,
                               .max_bytes = max_bytes,
                               .max_items = max_items};
        pages_seen seen = {0};

        assert_int_equal(rkl_api_page_stream(&ctx, &l), RKL_API_STREAMING);
        for (;;) {
                unsigned char *buf = NULL;
                size_t len = 0;
                rkl_error_clear(err);
                seen.end = ctx.stream_ops->next(ctx.stream_userdata, &buf, &len, err);
                if (seen.end != RKL_API_STREAM_MESSAGE)
                        break;
                size_t k = check_page(buf, len, &seen.items, sizes);
                seen.pages++;
                if (len > seen.largest_page)
                        seen.largest_page = len;
                /* Bounded in items; in bytes too, unless one item alone is larger. */
                assert_true(k <= max_items);
                assert_true(len <= max_bytes || k == 1);
                free(buf);
        }
        ctx.stream_ops->done(ctx.stream_userdata);
        assert_true(s.freed);
        return seen;
}

static void test_pages_bounded(void **state)
{
        rkl_error err = RKL_ERROR_INIT;
        size_t sizes[1000];
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++)
                sizes[i] = 10 + i % 90;

        /* By items: 1000 of them, 64 a page. */
        pages_seen s = run_pages(sizes, 1000, 1 << 20, 64, SIZE_MAX, &err);
        assert_int_equal(s.end, RKL_API_STREAM_END);
        assert_int_equal(s.items, 1000);
        assert_int_equal(s.pages, 16);

        /* By bytes: each entry is 2 bytes of key and length plus 10..99. */
        s = run_pages(sizes, 1000, 1000, 512, SIZE_MAX, &err);
        assert_int_equal(s.items, 1000);
        assert_true(s.largest_page <= 1000);
        assert_true(s.pages >= 56); /* 56,500 bytes in pages of at most 1000 */

        /* An item larger than a page goes alone, between pages of the rest. */
        size_t big[] = {100, 100, 5000, 100, 0};
        s = run_pages(big, ELEMENTSOF(big), 1000, 512, SIZE_MAX, &err);
        assert_int_equal(s.items, 5);
        assert_int_equal(s.pages, 3);
        assert_true(s.largest_page > 5000);

        /* Nothing: one empty page, then the end. */
        s = run_pages(sizes, 0, 1000, 512, SIZE_MAX, &err);
        assert_int_equal(s.pages, 1);
        assert_int_equal(s.items, 0);
        assert_int_equal(s.end, RKL_API_STREAM_END);

        /* An item that cannot be made ends the stream with its error, after the pages
         * before it. */
        s = run_pages(sizes, 1000, 1 << 20, 64, 130, &err);
        assert_int_equal(s.end, -EIO);
        assert_int_equal(s.items, 128);
        assert_non_null(strstr(err.msg, "item 130"));
}

/* ---- The handlers ---- */

typedef api_fixture fixture;

static void pod_create(fixture *f, unsigned n, size_t annotation_bytes)
{
        rkl_pod_spec p = {0};
        rkl_kvs_add(&p.labels, "app", n % 2 ? "odd" : "even");
        for (size_t k = 0; annotation_bytes && k < 4; k++) {
                _cleanup_free_ char *key = rkl_xasprintf("big-%zu", k);
                _cleanup_free_ char *v = rkl_xmalloc(annotation_bytes / 4 + 1);
                memset(v, 'a' + (int)k, annotation_bytes / 4);
                v[annotation_bytes / 4] = 0;
                rkl_kvs_add(&p.annotations, key, v);
        }
        records_pod_create(f->store, n, &p);
}

static void ctr_create(fixture *f, unsigned n, unsigned pod)
{
        rkl_container_spec c = {0};
        rkl_kvs_add(&c.labels, "tier", n % 2 ? "odd" : "even");
        records_container_create(f->store, n, pod, &c);
}

/* Drives the stream the handler answered with: its pages, put together (malloc'd), and
 * how many there were. */
static unsigned char *drain(rkl_api_ctx *ctx, size_t *ret_len, size_t *ret_pages)
{
        rkl_error err = RKL_ERROR_INIT;
        unsigned char *all = NULL;
        size_t total = 0, pages = 0;
        for (;;) {
                unsigned char *buf = NULL;
                size_t len = 0;
                int r = ctx->stream_ops->next(ctx->stream_userdata, &buf, &len, &err);
                if (r == RKL_API_STREAM_END)
                        break;
                assert_int_equal(r, RKL_API_STREAM_MESSAGE);
                assert_true(len <= RKL_API_PAGE_BYTES || pages == 0);
                all = rkl_xrealloc(all, total + len + 1);
                memcpy(all + total, buf, len);
                total += len;
                pages++;
                free(buf);
        }
        ctx->stream_ops->done(ctx->stream_userdata);
        ctx->stream_ops = NULL;
        *ret_len = total;
        *ret_pages = pages;
        return all;
}

static void assert_same(const unsigned char *a, size_t a_len, const unsigned char *b, size_t b_len)
{
        assert_int_equal(a_len, b_len);
        assert_memory_equal(a, b, a_len);
}

static void test_stream_sandboxes_and_containers(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        size_t len, pages;

        /* Five sandboxes of 250 KB of annotations: four to a page of 1 MiB. */
        for (unsigned i = 1; i <= 5; i++)
                pod_create(f, i, 250 * 1000);
        /* More containers than a page holds. */
        for (unsigned i = 0; i < RKL_API_PAGE_ITEMS + 20; i++)
                ctr_create(f, 1000 + i, 1);

        Runtime__V1__StreamPodSandboxesRequest sreq =
            RUNTIME__V1__STREAM_POD_SANDBOXES_REQUEST__INIT;
        Runtime__V1__ListPodSandboxRequest lreq = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
        Runtime__V1__ListPodSandboxResponse lresp = RUNTIME__V1__LIST_POD_SANDBOX_RESPONSE__INIT;
        assert_int_equal(rkl_api_stream_pod_sandboxes(&f->ctx, &sreq, NULL, &err),
                         RKL_API_STREAMING);
        _cleanup_free_ unsigned char *streamed = drain(&f->ctx, &len, &pages);
        assert_int_equal(pages, 2);
        assert_int_equal(rkl_api_list_pod_sandbox(&f->ctx, &lreq, &lresp, &err), 0);
        assert_same(streamed, len, f->ctx.raw, f->ctx.raw_len);
        f->ctx.raw = mfree(f->ctx.raw);

        /* A filter as the List's. */
        Runtime__V1__PodSandboxFilter pf = RUNTIME__V1__POD_SANDBOX_FILTER__INIT;
        Runtime__V1__PodSandboxFilter__LabelSelectorEntry e =
            RUNTIME__V1__POD_SANDBOX_FILTER__LABEL_SELECTOR_ENTRY__INIT;
        Runtime__V1__PodSandboxFilter__LabelSelectorEntry *ep = &e;
        e.key = (char *)"app";
        e.value = (char *)"odd";
        pf.label_selector = &ep;
        pf.n_label_selector = 1;
        sreq.filter = &pf;
        lreq.filter = &pf;
        assert_int_equal(rkl_api_stream_pod_sandboxes(&f->ctx, &sreq, NULL, &err),
                         RKL_API_STREAMING);
        _cleanup_free_ unsigned char *odd = drain(&f->ctx, &len, &pages);
        assert_int_equal(pages, 1); /* three sandboxes */
        assert_int_equal(rkl_api_list_pod_sandbox(&f->ctx, &lreq, &lresp, &err), 0);
        assert_same(odd, len, f->ctx.raw, f->ctx.raw_len);
        f->ctx.raw = mfree(f->ctx.raw);

        Runtime__V1__StreamContainersRequest creq = RUNTIME__V1__STREAM_CONTAINERS_REQUEST__INIT;
        Runtime__V1__ListContainersRequest lcreq = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
        Runtime__V1__ListContainersResponse lcresp = RUNTIME__V1__LIST_CONTAINERS_RESPONSE__INIT;
        assert_int_equal(rkl_api_stream_containers(&f->ctx, &creq, NULL, &err), RKL_API_STREAMING);
        _cleanup_free_ unsigned char *ctrs = drain(&f->ctx, &len, &pages);
        assert_int_equal(pages, 2);
        assert_int_equal(rkl_api_list_containers(&f->ctx, &lcreq, &lcresp, &err), 0);
        assert_same(ctrs, len, f->ctx.raw, f->ctx.raw_len);
        f->ctx.raw = mfree(f->ctx.raw);

        /* Nothing matches: one empty page. */
        Runtime__V1__ContainerFilter cf = RUNTIME__V1__CONTAINER_FILTER__INIT;
        cf.id = (char *)"ffff";
        creq.filter = &cf;
        assert_int_equal(rkl_api_stream_containers(&f->ctx, &creq, NULL, &err), RKL_API_STREAMING);
        free(drain(&f->ctx, &len, &pages));
        assert_int_equal(pages, 1);
        assert_int_equal(len, 0);
}

/* Packs a response the server would pack. */
static unsigned char *packed(const ProtobufCMessage *m, size_t *ret_len)
{
        size_t n = protobuf_c_message_get_packed_size(m);
        unsigned char *buf = rkl_xmalloc(n + 1);
        *ret_len = protobuf_c_message_pack(m, buf);
        return buf;
}

static void test_stream_stats(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        size_t len, pages, want_len;

        for (unsigned i = 1; i <= 3; i++)
                pod_create(f, i, 0);
        for (unsigned i = 0; i < RKL_API_PAGE_ITEMS + 3; i++)
                ctr_create(f, 1000 + i, 1 + i % 3);

        Runtime__V1__StreamContainerStatsRequest sreq =
            RUNTIME__V1__STREAM_CONTAINER_STATS_REQUEST__INIT;
        Runtime__V1__ListContainerStatsRequest lreq =
            RUNTIME__V1__LIST_CONTAINER_STATS_REQUEST__INIT;
        Runtime__V1__ListContainerStatsResponse lresp =
            RUNTIME__V1__LIST_CONTAINER_STATS_RESPONSE__INIT;
        assert_int_equal(rkl_api_stream_container_stats(&f->ctx, &sreq, NULL, &err),
                         RKL_API_STREAMING);
        _cleanup_free_ unsigned char *streamed = drain(&f->ctx, &len, &pages);
        assert_int_equal(pages, 2);
        assert_int_equal(rkl_api_list_container_stats(&f->ctx, &lreq, &lresp, &err), 0);
        _cleanup_free_ unsigned char *want = packed(&lresp.base, &want_len);
        assert_same(streamed, len, want, want_len);

        Runtime__V1__StreamPodSandboxStatsRequest preq =
            RUNTIME__V1__STREAM_POD_SANDBOX_STATS_REQUEST__INIT;
        Runtime__V1__ListPodSandboxStatsRequest plreq =
            RUNTIME__V1__LIST_POD_SANDBOX_STATS_REQUEST__INIT;
        Runtime__V1__ListPodSandboxStatsResponse plresp =
            RUNTIME__V1__LIST_POD_SANDBOX_STATS_RESPONSE__INIT;
        assert_int_equal(rkl_api_stream_pod_sandbox_stats(&f->ctx, &preq, NULL, &err),
                         RKL_API_STREAMING);
        _cleanup_free_ unsigned char *pods = drain(&f->ctx, &len, &pages);
        assert_int_equal(pages, 1);
        assert_int_equal(rkl_api_list_pod_sandbox_stats(&f->ctx, &plreq, &plresp, &err), 0);
        _cleanup_free_ unsigned char *pwant = packed(&plresp.base, &want_len);
        assert_same(pods, len, pwant, want_len);
}

static void test_stream_images_empty(void **state)
{
        _cleanup_free_ char *dir = rkl_xstrdup("/tmp/rkl-test-page-images-XXXXXX");
        assert_non_null(mkdtemp(dir));
        _cleanup_free_ char *data = rkl_xasprintf("%s/rkt", dir);
        rkl_images_config ic = {.rkt_data_dir = data, .state_dir = dir};
        rkl_images *images = NULL;
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(rkl_images_new(&ic, &images, NULL), 0);
        assert_true(rkl_images_refresh(images, &err) < 0); /* no rkt: listed, empty */
        rkl_config options = {.state_dir = dir};
        rkl_api_config c = {.config = &options, .images = images};
        _cleanup_(rkl_arena_freep) rkl_arena *a = rkl_arena_new();
        rkl_api_ctx ctx = {.cfg = &c, .images = images, .arena = a};
        size_t len, pages;

        Runtime__V1__StreamImagesRequest req = RUNTIME__V1__STREAM_IMAGES_REQUEST__INIT;
        assert_int_equal(rkl_api_stream_images(&ctx, &req, NULL, &err), RKL_API_STREAMING);
        free(drain(&ctx, &len, &pages));
        assert_int_equal(pages, 1);
        assert_int_equal(len, 0);

        /* Its filter is checked as ListImages' is. */
        Runtime__V1__ImageFilter filter = RUNTIME__V1__IMAGE_FILTER__INIT;
        Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
        spec.image = (char *)"UPPER/Case:bad tag";
        filter.image = &spec;
        req.filter = &filter;
        assert_int_equal(rkl_api_stream_images(&ctx, &req, NULL, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "filter.image.image"));

        rkl_images_free(images);
        (void)rkl_rm_rf_at(AT_FDCWD, dir);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_pages_bounded),
            cmocka_unit_test_setup_teardown(test_stream_sandboxes_and_containers, api_fixture_setup,
                                            api_fixture_teardown),
            cmocka_unit_test_setup_teardown(test_stream_stats, api_fixture_setup,
                                            api_fixture_teardown),
            cmocka_unit_test(test_stream_images_empty),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
