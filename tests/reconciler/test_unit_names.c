#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "reconciler/unit.h"

static void test_slice(void **state)
{
        char *s = NULL;
        assert_int_equal(
            rkl_unit_slice_from_cgroup_parent("/kubepods.slice/kubepods-besteffort.slice/"
                                              "kubepods-besteffort-pod1a2b_3c.slice",
                                              &s),
            0);
        assert_string_equal(s, "kubepods-besteffort-pod1a2b_3c.slice");
        free(s);
        assert_int_equal(rkl_unit_slice_from_cgroup_parent("/test.slice", &s), 0);
        assert_string_equal(s, "test.slice");
        free(s);
        /* cgroupfs-style parents cannot be expressed as a slice. */
        assert_int_equal(rkl_unit_slice_from_cgroup_parent("/kubepods/besteffort/pod1", &s),
                         -EINVAL);
        assert_int_equal(rkl_unit_slice_from_cgroup_parent("", &s), -EINVAL);
        assert_int_equal(rkl_unit_slice_from_cgroup_parent("/.slice", &s), -EINVAL);
        assert_int_equal(rkl_unit_slice_from_cgroup_parent("/a b.slice", &s), -EINVAL);
}

static void test_unit_name(void **state)
{
        char *n = rkl_unit_name_for_sandbox("ab12");
        assert_string_equal(n, "rktlet-ab12.service");
        free(n);
}

int main(void)
{
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_slice),
                                           cmocka_unit_test(test_unit_name)};
        return cmocka_run_group_tests(tests, NULL, NULL);
}
