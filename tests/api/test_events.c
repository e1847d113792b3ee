/* GetContainerEvents as a plain handler over a real store, its stream driven by hand as the
 * server drives it: nothing until a change, then one ContainerEventResponse per event with
 * the sandbox's and its containers' CRI statuses; a subscriber that falls behind ends with
 * RESOURCE_EXHAUSTED, a shutdown with UNAVAILABLE. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <unistd.h>

#include "store-fixture.h"
#include "store/records.h"
#include "api/api.h"
#include "api/events.h"
#include "api/status.h"
#include "base/alloc.h"
#include "base/config.h"
#include "store/events.h"
#include "store/store.h"

typedef api_fixture fixture;

static void pod_create(fixture *f, unsigned n)
{
        rkl_pod_spec p = {.name = rkl_xstrdup("web"), .uid = rkl_xstrdup("uid-1")};
        rkl_kvs_add(&p.labels, "app", "web");
        rkl_kvs_add(&p.annotations, "note", "x");
        records_pod_create(f->store, n, &p);
}

static void ctr_create(fixture *f, unsigned n, unsigned pod)
{
        records_container_create(f->store, n, pod, &(rkl_container_spec){0});
}

/* The stream's next message, decoded (free with ..._free_unpacked), or NULL when it has
 * none now; *ret_r is what next() returned. */
static Runtime__V1__ContainerEventResponse *next_event(rkl_api_ctx *ctx, int *ret_r, rkl_error *err)
{
        unsigned char *buf = NULL;
        size_t len = 0;
        rkl_error_clear(err);
        *ret_r = ctx->stream_ops->next(ctx->stream_userdata, &buf, &len, err);
        if (*ret_r != RKL_API_STREAM_MESSAGE)
                return NULL;
        Runtime__V1__ContainerEventResponse *m =
            runtime__v1__container_event_response__unpack(NULL, len, buf);
        free(buf);
        assert_non_null(m);
        return m;
}

static void subscribe(fixture *f)
{
        rkl_error err = RKL_ERROR_INIT;
        Runtime__V1__GetEventsRequest req = RUNTIME__V1__GET_EVENTS_REQUEST__INIT;
        Runtime__V1__ContainerEventResponse resp = RUNTIME__V1__CONTAINER_EVENT_RESPONSE__INIT;
        assert_int_equal(rkl_api_get_container_events(&f->ctx, &req, &resp, &err),
                         RKL_API_STREAMING);
        assert_non_null(f->ctx.stream_ops);
}

static void test_events_stream(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        char pod[RKL_ID_LEN + 1], c2[RKL_ID_LEN + 1];
        int r;
        records_id(1, pod);
        records_id(2, c2);

        subscribe(f);
        assert_null(next_event(&f->ctx, &r, &err));
        assert_int_equal(r, RKL_API_STREAM_IDLE);

        pod_create(f, 1);
        ctr_create(f, 2, 1);
        Runtime__V1__ContainerEventResponse *m = next_event(&f->ctx, &r, &err);
        assert_non_null(m);
        /* The sandbox's own event names the sandbox. */
        assert_string_equal(m->container_id, pod);
        assert_int_equal(m->container_event_type,
                         RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_CREATED_EVENT);
        assert_true(m->created_at > 0);
        assert_non_null(m->pod_sandbox_status);
        assert_string_equal(m->pod_sandbox_status->id, pod);
        assert_string_equal(m->pod_sandbox_status->metadata->uid, "uid-1");
        assert_int_equal(m->pod_sandbox_status->state,
                         RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY);
        assert_int_equal(m->pod_sandbox_status->n_labels, 1);
        assert_int_equal(m->pod_sandbox_status->n_annotations, 1);
        assert_int_equal(m->n_containers_statuses, 0);
        int64_t t = m->created_at;
        runtime__v1__container_event_response__free_unpacked(m, NULL);

        m = next_event(&f->ctx, &r, &err);
        assert_non_null(m);
        assert_string_equal(m->container_id, c2);
        assert_int_equal(m->container_event_type,
                         RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_CREATED_EVENT);
        assert_true(m->created_at >= t);
        assert_string_equal(m->pod_sandbox_status->id, pod);
        assert_int_equal(m->n_containers_statuses, 1);
        assert_string_equal(m->containers_statuses[0]->id, c2);
        assert_string_equal(m->containers_statuses[0]->metadata->name, "ctr-2");
        assert_int_equal(m->containers_statuses[0]->state,
                         RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED);
        runtime__v1__container_event_response__free_unpacked(m, NULL);
        assert_null(next_event(&f->ctx, &r, &err));
        assert_int_equal(r, RKL_API_STREAM_IDLE);

        assert_int_equal(rkl_store_pod_delete(f->store, pod, &err), 0);
        m = next_event(&f->ctx, &r, &err);
        assert_string_equal(m->container_id, c2);
        assert_int_equal(m->container_event_type,
                         RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_DELETED_EVENT);
        assert_non_null(m->pod_sandbox_status);
        runtime__v1__container_event_response__free_unpacked(m, NULL);
        m = next_event(&f->ctx, &r, &err);
        assert_string_equal(m->container_id, pod);
        assert_int_equal(m->container_event_type,
                         RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_DELETED_EVENT);
        runtime__v1__container_event_response__free_unpacked(m, NULL);

        f->ctx.stream_ops->done(f->ctx.stream_userdata);
        assert_int_equal(rkl_events_n_subscribers(rkl_cache_events(f->cache)), 0);
}

static void test_falls_behind(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        int r;

        subscribe(f);
        pod_create(f, 1);
        for (unsigned i = 0; i < RKL_EVENTS_QUEUE_MAX; i++)
                ctr_create(f, 100 + i, 1);
        assert_null(next_event(&f->ctx, &r, &err));
        assert_int_equal(r, -ENOSPC);
        assert_int_equal(rkl_api_status_from_errno(r), GRPC_STATUS_RESOURCE_EXHAUSTED);
        assert_non_null(strstr(err.msg, "relist"));
        f->ctx.stream_ops->done(f->ctx.stream_userdata);
}

static void test_shutdown(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        int r;

        subscribe(f);
        rkl_events_shutdown(rkl_cache_events(f->cache));
        assert_null(next_event(&f->ctx, &r, &err));
        assert_int_equal(rkl_api_status_from_errno(r), GRPC_STATUS_UNAVAILABLE);
        f->ctx.stream_ops->done(f->ctx.stream_userdata);

        /* No new subscriber once it shut down. */
        Runtime__V1__GetEventsRequest req = RUNTIME__V1__GET_EVENTS_REQUEST__INIT;
        Runtime__V1__ContainerEventResponse resp = RUNTIME__V1__CONTAINER_EVENT_RESPONSE__INIT;
        r = rkl_api_get_container_events(&f->ctx, &req, &resp, &err);
        assert_int_equal(rkl_api_status_from_errno(r), GRPC_STATUS_UNAVAILABLE);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_events_stream, api_fixture_setup,
                                            api_fixture_teardown),
            cmocka_unit_test_setup_teardown(test_falls_behind, api_fixture_setup,
                                            api_fixture_teardown),
            cmocka_unit_test_setup_teardown(test_shutdown, api_fixture_setup, api_fixture_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
