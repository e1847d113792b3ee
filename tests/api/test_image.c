/* ImageService handlers called as plain functions, without a socket and without rkt: the
 * validation at the boundary, the empty answers for unknown images, and the in-use check.
 * Pulls and removals through rkt are covered by tests/integration/test_images.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "api/api.h"
#include "api/image.h"
#include "base/alloc.h"
#include "base/config.h"
#include "base/fileio.h"
#include "store/cache.h"
#include "images/images.h"
#include "store/db.h"

typedef struct fixture {
        char dir[64];
        rkl_cache *cache;
        rkl_images *images;
        rkl_arena *arena;
        rkl_config options;
        rkl_api_config cfg;
        rkl_api_ctx ctx;
} fixture;

static int setup(void **state)
{
        fixture *f = rkl_xnew0(fixture, 1);
        memcpy(f->dir, "/tmp/rkl-api-image-XXXXXX", sizeof("/tmp/rkl-api-image-XXXXXX"));
        assert_non_null(mkdtemp(f->dir));
        _cleanup_free_ char *data = rkl_xasprintf("%s/rkt", f->dir);
        rkl_images_config ic = {.rkt_data_dir = data, .state_dir = f->dir};
        assert_int_equal(rkl_images_new(&ic, &f->images, NULL), 0);
        /* The reconciler's first list, which image reads wait for (here: no rkt at all). */
        rkl_error e = RKL_ERROR_INIT;
        assert_true(rkl_images_refresh(f->images, &e) < 0);
        assert_true(rkl_images_wait_listed(f->images, 0));
        f->cache = rkl_cache_new();
        f->arena = rkl_arena_new();
        f->cfg = (rkl_api_config){.config = &f->options, .images = f->images};
        f->ctx = (rkl_api_ctx){
            .cfg = &f->cfg, .cache = f->cache, .images = f->images, .arena = f->arena};
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        fixture *f = *state;
        rkl_cache_free(f->cache);
        rkl_images_free(f->images);
        rkl_arena_free(f->arena);
        (void)rkl_rm_rf_at(AT_FDCWD, f->dir);
        free(f);
        return 0;
}

static int status(fixture *f, const char *ref, Runtime__V1__ImageStatusResponse *resp,
                  rkl_error *err)
{
        Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
        Runtime__V1__ImageStatusRequest req = RUNTIME__V1__IMAGE_STATUS_REQUEST__INIT;
        spec.image = (char *)ref;
        req.image = &spec;
        req.verbose = true;
        runtime__v1__image_status_response__init(resp);
        return rkl_api_image_status(&f->ctx, &req, resp, err);
}

static void test_status_and_list(void **state)
{
        fixture *f = *state;
        Runtime__V1__ImageStatusResponse resp;
        rkl_error err = RKL_ERROR_INIT;

        /* Unknown: an empty answer, for names and IDs alike. */
        assert_int_equal(status(f, "busybox", &resp, &err), 0);
        assert_null(resp.image);
        assert_int_equal(status(f, "sha512-0123456789abcdef0123456789abcdef", &resp, &err), 0);
        assert_null(resp.image);

        /* Malformed or missing: INVALID_ARGUMENT naming the field. */
        assert_int_equal(status(f, "Busybox", &resp, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "image.image: "));
        assert_non_null(strstr(err.msg, "lowercase"));
        assert_int_equal(status(f, "", &resp, &err), -EINVAL);
        assert_string_equal(err.msg, "image.image: required");
        assert_int_equal(status(f, "busybox\xff", &resp, &err), -EINVAL);
        Runtime__V1__ImageStatusRequest none = RUNTIME__V1__IMAGE_STATUS_REQUEST__INIT;
        assert_int_equal(rkl_api_image_status(&f->ctx, &none, &resp, &err), -EINVAL);

        Runtime__V1__ListImagesRequest lreq = RUNTIME__V1__LIST_IMAGES_REQUEST__INIT;
        Runtime__V1__ListImagesResponse lresp = RUNTIME__V1__LIST_IMAGES_RESPONSE__INIT;
        assert_int_equal(rkl_api_list_images(&f->ctx, &lreq, &lresp, &err), 0);
        assert_int_equal(lresp.n_images, 0);
        Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
        Runtime__V1__ImageFilter filter = RUNTIME__V1__IMAGE_FILTER__INIT;
        spec.image = (char *)"a b";
        filter.image = &spec;
        lreq.filter = &filter;
        assert_int_equal(rkl_api_list_images(&f->ctx, &lreq, &lresp, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "filter.image.image"));

        /* Without an image cache the service says it is unavailable, not broken. */
        f->ctx.images = NULL;
        assert_int_equal(status(f, "busybox", &resp, &err), -EAGAIN);
        lreq.filter = NULL;
        assert_int_equal(rkl_api_list_images(&f->ctx, &lreq, &lresp, &err), -EAGAIN);
}

static void put_container(fixture *f, const char *id, const char *image, const char *image_ref)
{
        rkl_container_record *rec = rkl_xnew0(rkl_container_record, 1);
        memcpy(rec->id, id, RKL_ID_LEN + 1);
        rec->spec.image = rkl_xstrdup(image);
        rec->observed.image_ref = rkl_xstrdup(image_ref);
        rec->book.version = 1;
        assert_true(rkl_cache_container_put(f->cache, rkl_container_view_new(rec, NULL)));
}

static void test_in_use(void **state)
{
        fixture *f = *state;
        const char *id = "sha512-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                         "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        const char *cid = "00000000000000000000000000000000000000000000000000000000000000c1";
        char *who = NULL;

        assert_false(rkl_api_image_in_use(f->cache, f->images, id, &who));
        put_container(f, cid, "busybox", id);
        assert_true(rkl_api_image_in_use(f->cache, f->images, id, &who));
        assert_string_equal(
            who, "container 00000000000000000000000000000000000000000000000000000000000000c1");
        free(who);
        who = NULL;
        /* Every user is named, up to 8, and how many more. */
        const char *cid2 = "00000000000000000000000000000000000000000000000000000000000000c2";
        put_container(f, cid2, "busybox", id);
        assert_true(rkl_api_image_in_use(f->cache, f->images, id, &who));
        assert_non_null(strstr(who, "containers "));
        assert_non_null(strstr(who, cid));
        assert_non_null(strstr(who, cid2));
        free(who);
        who = NULL;
        for (int i = 3; i <= 10; i++) {
                char more[RKL_ID_LEN + 1];
                (void)snprintf(more, sizeof(more), "%062d%02d", 0, i);
                put_container(f, more, "busybox", id);
        }
        assert_true(rkl_api_image_in_use(f->cache, f->images, id, &who));
        assert_non_null(strstr(who, " and 2 more"));
        free(who);
        who = NULL;
        assert_false(rkl_api_image_in_use(f->cache, f->images, "sha512-ffff", &who));
        assert_null(who);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_status_and_list, setup, teardown),
            cmocka_unit_test_setup_teardown(test_in_use, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
