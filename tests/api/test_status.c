#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>

#include "api/status.h"

static void test_mapping(void **state)
{
        assert_int_equal(rkl_api_status_from_errno(0), GRPC_STATUS_OK);
        assert_int_equal(rkl_api_status_from_errno(-ENOENT), GRPC_STATUS_NOT_FOUND);
        assert_int_equal(rkl_api_status_from_errno(-EEXIST), GRPC_STATUS_ALREADY_EXISTS);
        assert_int_equal(rkl_api_status_from_errno(-EINVAL), GRPC_STATUS_INVALID_ARGUMENT);
        assert_int_equal(rkl_api_status_from_errno(-EOPNOTSUPP), GRPC_STATUS_UNIMPLEMENTED);
        assert_int_equal(rkl_api_status_from_errno(-ETIMEDOUT), GRPC_STATUS_DEADLINE_EXCEEDED);
        assert_int_equal(rkl_api_status_from_errno(-EIO), GRPC_STATUS_INTERNAL);
        /* An image in use is not transient: a client must not retry RemoveImage as if the
         * runtime were busy (RemoveImage of an image in use once answered UNAVAILABLE). */
        assert_int_equal(rkl_api_status_from_errno(-ETXTBSY), GRPC_STATUS_FAILED_PRECONDITION);
        assert_int_equal(rkl_api_status_from_errno(-EBUSY), GRPC_STATUS_UNAVAILABLE);
        /* A sandbox's or container's failure (api/wait.c): a shortage, or what may pass. */
        assert_int_equal(rkl_api_status_from_errno(-ENOSPC), GRPC_STATUS_RESOURCE_EXHAUSTED);
        assert_int_equal(rkl_api_status_from_errno(-EDQUOT), GRPC_STATUS_RESOURCE_EXHAUSTED);
        assert_int_equal(rkl_api_status_from_errno(-EMFILE), GRPC_STATUS_RESOURCE_EXHAUSTED);
        assert_int_equal(rkl_api_status_from_errno(-EAGAIN), GRPC_STATUS_UNAVAILABLE);
        /* Never UNKNOWN: it defeats kubelet's fallbacks. */
        for (int e = 1; e < 200; e++)
                assert_int_not_equal(rkl_api_status_from_errno(-e), GRPC_STATUS_UNKNOWN);
}

int main(void)
{
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_mapping)};
        return cmocka_run_group_tests(tests, NULL, NULL);
}
