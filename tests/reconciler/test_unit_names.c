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
        const char *id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        char *n = rkl_unit_name_for_sandbox(id);
        assert_string_equal(
            n, "rktlet-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
               ".service");
        char *back = rkl_unit_sandbox_id(n);
        assert_string_equal(back, id);
        free(back);
        free(n);
        char *cg = rkl_unit_cgroup_for_sandbox(id);
        assert_string_equal(
            cg,
            "system.slice/rktlet-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
            ".service");
        free(cg);
        assert_null(rkl_unit_sandbox_id("rktlet-ab12.service"));
        assert_null(rkl_unit_sandbox_id("sshd.service"));
        assert_null(rkl_unit_sandbox_id(
            "rktlet-0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef.service"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_slice),
                                           cmocka_unit_test(test_unit_name)};
        return cmocka_run_group_tests(tests, NULL, NULL);
}
