/* Checkpoint and restore answer UNIMPLEMENTED, naming the call and saying why. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "api/checkpoint.h"
#include "api/status.h"

static void test_unimplemented_saying_why(void **state)
{
        rkl_api_ctx ctx = {0};
        rkl_error err = RKL_ERROR_INIT;
        Runtime__V1__CheckpointContainerRequest cc =
            RUNTIME__V1__CHECKPOINT_CONTAINER_REQUEST__INIT;
        Runtime__V1__CheckpointPodRequest cp = RUNTIME__V1__CHECKPOINT_POD_REQUEST__INIT;
        Runtime__V1__RestorePodRequest rp = RUNTIME__V1__RESTORE_POD_REQUEST__INIT;
        int r;

        r = rkl_api_checkpoint_container(&ctx, &cc, NULL, &err);
        assert_int_equal(rkl_api_status_from_errno(r), GRPC_STATUS_UNIMPLEMENTED);
        assert_non_null(strstr(err.msg, "RuntimeService/CheckpointContainer"));
        assert_non_null(strstr(err.msg, "no CRIU integration"));
        r = rkl_api_checkpoint_pod(&ctx, &cp, NULL, &err);
        assert_int_equal(rkl_api_status_from_errno(r), GRPC_STATUS_UNIMPLEMENTED);
        assert_non_null(strstr(err.msg, "RuntimeService/CheckpointPod"));
        r = rkl_api_restore_pod(&ctx, &rp, NULL, &err);
        assert_int_equal(rkl_api_status_from_errno(r), GRPC_STATUS_UNIMPLEMENTED);
        assert_non_null(strstr(err.msg, "RuntimeService/RestorePod: rkt 1.30"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_unimplemented_saying_why),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
