#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>

#include "base/error.h"

/* The shortages that reach rktlet as words: rkt's, systemd's in a pod, a CNI plugin's. */
static void test_shortage_of(void **state)
{
        assert_int_equal(rkl_error_shortage_of("write /var/lib/rkt/pods: No space left on device"),
                         -ENOSPC);
        assert_int_equal(rkl_error_shortage_of("plugin 'bridge' (ADD): failed to allocate for "
                                               "range 0: no IP addresses available in range "
                                               "set: 10.88.0.1-10.88.0.6 (CNI error 999)"),
                         -ENOSPC);
        assert_int_equal(rkl_error_shortage_of("Failed to allocate manager object: Too many open "
                                               "files"),
                         -EMFILE);
        assert_int_equal(rkl_error_shortage_of("fork: Cannot allocate memory"), -ENOMEM);
        assert_int_equal(rkl_error_shortage_of("the sandbox did not become ready in time"), 0);
        assert_int_equal(rkl_error_shortage_of(""), 0);
        assert_int_equal(rkl_error_shortage_of(NULL), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_shortage_of)};
        return cmocka_run_group_tests(tests, NULL, NULL);
}
